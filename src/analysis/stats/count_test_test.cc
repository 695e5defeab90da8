#include "analysis/stats/count_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "analysis/stats/testdata.h"

namespace gpucanary::analysis::stats {
namespace {

using testing::LoadGolden;
using testing::NearRel;

TEST(CountTestTest, MatchesGoldenBetaBinomialEValues) {
  const auto golden = LoadGolden("count_test.json");
  ASSERT_EQ(golden["cases"].size(), 4U);
  for (const auto& c : golden["cases"]) {
    CountTest test(c["prior_a"].get<double>(), c["prior_b"].get<double>());
    int tick = 0;
    for (const auto& t : c["ticks"]) {
      test.AddEvents(t["canary"].get<std::int64_t>(), t["baseline"].get<std::int64_t>(),
                     t["p0"].get<double>());
      SCOPED_TRACE("seed " + c["seed"].dump() + " tick " + std::to_string(tick++));
      EXPECT_TRUE(NearRel(test.log_e_value(), t["log_e"].get<double>()));
      if (t["rate_ratio"].is_null()) {
        EXPECT_FALSE(std::isfinite(test.RateRatioEstimate()));
      } else {
        EXPECT_TRUE(NearRel(test.RateRatioEstimate(), t["rate_ratio"].get<double>()));
      }
    }
    EXPECT_GT(test.canary_events() + test.baseline_events(), 50);
  }
}

TEST(CountTestTest, ConstantShareIsTheBetaBinomialBayesFactor) {
  CountTest test;  // Beta(1, 1)
  test.AddEvents(3, 2, 0.25);
  test.AddEvents(0, 0, 0.99);  // no events: p0 is ignored
  test.AddEvents(4, 1, 0.25);
  // B(1 + 7, 1 + 3) / B(1, 1) / (0.25^7 0.75^3), B(8, 4) = 7! 3! / 11! = 1/1320.
  const double expected = std::log(1.0 / 1320.0) - 7.0 * std::log(0.25) - 3.0 * std::log(0.75);
  EXPECT_NEAR(test.log_e_value(), expected, 1e-12);
  EXPECT_NEAR(test.RateRatioEstimate(), (7.0 / 3.0) * (0.75 / 0.25), 1e-12);
  EXPECT_EQ(test.canary_events(), 7);
  EXPECT_EQ(test.baseline_events(), 3);
}

TEST(CountTestTest, EmptyAndOneSidedEstimates) {
  CountTest test;
  EXPECT_EQ(test.log_e_value(), 0.0);
  EXPECT_TRUE(std::isnan(test.RateRatioEstimate()));
  EXPECT_FALSE(test.Rejects(0.05));
  test.AddEvents(12, 0, 0.5);
  EXPECT_EQ(test.RateRatioEstimate(), INFINITY);
  // 2^12 / 13 = 315 >= 1/0.01.
  EXPECT_TRUE(test.Rejects(0.01));
  EXPECT_TRUE(test.RejectsHigher(0.01));
}

TEST(CountTestTest, RejectsHigherNeedsTheCanaryAbove) {
  CountTest fewer;
  fewer.AddEvents(0, 40, 0.5);  // the canary has far fewer events: two-sided rejects
  EXPECT_TRUE(fewer.Rejects(0.01));
  EXPECT_FALSE(fewer.RejectsHigher(0.01));
  CountTest more;
  more.AddEvents(30, 10, 0.5);  // rate ratio 3
  EXPECT_TRUE(more.RejectsHigher(0.05, 2.0));
  EXPECT_FALSE(more.RejectsHigher(0.05, 3.5));
}

struct CountSim {
  double rejected = 0.0;     // fraction of runs that ever crossed 1/alpha
  double mean_events = 0.0;  // mean events to the first crossing, over runs that crossed
};

// Runs of `ticks` ticks with Poisson(rate) events each; each event is the
// canary's with the share a rate ratio `ratio` gives at exposure share p0.
CountSim Simulate(double ratio, int runs, int ticks, double rate, double alpha,
                  std::uint64_t seed) {
  const double p0 = 0.3;
  const double theta = ratio * p0 / (ratio * p0 + 1.0 - p0);
  int rejected = 0;
  double events_sum = 0.0;
  for (int r = 0; r < runs; ++r) {
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(r));
    std::poisson_distribution<std::int64_t> poisson(rate);
    CountTest test;
    for (int t = 0; t < ticks; ++t) {
      const std::int64_t k = poisson(rng);
      std::binomial_distribution<std::int64_t> split(k, theta);
      const std::int64_t a = split(rng);
      test.AddEvents(a, k - a, p0);
      if (test.Rejects(alpha)) {
        ++rejected;
        events_sum += static_cast<double>(test.canary_events() + test.baseline_events());
        break;
      }
    }
  }
  return {rejected / static_cast<double>(runs), rejected > 0 ? events_sum / rejected : 0.0};
}

TEST(CountTestTest, NullRarelyCrossesUnderContinuousMonitoring) {
  const double alpha = 0.05;
  const CountSim sim = Simulate(1.0, 2000, 200, 3.0, alpha, 100);
  std::printf("count test, null p0 = 0.3, 2000 runs x 600 events: crossed 1/alpha in %.4f\n",
              sim.rejected);
  EXPECT_LE(sim.rejected, alpha);
}

TEST(CountTestTest, RejectsQuicklyWhenTheCanaryHasTwiceItsShare) {
  const double alpha = 0.05;
  const CountSim sim = Simulate(2.0, 500, 200, 3.0, alpha, 9000);
  std::printf(
      "count test, rate ratio 2 at p0 = 0.3, 500 runs: rejected %.4f, "
      "mean events to rejection %.1f\n",
      sim.rejected, sim.mean_events);
  EXPECT_GT(sim.rejected, 0.99);
  EXPECT_LT(sim.mean_events, 200.0);
}

}  // namespace
}  // namespace gpucanary::analysis::stats
