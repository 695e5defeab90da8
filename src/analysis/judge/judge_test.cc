// The judge engine end to end on the shipped scenarios (one canary node of
// eight GPUs; the labelled suite in scenarios/suite has two canary nodes and
// is run by analysis_suite_accuracy_test): the simulator writes canary and
// baseline recordings, the replay reads them back, the judge decides. Set
// GC_JUDGE_VERBOSE=1 to print each report.

#include "analysis/judge/judge.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "recording/recording_writer.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace gpucanary::analysis {
namespace {

constexpr std::int64_t kStart = 1764680000;  // the simulator's default start (Unix s)

struct JudgeRun {
  Report report;
  std::int64_t release_start = 0;
};

std::string SourceDir() { return GPUCANARY_SOURCE_DIR; }

JudgeRun JudgeScenario(const std::string& name, const std::vector<std::string>& canary_nodes,
                       double release_offset_s, const Policy& policy = DefaultPolicy()) {
  Result<sim::Scenario> scenario = sim::LoadScenario(SourceDir() + "/scenarios/" + name);
  EXPECT_TRUE(scenario.has_value()) << (scenario ? "" : scenario.error().message());
  const std::string dir = ::testing::TempDir() + "/judge_" + name;
  std::filesystem::create_directories(dir);
  sim::Engine engine(*scenario);
  auto canary = recording::RecordingWriter::Open(dir + "/canary.om");
  auto baseline = recording::RecordingWriter::Open(dir + "/baseline.om");
  EXPECT_TRUE(canary.has_value() && baseline.has_value());
  std::vector<recording::RecordingWriter*> per_node(engine.node_count(), baseline->get());
  for (const std::string& host : canary_nodes) per_node[*engine.FindNode(host)] = canary->get();
  sim::OfflineOptions options;
  options.duration_s = scenario->duration_s;
  EXPECT_TRUE(sim::WriteScenarioRecording(engine, options, per_node).has_value());
  EXPECT_TRUE((*canary)->Close().ok());
  EXPECT_TRUE((*baseline)->Close().ok());

  JudgeRun run;
  run.release_start = kStart + static_cast<std::int64_t>(release_offset_s);
  auto replay = Replay::Open(
      {ReplayInput{.path = dir + "/baseline.om", .role = Role::kBaseline, .format = std::nullopt},
       ReplayInput{.path = dir + "/canary.om", .role = Role::kCanary, .format = std::nullopt}});
  EXPECT_TRUE(replay.has_value());
  Judge judge({.policy = policy, .release_start_s = run.release_start});
  Tick tick;
  while (true) {
    Result<bool> more = (*replay)->Next(tick);
    EXPECT_TRUE(more.has_value()) << (more ? "" : more.error().message());
    if (!more || !*more) break;
    judge.Add(tick, Catalog::Of(**replay));
  }
  run.report = judge.Finish();
  if (std::getenv("GC_JUDGE_VERBOSE") != nullptr) {
    const Report& r = run.report;
    std::printf("== %s: %s decided_at %+.0f s score %.1f\n", name.c_str(),
                std::string(VerdictName(r.verdict)).c_str(),
                r.decided_at ? *r.decided_at - static_cast<double>(run.release_start) : -1.0,
                r.score);
    for (const Cause& c : r.causes) {
      std::printf("  cause %s/%s failing=%d since %+.0f decided %+.0f: %s\n",
                  std::string(vocab::Name(c.kind)).c_str(),
                  std::string(vocab::Name(c.scope)).c_str(), c.failing ? 1 : 0,
                  c.since - static_cast<double>(run.release_start),
                  c.decided_at - static_cast<double>(run.release_start), c.summary.c_str());
    }
    for (const MetricResult& m : r.metrics) {
      std::printf("  metric %-40s %-12s base %.4g canary %.4g change %+.4f [%+.4f, %+.4f] n=%lld\n",
                  m.name.c_str(), m.result.c_str(), m.baseline, m.canary, m.change, m.interval_lo,
                  m.interval_hi, static_cast<long long>(m.blocks));
    }
    for (const std::string& n : r.notes) std::printf("  note: %s\n", n.c_str());
  }
  return run;
}

const Cause* FindCause(const Report& r, std::string_view kind, std::string_view scope) {
  for (const Cause& c : r.causes) {
    if (vocab::Name(c.kind) == kind && vocab::Name(c.scope) == scope) return &c;
  }
  return nullptr;
}

TEST(JudgeTest, PowerBrakeReleaseFailsWithinFourSecondsOfTheBrake) {
  const JudgeRun run = JudgeScenario("power-brake.yaml", {"node-4"}, 60);
  EXPECT_EQ(run.report.verdict, Verdict::kFail);
  const Cause* c = FindCause(run.report, "power_brake", "release");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->failing);
  ASSERT_TRUE(run.report.decided_at.has_value());
  EXPECT_LE(*run.report.decided_at - c->since, 4.0);
  EXPECT_EQ(c->nodes, std::vector<std::string>{"node-4"});
}

TEST(JudgeTest, HealthyRolloutDoesNotFail) {
  const JudgeRun run = JudgeScenario("healthy-rollout.yaml", {"node-4"}, 60);
  EXPECT_NE(run.report.verdict, Verdict::kFail);
}

TEST(JudgeTest, BadBaselineNodeIsANodeFault) {
  const JudgeRun run = JudgeScenario("bad-node-power-brake.yaml", {"node-4"}, 60);
  EXPECT_NE(run.report.verdict, Verdict::kFail);
  const Cause* c = FindCause(run.report, "power_brake", "node");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->nodes, std::vector<std::string>{"node-6"});
}

TEST(JudgeTest, XidFloodFailsAndNamesTheLostGpuAsANodeFault) {
  const JudgeRun run = JudgeScenario("xid-flood.yaml", {"node-4"}, 60);
  EXPECT_EQ(run.report.verdict, Verdict::kFail);
  EXPECT_NE(FindCause(run.report, "xid_errors", "release"), nullptr);
  const Cause* lost = FindCause(run.report, "xid_errors", "node");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->nodes, std::vector<std::string>{"node-8"});
}

}  // namespace
}  // namespace gpucanary::analysis
