#include "model/names.h"

#include <gtest/gtest.h>

namespace gpucanary::model {
namespace {

TEST(NamesTest, MetricNames) {
  EXPECT_TRUE(IsValidMetricName("DCGM_FI_DEV_SM_CLOCK"));
  EXPECT_TRUE(IsValidMetricName("vllm:generation_tokens_total"));
  EXPECT_TRUE(IsValidMetricName("_x"));
  EXPECT_TRUE(IsValidMetricName(":x"));
  EXPECT_TRUE(IsValidMetricName("x9"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("a b"));
  EXPECT_FALSE(IsValidMetricName("a.b"));
  EXPECT_FALSE(IsValidMetricName("caf\xc3\xa9"));
}

TEST(NamesTest, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("gpu"));
  EXPECT_TRUE(IsValidLabelName("UUID"));
  EXPECT_TRUE(IsValidLabelName("pci_bus_id"));
  EXPECT_TRUE(IsValidLabelName("__name__"));
  EXPECT_TRUE(IsValidLabelName("_"));
  EXPECT_TRUE(IsValidLabelName("a1"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("a:b"));  // colons are for metric names only
  EXPECT_FALSE(IsValidLabelName(":a"));
  EXPECT_FALSE(IsValidLabelName("9a"));
  EXPECT_FALSE(IsValidLabelName("a.b"));
  EXPECT_FALSE(IsValidLabelName("a-b"));
  EXPECT_FALSE(IsValidLabelName("caf\xc3\xa9"));
}

}  // namespace
}  // namespace gpucanary::model
