#include "analysis/stats/normal.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/stats/testdata.h"

namespace gpucanary::analysis::stats {
namespace {

using testing::LoadGolden;
using testing::NearRel;

TEST(NormalTest, QuantileMatchesScipyNdtri) {
  const auto golden = LoadGolden("normal.json");
  ASSERT_GE(golden["quantile"].size(), 20U);
  for (const auto& row : golden["quantile"]) {
    const double p = row["p"].get<double>();
    EXPECT_TRUE(NearRel(NormalQuantile(p), row["z"].get<double>())) << "p = " << p;
  }
}

TEST(NormalTest, CdfMatchesScipyNdtr) {
  const auto golden = LoadGolden("normal.json");
  ASSERT_GE(golden["cdf"].size(), 10U);
  for (const auto& row : golden["cdf"]) {
    const double x = row["x"].get<double>();
    EXPECT_TRUE(NearRel(NormalCdf(x), row["phi"].get<double>())) << "x = " << x;
  }
}

TEST(NormalTest, QuantileInvertsCdf) {
  for (double p = 0.001; p < 1.0; p += 0.0137) {
    EXPECT_TRUE(NearRel(NormalCdf(NormalQuantile(p)), p, 1e-12)) << "p = " << p;
  }
}

TEST(NormalTest, EdgesAndInvalidInput) {
  EXPECT_EQ(NormalQuantile(0.0), -INFINITY);
  EXPECT_EQ(NormalQuantile(1.0), INFINITY);
  EXPECT_TRUE(std::isnan(NormalQuantile(-0.1)));
  EXPECT_TRUE(std::isnan(NormalQuantile(1.5)));
  EXPECT_TRUE(std::isnan(NormalQuantile(NAN)));
  EXPECT_EQ(NormalQuantile(0.5), 0.0);
  EXPECT_EQ(NormalCdf(-INFINITY), 0.0);
  EXPECT_EQ(NormalCdf(INFINITY), 1.0);
}

}  // namespace
}  // namespace gpucanary::analysis::stats
