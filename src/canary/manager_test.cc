// The live canary end to end below the HTTP layer: the simulator's
// power-brake fleet in a real store, a CanaryManager on a ManualClock fed
// second by second, the verdict and its cause committed to SQLite, the fail
// handler called once, and a restart in the middle that resumes the canary.

#include "canary/manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "analysis/report/report_json.h"
#include "canary/test_util.h"

namespace gpucanary::canary {
namespace {

namespace fs = std::filesystem;

using testing::kSimStart;
constexpr std::int64_t kStart = kSimStart;

class CanaryManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_canary_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    OpenStores();
  }
  void TearDown() override {
    manager_.reset();
    meta_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  void OpenStores() {
    auto store = store::Store::Open(dir_ / "data", {});
    ASSERT_TRUE(store.has_value()) << store.error().ToString();
    store_ = std::move(*store);
    auto meta = store::MetaDb::Open(dir_ / "data" / "meta.sqlite");
    ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
    meta_ = std::move(*meta);
  }

  void LoadTelemetry() { testing::LoadRecording(testing::PowerBrakeRecording(), *store_); }

  void NewManager(std::int64_t duration_s = 100) {
    CanaryOptions options;
    options.policy = analysis::DefaultPolicy();
    options.history_s = 15;
    options.duration_s = duration_s;
    options.baseline_nodes = 3;
    CanaryHooks hooks;
    hooks.set_fast = [this](const std::string& key, const std::vector<std::string>& hosts) {
      fast_[key] = hosts;
    };
    hooks.clear_fast = [this](const std::string& key) { fast_.erase(key); };
    hooks.on_fail = [this](const CanaryView& view) { failed_.push_back(view); };
    hooks.on_node_fault = [this](const CanaryView& view, const std::string& node) {
      node_faults_.emplace_back(view.id, node);
    };
    hooks.log = [this](std::string_view line) { log_.emplace_back(line); };
    manager_ = std::make_unique<CanaryManager>(*store_, *meta_, clock_, options, hooks);
  }

  // Starts the canary of the power-brake release on node-4 (at +20 s).
  Result<std::string> StartFp8() {
    return manager_->Start({.release_id = "fp8-kernel",
                            .started_at = static_cast<double>(kStart + 20),
                            .targets = {"node-4"},
                            .selector = {},
                            .previous = "stable"});
  }

  // Advances the clock a second at a time to `until` (Unix s), polling.
  void RunUntil(std::int64_t until) {
    while (clock_.NowMs() < until * 1000) {
      clock_.Advance(1000);
      manager_->Poll();
    }
  }

  fs::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::MetaDb> meta_;
  ManualClock clock_{(kStart + 22) * 1000};
  std::unique_ptr<CanaryManager> manager_;
  std::map<std::string, std::vector<std::string>> fast_;
  std::vector<CanaryView> failed_;
  std::vector<std::pair<std::string, std::string>> node_faults_;  // canary, node
  std::vector<std::string> log_;
};

TEST_F(CanaryManagerTest, APowerBrakeReleaseFailsLiveAndTheBreakerIsCalledOnce) {
  LoadTelemetry();
  NewManager();
  auto id = StartFp8();
  ASSERT_TRUE(id.has_value()) << id.error().ToString();
  auto view = manager_->Get(*id);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->canary_hosts, std::vector<std::string>{"node-4"});
  EXPECT_EQ(view->baseline_hosts, (std::vector<std::string>{"node-1", "node-2", "node-3"}));
  ASSERT_EQ(fast_.count("fp8-kernel"), 1U);
  EXPECT_EQ(fast_["fp8-kernel"].size(), 4U);

  RunUntil(kStart + 140);
  view = manager_->Get(*id);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->state, vocab::CanaryState::kFailed);
  ASSERT_EQ(failed_.size(), 1U);
  bool brake = false;
  for (const analysis::Cause& c : view->report.causes) {
    brake = brake || (c.kind == vocab::CauseKind::kPowerBrake && c.scope == vocab::Scope::kRelease);
  }
  EXPECT_TRUE(brake) << analysis::ReportToJson(view->report);
  EXPECT_FALSE(fast_.contains("fp8-kernel"));  // fast scraping ends with the canary
  // Decided within seconds of the brake, not at the end of the window.
  ASSERT_TRUE(view->report.decided_at.has_value());
  EXPECT_LT(*view->report.decided_at, static_cast<double>(kStart + 60));

  auto record = meta_->GetCanary(*id);
  ASSERT_TRUE(record.has_value() && record->has_value());
  EXPECT_EQ((*record)->state, "failed");
  auto verdicts = meta_->Verdicts(*id);
  ASSERT_TRUE(verdicts.has_value());
  ASSERT_FALSE(verdicts->empty());
  EXPECT_EQ(verdicts->back().verdict, "fail");
  EXPECT_FALSE(verdicts->back().causes.empty());
}

// The live canary and `gpucanary judge` decide alike on the same data: the
// power-brake fleet simulated again into a canary recording (node-4) and a
// baseline recording (the three baseline nodes the manager picked), replayed
// as the CLI does over the live canary's window (its 15 s of history to the
// last second it judged): the same verdict, decision time, causes (kind,
// scope, GPUs, times, sentence) and per-metric results.
TEST_F(CanaryManagerTest, TheLiveVerdictIsTheOfflineJudges) {
  LoadTelemetry();
  NewManager();
  auto id = StartFp8();
  ASSERT_TRUE(id.has_value()) << id.error().ToString();
  RunUntil(kStart + 140);
  auto live = manager_->Get(*id);
  ASSERT_TRUE(live.has_value());
  const analysis::Report& l = live->report;
  ASSERT_EQ(live->baseline_hosts, (std::vector<std::string>{"node-1", "node-2", "node-3"}));
  ASSERT_TRUE(l.last_tick.has_value());

  // The same scenario, one recording per arm (node-5 is in neither).
  const fs::path canary = dir_ / "canary.om";
  const fs::path baseline = dir_ / "baseline.om";
  const fs::path other = dir_ / "other.om";
  {
    auto scenario = sim::ParseScenario(testing::kPowerBrakeScenario, "test.yaml");
    ASSERT_TRUE(scenario.has_value());
    sim::Engine engine(*scenario);
    auto c = recording::RecordingWriter::Open(canary.string());
    auto b = recording::RecordingWriter::Open(baseline.string());
    auto o = recording::RecordingWriter::Open(other.string());
    ASSERT_TRUE(c.has_value() && b.has_value() && o.has_value());
    std::vector<recording::RecordingWriter*> per_node = {b->get(), b->get(), b->get(), c->get(),
                                                         o->get()};
    ASSERT_EQ(engine.node_count(), per_node.size());
    sim::OfflineOptions options;
    options.duration_s = scenario->duration_s;
    ASSERT_TRUE(sim::WriteScenarioRecording(engine, options, per_node).has_value());
    for (auto* w : {c->get(), b->get(), o->get()}) ASSERT_TRUE(w->Close().ok());
  }
  const std::int64_t release = kStart + 20;
  std::optional<analysis::Report> offline;
  Status st = analysis::ReplayRecordings(
      {{baseline.string(), analysis::Role::kBaseline, std::nullopt},
       {canary.string(), analysis::Role::kCanary, std::nullopt}},
      {}, [&](analysis::Replay& replay) -> Status {
        analysis::Judge judge({.policy = analysis::DefaultPolicy(), .release_start_s = release});
        analysis::Tick tick;
        for (;;) {
          Result<bool> more = replay.Next(tick);
          if (!more) return Error(more.error());
          if (!*more) break;
          if (tick.time_s < release - 15 || static_cast<double>(tick.time_s) > *l.last_tick)
            continue;
          judge.Add(tick, analysis::Catalog::Of(replay));
        }
        offline = judge.Snapshot();
        return Status::Ok();
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(offline.has_value());
  const analysis::Report& o = *offline;
  EXPECT_EQ(o.verdict, l.verdict);
  EXPECT_EQ(o.verdict, analysis::Verdict::kFail);
  EXPECT_EQ(o.decided_at, l.decided_at);
  EXPECT_EQ(o.last_tick, l.last_tick);
  ASSERT_EQ(o.causes.size(), l.causes.size()) << analysis::ReportToJson(o);
  for (std::size_t i = 0; i < o.causes.size(); ++i) {
    EXPECT_EQ(o.causes[i].kind, l.causes[i].kind);
    EXPECT_EQ(o.causes[i].scope, l.causes[i].scope);
    EXPECT_EQ(o.causes[i].gpus, l.causes[i].gpus);
    EXPECT_EQ(o.causes[i].since, l.causes[i].since);
    EXPECT_EQ(o.causes[i].decided_at, l.causes[i].decided_at);
    EXPECT_EQ(o.causes[i].summary, l.causes[i].summary);
  }
  std::string names;
  for (const analysis::MetricResult& m : l.metrics) names += m.name + " ";
  names += "| offline: ";
  for (const analysis::MetricResult& m : o.metrics) names += m.name + " ";
  ASSERT_EQ(o.metrics.size(), l.metrics.size()) << names;
  for (std::size_t i = 0; i < o.metrics.size(); ++i) {
    SCOPED_TRACE(o.metrics[i].name);
    EXPECT_EQ(o.metrics[i].name, l.metrics[i].name);
    EXPECT_EQ(o.metrics[i].result, l.metrics[i].result);
    EXPECT_EQ(o.metrics[i].decided_at, l.metrics[i].decided_at);
    EXPECT_EQ(o.metrics[i].blocks, l.metrics[i].blocks);
    if (!std::isnan(o.metrics[i].change) || !std::isnan(l.metrics[i].change)) {
      EXPECT_DOUBLE_EQ(o.metrics[i].change, l.metrics[i].change);
    }
  }
}

TEST_F(CanaryManagerTest, ARestartMidCanaryResumesFromTheStore) {
  LoadTelemetry();
  NewManager();
  ASSERT_TRUE(manager_
                  ->Start({.release_id = "fp8-kernel",
                           .started_at = static_cast<double>(kStart + 20),
                           .targets = {"node-4"},
                           .selector = {},
                           .previous = "stable"})
                  .has_value());
  RunUntil(kStart + 26);  // running, nothing decided yet
  EXPECT_EQ(manager_->Get("fp8-kernel")->state, vocab::CanaryState::kRunning);
  manager_.reset();  // the daemon dies

  NewManager();
  ASSERT_TRUE(manager_->Resume().ok());
  auto view = manager_->Get("fp8-kernel");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->state, vocab::CanaryState::kRunning);
  EXPECT_EQ(view->baseline_hosts, (std::vector<std::string>{"node-1", "node-2", "node-3"}));
  RunUntil(kStart + 140);
  EXPECT_EQ(manager_->Get("fp8-kernel")->state, vocab::CanaryState::kFailed);
  EXPECT_EQ(failed_.size(), 1U);
  // A second canary for the same release is refused, before and after.
  auto again = manager_->Start({.release_id = "fp8-kernel",
                                .started_at = static_cast<double>(kStart + 20),
                                .targets = {"node-4"},
                                .selector = {},
                                .previous = ""});
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), StatusCode::kAlreadyExists);
}

// A canary that ended before the restart is served again as it ended (its
// state, hosts and last report, read back from MetaDb), and never judged or
// acted on again.
TEST_F(CanaryManagerTest, AnEndedCanaryIsStillThereAfterARestart) {
  LoadTelemetry();
  NewManager();
  ASSERT_TRUE(manager_
                  ->Start({.release_id = "fp8-kernel",
                           .started_at = static_cast<double>(kStart + 20),
                           .targets = {"node-4"},
                           .selector = {},
                           .previous = "stable"})
                  .has_value());
  RunUntil(kStart + 140);
  const CanaryView ended = *manager_->Get("fp8-kernel");
  ASSERT_EQ(ended.state, vocab::CanaryState::kFailed);
  const std::size_t verdicts = meta_->Verdicts("fp8-kernel")->size();
  manager_.reset();

  NewManager();
  ASSERT_TRUE(manager_->Resume().ok());
  auto view = manager_->Get("fp8-kernel");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->state, vocab::CanaryState::kFailed);
  EXPECT_EQ(view->started_at, ended.started_at);
  EXPECT_EQ(view->ended_at, ended.ended_at);
  EXPECT_EQ(view->canary_hosts, ended.canary_hosts);
  EXPECT_EQ(view->baseline_hosts, ended.baseline_hosts);
  EXPECT_EQ(view->last_tick, ended.last_tick);
  EXPECT_EQ(analysis::ReportToJson(view->report), analysis::ReportToJson(ended.report));
  EXPECT_EQ(manager_->List().size(), 1U);
  RunUntil(kStart + 150);
  EXPECT_EQ(failed_.size(), 1U);  // the first manager's call
  EXPECT_TRUE(fast_.empty());
  EXPECT_EQ(meta_->Verdicts("fp8-kernel")->size(), verdicts);
  EXPECT_EQ(manager_->Stop("fp8-kernel", "test").code(), StatusCode::kFailedPrecondition);
}

// The fleet's telemetry stops (the recording ends at 140 s) while a
// canary of 200 s is still open: it still ends at its duration, without a
// verdict, instead of holding its hosts on fast scraping and every
// Flagger or Argo gate that waits on it for good.
TEST_F(CanaryManagerTest, ACanaryWhoseTelemetryStopsStillEndsAtItsDuration) {
  LoadTelemetry();
  NewManager(200);
  ASSERT_TRUE(manager_
                  ->Start({.release_id = "noop",
                           .started_at = static_cast<double>(kStart + 20),
                           .targets = {"node-5"},
                           .selector = {},
                           .previous = "stable"})
                  .has_value());
  RunUntil(kStart + 400);
  const CanaryView view = *manager_->Get("noop");
  EXPECT_NE(view.state, vocab::CanaryState::kRunning) << analysis::ReportToJson(view.report);
  EXPECT_TRUE(fast_.empty());
}

// A harmless release on node-4 while node-2, a baseline node, brakes on its
// own at 40 s: the node hook is called once for node-2, the release is not
// failed.
TEST_F(CanaryManagerTest, ABaselineNodesOwnFaultCallsTheNodeHookNotTheBreaker) {
  const fs::path recording = dir_ / "bad-node.om";
  testing::Simulate(R"(seed: 11
duration: 90s
fleet:
  - {nodes: "node-[1-5]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  next: {profile: baseline}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 20s, deploy: next, nodes: [node-4]}
  - {at: 40s, fault: power_brake, nodes: [node-2], gpus: "0-3"}
)",
                    recording);
  testing::LoadRecording(recording, *store_);
  NewManager();
  ASSERT_TRUE(manager_
                  ->Start({.release_id = "next",
                           .started_at = static_cast<double>(kStart + 20),
                           .targets = {"node-4"},
                           .selector = {},
                           .previous = "stable"})
                  .has_value());
  RunUntil(kStart + 90);
  auto view = manager_->Get("next");
  ASSERT_TRUE(view.has_value());
  EXPECT_NE(view->state, vocab::CanaryState::kFailed) << analysis::ReportToJson(view->report);
  EXPECT_TRUE(failed_.empty());
  ASSERT_EQ(node_faults_.size(), 1U) << analysis::ReportToJson(view->report);
  EXPECT_EQ(node_faults_[0], (std::pair<std::string, std::string>{"next", "node-2"}));
}

TEST_F(CanaryManagerTest, ReleasesWithoutHostsAreRefusedWithAReason) {
  NewManager();
  auto none = manager_->Start(
      {.release_id = "r", .started_at = 1, .targets = {}, .selector = {}, .previous = ""});
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().message(), "release r names no targets and no selector");
  auto empty = manager_->Start(
      {.release_id = "r",
       .started_at = 1,
       .targets = {},
       .selector = {*model::Matcher::Make(model::Matcher::Type::kEqual, "Hostname", "node-99")},
       .previous = ""});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message().find("matches no host"), std::string::npos);
}

TEST_F(CanaryManagerTest, AReleasePastItsCanaryWindowIsNotJudgedLive) {
  NewManager();
  // Started a day before the manager's clock: stored elsewhere, never a
  // live canary (its verdict would be final at once).
  auto old = manager_->Start({.release_id = "old",
                              .started_at = static_cast<double>(clock_.NowMs()) / 1000.0 - 86400,
                              .targets = {"node-2"},
                              .selector = {},
                              .previous = ""});
  ASSERT_FALSE(old.has_value());
  EXPECT_EQ(old.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(old.error().message().find("past the canary's duration"), std::string::npos)
      << old.error().message();
  EXPECT_FALSE(manager_->Get("old").has_value());
}

}  // namespace
}  // namespace gpucanary::canary
