#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "analysis/cpd/cpd.h"

namespace gpucanary::analysis::cpd {
namespace {

using Points = std::vector<std::size_t>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// n samples of N(0, 1) noise.
std::vector<double> Noise(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> y(n);
  for (double& v : y) v = normal(rng);
  return y;
}

// Noise with the level raised by `jump` from index `at` on.
std::vector<double> Step(std::size_t n, std::size_t at, double jump, std::uint64_t seed) {
  std::vector<double> y = Noise(n, seed);
  for (std::size_t i = at; i < n; ++i) y[i] += jump;
  return y;
}

// cpd.h's conventions: ascending, unique, never 0, never past the end.
void ExpectWellFormed(const Points& cps, std::size_t n) {
  for (std::size_t i = 0; i < cps.size(); ++i) {
    EXPECT_GT(cps[i], 0u);
    EXPECT_LT(cps[i], n);
    if (i > 0) {
      EXPECT_LT(cps[i - 1], cps[i]);
    }
  }
}

TEST(CpdSegmentTest, FindsAClearStepAtItsIndex) {
  std::size_t exact = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    const Points cps = Segment(Step(300, 180, 4.0, seed));
    ASSERT_EQ(cps.size(), 1u);
    // An unlucky noise sample next to the step can move it by one.
    EXPECT_NEAR(static_cast<double>(cps[0]), 180, 1);
    exact += cps[0] == 180 ? 1u : 0u;
  }
  EXPECT_GE(exact, 8u);
}

TEST(CpdSegmentTest, FindsTwoSteps) {
  std::vector<double> y = Step(400, 100, 5.0, 7);
  for (std::size_t i = 250; i < y.size(); ++i) y[i] -= 8.0;
  EXPECT_EQ(Segment(y), (Points{100, 250}));
}

TEST(CpdSegmentTest, FindsAChangeOfSlopeAndNotTheTrend) {
  // A steady climb (a GPU warming up), then flat: one change, where the slope
  // changes, however steep the climb.
  std::vector<double> y = Noise(400, 3);
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] += 0.2 * static_cast<double>(std::min<std::size_t>(i, 250));
  }
  const Points cps = Segment(y);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(cps[0]), 250, 5);

  std::vector<double> trend = Noise(400, 4);
  for (std::size_t i = 0; i < trend.size(); ++i) trend[i] += 0.5 * static_cast<double>(i);
  EXPECT_EQ(Segment(trend), Points{});
}

TEST(CpdSegmentTest, PureNoiseGivesFewFalseChanges) {
  std::size_t total = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Points cps = Segment(Noise(1000, seed));
    EXPECT_LE(cps.size(), 2u) << "seed " << seed;
    total += cps.size();
  }
  EXPECT_LE(total, 4u);
}

TEST(CpdSegmentTest, MissingSamplesMapBackToOriginalIndices) {
  std::vector<double> y = Step(200, 100, 6.0, 11);
  // Missing right where the new level starts: the change is the first
  // present sample of the new segment.
  for (std::size_t i = 100; i < 106; ++i) y[i] = kNaN;
  // And missing samples before it shift nothing.
  y[3] = kNaN;
  y[40] = kNaN;
  EXPECT_EQ(Segment(y), (Points{106}));
}

TEST(CpdSegmentTest, InfinitiesAreMissingToo) {
  std::vector<double> with_nan = Step(200, 120, 6.0, 12);
  std::vector<double> with_inf = with_nan;
  for (std::size_t i : {0u, 50u, 118u, 119u, 120u}) {
    with_nan[i] = kNaN;
    with_inf[i] = (i % 2 == 0) ? kInf : -kInf;
  }
  const Points cps = Segment(with_inf);
  EXPECT_EQ(cps, Segment(with_nan));
  EXPECT_EQ(cps, (Points{121}));
}

TEST(CpdSegmentTest, AllMissingOrEmptyGivesNone) {
  EXPECT_EQ(Segment(std::vector<double>{}), Points{});
  EXPECT_EQ(Segment(std::vector<double>(50, kNaN)), Points{});
}

TEST(CpdSegmentTest, ConstantAndExactlyLinearSeriesHaveNoChange) {
  EXPECT_EQ(Segment(std::vector<double>(500, 3.5)), Points{});
  EXPECT_EQ(Segment(std::vector<double>(500, 0.0)), Points{});
  std::vector<double> line(500);
  for (std::size_t i = 0; i < line.size(); ++i) line[i] = 1e6 + 2.5 * static_cast<double>(i);
  EXPECT_EQ(Segment(line), Points{});
}

TEST(CpdSegmentTest, NoiselessStepsAreFoundExactly) {
  std::vector<double> y(90, 0.0);
  for (std::size_t i = 30; i < 60; ++i) y[i] = 1.0;
  EXPECT_EQ(Segment(y), (Points{30, 60}));
}

TEST(CpdSegmentTest, TooShortForTwoSegmentsGivesNone) {
  SegmentOptions options;
  options.min_segment = 5;
  const std::vector<double> nine = {0, 0, 0, 0, 10, 10, 10, 10, 10};
  EXPECT_EQ(Segment(nine, options), Points{});
  // Missing samples do not count towards the length.
  const std::vector<double> gappy = {0, 0, 0, 0, 0, kNaN, 10, 10, 10, 10};
  EXPECT_EQ(Segment(gappy, options), Points{});
  const std::vector<double> ten = {0, 0.1, 0, 0.1, 0, 10, 10.1, 10, 10.1, 10};
  EXPECT_EQ(Segment(ten, options), (Points{5}));
}

TEST(CpdSegmentTest, RespectsTheMinimumSegmentLength) {
  SegmentOptions options;
  options.min_segment = 20;
  std::vector<double> y = Step(300, 100, 8.0, 21);
  for (std::size_t i = 110; i < y.size(); ++i) y[i] -= 8.0;  // a 10-sample plateau
  const Points cps = Segment(y, options);
  ExpectWellFormed(cps, y.size());
  std::size_t previous = 0;
  for (std::size_t c : cps) {
    EXPECT_GE(c - previous, 20u);
    previous = c;
  }
  EXPECT_GE(y.size() - previous, 20u);
}

TEST(CpdSegmentTest, IsScaleAndOffsetInvariant) {
  std::vector<double> y = Step(500, 200, 3.0, 31);
  for (std::size_t i = 350; i < y.size(); ++i) y[i] += 0.05 * static_cast<double>(i - 350);
  const Points cps = Segment(y);
  ASSERT_FALSE(cps.empty());
  std::vector<double> big = y;
  for (double& v : big) v = 1e9 + 1e3 * v;
  EXPECT_EQ(Segment(big), cps);
  std::vector<double> tiny = y;
  for (double& v : tiny) v *= 1e-200;
  EXPECT_EQ(Segment(tiny), cps);
  std::vector<double> huge = y;
  for (double& v : huge) v *= 1e250;  // squares would overflow unscaled
  EXPECT_EQ(Segment(huge), cps);
}

TEST(CpdSegmentTest, HigherPenaltyNeverAddsChanges) {
  std::vector<double> y = Noise(600, 41);
  const double levels[] = {0, 2, -1, 1.5, 3, 0.5};
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += levels[i / 100];
  std::size_t previous = y.size();
  for (double scale : {0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0}) {
    SegmentOptions options;
    options.penalty_scale = scale;
    const Points cps = Segment(y, options);
    ExpectWellFormed(cps, y.size());
    EXPECT_LE(cps.size(), previous) << "penalty_scale " << scale;
    previous = cps.size();
  }
}

TEST(CpdSegmentTest, IsDeterministic) {
  std::vector<double> y = Noise(2000, 51);
  for (std::size_t i = 700; i < y.size(); ++i) y[i] += 1.0;
  y[5] = kNaN;
  const Points first = Segment(y);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Segment(y), first);
  ExpectWellFormed(first, y.size());
}

TEST(CpdSegmentTest, HandlesTelemetryLengthsQuickly) {
  // 3 h of 1 s samples with four level shifts: PELT prunes to near-linear.
  std::vector<double> y = Noise(10800, 61);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += static_cast<double>((i / 2160) % 2) * 3.0;
  const Points cps = Segment(y);
  EXPECT_EQ(cps, (Points{2160, 4320, 6480, 8640}));
}

}  // namespace
}  // namespace gpucanary::analysis::cpd
