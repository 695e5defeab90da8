#include "eval/kayenta/standalone.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gpucanary::eval::kayenta {
namespace {

JudgeConfig ThreeMetrics() {
  JudgeConfig config;
  for (const char* name : {"latency", "throughput", "power"}) {
    MetricConfig m;
    m.name = name;
    config.metrics.push_back(m);
  }
  return config;
}

StandaloneAnalysis MakeRun(StandaloneConfig run, std::int64_t start = 1000) {
  auto created = StandaloneAnalysis::Create(ThreeMetrics(), run, start);
  EXPECT_TRUE(created.has_value()) << created.error().ToString();
  return std::move(*created);
}

// Feeds ticks [from, to) of all three metrics; `canary_mean(metric, tick)`
// sets the canary level, the baseline is 100 + N(0, 2) everywhere.
void Feed(StandaloneAnalysis& run, std::int64_t from, std::int64_t to,
          const std::function<double(int, std::int64_t)>& canary_mean, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 2.0);
  for (std::int64_t t = from; t < to; ++t) {
    for (int m = 0; m < 3; ++m) run.Add(t, m, canary_mean(m, t) + noise(rng), 100 + noise(rng));
  }
}

double Healthy(int /*metric*/, std::int64_t /*tick*/) { return 100; }

TEST(StandaloneAnalysisTest, HealthyCanaryPassesAfterEveryInterval) {
  auto run = MakeRun({.lifetime_s = 300, .interval_s = 60});
  EXPECT_EQ(run.planned_judgements(), 5);
  Feed(run, 1000, 1300, Healthy);
  EXPECT_EQ(run.AdvanceTo(1059), 0U);
  EXPECT_EQ(run.AdvanceTo(1060), 1U);
  EXPECT_EQ(run.state(), RunState::kRunning);
  EXPECT_EQ(run.AdvanceTo(1300), 4U);
  EXPECT_EQ(run.state(), RunState::kPassed);
  ASSERT_EQ(run.judgements().size(), 5U);
  // lookback 0: the window grows from the start.
  EXPECT_EQ(run.judgements()[0].metrics[0].baseline.count, 60U);
  EXPECT_EQ(run.judgements()[4].metrics[0].baseline.count, 300U);
  EXPECT_EQ(run.AdvanceTo(5000), 0U);  // ended
}

TEST(StandaloneAnalysisTest, IntermediateScoreAtOrBelowMarginalFailsFast) {
  auto run = MakeRun({.lifetime_s = 300, .interval_s = 60});
  // Two of three metrics regressed: 33.33 <= 50 at the first judgement.
  Feed(run, 1000, 1300, [](int m, std::int64_t) { return m == 0 ? 100.0 : 120.0; });
  EXPECT_EQ(run.AdvanceTo(1300), 1U);
  EXPECT_EQ(run.state(), RunState::kFailed);
  EXPECT_EQ(run.judgements()[0].score, 33.33);
  EXPECT_NE(run.reason().find("judgement 1 of 5"), std::string::npos);
}

TEST(StandaloneAnalysisTest, OnlyTheLastJudgementDecides) {
  // Independent 60 s windows (lookback = interval). A regression in the
  // first minute gives a Marginal 66.67, which is > marginal: the run goes
  // on, and the clean last window passes it.
  auto run = MakeRun({.lifetime_s = 180, .interval_s = 60, .lookback_s = 60});
  Feed(run, 1000, 1180, [](int m, std::int64_t t) { return m == 1 && t < 1060 ? 120.0 : 100.0; });
  EXPECT_EQ(run.AdvanceTo(1180), 3U);
  EXPECT_EQ(run.judgements()[0].score, 66.67);
  EXPECT_EQ(run.judgements()[0].outcome, Outcome::kMarginal);
  EXPECT_EQ(run.judgements()[2].metrics[1].baseline.count, 60U);
  EXPECT_EQ(run.state(), RunState::kPassed);

  // The same regression in the last minute fails the run at the end.
  auto late = MakeRun({.lifetime_s = 180, .interval_s = 60, .lookback_s = 60});
  Feed(late, 1000, 1180, [](int m, std::int64_t t) { return m == 1 && t >= 1120 ? 120.0 : 100.0; });
  EXPECT_EQ(late.AdvanceTo(1180), 3U);
  EXPECT_EQ(late.state(), RunState::kFailed);
  EXPECT_NE(late.reason().find("(last)"), std::string::npos);
}

TEST(StandaloneAnalysisTest, WarmUpIsNeverJudged) {
  auto run = MakeRun({.lifetime_s = 120, .interval_s = 0, .begin_after_s = 60});
  EXPECT_EQ(run.planned_judgements(), 1);  // interval defaults to the lifetime
  EXPECT_EQ(run.DueAt(1), 1180);
  Feed(run, 1000, 1180, [](int, std::int64_t t) { return t < 1060 ? 150.0 : 100.0; });
  EXPECT_EQ(run.AdvanceTo(1179), 0U);
  EXPECT_EQ(run.AdvanceTo(1180), 1U);
  EXPECT_EQ(run.judgements()[0].metrics[0].canary.count, 120U);
  EXPECT_EQ(run.state(), RunState::kPassed);
}

TEST(StandaloneAnalysisTest, CreateRejectsBadRuns) {
  const auto code = [](StandaloneConfig r) {
    return StandaloneAnalysis::Create(ThreeMetrics(), r, 0).error().code();
  };
  EXPECT_EQ(code({.lifetime_s = 0}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.lifetime_s = 60, .interval_s = 120}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.lifetime_s = 60, .begin_after_s = -1}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.lifetime_s = 60, .lookback_s = -1}), StatusCode::kInvalidArgument);
  EXPECT_EQ(StandaloneAnalysis::Create({}, {.lifetime_s = 60}, 0).error().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpucanary::eval::kayenta
