#include "recording/openmetrics_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace gpucanary::recording {
namespace {

std::string Value(double value) {
  std::string out;
  AppendValue(out, value);
  return out;
}

std::string Timestamp(std::int64_t ms) {
  std::string out;
  AppendTimestamp(out, ms);
  return out;
}

TEST(OpenMetricsTextTest, Values) {
  EXPECT_EQ(Value(0), "0");
  EXPECT_EQ(Value(34), "34");
  EXPECT_EQ(Value(34.63), "34.63");
  EXPECT_EQ(Value(0.1), "0.1");
  EXPECT_EQ(Value(5e-06), "5e-06");
  EXPECT_EQ(Value(238749445947.0), "238749445947");
  EXPECT_EQ(Value(-0.0), "-0");
  EXPECT_EQ(Value(1e300), "1e+300");
  EXPECT_EQ(Value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(Value(-std::numeric_limits<double>::infinity()), "-Inf");
  // Shortest text still round-trips.
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(Value(third)), third);
}

TEST(OpenMetricsTextTest, Timestamps) {
  EXPECT_EQ(Timestamp(1775016266006), "1775016266.006");
  EXPECT_EQ(Timestamp(0), "0.000");
  EXPECT_EQ(Timestamp(5), "0.005");
  EXPECT_EQ(Timestamp(1000), "1.000");
  EXPECT_EQ(Timestamp(-1), "-0.001");
  EXPECT_EQ(Timestamp(-1500), "-1.500");
  EXPECT_EQ(Timestamp(-1000), "-1.000");
  EXPECT_EQ(Timestamp(std::numeric_limits<std::int64_t>::max()), "9223372036854775.807");
  EXPECT_EQ(Timestamp(std::numeric_limits<std::int64_t>::min()), "-9223372036854775.808");
}

}  // namespace
}  // namespace gpucanary::recording
