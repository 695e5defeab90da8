#include "model/metric_type.h"

#include <gtest/gtest.h>

namespace gpucanary::model {
namespace {

TEST(MetricTypeTest, NamesAreTheOpenMetricsSpellings) {
  EXPECT_EQ(MetricTypeName(MetricType::kUnknown), "unknown");
  EXPECT_EQ(MetricTypeName(MetricType::kCounter), "counter");
  EXPECT_EQ(MetricTypeName(MetricType::kGauge), "gauge");
  EXPECT_EQ(MetricTypeName(MetricType::kHistogram), "histogram");
  EXPECT_EQ(MetricTypeName(MetricType::kGaugeHistogram), "gaugehistogram");
  EXPECT_EQ(MetricTypeName(MetricType::kSummary), "summary");
  EXPECT_EQ(MetricTypeName(MetricType::kInfo), "info");
  EXPECT_EQ(MetricTypeName(MetricType::kStateSet), "stateset");
}

}  // namespace
}  // namespace gpucanary::model
