#include "eval/kayenta/kayenta.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace gpucanary::eval::kayenta {
namespace {

std::vector<double> Normal(std::size_t n, double mean, double sd, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

MetricConfig Metric(std::string name) {
  MetricConfig m;
  m.name = std::move(name);
  return m;
}

KayentaJudge MakeJudge(std::vector<MetricConfig> metrics, JudgeConfig config = {}) {
  config.metrics = std::move(metrics);
  auto judge = KayentaJudge::Create(std::move(config));
  EXPECT_TRUE(judge.has_value()) << judge.error().ToString();
  return std::move(*judge);
}

// One Add per tick; the shorter series leaves its arm unset at the end.
void Feed(KayentaJudge& judge, int metric, const std::vector<double>& canary,
          const std::vector<double>& baseline) {
  for (std::size_t t = 0; t < std::max(canary.size(), baseline.size()); ++t) {
    judge.Add(metric, t < canary.size() ? std::optional(canary[t]) : std::nullopt,
              t < baseline.size() ? std::optional(baseline[t]) : std::nullopt);
  }
}

// A metric that passes (same distribution) or fails High (+20%).
void FeedHealthy(KayentaJudge& judge, int metric, std::uint64_t seed) {
  Feed(judge, metric, Normal(120, 100, 2, seed), Normal(120, 100, 2, seed + 1000));
}
void FeedRegressed(KayentaJudge& judge, int metric, std::uint64_t seed) {
  Feed(judge, metric, Normal(120, 120, 2, seed), Normal(120, 100, 2, seed + 1000));
}

TEST(KayentaJudgeTest, ClearDropIsLow) {
  auto judge = MakeJudge({Metric("throughput")});
  Feed(judge, 0, Normal(300, 80, 2, 1), Normal(300, 100, 2, 2));
  const Judgement j = judge.Evaluate();
  const MetricResult& r = j.metrics[0];
  EXPECT_EQ(r.classification, Classification::kLow);
  EXPECT_EQ(r.reason, "throughput was classified as Low");
  EXPECT_FALSE(r.critical);
  ASSERT_TRUE(r.test.has_value());
  EXPECT_NEAR(r.test->estimate, -20, 0.5);
  EXPECT_LT(r.test->ci_upper, r.lower_bound);
  EXPECT_NEAR(r.ratio, 0.8, 0.01);
  EXPECT_EQ(j.score, 0);
  EXPECT_EQ(j.outcome, Outcome::kFail);
  EXPECT_TRUE(j.warnings.empty());
}

TEST(KayentaJudgeTest, DirectionIgnoresTheHarmlessSide) {
  MetricConfig m = Metric("latency");
  m.direction = Direction::kIncrease;
  auto judge = MakeJudge({m});
  Feed(judge, 0, Normal(300, 80, 2, 1), Normal(300, 100, 2, 2));
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[0].classification, Classification::kPass);
  EXPECT_EQ(j.score, 100);
  EXPECT_EQ(j.outcome, Outcome::kPass);
}

// The band is 0.25 |HL|, not 25% of the baseline: a 2% shift measured
// precisely is High with Kayenta's defaults. Kayenta's own knob for "at least
// 25% worse" is effectSize.allowedIncrease = 1.25 (mean ratio).
TEST(KayentaJudgeTest, PreciseTwoPercentShiftIsHighUnlessAnEffectSizeIsRequired) {
  const auto canary = Normal(300, 102, 0.2, 3);
  const auto baseline = Normal(300, 100, 0.2, 4);
  auto defaults = MakeJudge({Metric("latency")});
  Feed(defaults, 0, canary, baseline);
  const MetricResult high = defaults.Evaluate().metrics[0];
  EXPECT_EQ(high.classification, Classification::kHigh);
  ASSERT_TRUE(high.test.has_value());
  EXPECT_GT(high.test->ci_lower, high.upper_bound);

  MetricConfig m = Metric("latency");
  m.allowed_increase = 1.25;
  auto gated = MakeJudge({m});
  Feed(gated, 0, canary, baseline);
  const MetricResult pass = gated.Evaluate().metrics[0];
  EXPECT_EQ(pass.classification, Classification::kPass);
  ASSERT_TRUE(pass.test.has_value());
  EXPECT_LT(pass.test->p_value, 1e-50);  // significant, but within the tolerance
  EXPECT_GT(pass.test->ci_lower, 0);
  EXPECT_NEAR(pass.ratio, 1.02, 1e-3);
}

// spinnaker/spinnaker#6278: 7 of 10 canary points at 100 against a baseline of
// 1 pass, because the interval is wide relative to the estimate.
TEST(KayentaJudgeTest, NoisyHugeShiftPasses) {
  auto judge = MakeJudge({Metric("errors")});
  Feed(judge, 0, {1, 1, 1, 100, 100, 100, 100, 100, 100, 100}, std::vector<double>(10, 1.0));
  const Judgement j = judge.Evaluate();
  const MetricResult& r = j.metrics[0];
  EXPECT_EQ(r.classification, Classification::kPass);
  ASSERT_TRUE(r.test.has_value());
  EXPECT_EQ(r.test->estimate, 99);
  EXPECT_EQ(r.test->ci_lower, 0);  // Kayenta's Brent solver: 6.8e-5
  EXPECT_EQ(r.upper_bound, 24.75);
  EXPECT_LT(r.test->p_value, 0.01);
  EXPECT_EQ(j.warnings.size(), 1U);  // 10 < 50 control points
}

// Zero-inflated counts: significant, but the median pairwise difference is 0,
// and the mean ratio is NaN (baseline mean 0), so the effect gate is skipped.
TEST(KayentaJudgeTest, ZeroInflatedErrorsPassEvenWhenSignificant) {
  MetricConfig m = Metric("xid_errors");
  m.direction = Direction::kIncrease;
  auto judge = MakeJudge({m});
  std::vector<double> canary(300, 0.0);
  for (std::size_t i = 0; i < 15; ++i) canary[i * 20] = 1;
  Feed(judge, 0, canary, std::vector<double>(300, 0.0));
  const MetricResult r = judge.Evaluate().metrics[0];
  EXPECT_EQ(r.classification, Classification::kPass);
  ASSERT_TRUE(r.test.has_value());
  EXPECT_LT(r.test->p_value, 1e-3);
  EXPECT_EQ(r.test->estimate, 0);
  EXPECT_TRUE(std::isnan(r.ratio));
}

TEST(KayentaJudgeTest, CriticalHighFailsTheCanary) {
  MetricConfig critical = Metric("p99");
  critical.critical = true;
  auto judge = MakeJudge({Metric("a"), Metric("b"), critical});
  FeedHealthy(judge, 0, 10);
  FeedHealthy(judge, 1, 20);
  FeedRegressed(judge, 2, 30);
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[2].classification, Classification::kHigh);
  EXPECT_TRUE(j.metrics[2].critical);
  EXPECT_EQ(j.score, 0);
  EXPECT_EQ(j.outcome, Outcome::kFail);
  EXPECT_EQ(j.reason, "Canary Failed: p99 was classified as High (Critical)");
  ASSERT_EQ(j.groups.size(), 1U);
  EXPECT_NEAR(j.groups[0].score, 200.0 / 3, 1e-9);  // still reported

  // Not critical: 2 of 3 pass.
  auto plain = MakeJudge({Metric("a"), Metric("b"), Metric("p99")});
  FeedHealthy(plain, 0, 10);
  FeedHealthy(plain, 1, 20);
  FeedRegressed(plain, 2, 30);
  const Judgement k = plain.Evaluate();
  EXPECT_EQ(k.score, 66.67);
  EXPECT_EQ(k.outcome, Outcome::kMarginal);
  EXPECT_TRUE(k.reason.empty());
}

TEST(KayentaJudgeTest, CriticalMetricWithoutDataFails) {
  MetricConfig critical = Metric("xid");
  critical.critical = true;
  auto judge = MakeJudge({Metric("a"), Metric("b"), critical});
  FeedHealthy(judge, 0, 10);
  FeedHealthy(judge, 1, 20);
  Feed(judge, 2, Normal(100, 1, 1, 5), {});
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[2].classification, Classification::kNodata);
  EXPECT_TRUE(j.metrics[2].critical);
  EXPECT_EQ(j.outcome, Outcome::kFail);
  EXPECT_EQ(j.reason, "Canary Failed: Missing data for xid");
}

TEST(KayentaJudgeTest, DropsUnsetAndNonFiniteValuesLikeNaNs) {
  const auto canary = Normal(200, 101, 2, 6);
  const auto baseline = Normal(200, 100, 2, 7);
  auto clean = MakeJudge({Metric("m")});
  Feed(clean, 0, canary, baseline);
  auto noisy = MakeJudge({Metric("m")});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t t = 0; t < canary.size(); ++t) {
    noisy.Add(0, canary[t], std::nullopt);
    noisy.Add(0, std::nullopt, baseline[t]);
    if (t % 10 == 0) noisy.Add(0, nan, t % 20 == 0 ? inf : nan);
    if (t % 7 == 0) noisy.Add(0, std::nullopt, std::nullopt);
  }
  EXPECT_EQ(noisy.dropped(), 40);
  const MetricResult a = clean.Evaluate().metrics[0];
  const MetricResult b = noisy.Evaluate().metrics[0];
  EXPECT_EQ(b.canary.count, 200U);
  EXPECT_EQ(b.baseline.count, 200U);
  EXPECT_EQ(a.classification, b.classification);
  ASSERT_TRUE(a.test.has_value() && b.test.has_value());
  EXPECT_EQ(a.test->ci_lower, b.test->ci_lower);
  EXPECT_EQ(a.test->ci_upper, b.test->ci_upper);
  EXPECT_EQ(a.test->estimate, b.test->estimate);
}

TEST(KayentaJudgeTest, NoDataIsNodataAndHalfTheMetricsWithoutDataFailTheCanary) {
  auto empty = MakeJudge({Metric("m")});
  const Judgement e = empty.Evaluate();
  EXPECT_EQ(e.metrics[0].classification, Classification::kNodata);
  EXPECT_EQ(e.metrics[0].reason, "Missing data for m");
  EXPECT_FALSE(e.metrics[0].critical);
  EXPECT_EQ(e.metrics[0].ratio, 1.0);
  EXPECT_TRUE(std::isnan(e.metrics[0].canary.mean));
  EXPECT_EQ(e.score, 0);
  EXPECT_EQ(e.outcome, Outcome::kFail);

  // 1 of 3 without data: not counted, the others score 100.
  auto third = MakeJudge({Metric("a"), Metric("b"), Metric("c")});
  FeedHealthy(third, 0, 1);
  FeedHealthy(third, 1, 2);
  Feed(third, 2, {}, Normal(60, 1, 1, 3));
  const Judgement t = third.Evaluate();
  EXPECT_EQ(t.metrics[2].classification, Classification::kNodata);
  EXPECT_EQ(t.score, 100);
  EXPECT_EQ(t.outcome, Outcome::kPass);

  // 2 of 4 (NODATA_THRESHOLD = 50%): score 0.
  auto half = MakeJudge({Metric("a"), Metric("b"), Metric("c"), Metric("d")});
  FeedHealthy(half, 0, 1);
  FeedHealthy(half, 1, 2);
  const Judgement h = half.Evaluate();
  EXPECT_EQ(h.score, 0);
  EXPECT_EQ(h.outcome, Outcome::kFail);
  EXPECT_EQ(h.reason, "Canary Failed: 2 of 4 metrics have no data");
}

TEST(KayentaJudgeTest, MustHaveDataCountsAgainstTheScore) {
  MetricConfig required = Metric("b");
  required.must_have_data = true;
  auto judge = MakeJudge({Metric("a"), required});
  FeedHealthy(judge, 0, 1);
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[1].classification, Classification::kNodataFailMetric);
  EXPECT_FALSE(j.metrics[1].critical);
  EXPECT_EQ(j.score, 50);
  EXPECT_EQ(j.outcome, Outcome::kMarginal);
}

TEST(KayentaJudgeTest, ScoreThresholdsAreInclusive) {
  const auto run = [](int regressed) {
    auto judge = MakeJudge({Metric("a"), Metric("b"), Metric("c"), Metric("d")});
    for (int m = 0; m < 4; ++m) {
      if (m < regressed) {
        FeedRegressed(judge, m, static_cast<std::uint64_t>(m) + 40);
      } else {
        FeedHealthy(judge, m, static_cast<std::uint64_t>(m) + 40);
      }
    }
    return judge.Evaluate();
  };
  const Judgement one = run(1);  // 75 >= pass 75
  EXPECT_EQ(one.score, 75);
  EXPECT_EQ(one.outcome, Outcome::kPass);
  const Judgement two = run(2);  // 50 >= marginal 50
  EXPECT_EQ(two.score, 50);
  EXPECT_EQ(two.outcome, Outcome::kMarginal);
  const Judgement three = run(3);
  EXPECT_EQ(three.score, 25);
  EXPECT_EQ(three.outcome, Outcome::kFail);
}

TEST(KayentaJudgeTest, GroupWeightsAndUnweightedGroupsShareTheRest) {
  MetricConfig a1 = Metric("a1");
  MetricConfig a2 = Metric("a2");
  MetricConfig b1 = Metric("b1");
  a1.group = a2.group = "latency";
  b1.group = "errors";
  JudgeConfig config;
  config.group_weights = {{"latency", 60}};
  auto judge = MakeJudge({a1, a2, b1}, config);
  FeedHealthy(judge, 0, 1);
  FeedRegressed(judge, 1, 2);
  FeedHealthy(judge, 2, 3);
  const Judgement j = judge.Evaluate();
  ASSERT_EQ(j.groups.size(), 2U);
  EXPECT_EQ(j.groups[0].name, "latency");
  EXPECT_EQ(j.groups[0].score, 50);
  EXPECT_EQ(j.groups[1].name, "errors");
  EXPECT_EQ(j.groups[1].score, 100);
  EXPECT_EQ(j.score, 70);  // 50 * 0.6 + 100 * 0.4
  EXPECT_EQ(j.outcome, Outcome::kMarginal);
}

TEST(KayentaJudgeTest, MutedMetricIsReportedButNotScored) {
  MetricConfig muted = Metric("b");
  muted.muted = true;
  muted.critical = true;
  auto judge = MakeJudge({Metric("a"), muted});
  FeedHealthy(judge, 0, 1);
  FeedRegressed(judge, 1, 2);
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[1].classification, Classification::kHigh);
  EXPECT_TRUE(j.metrics[1].muted);
  EXPECT_EQ(j.score, 100);
  EXPECT_EQ(j.outcome, Outcome::kPass);
}

TEST(KayentaJudgeTest, IdenticalAndConstantData) {
  auto judge = MakeJudge({Metric("same"), Metric("flat"), Metric("const"), Metric("zero")});
  const auto v = Normal(60, 5, 1, 9);
  Feed(judge, 0, v, std::vector<double>(v.rbegin(), v.rend()));
  Feed(judge, 1, std::vector<double>(60, 7.0), std::vector<double>(80, 7.0));
  Feed(judge, 2, std::vector<double>(60, 5.0), std::vector<double>(60, 4.0));
  Feed(judge, 3, std::vector<double>(60, 3.0), std::vector<double>(60, 0.0));
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[0].classification, Classification::kPass);
  EXPECT_EQ(j.metrics[0].reason, "The canary and baseline data are identical");
  EXPECT_FALSE(j.metrics[0].test.has_value());
  EXPECT_EQ(j.metrics[1].classification, Classification::kPass);
  EXPECT_FALSE(j.metrics[1].test.has_value());
  // Each arm constant: noise breaks the tie, and the shift is found.
  EXPECT_TRUE(j.metrics[2].noise_added);
  EXPECT_EQ(j.metrics[2].classification, Classification::kHigh);
  EXPECT_NEAR(j.metrics[2].ratio, 1.25, 1e-4);
  EXPECT_TRUE(j.metrics[3].noise_added);
  EXPECT_EQ(j.metrics[3].classification, Classification::kHigh);
  // Deterministic noise: the same judgement twice.
  EXPECT_EQ(judge.Evaluate().metrics[2].test->estimate, j.metrics[2].test->estimate);
}

TEST(KayentaJudgeTest, ClesEffectSize) {
  MetricConfig cles = Metric("cles");
  cles.effect_measure = EffectMeasure::kCles;
  MetricConfig strict = cles;
  strict.name = "strict";
  strict.allowed_increase = 0.95;
  auto judge = MakeJudge({cles, strict});
  const auto canary = Normal(200, 101, 1.5, 11);
  const auto baseline = Normal(200, 100, 1.5, 12);
  Feed(judge, 0, canary, baseline);
  Feed(judge, 1, canary, baseline);
  const Judgement j = judge.Evaluate();
  EXPECT_EQ(j.metrics[0].classification, Classification::kHigh);
  EXPECT_GT(j.metrics[0].effect_size, 0.6);
  EXPECT_LT(j.metrics[0].effect_size, 0.95);
  EXPECT_EQ(j.metrics[1].classification, Classification::kPass);
}

TEST(KayentaJudgeTest, ResetForgetsTheData) {
  auto judge = MakeJudge({Metric("m")});
  FeedRegressed(judge, 0, 1);
  EXPECT_EQ(judge.Evaluate().metrics[0].classification, Classification::kHigh);
  judge.Reset();
  EXPECT_EQ(judge.Evaluate().metrics[0].classification, Classification::kNodata);
  FeedHealthy(judge, 0, 2);
  EXPECT_EQ(judge.Evaluate().metrics[0].classification, Classification::kPass);
}

TEST(KayentaJudgeTest, CreateRejectsBadConfigurations) {
  const auto code = [](JudgeConfig c) { return KayentaJudge::Create(std::move(c)).error().code(); };
  EXPECT_EQ(code({}), StatusCode::kInvalidArgument);
  JudgeConfig c;
  c.metrics = {Metric("a"), Metric("a")};
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.metrics = {Metric("")};
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.metrics = {Metric("a")};
  c.marginal_threshold = 80;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.marginal_threshold = 50;
  c.conf_level = 1;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.conf_level = 0.98;
  c.tolerance = -0.1;
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.tolerance = 0.25;
  c.group_weights = {{"default", -1}};
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.group_weights.clear();
  c.metrics[0].allowed_increase = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(code(c), StatusCode::kInvalidArgument);
  c.metrics[0].allowed_increase = 1.1;
  EXPECT_TRUE(KayentaJudge::Create(c).has_value());
}

TEST(KayentaJudgeTest, Names) {
  EXPECT_EQ(ClassificationName(Classification::kNodataFailMetric), "NodataFailMetric");
  EXPECT_EQ(ClassificationName(Classification::kHigh), "High");
  EXPECT_EQ(OutcomeName(Outcome::kMarginal), "Marginal");
}

}  // namespace
}  // namespace gpucanary::eval::kayenta
