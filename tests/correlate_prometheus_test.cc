// gpucanary correlate --prometheus, end to end with real processes: the
// simulator records a fleet where a release trips the power brake, promtool
// backfills the recording into a Prometheus's data directory (docs/contracts.md §4
// recordings are what `promtool tsdb create-blocks-from openmetrics` takes),
// Debian's Prometheus serves it, and correlate reads its raw samples back.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_harness.h"
#include "net/http_client.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using gpucanary::testing::RunResult;
using ::testing::HasSubstr;

constexpr std::int64_t kStart = 1764680000;  // the simulator's t = 0

// Two overlapping releases: fp8-kernel brakes node-2 and node-3,
// tokenizer-fix is harmless on node-3 and node-5.
constexpr const char* kScenario = R"(seed: 5
duration: 700s
fleet:
  - {nodes: "node-[1-6]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
  tokenizer-fix: {profile: baseline}
traffic: {rps: 200}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 300s, deploy: fp8-kernel, nodes: [node-2, node-3]}
  - {at: 480s, deploy: tokenizer-fix, nodes: [node-3, node-5]}
)";

class CorrelatePrometheusTest : public gpucanary::testing::CliHarness {
 protected:
  CorrelatePrometheusTest() : CliHarness("gpucanary-correlate-prom") {}

  // Simulates `scenario` into dir_/`out` at `scrape_s` and starts Debian's
  // Prometheus on its recording, backfilled with promtool; null (the
  // failure recorded) when either fails.
  std::unique_ptr<gpucanary::test::PrometheusProcess> Backfilled(std::string_view scenario,
                                                                 const std::string& out,
                                                                 int scrape_s) {
    std::ofstream(dir_ / (out + ".yaml")) << scenario;
    RunResult r = Run("sim --scenario " + (dir_ / (out + ".yaml")).string() + " --offline " +
                      (dir_ / out).string() + " --scrape-interval " + std::to_string(scrape_s));
    if (r.exit_code != 0) {
      ADD_FAILURE() << r.err;
      return nullptr;
    }
    std::string error;
    auto prometheus = gpucanary::test::PrometheusProcess::Start(
        [](int) { return std::string("global: {}\n"); }, {"--storage.tsdb.retention.time=100y"},
        &error,
        [&](const fs::path& data) {
          const std::string cmd = "promtool tsdb create-blocks-from openmetrics " +
                                  (dir_ / out / "telemetry.om").string() + " " + data.string() +
                                  " >" + (dir_ / "promtool.log").string() + " 2>&1";
          return std::system(cmd.c_str()) == 0;
        });
    if (prometheus == nullptr) {
      ADD_FAILURE() << error << gpucanary::testing::Slurp(dir_ / "promtool.log");
    }
    return prometheus;
  }
};

TEST_F(CorrelatePrometheusTest, BlamesTheReleaseFromAPrometheusBackfill) {
  auto prometheus = Backfilled(kScenario, "out", 5);
  ASSERT_NE(prometheus, nullptr);

  const std::string range =
      " --from " + std::to_string(kStart) + " --to " + std::to_string(kStart + 700);
  RunResult r = Run("correlate --prometheus " + prometheus->url() + " --releases " +
                    (dir_ / "out" / "releases.jsonl").string() + range);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"], 12);
  bool blamed = false;
  for (const nlohmann::json& reg : j["regressions"]) {
    for (const nlohmann::json& s : reg["suspects"]) {
      EXPECT_EQ(s["release"], "fp8-kernel") << reg.dump();
    }
    if (reg["causes"][0]["kind"] == "power_brake" && !reg["suspects"].empty()) {
      blamed = true;
      EXPECT_EQ(reg["nodes"], nlohmann::json::array({"node-2", "node-3"})) << reg.dump();
    }
  }
  EXPECT_TRUE(blamed) << r.out;

  // The same files read directly give the same answer.
  RunResult files = Run("correlate --telemetry " + (dir_ / "out" / "telemetry.om").string() +
                        " --releases " + (dir_ / "out" / "releases.jsonl").string() + range);
  ASSERT_EQ(files.exit_code, 0) << files.err;
  EXPECT_EQ(nlohmann::json::parse(files.out)["regressions"].size(), j["regressions"].size());

  // The daemon asked for the same range from the Prometheus of
  // canary.history_prometheus (its store is empty): the same regressions,
  // with the releases announced to it.
  std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\n"
                                        "storage: {path: data}\n"
                                        "canary:\n  history_prometheus: {url: \""
                                     << prometheus->url() << "\"}\n";
  std::unique_ptr<gpucanary::test::ChildProcess> serve;
  const std::string daemon = gpucanary::test::StartServeChild(
      GPUCANARY_BIN, dir_, dir_ / "serve.yaml", "serve.log", serve);
  ASSERT_FALSE(daemon.empty()) << gpucanary::testing::Slurp(dir_ / "serve.log");
  std::ifstream releases(dir_ / "out" / "releases.jsonl");
  for (std::string line; std::getline(releases, line);) {
    gpucanary::net::FetchOptions post;
    post.method = "POST";
    post.content_type = "application/json";
    post.body = line;
    auto posted = gpucanary::net::Fetch(daemon + "/api/v1/releases", post);
    ASSERT_TRUE(posted.has_value());
    ASSERT_LT(posted->status, 300) << posted->body;
  }
  auto answer = gpucanary::net::Fetch(
      daemon + "/api/v1/correlate?source=prometheus&from=" + std::to_string(kStart) +
      "&to=" + std::to_string(kStart + 700));
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->status, 200) << answer->body;
  const nlohmann::json via_daemon = nlohmann::json::parse(answer->body)["data"];
  EXPECT_EQ(via_daemon["regressions"].size(), j["regressions"].size()) << answer->body;
  EXPECT_EQ(via_daemon["gpus"], 12);
  serve.reset();

  // Prometheus gone: exit 1 with the client's reason; bad flags: exit 3.
  const std::string url = prometheus->url();
  prometheus.reset();
  r = Run("correlate --prometheus " + url + " --releases " +
          (dir_ / "out" / "releases.jsonl").string() + range);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("gpucanary correlate: "));
  r = Run("correlate --prometheus " + url + " --releases " +
          (dir_ / "out" / "releases.jsonl").string() + " --from " + std::to_string(kStart) +
          " --to " + std::to_string(kStart + 2 * 86400));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("a range of 1 s to 24 h"));
  r = Run("correlate --prometheus " + url + range);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("--prometheus reads the telemetry"));
}

}  // namespace

// Longer than 3 h, a Prometheus is read folded: one point per series per
// bucket, computed by Prometheus (avg/last/max_over_time), never the raw
// samples. The verdict is the raw one's: the same release blamed for the
// same nodes' power brake, at the folded width.
constexpr const char* kLongScenario = R"(seed: 9
duration: 4h
fleet:
  - {nodes: "node-[1-6]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  fp8-kernel: {profile: baseline, power_spikiness: 2.5}
  tokenizer-fix: {profile: baseline}
traffic: {rps: 200, diurnal: {amplitude: 0.2, period: 24h}}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 5400s, deploy: tokenizer-fix, nodes: [node-4, node-5]}
  - {at: 7200s, deploy: fp8-kernel, nodes: [node-2, node-3]}
)";

TEST_F(CorrelatePrometheusTest, ALongRangeIsFoldedOnTheServerAndGivesTheRawVerdict) {
  auto prometheus = Backfilled(kLongScenario, "long", 15);
  ASSERT_NE(prometheus, nullptr);

  const std::string args = " --releases " + (dir_ / "long" / "releases.jsonl").string() +
                           " --from " + std::to_string(kStart) + " --to " +
                           std::to_string(kStart + 4 * 3600);
  RunResult r = Run("correlate --prometheus " + prometheus->url() + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json folded = nlohmann::json::parse(r.out);
  // 4 h in at most 360 buckets: 60 s (kMaxFoldedBuckets, FoldedResolution).
  EXPECT_EQ(folded["resolution_s"], 60);
  EXPECT_EQ(folded["gpus"], 12);
  RunResult raw_run = Run("correlate --telemetry " + (dir_ / "long" / "telemetry.om").string() +
                          args + " --resolution 60");
  ASSERT_EQ(raw_run.exit_code, 0) << raw_run.err;
  const nlohmann::json raw = nlohmann::json::parse(raw_run.out);

  // The suspects named, each with the nodes it is blamed for, agree.
  const auto blamed = [](const nlohmann::json& report) {
    std::map<std::string, std::set<std::string>> out;
    for (const nlohmann::json& reg : report["regressions"]) {
      for (const nlohmann::json& s : reg["suspects"]) {
        for (const nlohmann::json& n : reg["nodes"]) {
          out[s["release"].get<std::string>()].insert(n.get<std::string>());
        }
      }
    }
    return out;
  };
  const auto folded_blame = blamed(folded);
  EXPECT_EQ(folded_blame, blamed(raw)) << r.out << "\n" << raw_run.out;
  ASSERT_TRUE(folded_blame.contains("fp8-kernel")) << r.out;
  EXPECT_EQ(folded_blame.at("fp8-kernel"), (std::set<std::string>{"node-2", "node-3"})) << r.out;
  EXPECT_FALSE(folded_blame.contains("tokenizer-fix")) << r.out;
  // Tokens per second are per second at any width (a node serves about
  // 200 / 6 requests/s of a few hundred tokens: thousands, not a bucket's sum).
  for (const nlohmann::json& reg : folded["regressions"]) {
    for (const nlohmann::json& e : reg["evidence"]) {
      if (e["metric"] != "vllm:generation_tokens_per_s") continue;
      EXPECT_LT(e["before"].get<double>(), 5e4) << e.dump();
      EXPECT_GT(e["before"].get<double>(), 1e3) << e.dump();
    }
  }
}
