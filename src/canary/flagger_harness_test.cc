// gpucanary's Flagger webhooks driven the way Flagger drives them, against
// live canaries. FlaggerSim follows Flagger's scheduler for a progressive
// canary (fluxcd/flagger at 15bd6ad, 2026-07-21: pkg/controller/scheduler.go
// advanceCanary/runCanary/checkCanaryStatus/rollback, scheduler_hooks.go,
// webhook.go): each interval it asks the hooks in Flagger's order, with
// Flagger's payload ({"name","namespace","phase","checksum","metadata"}),
// reads a status above 202 as Flagger does, and moves its phase, weight and
// failed checks as Flagger would. The Canary resource is the one in
// docs/ci-cd.md ("Flagger"), read from the page.

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "canary/api.h"
#include "canary/harness_util.h"
#include "canary/test_util.h"

namespace gpucanary::canary {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
constexpr std::int64_t kStart = testing::kSimStart;

// The Canary resource of docs/ci-cd.md.
YAML::Node DocumentedCanary() { return testing::YamlAfter("flagger-canary"); }

struct Webhook {
  std::string name;
  std::string type;  // "" is Flagger's "rollout"
  std::string path;  // the URL's path
  std::map<std::string, std::string> metadata;
};

std::int64_t Seconds(const std::string& d) {
  EXPECT_TRUE(d.ends_with("s")) << d;
  return std::stoll(d.substr(0, d.size() - 1));
}

// Flagger's scheduler for one Canary (progressive traffic, no mirroring).
class FlaggerSim {
 public:
  FlaggerSim(const YAML::Node& canary, CanaryApi& api) : api_(api) {
    name_ = canary["metadata"]["name"].as<std::string>();
    namespace_ = canary["metadata"]["namespace"].as<std::string>();
    const YAML::Node a = canary["spec"]["analysis"];
    interval_s_ = Seconds(a["interval"].as<std::string>());
    threshold_ = a["threshold"].as<int>();
    max_weight_ = a["maxWeight"].as<int>();
    step_weight_ = a["stepWeight"].as<int>();
    for (const YAML::Node& w : a["webhooks"]) {
      Webhook hook;
      hook.name = w["name"].as<std::string>();
      hook.type = w["type"] ? w["type"].as<std::string>() : "";
      const std::string url = w["url"].as<std::string>();
      hook.path = url.substr(url.find('/', url.find("//") + 2));
      if (w["metadata"]) {
        for (const auto& kv : w["metadata"]) {
          hook.metadata[kv.first.as<std::string>()] = kv.second.as<std::string>();
        }
      }
      webhooks_.push_back(hook);
    }
  }

  // A new revision of the target (Flagger sees the Deployment's spec change).
  void NewRevision(std::string checksum) { pending_ = std::move(checksum); }

  // One interval of Flagger's loop.
  void Tick() {
    ++ticks_;
    if (!pending_.empty() && (phase_ == "Initialized" || phase_ == "Succeeded" ||
                              phase_ == "Failed" || phase_ == "Waiting")) {
      // checkCanaryStatus: confirm-rollout with the status as it is (the old checksum).
      if (!RunGates("confirm-rollout", phase_)) {
        phase_ = "Waiting";
        return;
      }
      phase_ = "Progressing";  // SyncStatus: the new spec's hash, a fresh analysis
      checksum_ = pending_;
      pending_.clear();
      weight_ = 0;
      failed_checks_ = 0;
      Event("New revision detected! Scaling up " + name_ + "." + namespace_);
      return;
    }
    if (phase_ != "Progressing" && phase_ != "WaitingPromotion" && phase_ != "Promoting" &&
        phase_ != "Finalising") {
      return;
    }
    if (phase_ == "Progressing" || phase_ == "WaitingPromotion") {
      for (const Webhook& w : webhooks_) {  // runRollbackHooks: the first <= 202 rolls back
        if (w.type == "rollback" && Call(w, phase_) <= 202) {
          Rollback();
          return;
        }
      }
    }
    if (phase_ == "Promoting") {  // runPromotionTrafficShift, all at once
      weight_ = 0;
      phase_ = "Finalising";
      return;
    }
    if (phase_ == "Finalising") {
      phase_ = "Succeeded";
      PostRollout("Succeeded");
      return;
    }
    if (failed_checks_ >= threshold_) {
      Rollback();
      return;
    }
    if (weight_ == 0) {
      if (!RunGates("pre-rollout", "Progressing")) {
        ++failed_checks_;
        return;
      }
    } else {
      if (!RunGates("rollout", "Progressing")) {  // runAnalysis: "" or "rollout"
        ++failed_checks_;
        return;
      }
    }
    if (phase_ != "WaitingPromotion" && !RunGates("confirm-traffic-increase", "Progressing")) {
      return;
    }
    if (weight_ < max_weight_) {  // runCanary
      weight_ = std::min(max_weight_, weight_ + step_weight_);
      Event("Advance " + name_ + "." + namespace_ + " canary weight " + std::to_string(weight_));
      return;
    }
    if (!RunGates("confirm-promotion", "Progressing")) {
      phase_ = "WaitingPromotion";
      return;
    }
    promoted_ = true;
    phase_ = "Promoting";
  }

  const std::string& phase() const { return phase_; }
  int weight() const { return weight_; }
  bool promoted() const { return promoted_; }
  int ticks() const { return ticks_; }
  std::int64_t interval_s() const { return interval_s_; }
  const std::vector<Webhook>& webhooks() const { return webhooks_; }
  // Every call: "type status".
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  int Call(const Webhook& w, const std::string& phase,
           const std::map<std::string, std::string>& extra = {}) {
    Json metadata = Json::object();
    for (const auto& [k, v] : extra) metadata[k] = v;
    for (const auto& [k, v] : w.metadata) {
      if (!metadata.contains(k)) metadata[k] = v;
    }
    Json payload = {
        {"name", name_}, {"namespace", namespace_}, {"phase", phase}, {"checksum", checksum_}};
    if (!metadata.empty()) payload["metadata"] = metadata;
    const net::HttpResponse r = testing::Call(api_, "POST", w.path, payload.dump());
    const std::string type = w.type.empty() ? "rollout" : w.type;
    calls_.push_back(type + " " + std::to_string(r.status));
    return r.status;
  }
  // Every hook of `type` must answer <= 202 (Flagger's loops stop at the first error).
  bool RunGates(const std::string& type, const std::string& phase) {
    for (const Webhook& w : webhooks_) {
      const std::string t = w.type.empty() ? "rollout" : w.type;
      if (t == type && Call(w, phase) > 202) return false;
    }
    return true;
  }
  void Event(const std::string& message) {
    for (const Webhook& w : webhooks_) {
      if (w.type == "event") Call(w, phase_, {{"eventMessage", message}, {"eventType", "Normal"}});
    }
  }
  void PostRollout(const std::string& phase) {
    for (const Webhook& w : webhooks_) {
      if (w.type == "post-rollout") Call(w, phase);
    }
  }
  void Rollback() {
    weight_ = 0;
    phase_ = "Failed";
    PostRollout("Failed");
  }

  CanaryApi& api_;
  std::string name_;
  std::string namespace_;
  std::int64_t interval_s_ = 60;
  int threshold_ = 5;
  int max_weight_ = 50;
  int step_weight_ = 10;
  std::vector<Webhook> webhooks_;
  std::string phase_ = "Initialized";
  std::string checksum_ = "rev-0";
  std::string pending_;
  int weight_ = 0;
  int failed_checks_ = 0;
  bool promoted_ = false;
  int ticks_ = 0;
  std::vector<std::string> calls_;
};

class FlaggerHarnessTest : public testing::LiveCanaryFixture {
 protected:
  void SetUp() override {
    LiveCanaryFixture::SetUp();
    NewManager(100);
  }

  // What the daemon's POST /api/v1/releases does: the annotation stored, the
  // canary started on its targets.
  void Announce(const std::string& id, std::int64_t at, const std::string& node) {
    const Json annotation = {{"id", id},
                             {"started_at", at},
                             {"service", "chat"},
                             {"namespace", "prod"},
                             {"workload", "chat-api"},
                             {"targets", {node}}};
    ASSERT_TRUE(meta_->PutRelease({id, "chat", static_cast<double>(at), annotation.dump()}).ok());
    ASSERT_TRUE(manager_
                    ->Start({.release_id = id,
                             .started_at = static_cast<double>(at),
                             .targets = {node},
                             .selector = {},
                             .previous = ""})
                    .has_value());
  }

  // Flagger's intervals (its tick first), the canaries judged every second
  // in between.
  void Run(FlaggerSim& flagger, int ticks) {
    for (int i = 0; i < ticks; ++i) {
      flagger.Tick();
      if (flagger.phase() == "Succeeded" || flagger.phase() == "Failed") return;
      Judge(flagger.interval_s());
    }
  }

  // A release that changes nothing (node-5 keeps running what it ran),
  // judged for 70 s (the judge passes this one after about 90 s), Flagger
  // every 10 s: no check fails and traffic reaches the top weight at +70 s;
  // the promotion gate holds while the judge may still decide (the
  // canary's duration is the extension); then the canary ends without a
  // verdict, and `policy` decides.
  void Inconclusive(const std::string& policy) {
    NewManager(70);
    const std::string id = "noop-" + policy;
    Announce(id, kStart + 20, "node-5");
    YAML::Node canary = DocumentedCanary();
    canary["spec"]["analysis"]["interval"] = "10s";
    for (YAML::Node w : canary["spec"]["analysis"]["webhooks"]) {
      if (w["metadata"] && w["metadata"]["on_inconclusive"])
        w["metadata"]["on_inconclusive"] = policy;
    }
    FlaggerSim flagger(canary, *api_);
    flagger.NewRevision("rev-1");
    Run(flagger, 30);
    const std::string calls = Calls(flagger);
    EXPECT_EQ(calls.find("rollout 409"), std::string::npos) << calls;
    const vocab::CanaryState state = manager_->Get(id)->state;
    ASSERT_NE(state, vocab::CanaryState::kFailed);
    ASSERT_EQ(state, vocab::CanaryState::kInconclusive) << calls;
    EXPECT_NE(calls.find("confirm-promotion 403"), std::string::npos) << calls;
    EXPECT_EQ(flagger.phase(), policy == "rollback" ? "Failed" : "Succeeded") << calls;
    EXPECT_EQ(flagger.promoted(), policy == "promote") << calls;
    if (policy == "rollback") {
      EXPECT_NE(calls.find("rollback 200"), std::string::npos) << calls;
    }
  }

  static std::string Calls(const FlaggerSim& f) {
    std::string out;
    for (const std::string& c : f.calls()) out += c + "; ";
    return out;
  }
};

// The page's Canary uses Flagger's hook types only, each at its own path.
TEST_F(FlaggerHarnessTest, TheDocumentedCanaryNamesEveryHookByItsPath) {
  FlaggerSim flagger(DocumentedCanary(), *api_);
  ASSERT_GE(flagger.webhooks().size(), 5U);
  for (const Webhook& w : flagger.webhooks()) {
    const std::string type = w.type.empty() ? "rollout" : w.type;
    EXPECT_TRUE(ParseFlaggerHook(type).has_value()) << type;
    EXPECT_EQ(w.path, "/api/v1/flagger/" + type) << w.name;
  }
}

// The power-brake release: Flagger starts it, shifts some traffic, and
// rolls it back on the rollback hook (or the failed checks) once the judge
// fails it; never promoted. The post-rollout hook is told.
TEST_F(FlaggerHarnessTest, ABadReleaseIsRolledBackBeforePromotion) {
  Announce("fp8-kernel", kStart + 20, "node-4");
  FlaggerSim flagger(DocumentedCanary(), *api_);
  flagger.NewRevision("rev-1");
  Run(flagger, 30);
  EXPECT_EQ(flagger.phase(), "Failed") << Calls(flagger);
  EXPECT_FALSE(flagger.promoted());
  const std::string calls = Calls(flagger);
  EXPECT_NE(calls.find("confirm-rollout 200"), std::string::npos) << calls;
  EXPECT_NE(calls.find("rollback 200"), std::string::npos) << calls;
  EXPECT_NE(calls.find("post-rollout 200"), std::string::npos) << calls;
  EXPECT_EQ(calls.find("confirm-promotion 200"), std::string::npos) << calls;
  EXPECT_EQ(manager_->Get("fp8-kernel")->state, vocab::CanaryState::kFailed);
}

// On the page's on_inconclusive: rollback, a canary that ends without a
// verdict is rolled back (nothing showed it safe); under promote, promoted.
TEST_F(FlaggerHarnessTest, AnInconclusiveEndIsRolledBackUnderRollback) { Inconclusive("rollback"); }
TEST_F(FlaggerHarnessTest, AnInconclusiveEndIsPromotedUnderPromote) { Inconclusive("promote"); }

// Nothing in the Canary names the release: the payload's namespace and name
// find it, the checksum keeps each revision on its own release, and a new
// revision whose annotation has not arrived waits at confirm-rollout
// instead of borrowing the last release's verdict.
TEST_F(FlaggerHarnessTest, TheReleaseIsFoundFromThePayloadAndANewRevisionWaitsForIt) {
  FlaggerSim flagger(DocumentedCanary(), *api_);
  flagger.NewRevision("rev-1");
  Run(flagger, 2);
  EXPECT_EQ(flagger.phase(), "Waiting") << Calls(flagger);  // no annotation yet
  Announce("fp8-kernel", kStart + 20, "node-4");            // announced late, started at +20 s
  Run(flagger, 30);
  EXPECT_EQ(flagger.phase(), "Failed") << Calls(flagger);
  bool bound = false;
  for (const std::string& line : log_) {
    bound = bound || (line.find("flagger rollback for prod/chat-api") != std::string::npos &&
                      line.find("release fp8-kernel, failed -> 200") != std::string::npos);
  }
  EXPECT_TRUE(bound);

  // The next revision: fp8-kernel is the last revision's; until a new
  // annotation arrives the rollout waits.
  flagger.NewRevision("rev-2");
  Run(flagger, 2);
  EXPECT_EQ(flagger.phase(), "Waiting") << Calls(flagger);
}

}  // namespace
}  // namespace gpucanary::canary
