// Integration: a live canary survives kill -9 of `gpucanary serve`. A real
// `gpucanary sim` fleet is scraped by a real daemon; a release announced with
// targets starts a canary; the daemon is killed mid-canary and restarted on
// the same data directory, and the release, the canary (same hosts, same
// start) and its verdict history are all there, judging on. Then the canary
// node gets the release's fp8 kernel, the power brake fails the canary, and
// the circuit breaker's actions (a webhook to a receiver in this test,
// traffic back to stable through the simulator's control API, a diagnostic
// bundle) run exactly once, also across a second kill -9. Ports are the
// OS's; every wait is on a condition with a deadline.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actions/test_util.h"
#include "net/http_client.h"
#include "net/url.h"
#include "prometheus_process.h"
#include "store/meta_db.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using gpucanary::test::ChildProcess;
using gpucanary::test::ReadTextFile;
using gpucanary::test::WaitFor;

// Four nodes on `stable`; `fp8-kernel` (whose di/dt spikes trip the power
// brake, as in scenarios/power-brake.yaml) is deployed by the test, through
// the control API, once the daemon has been restarted.
constexpr char kScenario[] = R"(seed: 11
duration: 600s
fleet:
  - {nodes: "node-[1-4]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
traffic: {rps: 160}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

constexpr char kCanary[] = "fp8-kernel";

struct Reply {
  int status = 0;  // 0: no answer
  std::string body;
  Json json;  // null unless the body is JSON
};

Reply Call(const std::string& url, const std::string& method = "GET",
           const std::string& body = "") {
  gpucanary::net::FetchOptions options;
  options.method = method;
  options.body = body;
  if (!body.empty()) options.content_type = "application/json";
  auto r = gpucanary::net::Fetch(url, options);
  Reply reply;
  if (!r) return reply;
  reply.status = r->status;
  reply.body = r->body;
  reply.json = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (reply.json.is_discarded()) reply.json = Json();
  return reply;
}

std::int64_t NowS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The diagnostic bundles in `dir` (hidden temporary folders left out).
std::vector<fs::path> Bundles(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().front() != '.') out.push_back(e.path());
  }
  return out;
}

class CanaryRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-canary-restart-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    serve_.reset();
    sim_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts the fleet, waits for its file_sd targets and reads the control
  // API's URL from its log.
  void StartSim() {
    std::ofstream(dir_ / "fleet.yaml") << kScenario;
    sim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUCANARY_BIN, "sim", "--scenario", (dir_ / "fleet.yaml").string(),
                                 "--base-port", "0", "--control-port", "0", "--targets-file",
                                 (dir_ / "targets.json").string()},
        dir_ / "sim.log");
    constexpr std::string_view kControl = "control API http://";
    ASSERT_TRUE(WaitFor(30, [&] {
      const std::string log = ReadTextFile(dir_ / "sim.log");
      const std::size_t at = log.find(kControl);
      const std::size_t end = log.find("/state", at);
      if (at == std::string::npos || end == std::string::npos) return false;
      control_ = "http://" + log.substr(at + kControl.size(), end - at - kControl.size());
      return fs::exists(dir_ / "targets.json");
    })) << ReadTextFile(dir_ / "sim.log");
  }

  // Writes the daemon's configuration: the fleet at 1 s, a canary section,
  // and the circuit breaker's actions.
  void WriteServeConfig() {
    std::ofstream(dir_ / "serve.yaml")
        << "listen: 127.0.0.1:0\n"
           "storage:\n  path: data\n"
           "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
           "scrape_configs:\n"
           "  - job_name: fleet\n"
           "    file_sd_configs:\n"
           "      - files: [targets.json]\n"
           "        refresh_interval: 5s\n"
           "canary:\n  history: 10s\n  duration: 5m\n  baseline_nodes: 3\n"
           "publish:\n  grafana: {url: '"
        << grafana_.Url("")
        << "'}\n"
           "actions:\n"
           "  - {name: page, kind: webhook, url: '"
        << receiver_.Url("/hook")
        << "', retries: 0}\n"
           "  - {name: traffic-back, kind: traffic_shift, url: '"
        << control_
        << "'}\n"
           "  - {name: evidence, kind: diagnostic_bundle, dir: '"
        << (dir_ / "bundles").string() << "'}\n";
  }

  // Starts gpucanary serve and returns its URL ("" on failure).
  std::string StartServe(const std::string& log_name) {
    return StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml", log_name, serve_);
  }

  void KillServe() {
    ASSERT_EQ(kill(serve_->pid(), SIGKILL), 0);
    ASSERT_TRUE(WaitFor(10, [&] { return !serve_->Running(); }));
  }

  Json Canary(const std::string& url) {
    return Call(url + "/api/v1/canaries/" + kCanary).json["data"];
  }
  Json Verdicts(const std::string& url) {
    return Call(url + "/api/v1/canaries/" + std::string(kCanary) + "/verdicts").json["data"];
  }

  fs::path dir_;
  std::string control_;  // the simulator's control API
  gpucanary::actions::test::Receiver receiver_;
  gpucanary::actions::test::Receiver grafana_;  // publish.grafana's annotations
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> serve_;
};

// `before` (a verdict history) is where `after` starts.
void ExpectPrefix(const Json& before, const Json& after) {
  ASSERT_TRUE(before.is_array());
  ASSERT_TRUE(after.is_array());
  ASSERT_GE(after.size(), before.size()) << after.dump();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i]) << i;
}

bool HasReleaseCause(const Json& causes, const std::string& kind) {
  if (!causes.is_array()) return false;
  for (const Json& c : causes) {
    if (c.value("kind", "") == kind && c.value("scope", "") == "release") return true;
  }
  return false;
}

TEST_F(CanaryRestartTest, KillNineMidCanaryKeepsItsReleaseAndVerdictsAndActsOnce) {
  StartSim();
  WriteServeConfig();
  std::string url = StartServe("serve1.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve1.log");

  // Every node scraped, and a few seconds of the canary node's history.
  ASSERT_TRUE(WaitFor(30, [&] {
    const Json up =
        Call(url + "/api/v1/query?query=" + gpucanary::net::UrlEncode(R"(up{exporter="dcgm"})"))
            .json["data"]["result"];
    if (!up.is_array() || up.size() != 4) return false;
    for (const Json& s : up) {
      if (s["value"][1] != "1") return false;
    }
    const Json clock =
        Call(url + "/api/v1/query?query=" +
             gpucanary::net::UrlEncode(R"(DCGM_FI_DEV_SM_CLOCK{Hostname="node-4",gpu="0"}[1h])"))
            .json["data"]["result"];
    return clock.is_array() && clock.size() == 1 && clock[0]["values"].size() >= 5;
  })) << ReadTextFile(dir_ / "serve1.log");

  // The release, as a CI job announces it: its canary starts.
  const std::int64_t started_at = NowS();
  const std::string annotation =
      R"({"id":"fp8-kernel","service":"chat-api","version":"2026.12.02-1",)"
      R"("model":"llama-3-70b-instruct","quantization":"fp8","framework":"vllm",)"
      R"("environment":"prod","started_at":)" +
      std::to_string(started_at) + R"(,"targets":["node-4"],"previous":"stable","ticket":"OPS-7"})";
  Reply posted = Call(url + "/api/v1/releases", "POST", annotation);
  ASSERT_EQ(posted.status, 201) << posted.body;
  EXPECT_EQ(posted.json["data"]["canary"], kCanary) << posted.body;

  // A few seconds judged, and the first verdicts committed.
  Json before;
  const bool judging = WaitFor(30, [&] {
    before = Canary(url);
    return before.is_object() && before["last_tick"].is_number() &&
           before["last_tick"].get<std::int64_t>() >= started_at + 2 && !Verdicts(url).empty();
  });
  ASSERT_TRUE(judging) << before.dump() << ReadTextFile(dir_ / "serve1.log");
  EXPECT_EQ(before["state"], "running");
  EXPECT_EQ(before["canary_hosts"], Json::array({"node-4"}));
  EXPECT_EQ(before["baseline_hosts"], Json::array({"node-1", "node-2", "node-3"}));
  const Json verdicts_before = Verdicts(url);
  ASSERT_FALSE(verdicts_before.empty());
  for (const Json& v : verdicts_before) EXPECT_NE(v["verdict"], "fail") << v.dump();
  // What the API shows now was committed.
  const std::int64_t tick_before = Canary(url)["last_tick"].get<std::int64_t>();

  KillServe();
  url = StartServe("serve2.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve2.log");

  // The release, as received.
  const std::string listed = "{\"status\":\"success\",\"data\":[" + annotation + "]}";
  EXPECT_EQ(Call(url + "/api/v1/releases").body, listed);
  EXPECT_EQ(Call(url + "/api/v1/releases/fp8-kernel").body,
            "{\"status\":\"success\",\"data\":" + annotation + "}");
  // The same canary, resumed, judging on past where it was killed.
  Json after = Canary(url);
  ASSERT_TRUE(after.is_object()) << ReadTextFile(dir_ / "serve2.log");
  EXPECT_EQ(after["state"], "running");
  EXPECT_EQ(after["release"], kCanary);
  EXPECT_EQ(after["started_at"], before["started_at"]);
  EXPECT_EQ(after["canary_hosts"], before["canary_hosts"]);
  EXPECT_EQ(after["baseline_hosts"], before["baseline_hosts"]);
  const bool judging_on = WaitFor(30, [&] {
    after = Canary(url);
    return after["last_tick"].is_number() &&
           after["last_tick"].get<std::int64_t>() >= tick_before + 3;
  });
  EXPECT_TRUE(judging_on) << after.dump() << ReadTextFile(dir_ / "serve2.log");
  EXPECT_EQ(after["state"], "running");
  // Its verdict history is kept.
  ExpectPrefix(verdicts_before, Verdicts(url));

  // Now the canary node runs the release: its power brake fails the canary.
  Reply deployed =
      Call(control_ + "/deploy", "POST", R"({"release":"fp8-kernel","nodes":["node-4"]})");
  ASSERT_EQ(deployed.status, 200) << deployed.body;
  const bool ended = WaitFor(60, [&] {
    after = Canary(url);
    return after.is_object() && after["state"] != "running";
  });
  ASSERT_TRUE(ended) << after.dump() << ReadTextFile(dir_ / "serve2.log");
  EXPECT_EQ(after["state"], "failed") << after.dump();
  EXPECT_EQ(after["verdict"], "fail");
  EXPECT_TRUE(HasReleaseCause(after["report"]["causes"], "power_brake")) << after.dump();
  const Json verdict = Call(url + "/api/v1/canaries/fp8-kernel/verdict").json;
  EXPECT_EQ(verdict["verdict"], "fail");
  EXPECT_EQ(verdict["decided"], true);

  // The actions ran, once, and their outcomes were committed.
  const bool acted = WaitFor(30, [&] {
    after = Canary(url);
    return after["actions"].is_array() && after["actions"].size() == 3;
  });
  ASSERT_TRUE(acted) << after.dump() << ReadTextFile(dir_ / "serve2.log");
  for (const Json& a : after["actions"]) EXPECT_EQ(a["ok"], true) << a.dump();
  auto requests = receiver_.requests();
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].Header("idempotency-key"), "gpucanary-fp8-kernel");
  const Json incident = Json::parse(requests[0].body, nullptr, false);
  EXPECT_EQ(incident["canary"], kCanary);
  EXPECT_EQ(incident["release"]["service"], "chat-api");
  EXPECT_TRUE(HasReleaseCause(incident["causes"], "power_brake")) << requests[0].body;
  EXPECT_EQ(Call(control_ + "/state").json["traffic_weights"],
            Json({{"fp8-kernel", 0.0}, {"stable", 1.0}}));
  // Grafana got the release's point annotation, then the canary's region:
  // its window, failed, the power brake.
  Json region;
  ASSERT_TRUE(WaitFor(30, [&] {
    for (const auto& r : grafana_.requests()) {
      const Json a = Json::parse(r.body, nullptr, false);
      if (r.target == "/api/annotations" && a.contains("timeEnd")) region = a;
    }
    return region.is_object();
  }));
  EXPECT_EQ(region["time"], static_cast<std::int64_t>(after["started_at"].get<double>() * 1000));
  EXPECT_GT(region["timeEnd"].get<std::int64_t>(), region["time"].get<std::int64_t>());
  EXPECT_EQ(region["tags"][2], "failed") << region.dump();
  EXPECT_NE(region["text"].get<std::string>().find("power_brake (release)"), std::string::npos)
      << region.dump();
  std::vector<fs::path> bundles = Bundles(dir_ / "bundles");
  ASSERT_EQ(bundles.size(), 1U);
  EXPECT_TRUE(fs::exists(bundles[0] / "incident.json"));
  EXPECT_TRUE(fs::exists(bundles[0] / "telemetry.om"));
  const Json verdicts_failed = Verdicts(url);
  ExpectPrefix(verdicts_before, verdicts_failed);
  EXPECT_EQ(verdicts_failed.back()["verdict"], "fail");
  EXPECT_TRUE(HasReleaseCause(verdicts_failed.back()["causes"], "power_brake"));

  // Traffic goes back to even by hand; a second kill -9 and restart must not
  // act again (the traffic stays even) nor forget the canary.
  ASSERT_EQ(Call(control_ + "/traffic", "POST", R"({"even":true})").status, 200);
  KillServe();
  url = StartServe("serve3.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve3.log");
  after = Canary(url);
  EXPECT_EQ(after["state"], "failed") << after.dump() << ReadTextFile(dir_ / "serve3.log");
  EXPECT_EQ(after["verdict"], "fail");
  EXPECT_EQ(after["started_at"], before["started_at"]);
  EXPECT_EQ(after["canary_hosts"], before["canary_hosts"]);
  EXPECT_TRUE(HasReleaseCause(after["report"]["causes"], "power_brake")) << after.dump();
  EXPECT_EQ(after["actions"].size(), 3U);
  EXPECT_EQ(Call(url + "/api/v1/canaries/fp8-kernel/verdict").json["verdict"], "fail");
  const Reply rollback =
      Call(url + "/api/v1/flagger/rollback", "POST", R"({"metadata":{"canary":"fp8-kernel"}})");
  EXPECT_EQ(rollback.status, 200) << rollback.body;
  EXPECT_EQ(Verdicts(url), verdicts_failed);
  // A clean stop finishes whatever the runner had queued.
  serve_->Stop();
  EXPECT_EQ(receiver_.requests().size(), 1U);
  EXPECT_EQ(Bundles(dir_ / "bundles").size(), 1U);
  EXPECT_EQ(Call(control_ + "/state").json["traffic_weights"], Json::object());

  // The metadata database, read directly: one outcome per action.
  auto meta = gpucanary::store::MetaDb::Open(dir_ / "data" / "meta.sqlite");
  ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
  auto recorded = (*meta)->Actions(kCanary);
  ASSERT_TRUE(recorded.has_value());
  ASSERT_EQ(recorded->size(), 3U);
  EXPECT_EQ((*recorded)[0].name, "page");
  EXPECT_EQ((*recorded)[1].name, "traffic-back");
  EXPECT_EQ((*recorded)[2].name, "evidence");
  auto stored = (*meta)->Verdicts(kCanary);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->size(), verdicts_failed.size());
}

}  // namespace
