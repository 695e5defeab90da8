// gpucanary judge --prometheus, end to end with real processes: the
// simulator records a fleet where a canary release trips the power brake on
// one node (and a healthy one on another run), promtool backfills both arms'
// recordings into a Prometheus's data directory, Debian's Prometheus serves
// them, and the judge reads both arms back by host. The verdict, its causes
// and every metric's result must be what the judge says of the same
// recordings read as files.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_harness.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::testing::RunResult;
using ::testing::HasSubstr;

constexpr std::int64_t kStart = 1764680000;  // the simulator's t = 0

// node-3 gets `release` at 60 s; with power_spikiness it trips the brake.
std::string Scenario(bool bad) {
  return std::string(R"(seed: 11
duration: 420s
fleet:
  - {nodes: "node-[1-3]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  next: {profile: baseline)") +
         (bad ? ", power_spikiness: 2.5" : "") + R"(}
traffic: {rps: 120}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 60s, deploy: next, nodes: [node-3]}
)";
}

class JudgePrometheusTest : public gpucanary::testing::CliHarness {
 protected:
  JudgePrometheusTest() : CliHarness("gpucanary-judge-prom") {}

  // Simulates the scenario into dir_/name, node-3 as the canary, and starts
  // a Prometheus holding both recordings.
  std::unique_ptr<gpucanary::test::PrometheusProcess> SimulateAndServe(const std::string& name,
                                                                       bool bad) {
    std::ofstream(dir_ / (name + ".yaml")) << Scenario(bad);
    RunResult r = Run("sim --scenario " + (dir_ / (name + ".yaml")).string() + " --offline " +
                      (dir_ / name).string() + " --canary-nodes node-3");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string error;
    auto prometheus = gpucanary::test::PrometheusProcess::Start(
        [](int) { return std::string("global: {}\n"); }, {"--storage.tsdb.retention.time=100y"},
        &error,
        [&](const fs::path& data) {
          for (const char* arm : {"baseline.om", "canary.om"}) {
            const std::string cmd = "promtool tsdb create-blocks-from openmetrics " +
                                    (dir_ / name / arm).string() + " " + data.string() + " >>" +
                                    (dir_ / "promtool.log").string() + " 2>&1";
            if (std::system(cmd.c_str()) != 0) return false;
          }
          return true;
        });
    EXPECT_NE(prometheus, nullptr) << error << gpucanary::testing::Slurp(dir_ / "promtool.log");
    return prometheus;
  }

  RunResult JudgeFiles(const std::string& name) {
    return Run("judge --baseline " + (dir_ / name / "baseline.om").string() + " --canary " +
               (dir_ / name / "canary.om").string() + " --release-start " +
               std::to_string(kStart + 60));
  }

  RunResult JudgeServer(const std::string& url, const std::string& extra = "") {
    return Run("judge --prometheus " + url +
               " --canary-hosts node-3 --baseline-hosts node-1,node-2 --from " +
               std::to_string(kStart) + " --to " + std::to_string(kStart + 421) +
               " --release-start " + std::to_string(kStart + 60) + extra);
  }
};

// Every metric's name and result, in the report's order.
nlohmann::json Results(const nlohmann::json& report) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& m : report["metrics"]) out.push_back({m["name"], m["result"]});
  return out;
}

nlohmann::json CauseKinds(const nlohmann::json& report) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& c : report["causes"])
    out.push_back({c["kind"], c["scope"], c["gpus"]});
  return out;
}

TEST_F(JudgePrometheusTest, ABrakedCanaryFailsFromPrometheusAsFromFiles) {
  auto prometheus = SimulateAndServe("bad", true);
  ASSERT_NE(prometheus, nullptr);
  RunResult files = JudgeFiles("bad");
  ASSERT_EQ(files.exit_code, 1) << files.err << files.out;
  RunResult server = JudgeServer(prometheus->url());
  ASSERT_EQ(server.exit_code, 1) << server.err << server.out;
  const nlohmann::json f = nlohmann::json::parse(files.out);
  const nlohmann::json s = nlohmann::json::parse(server.out);
  EXPECT_EQ(s["verdict"], "fail");
  EXPECT_EQ(s["canary_gpus"], 2);
  EXPECT_EQ(s["baseline_gpus"], 4);
  EXPECT_EQ(CauseKinds(s), CauseKinds(f)) << server.out;
  EXPECT_EQ(s["causes"][0]["kind"], "power_brake") << server.out;
  EXPECT_EQ(Results(s), Results(f)) << server.out << "\n" << files.out;
  EXPECT_EQ(s["decided_at"], f["decided_at"]);

  // summarize --prometheus: the canary's GPUs, the same rows as from its file
  // (whose samples run from t = 1 s to 420 s; --to is exclusive).
  const std::string range =
      " --from " + std::to_string(kStart) + " --to " + std::to_string(kStart + 421);
  RunResult summary =
      Run("summarize --prometheus " + prometheus->url() + " --hosts node-3" + range);
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  RunResult file_summary = Run("summarize " + (dir_ / "bad" / "canary.om").string());
  ASSERT_EQ(file_summary.exit_code, 0) << file_summary.err;
  EXPECT_THAT(summary.out, HasSubstr(prometheus->url() + ": 2 GPU(s), "));
  EXPECT_THAT(summary.out, HasSubstr("(prometheus); a recording of"));
  for (const char* gpu : {"node-3/0 ", "node-3/1 "}) {
    const auto row = [&](const std::string& text) {
      const std::size_t at = text.find(gpu);
      return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    EXPECT_NE(row(summary.out), "") << summary.out;
    EXPECT_EQ(row(summary.out), row(file_summary.out));
  }
  RunResult refused =
      Run("summarize --prometheus " + prometheus->url() + " --selector '{job=~\"(\"}'" + range);
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  RunResult both = Run("summarize --prometheus " + prometheus->url() +
                       " --hosts a --selector '{a=\"b\"}'" + range);
  EXPECT_EQ(both.exit_code, 3);
  EXPECT_THAT(both.err, HasSubstr("give --hosts or --selector, not both"));

  // A host the server does not have: the arm is empty, a clear error.
  RunResult none = Run("judge --prometheus " + prometheus->url() +
                       " --canary-hosts node-9 --baseline-hosts node-1 --from " +
                       std::to_string(kStart) + " --to " + std::to_string(kStart + 420));
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_THAT(none.err, HasSubstr("no GPU series in canary node-9 in " + prometheus->url()));
  EXPECT_EQ(none.out, "");

  // A selector the server refuses is bad input, named with its arm.
  RunResult bad = JudgeServer(prometheus->url(), " --canary-selector '{job=~\"(\"}'");
  EXPECT_EQ(bad.exit_code, 3) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("canary arm, {job=~\"(\"}"));

  // The server gone: no evidence either way, exit 2 with the client's reason.
  const std::string url = prometheus->url();
  prometheus.reset();
  RunResult gone = JudgeServer(url);
  EXPECT_EQ(gone.exit_code, 2) << gone.err;
  EXPECT_THAT(gone.err, HasSubstr("gpucanary judge: baseline arm, "));
  EXPECT_EQ(gone.out, "");
  RunResult unreachable = Run("summarize --prometheus " + url + range);
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.err;
  EXPECT_THAT(unreachable.err, HasSubstr("gpucanary summarize: "));
}

TEST_F(JudgePrometheusTest, AHealthyCanaryPassesFromPrometheusAsFromFiles) {
  auto prometheus = SimulateAndServe("good", false);
  ASSERT_NE(prometheus, nullptr);
  RunResult files = JudgeFiles("good");
  RunResult server = JudgeServer(prometheus->url());
  ASSERT_EQ(server.exit_code, files.exit_code) << server.err << server.out << files.out;
  EXPECT_EQ(server.exit_code, 0) << server.out;
  const nlohmann::json f = nlohmann::json::parse(files.out);
  const nlohmann::json s = nlohmann::json::parse(server.out);
  EXPECT_EQ(s["verdict"], "pass");
  EXPECT_EQ(Results(s), Results(f)) << server.out << "\n" << files.out;
}

TEST_F(JudgePrometheusTest, FlagsThatDoNotMakeOneWayInAreUsageErrors) {
  const std::string url = " --prometheus http://127.0.0.1:9";
  const std::string range = " --from " + std::to_string(kStart) + " --to ";
  RunResult r = Run("judge" + url + " --baseline-hosts a" + range + std::to_string(kStart + 60));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("give the canary's --canary-hosts or --canary-selector"));
  r = Run("judge" + url + " --canary-hosts a,b --baseline-hosts b" + range +
          std::to_string(kStart + 60));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("host 'b' is in both --canary-hosts and --baseline-hosts"));
  r = Run("judge" + url + " --canary-hosts a --baseline-hosts b");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--from T and --to T"));
  r = Run("judge" + url + " --canary-hosts a --baseline-hosts b" + range +
          std::to_string(kStart + 2 * 86400));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("a range of 1 s to 24 h"));
  r = Run("judge --prometheus not-a-url --canary-hosts a --baseline-hosts b" + range +
          std::to_string(kStart + 60));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--prometheus: "));
  r = Run("judge --baseline x.om --canary y.om --canary-hosts a");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("go with --prometheus URL"));
  r = Run("judge --baseline x.om" + url + " --canary-hosts a --baseline-hosts b" + range +
          std::to_string(kStart + 60));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("without --baseline and --canary files"));
}

}  // namespace
