#include "analysis/cpd/otava.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "analysis/cpd/tigerbeetle_data.h"

namespace gpucanary::analysis::cpd {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

tigerbeetle::Data LoadTigerBeetle() {
  return tigerbeetle::Load(std::string(GPUCANARY_SHARED_DIR) + "/data/otava-tigerbeetle");
}

// Apache Otava's own regression test (tests/tigerbeetle_test.py at commit
// 1ceb1537, 2026-04-22): ten parameter settings, each with the exact list
// Otava returns. The port reproduces every list exactly. Two details of
// Otava decide five of them and are kept on purpose (otava.cc): the merge
// step re-tests the removed point's right neighbour and the one after it,
// not its left neighbour, and the first pass relaxes p 10x only below 0.05
// (2x up to 0.5). "Fixing" the first changes 5 of the 10 lists.
TEST(OtavaTest, ReproducesOtavaOnTigerBeetleForAllTenSettings) {
  const tigerbeetle::Data data = LoadTigerBeetle();
  ASSERT_EQ(data.error, "");
  ASSERT_EQ(data.series.size(), 365u);
  ASSERT_EQ(data.cases.size(), 10u);
  for (const tigerbeetle::Case& c : data.cases) {
    SCOPED_TRACE(c.test);
    EXPECT_EQ(tigerbeetle::Join(OtavaChangePoints(data.series, c.options)),
              tigerbeetle::Join(c.expected));
  }
}

TEST(OtavaTest, MissingSamplesAreDroppedAndIndicesMappedBack) {
  const tigerbeetle::Data data = LoadTigerBeetle();
  ASSERT_EQ(data.error, "");
  const OtavaOptions options{30, 0.01, 0.05};  // test_tb_old_defaults: [15, 71]
  // A NaN before each sample from 20 on shifts later indices by the NaNs
  // before them; the first present sample of a segment is what is reported.
  std::vector<double> gappy;
  std::vector<std::size_t> position;
  for (std::size_t i = 0; i < data.series.size(); ++i) {
    if (i >= 20 && i % 2 == 0) gappy.push_back(i % 4 == 0 ? kNaN : kInf);
    position.push_back(gappy.size());
    gappy.push_back(data.series[i]);
  }
  EXPECT_EQ(OtavaChangePoints(gappy, options),
            (std::vector<std::size_t>{position[15], position[71]}));
}

TEST(OtavaTest, EmptyConstantAndTinyInputsHaveNoChangePoints) {
  EXPECT_TRUE(OtavaChangePoints({}).empty());
  const std::vector<double> one = {1.0};
  EXPECT_TRUE(OtavaChangePoints(one).empty());
  const std::vector<double> two = {1.0, 5.0};  // df = 0: no test possible
  EXPECT_TRUE(OtavaChangePoints(two).empty());
  const std::vector<double> constant(200, 7.0);  // t = 0/0: never significant
  EXPECT_TRUE(OtavaChangePoints(constant).empty());
  const std::vector<double> missing(10, kNaN);
  EXPECT_TRUE(OtavaChangePoints(missing).empty());
}

TEST(OtavaTest, FindsClearStepsAtTheirFirstSample) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(100.0, 1.0);
  std::vector<double> x;
  for (int i = 0; i < 300; ++i)
    x.push_back(noise(rng) + (i >= 120 ? 10.0 : 0.0) - (i >= 210 ? 5.0 : 0.0));
  EXPECT_EQ(OtavaChangePoints(x), (std::vector<std::size_t>{120, 210}));
  // Two constant levels: the t-test's deviation is 0 and t infinite (p = 0).
  std::vector<double> steps(100, 3.0);
  for (std::size_t i = 40; i < steps.size(); ++i) steps[i] = 4.0;
  EXPECT_EQ(OtavaChangePoints(steps), (std::vector<std::size_t>{40}));
}

TEST(OtavaTest, MinMagnitudeDropsSmallRelativeChanges) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(1000.0, 1.0);
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back(noise(rng) + (i >= 100 ? 20.0 : 0.0));  // +2 %
  EXPECT_EQ(OtavaChangePoints(x, {50, 0.001, 0.01}), (std::vector<std::size_t>{100}));
  EXPECT_TRUE(OtavaChangePoints(x, {50, 0.001, 0.05}).empty());
}

TEST(OtavaTest, DeterministicAcrossCalls) {
  const tigerbeetle::Data data = LoadTigerBeetle();
  ASSERT_EQ(data.error, "");
  EXPECT_EQ(OtavaChangePoints(data.series), OtavaChangePoints(data.series));
}

// Against closed forms (df = 1: Cauchy, p = 1 - 2 atan|t| / pi; df = 2:
// p = 1 - |t| / sqrt(t^2 + 2)) and tabulated two-sided 5 % quantiles.
TEST(OtavaTest, StudentTPValueMatchesClosedFormsAndTables) {
  for (double t : {0.0, 0.1, 1.0, 3.0, 30.0, 1e4}) {
    SCOPED_TRACE(t);
    EXPECT_NEAR(StudentTTwoSidedPValue(t, 1), 1 - 2 * std::atan(t) / std::numbers::pi, 1e-15);
    EXPECT_NEAR(StudentTTwoSidedPValue(-t, 2), 1 - t / std::sqrt(t * t + 2), 1e-15);
  }
  EXPECT_NEAR(StudentTTwoSidedPValue(2.228138851986274, 10), 0.05, 1e-9);
  EXPECT_NEAR(StudentTTwoSidedPValue(2.0484071417952445, 28), 0.05, 1e-9);
  // Far tail: relative, not absolute, accuracy is what the merge step compares.
  const double tail = StudentTTwoSidedPValue(1e4, 1);
  EXPECT_NEAR(tail / (2 / (std::numbers::pi * 1e4)), 1.0, 1e-7);
  EXPECT_EQ(StudentTTwoSidedPValue(kInf, 5), 0.0);
  EXPECT_TRUE(std::isnan(StudentTTwoSidedPValue(kNaN, 5)));
}

}  // namespace
}  // namespace gpucanary::analysis::cpd
