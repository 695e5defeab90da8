// LoadFit: the baseline's per-token latency as a function of its load, read
// locally (docs/analysis-method.md, "Per-token latency at equal load").

#include "analysis/judge/load_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

namespace gpucanary::analysis::judge_internal {
namespace {

// Feeds `seconds` baseline node-seconds at loads uniform in [lo, hi]
// requests per GPU, latency curve(x) per token, 1% noise, 1000 tokens each.
template <typename Curve>
void Feed(LoadFit& fit, double lo, double hi, int seconds, Curve curve, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> load(lo, hi);
  std::normal_distribution<double> noise(0, 0.01);
  for (int i = 0; i < seconds; ++i) {
    const double x = load(rng);
    fit.AddBaseline(1000 * curve(x) * (1 + noise(rng)), 1000, x);
  }
}

TEST(LoadFitTest, InactiveUntilEnoughBaselineSeconds) {
  LoadFit fit;
  std::mt19937_64 rng(1);
  Feed(
      fit, 38, 42, LoadFit::kMinSeconds - 1, [](double x) { return 0.01 + 0.0002 * x; }, rng);
  EXPECT_FALSE(fit.active());
  EXPECT_FALSE(fit.Factor(40).has_value());
  Feed(
      fit, 38, 42, 1, [](double x) { return 0.01 + 0.0002 * x; }, rng);
  EXPECT_TRUE(fit.active());
  EXPECT_TRUE(fit.Factor(40).has_value());
}

// A straight line: the factor between two loads is the line's ratio, and
// the slope is read back.
TEST(LoadFitTest, LinearCurveFactorsAreTheLinesRatio) {
  LoadFit fit;
  std::mt19937_64 rng(2);
  const auto line = [](double x) { return 0.01 + 0.0002 * x; };
  Feed(fit, 10, 70, 3000, line, rng);
  const std::optional<double> at20 = fit.Factor(20);
  const std::optional<double> at60 = fit.Factor(60);
  ASSERT_TRUE(at20 && at60);
  EXPECT_NEAR(*at60 / *at20, line(60) / line(20), 0.01);
  ASSERT_TRUE(fit.slope().has_value());
  EXPECT_NEAR(*fit.slope(), 0.0002, 0.00001);
  EXPECT_NEAR(fit.reference(), 40, 1.5);
}

// A bent curve over two clusters of loads (drained nodes at 2-6 requests
// per GPU, busy ones at 40-60): the local line is right at the busy load,
// where one line through both clusters misses by more than 3%.
TEST(LoadFitTest, BentCurveIsReadLocally) {
  LoadFit fit;
  std::mt19937_64 rng(3);
  const auto bent = [](double x) { return 0.01 + 0.00002 * x * x; };
  Feed(fit, 2, 6, 1500, bent, rng);
  Feed(fit, 40, 60, 1500, bent, rng);
  const std::optional<double> at45 = fit.Factor(45);
  const std::optional<double> at55 = fit.Factor(55);
  ASSERT_TRUE(at45 && at55);
  EXPECT_NEAR(*at55 / *at45, bent(55) / bent(45), 0.01);
  // One least-squares line through both clusters, for contrast.
  double w = 0, wx = 0, wxx = 0, wy = 0, wxy = 0;
  for (double x : {2.0, 3.0, 4.0, 5.0, 6.0, 40.0, 45.0, 50.0, 55.0, 60.0}) {
    w += 1;
    wx += x;
    wxx += x * x;
    wy += bent(x);
    wxy += x * bent(x);
  }
  const double b = (wxy - wx * wy / w) / (wxx - wx * wx / w);
  const double a = wy / w - b * wx / w;
  EXPECT_GT(std::abs((a + b * 55) / (a + b * 45) - bent(55) / bent(45)), 0.03);
}

// No baseline node-second within reach of a load: no factor (the canary's
// second is not compared rather than extrapolated).
TEST(LoadFitTest, NoFactorFarFromEveryBaselineLoad) {
  LoadFit fit;
  std::mt19937_64 rng(4);
  Feed(
      fit, 20, 40, 1000, [](double x) { return 0.01 + 0.0002 * x; }, rng);
  EXPECT_TRUE(fit.Factor(30).has_value());
  EXPECT_TRUE(fit.Factor(55).has_value());    // the next bin holds baseline seconds
  EXPECT_FALSE(fit.Factor(120).has_value());  // 3x the baseline's top load
  EXPECT_FALSE(fit.Factor(2).has_value());
}

TEST(LoadFitTest, CanaryLoadAndComparedSecondsAreCounted) {
  LoadFit fit;
  fit.AddCanary(100, 30, true);
  fit.AddCanary(300, 50, false);
  ASSERT_TRUE(fit.canary_load().has_value());
  EXPECT_DOUBLE_EQ(*fit.canary_load(), (100 * 30 + 300 * 50) / 400.0);
  EXPECT_EQ(fit.canary_seconds(), 2);
  EXPECT_EQ(fit.canary_compared(), 1);
  fit.AddCanary(0, 30, true);  // no tokens timed: not a node-second of latency
  fit.AddBaseline(1, 10, -1);  // no load
  EXPECT_EQ(fit.canary_seconds(), 2);
  EXPECT_EQ(fit.seconds(), 0);
}

}  // namespace
}  // namespace gpucanary::analysis::judge_internal
