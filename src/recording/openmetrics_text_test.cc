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

std::string Escaped(std::string_view text) {
  std::string out;
  AppendEscaped(out, text);
  return out;
}

TEST(OpenMetricsTextTest, MetricNames) {
  EXPECT_TRUE(IsValidMetricName("DCGM_FI_DEV_SM_CLOCK"));
  EXPECT_TRUE(IsValidMetricName("vllm:generation_tokens_total"));
  EXPECT_TRUE(IsValidMetricName("_x"));
  EXPECT_TRUE(IsValidMetricName(":x"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_FALSE(IsValidMetricName("caf\xc3\xa9"));
}

TEST(OpenMetricsTextTest, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("gpu"));
  EXPECT_TRUE(IsValidLabelName("UUID"));
  EXPECT_TRUE(IsValidLabelName("pci_bus_id"));
  EXPECT_TRUE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("a:b"));  // colons are for metric names only
  EXPECT_FALSE(IsValidLabelName("9a"));
  EXPECT_FALSE(IsValidLabelName("a.b"));
}

TEST(OpenMetricsTextTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(
      IsValidUtf8("\xc2\xb0"
                  "C"));                         // degree sign
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x94\xa5"));  // U+1F525
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(OpenMetricsTextTest, Escaping) {
  EXPECT_EQ(Escaped("plain"), "plain");
  EXPECT_EQ(Escaped("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(Escaped("\n"), "\\n");
  EXPECT_EQ(Escaped("tab\tstays"), "tab\tstays");
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
