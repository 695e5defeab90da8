#include "analysis/correlate/correlate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/replay/replay.h"
#include "releases/release.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::correlate {
namespace {

namespace fs = std::filesystem;

struct Simulated {
  std::string telemetry;
  std::vector<releases::Release> releases;
};

// Simulates `yaml` offline at a 5 s scrape into a fresh folder.
Simulated Simulate(const std::string& name, const std::string& yaml) {
  Result<sim::Scenario> scenario = sim::ParseScenario(yaml, name + ".yaml");
  EXPECT_TRUE(scenario.has_value()) << scenario.error().message();
  sim::Engine engine(*scenario);
  sim::OfflineOptions options;
  options.duration_s = scenario->duration_s;
  options.scrape_interval_s = 5;
  // One folder per process: CTest runs each test of the suite in its own.
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("gpucanary-correlate-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Result<sim::OfflineRun> run = sim::RunScenarioOffline(engine, options, dir.string(), {}, false);
  EXPECT_TRUE(run.has_value()) << run.error().message();
  Result<std::vector<releases::Release>> log = releases::LoadReleasesJsonl(run->releases);
  EXPECT_TRUE(log.has_value()) << log.error().message();
  return {run->telemetry.front(), *log};
}

CorrelateReport CorrelateSimulated(const Simulated& s, const CorrelateOptions& options = {}) {
  Result<std::unique_ptr<Replay>> replay = Replay::Open({{s.telemetry, Role::kBaseline, {}}});
  EXPECT_TRUE(replay.has_value());
  Result<CorrelateReport> report = Correlate(**replay, s.releases, options);
  EXPECT_TRUE(report.has_value()) << report.error().message();
  return *report;
}

// Three overlapping releases on a 10-node fleet; the middle one's fp8
// kernels trip the power brake. At 760 s a baseline node's own power supply
// brakes (node-9, which took a harmless release at 480 s), and at 900 s the
// whole hall warms up.
constexpr const char* kFleet = R"(
seed: 11
duration: 1100s
fleet:
  - {nodes: "node-[1-10]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  vllm-0.6.4: {profile: baseline}
  ckpt-18000-fp8: {profile: baseline, power_spikiness: 2.5}
  cuda-12.6: {profile: baseline}
traffic: {rps: 300, diurnal: {amplitude: 0.2, period: 30m}, bursts: {rate: 1/5m}}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 300s, deploy: vllm-0.6.4, nodes: [node-1, node-2, node-3]}
  - {at: 400s, deploy: ckpt-18000-fp8, nodes: [node-3, node-4, node-5, node-6]}
  - {at: 480s, deploy: cuda-12.6, nodes: [node-7, node-8, node-9]}
  - {at: 760s, fault: power_brake, nodes: [node-9]}
  - {at: 900s, fault: thermal, nodes: all, params: {cooling_factor: 1.5}}
)";

class CorrelateFleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    simulated = new Simulated(Simulate("fleet", kFleet));
    fleet_report = new CorrelateReport(CorrelateSimulated(*simulated));
  }
  static void TearDownTestSuite() {
    delete fleet_report;
    delete simulated;
  }
  static const Regression* Find(vocab::CauseKind kind, std::string_view node) {
    for (const Regression& r : fleet_report->regressions) {
      if (r.causes.empty() || r.causes.front().kind != kind) continue;
      if (std::find(r.nodes.begin(), r.nodes.end(), node) != r.nodes.end()) return &r;
    }
    return nullptr;
  }
  static Simulated* simulated;
  static CorrelateReport* fleet_report;
};
Simulated* CorrelateFleetTest::simulated = nullptr;
CorrelateReport* CorrelateFleetTest::fleet_report = nullptr;

TEST_F(CorrelateFleetTest, BlamesTheReleaseWhoseNodesChangedAfterItArrived) {
  const Regression* r = Find(vocab::CauseKind::kPowerBrake, "node-4");
  ASSERT_NE(r, nullptr) << CorrelateReportText(*fleet_report);
  ASSERT_FALSE(r->suspects.empty()) << r->summary;
  EXPECT_EQ(r->suspects.front().release, "ckpt-18000-fp8");
  EXPECT_EQ(r->suspects.size(), 1u) << r->summary;
  EXPECT_EQ(r->causes.front().scope, vocab::Scope::kRelease);
  // Its nodes, and only its nodes.
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"node-3", "node-4", "node-5", "node-6"}));
  EXPECT_EQ(r->gpus.size(), 8u);
  // Onset: the first node serves it at 410 s, plus the warm-up we skip.
  EXPECT_GE(r->at, 1764680410.0);
  EXPECT_LE(r->at, 1764680470.0);
  // The clock evidence: from the boost clock to the brake floor.
  bool clock = false;
  for (const MetricChange& m : r->evidence) {
    if (m.metric != "DCGM_FI_DEV_SM_CLOCK") continue;
    clock = true;
    EXPECT_GT(m.before, 1800);
    EXPECT_LT(m.after, 1200);
    EXPECT_LT(m.change, -0.3);
  }
  EXPECT_TRUE(clock);
  EXPECT_GT(r->suspects.front().time, 0.9);
  EXPECT_GT(r->suspects.front().space, 0.9);
}

TEST_F(CorrelateFleetTest, ANodesOwnFaultIsNotBlamedOnTheReleaseItRuns) {
  const Regression* r = Find(vocab::CauseKind::kPowerBrake, "node-9");
  ASSERT_NE(r, nullptr) << CorrelateReportText(*fleet_report);
  EXPECT_EQ(r->nodes, std::vector<std::string>{"node-9"});
  EXPECT_TRUE(r->suspects.empty()) << r->summary;
  EXPECT_EQ(r->causes.front().scope, vocab::Scope::kNode);
  EXPECT_NE(r->summary.find("no release explains this"), std::string::npos);
}

// The heat wave from 890 s warms every GPU by degrees but slows nothing
// (no throttling, no clock or latency change): a temperature is evidence,
// not a regression users care about (issue 19), so it is no report at all,
// and nothing from then on is blamed on a release.
TEST_F(CorrelateFleetTest, AFleetWideHeatWaveThatSlowsNothingIsNoRegression) {
  for (const Regression& r : fleet_report->regressions) {
    EXPECT_NE(r.metric, "DCGM_FI_DEV_GPU_TEMP") << r.summary;
    if (r.at >= 1764680890.0) EXPECT_TRUE(r.suspects.empty()) << r.summary;
  }
}

TEST_F(CorrelateFleetTest, NoHarmlessReleaseIsEverNamed) {
  for (const Regression& r : fleet_report->regressions) {
    for (const Suspect& s : r.suspects) EXPECT_EQ(s.release, "ckpt-18000-fp8") << r.summary;
  }
}

TEST_F(CorrelateFleetTest, EveryRegressionIsHeadedByAMetricThatGotWorse) {
  for (const Regression& r : fleet_report->regressions) {
    ASSERT_FALSE(r.metric.empty()) << r.summary;
    ASSERT_FALSE(r.evidence.empty()) << r.summary;
    EXPECT_EQ(r.evidence.front().metric, r.metric) << r.summary;
    EXPECT_TRUE(std::isfinite(r.change)) << r.summary;
  }
}

TEST_F(CorrelateFleetTest, ArrivalsComeFromTheRestartsSeenInTelemetry) {
  // The rolling restart: node-3 serves ckpt-18000-fp8 at 410 s, node-4 at
  // 420 s, ... (10 s each, in target order).
  const ReleaseReach* reach = nullptr;
  for (const ReleaseReach& r : fleet_report->releases) {
    if (r.release == "ckpt-18000-fp8") reach = &r;
  }
  ASSERT_NE(reach, nullptr);
  ASSERT_EQ(reach->arrivals.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reach->arrivals[i].node, "node-" + std::to_string(3 + i));
    EXPECT_TRUE(reach->arrivals[i].observed);
    // A 5 s scrape sees the server back within one interval.
    EXPECT_NEAR(reach->arrivals[i].at, 1764680410.0 + 10.0 * static_cast<double>(i), 6.0);
  }
}

TEST_F(CorrelateFleetTest, JsonHasDesignFieldsInOrder) {
  const nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(CorrelateReportJson(*fleet_report));
  ASSERT_TRUE(j.contains("regressions"));
  ASSERT_FALSE(j["regressions"].empty());
  const auto& first = j["regressions"][0];
  std::vector<std::string> keys;
  for (auto it = first.begin(); it != first.end(); ++it) keys.push_back(it.key());
  ASSERT_GE(keys.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + 6),
            (std::vector<std::string>{"metric", "at", "change", "gpus", "suspects", "causes"}));
  EXPECT_EQ(j["resolution_s"], 10);
  EXPECT_EQ(j["gpus"], 20);
}

// Issue 19's sensitivity bar: a release 2% slower per token on 16 GPUs
// (8 nodes x 2), with 30 minutes of data after it, beside a harmless release
// on 4 other nodes, diurnal load and bursts. No change point clears a 2%
// step in one node's noise (the floor is 10%); pooled over its nodes and
// time at equal load, the release's effect does.
TEST(CorrelateTest, ATwoPercentSlowerReleaseOnSixteenGpusIsFoundAndNamed) {
  constexpr const char* kSmall = R"(
seed: 23
duration: 2500s
fleet:
  - {nodes: "node-[1-16]", gpu: h100-sxm, gpus: 2}
releases:
  stable: {profile: baseline}
  sampler-2: {profile: baseline, slowdown: 1.02}
  router-9: {profile: baseline}
traffic: {rps: 520, diurnal: {amplitude: 0.15, period: 40m}, bursts: {rate: 1/5m}}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: 600s, deploy: sampler-2, nodes: [node-1, node-3, node-5, node-7, node-9, node-11, node-13, node-15]}
  - {at: 640s, deploy: router-9, nodes: [node-2, node-4, node-6, node-8]}
)";
  const Simulated s = Simulate("small", kSmall);
  const CorrelateReport report = CorrelateSimulated(s);
  const Regression* found = nullptr;
  for (const Regression& r : report.regressions) {
    for (const Suspect& sus : r.suspects) {
      EXPECT_EQ(sus.release, "sampler-2") << r.summary;
      if (sus.release == "sampler-2") found = &r;
    }
  }
  ASSERT_NE(found, nullptr) << CorrelateReportText(report);
  EXPECT_EQ(found->metric, "vllm:time_per_output_token_seconds") << found->summary;
  EXPECT_GT(found->change, 0.01) << found->summary;
  EXPECT_LT(found->change, 0.04) << found->summary;
  EXPECT_EQ(found->nodes.size(), 8u) << found->summary;
  ASSERT_FALSE(found->causes.empty());
  EXPECT_EQ(found->causes.front().kind, vocab::CauseKind::kSoftwareRegression);
  EXPECT_LE(report.regressions.size(), 2u) << CorrelateReportText(report);
}

TEST(CorrelateTest, RejectsOptionsOutOfRange) {
  Result<std::unique_ptr<Replay>> replay =
      Replay::Open({{"/nonexistent/never.om", Role::kBaseline, {}}});
  // Opening fails first for a missing file: the error names it.
  ASSERT_FALSE(replay.has_value());
  EXPECT_NE(replay.error().message().find("/nonexistent/never.om"), std::string::npos);
}

TEST(CorrelateTest, BadOptionsAreAnError) {
  const fs::path file = fs::path(::testing::TempDir()) / "gpucanary-correlate-one.om";
  {
    std::ofstream out(file);
    out << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
           "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"n1\"} 1980 1764680000.000\n"
           "# EOF\n";
  }
  CorrelateOptions negative;
  negative.resolution_s = -1;
  CorrelateOptions score;
  score.min_score = 1.5;
  CorrelateOptions range;
  range.from_s = 10;
  range.to_s = 5;
  for (const CorrelateOptions& bad : {negative, score, range}) {
    Result<std::unique_ptr<Replay>> replay = Replay::Open({{file.string(), Role::kBaseline, {}}});
    ASSERT_TRUE(replay.has_value());
    Result<CorrelateReport> r = Correlate(**replay, {}, bad);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  }
}

TEST(CorrelateTest, ShortRecordingGivesNoRegressionAndNoZeros) {
  // One GPU, two minutes of a steady clock, then a gap of missing samples,
  // then the same clock: a gap is no data, never a drop to zero.
  const fs::path file = fs::path(::testing::TempDir()) / "gpucanary-correlate-gap.om";
  {
    std::ofstream out(file);
    out << "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
    for (int t = 0; t < 600; ++t) {
      if (t >= 200 && t < 400) continue;
      out << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"n1\"} " << (1980 + (t % 7)) << " "
          << (1764680000 + t) << ".000\n";
    }
    out << "# EOF\n";
  }
  Result<std::unique_ptr<Replay>> replay = Replay::Open({{file.string(), Role::kBaseline, {}}});
  ASSERT_TRUE(replay.has_value());
  Result<CorrelateReport> r = Correlate(**replay, {}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->regressions.empty()) << CorrelateReportText(*r);
  EXPECT_EQ(r->gpus, 1);
  EXPECT_DOUBLE_EQ(r->from, 1764680000.0);
  EXPECT_DOUBLE_EQ(r->to, 1764680600.0);
}

}  // namespace
}  // namespace gpucanary::analysis::correlate
