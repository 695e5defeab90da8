// gpucanary correlate --prometheus, end to end with real processes: the
// simulator records a fleet where a release trips the power brake, promtool
// backfills the recording into a Prometheus's data directory (DESIGN.md §4
// recordings are what `promtool tsdb create-blocks-from openmetrics` takes),
// Debian's Prometheus serves it, and correlate reads its raw samples back.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

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
};

TEST_F(CorrelatePrometheusTest, BlamesTheReleaseFromAPrometheusBackfill) {
  std::ofstream(dir_ / "fleet.yaml") << kScenario;
  RunResult r = Run("sim --scenario " + (dir_ / "fleet.yaml").string() + " --offline " +
                    (dir_ / "out").string() + " --scrape-interval 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string error;
  auto prometheus = gpucanary::test::PrometheusProcess::Start(
      [](int) { return std::string("global: {}\n"); }, {"--storage.tsdb.retention.time=100y"},
      &error,
      [&](const fs::path& data) {
        const std::string cmd = "promtool tsdb create-blocks-from openmetrics " +
                                (dir_ / "out" / "telemetry.om").string() + " " + data.string() +
                                " >" + (dir_ / "promtool.log").string() + " 2>&1";
        return std::system(cmd.c_str()) == 0;
      });
  ASSERT_NE(prometheus, nullptr) << error << gpucanary::testing::Slurp(dir_ / "promtool.log");

  const std::string range =
      " --from " + std::to_string(kStart) + " --to " + std::to_string(kStart + 700);
  r = Run("correlate --prometheus " + prometheus->url() + " --releases " +
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
