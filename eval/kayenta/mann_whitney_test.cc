#include "eval/kayenta/mann_whitney.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace gpucanary::eval::kayenta {
namespace {

nlohmann::json LoadGolden(const std::string& name) {
  const std::string path = std::string(GPUCANARY_SOURCE_DIR) + "/eval/kayenta/testdata/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

// |actual - expected| <= rel * |expected|; exact equality when expected is 0.
::testing::AssertionResult NearRel(double actual, double expected, double rel = 1e-9) {
  const double scale = std::max(std::fabs(expected), 1e-300);
  if (std::fabs(actual - expected) <= rel * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "actual " << actual << " expected " << expected << " (relative error "
         << std::fabs(actual - expected) / scale << ")";
}

std::vector<double> Normal(std::size_t n, double mean, double sd, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// scripts/golden/kayenta.py: SciPy's mannwhitneyu for U and p, R's
// wilcox.test inversion ported to NumPy for the interval, numpy.median of the
// pairwise differences for the estimate.
TEST(MannWhitneyTest, MatchesGoldenVectors) {
  const auto golden = LoadGolden("mann_whitney.json");
  ASSERT_GE(golden["cases"].size(), 10U);
  double worst_p = 0;   // largest relative error of the p-values
  double worst_ci = 0;  // ... of the CI bounds and estimates
  const auto track = [](double& worst, double actual, double expected) {
    if (actual != expected) {
      worst = std::max(worst, std::fabs(actual - expected) / std::fabs(expected));
    }
    return NearRel(actual, expected);
  };
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto x = c["x"].get<std::vector<double>>();
    const auto y = c["y"].get<std::vector<double>>();
    const auto r = MannWhitney(x, y, c["conf_level"].get<double>());
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->u, c["u"].get<double>());
    EXPECT_TRUE(track(worst_p, r->p_value, c["p_value"].get<double>()));
    EXPECT_TRUE(track(worst_ci, r->ci_lower, c["ci_lower"].get<double>()));
    EXPECT_TRUE(track(worst_ci, r->ci_upper, c["ci_upper"].get<double>()));
    EXPECT_TRUE(track(worst_ci, r->estimate, c["estimate"].get<double>()));
    EXPECT_LE(r->ci_lower, r->estimate);
    EXPECT_LE(r->estimate, r->ci_upper);
  }
  std::cout << "golden: " << golden["cases"].size() << " cases, largest relative error: p-value "
            << worst_p << ", CI and estimate " << worst_ci << "\n";
}

// kayenta-mannwhitney's own unit test (MannWhitneySuite, "returns expected
// values"): control 1..4, experiment 10..40, 95% -> [6, 39], estimate 22.5.
TEST(MannWhitneyTest, ReproducesKayentaSuite) {
  const std::vector<double> experiment = {10, 20, 30, 40};
  const std::vector<double> control = {1, 2, 3, 4};
  const auto r = MannWhitney(experiment, control, 0.95);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ci_lower, 6.0);
  EXPECT_EQ(r->ci_upper, 39.0);
  EXPECT_EQ(r->estimate, 22.5);
  EXPECT_EQ(r->u, 16.0);
}

TEST(MannWhitneyTest, SwappingSamplesMirrorsTheResult) {
  const auto x = Normal(90, 0.4, 1.0, 1);
  const auto y = Normal(70, 0.0, 1.0, 2);
  const auto xy = MannWhitney(x, y, 0.98);
  const auto yx = MannWhitney(y, x, 0.98);
  ASSERT_TRUE(xy.has_value() && yx.has_value());
  EXPECT_EQ(xy->u + yx->u, 90.0 * 70.0);
  EXPECT_DOUBLE_EQ(xy->p_value, yx->p_value);
  EXPECT_DOUBLE_EQ(xy->z, -yx->z);
  EXPECT_DOUBLE_EQ(xy->ci_lower, -yx->ci_upper);
  EXPECT_DOUBLE_EQ(xy->ci_upper, -yx->ci_lower);
  EXPECT_DOUBLE_EQ(xy->estimate, -yx->estimate);
}

TEST(MannWhitneyTest, HigherConfidenceWidensTheInterval) {
  const auto x = Normal(200, 0.1, 1.0, 3);
  const auto y = Normal(200, 0.0, 1.0, 4);
  const auto r95 = MannWhitney(x, y, 0.95);
  const auto r98 = MannWhitney(x, y, 0.98);
  ASSERT_TRUE(r95.has_value() && r98.has_value());
  EXPECT_LT(r98->ci_lower, r95->ci_lower);
  EXPECT_GT(r98->ci_upper, r95->ci_upper);
  EXPECT_EQ(r98->estimate, r95->estimate);
}

TEST(MannWhitneyTest, HandlesADayOfTicksPerSide) {
  // 2 x 43 200 values would be 1.9e9 pairwise differences; none is formed.
  const auto x = Normal(43200, 1.001, 0.01, 5);
  const auto y = Normal(43200, 1.0, 0.01, 6);
  const auto r = MannWhitney(x, y, 0.98);
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->estimate, 0.001, 2e-4);
  EXPECT_LT(r->ci_lower, r->estimate);
  EXPECT_GT(r->ci_lower, 0.0);
  EXPECT_LT(r->p_value, 1e-20);
}

TEST(MannWhitneyTest, RejectsWhatRAndKayentaCannotCompute) {
  const std::vector<double> some = {1, 2, 3};
  const std::vector<double> none;
  EXPECT_EQ(MannWhitney(none, some, 0.98).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MannWhitney(some, none, 0.98).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MannWhitney(some, some, 1.0).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MannWhitney(some, some, std::nan("")).error().code(), StatusCode::kInvalidArgument);
  const std::vector<double> with_nan = {1, std::nan(""), 3};
  EXPECT_EQ(MannWhitney(with_nan, some, 0.98).error().code(), StatusCode::kInvalidArgument);
  const std::vector<double> with_inf = {1, std::numeric_limits<double>::infinity()};
  EXPECT_EQ(MannWhitney(some, with_inf, 0.98).error().code(), StatusCode::kInvalidArgument);
  // Every observation tied: R stops with this message.
  const std::vector<double> fives = {5, 5, 5};
  const auto tied = MannWhitney(fives, fives, 0.98);
  ASSERT_FALSE(tied.has_value());
  EXPECT_NE(tied.error().message().find("all observations are tied"), std::string::npos);
  const std::vector<double> big(kMaxObservations, 1.0);
  EXPECT_EQ(MannWhitney(big, some, 0.98).error().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace gpucanary::eval::kayenta
