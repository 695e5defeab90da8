#include "analysis/policy/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpucanary::analysis {
namespace {

using ::testing::HasSubstr;

TEST(PolicyTest, TheShippedDefaultIsTheBuiltInOne) {
  std::ifstream in(std::string(GPUCANARY_SOURCE_DIR) + "/policies/default.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), DefaultPolicyText());
  Result<Policy> loaded = LoadPolicy(std::string(GPUCANARY_SOURCE_DIR) + "/policies/default.yaml");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message();
  EXPECT_EQ(loaded->metrics.size(), DefaultPolicy().metrics.size());
}

TEST(PolicyTest, DefaultPolicyHasTheFieldRules) {
  const Policy& p = DefaultPolicy();
  EXPECT_DOUBLE_EQ(p.alpha, 0.01);
  EXPECT_DOUBLE_EQ(p.pass_alpha, 0.05);
  EXPECT_DOUBLE_EQ(p.block_s, 10);
  EXPECT_TRUE(p.rules.throttle.enabled);
  // HW slowdown, SW thermal, HW thermal, HW power brake; not the power cap.
  EXPECT_EQ(p.rules.throttle.harmful_mask, 0x8U | 0x20U | 0x40U | 0x80U);
  EXPECT_TRUE(p.rules.throttle.power_cap_if_baseline_uncapped);
  EXPECT_DOUBLE_EQ(p.rules.throttle.seconds, 3);
  EXPECT_TRUE(p.rules.dram_efficiency);
  EXPECT_DOUBLE_EQ(p.rules.dram_efficiency_max_drop, 0.15);
  EXPECT_TRUE(p.rules.pcie_link);
  EXPECT_TRUE(p.rules.ecc_dbe);
  EXPECT_THAT(p.rules.critical_xids, ::testing::Contains(79));
  ASSERT_FALSE(p.metrics.empty());
  EXPECT_EQ(p.min_blocks, 10);
  EXPECT_EQ(p.min_seconds, 5);
  EXPECT_EQ(p.min_service_seconds, 30);
  EXPECT_DOUBLE_EQ(p.warmup_s, 10);
  // The speed of generation decides a pass: time per output token, 3%.
  const MetricPolicy& tpot = p.metrics[0];
  EXPECT_EQ(tpot.name, "per_token_latency");
  EXPECT_EQ(tpot.measure, vocab::ServiceMeasure::kPerTokenLatency);
  EXPECT_EQ(tpot.kind, MetricPolicy::Kind::kMean);
  EXPECT_EQ(tpot.better, MetricPolicy::Better::kLower);
  EXPECT_DOUBLE_EQ(tpot.margin, 0.03);
  EXPECT_TRUE(tpot.critical);
  const MetricPolicy& tokens = p.metrics[1];
  EXPECT_EQ(tokens.name, "generated_tokens");
  EXPECT_EQ(tokens.measure, vocab::ServiceMeasure::kGeneratedTokens);
  EXPECT_EQ(tokens.kind, MetricPolicy::Kind::kRate);
  EXPECT_FALSE(tokens.critical);
  int counts = 0;
  for (const MetricPolicy& m : p.metrics) counts += m.kind == MetricPolicy::Kind::kCount;
  EXPECT_EQ(counts, 2);  // PCIe replays and ECC SBEs
}

TEST(PolicyTest, KindsWarmupAndMinBlocksParse) {
  Result<Policy> p = ParsePolicy(
      "warmup: 45s\nmin_blocks: 6\nmin_seconds: 20s\nmin_service_seconds: 1m\nmetrics:\n"
      "  - {name: a, kind: mean, better: lower, margin: 0.05}\n"
      "  - {name: b, kind: count, better: lower, margin: 1}\n",
      "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_DOUBLE_EQ(p->warmup_s, 45);
  EXPECT_EQ(p->min_blocks, 6);
  EXPECT_EQ(p->min_seconds, 20);
  EXPECT_EQ(p->min_service_seconds, 60);
  EXPECT_EQ(p->metrics[0].kind, MetricPolicy::Kind::kMean);
  EXPECT_EQ(p->metrics[1].kind, MetricPolicy::Kind::kCount);
  EXPECT_EQ(MetricKindName(p->metrics[1].kind), "count");
}

// An entry names a service measure instead of a metric; old metric-name
// entries still parse beside it.
TEST(PolicyTest, MeasuresAndMetricNamesParse) {
  Result<Policy> p = ParsePolicy(
      "metrics:\n"
      "  - {measure: per_token_latency, kind: mean, better: lower, margin: 0.03, critical: true}\n"
      "  - {measure: kv_cache_usage, kind: gauge, better: lower, margin: 0.5}\n"
      "  - {name: \"vllm:time_per_output_token_seconds\", kind: mean, better: lower, "
      "margin: 0.03}\n",
      "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  ASSERT_EQ(p->metrics.size(), 3U);
  EXPECT_EQ(p->metrics[0].measure, vocab::ServiceMeasure::kPerTokenLatency);
  EXPECT_EQ(p->metrics[0].name, "per_token_latency");
  EXPECT_TRUE(p->metrics[0].critical);
  EXPECT_EQ(p->metrics[1].measure, vocab::ServiceMeasure::kKvCacheUsage);
  EXPECT_EQ(p->metrics[2].measure, std::nullopt);
  EXPECT_EQ(p->metrics[2].name, "vllm:time_per_output_token_seconds");
}

TEST(PolicyTest, WithoutServiceEntriesParse) {
  Result<Policy> p = ParsePolicy(
      "metrics:\n"
      "  - {name: DCGM_FI_DEV_SM_CLOCK, kind: gauge, better: higher, margin: 0.05}\n"
      "without_service:\n"
      "  - {measure: work_per_joule, better: higher, margin: 0.05}\n"
      "  - {name: DCGM_FI_DEV_SM_CLOCK, kind: gauge, better: higher, margin: 0.05}\n",
      "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  ASSERT_EQ(p->without_service.size(), 2U);
  EXPECT_EQ(p->without_service[0].gpu_measure, vocab::GpuMeasure::kWorkPerJoule);
  EXPECT_EQ(p->without_service[0].measure, std::nullopt);
  EXPECT_EQ(p->without_service[0].name, "work_per_joule");
  EXPECT_EQ(p->without_service[0].kind, MetricPolicy::Kind::kGauge);
  EXPECT_EQ(p->without_service[1].name, "DCGM_FI_DEV_SM_CLOCK");
  // The default judges a DCGM-only canary on work per joule and the SM clock.
  const Policy& d = DefaultPolicy();
  ASSERT_EQ(d.without_service.size(), 2U);
  EXPECT_EQ(d.without_service[0].gpu_measure, vocab::GpuMeasure::kWorkPerJoule);
  EXPECT_EQ(d.without_service[1].name, "DCGM_FI_DEV_SM_CLOCK");
  // A GPU measure may sit in metrics too (it then decides on every canary).
  p = ParsePolicy("metrics:\n  - {measure: work_per_joule, better: higher, margin: 0.1}\n",
                  "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(p->metrics[0].gpu_measure, vocab::GpuMeasure::kWorkPerJoule);
}

TEST(PolicyTest, RulesLeftOutAreOff) {
  Result<Policy> p = ParsePolicy("alpha: 0.05\npass_alpha: 0.1\nmetrics: []\n", "p.yaml");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_DOUBLE_EQ(p->alpha, 0.05);
  EXPECT_DOUBLE_EQ(p->pass_alpha, 0.1);
  EXPECT_FALSE(p->rules.throttle.enabled);
  EXPECT_FALSE(p->rules.pcie_link);
  EXPECT_TRUE(p->metrics.empty());
}

TEST(PolicyTest, BadPoliciesNameFileLineColumnAndField) {
  struct Case {
    const char* text;
    const char* where;
    const char* detail;
  } cases[] = {
      {"alpha: 2\n", "p.yaml:1:8:", "alpha: must be in (0, 0.5)"},
      {"pass_alpha: 0\n", "p.yaml:1:13:", "pass_alpha: must be in (0, 0.5)"},
      {"alpha: 0.01\nblok: 10s\n", "p.yaml:2:1:", "unknown field"},
      {"block: ten\n", "p.yaml:1:8:", "bad duration"},
      {"rules:\n  throttle: {reasons: [hw_slowdwn]}\n",
       "p.yaml:2:24:", "unknown reason 'hw_slowdwn'"},
      {"rules:\n  throttle: {seconds: 3}\n", "p.yaml:2:13:", "rules.throttle.reasons: missing"},
      {"rules:\n  critical_xids: [79, x]\n", "p.yaml:2:23:", "rules.critical_xids[1]"},
      {"metrics:\n  - {name: a, better: up, margin: 0.1}\n",
       "p.yaml:2:23:", "expected higher or lower"},
      {"metrics:\n  - {name: a, better: higher}\n", "p.yaml:2:5:", "metrics[0].margin: missing"},
      {"metrics:\n  - {name: a, kind: p95, better: lower, margin: 1}\n",
       "p.yaml:2:21:", "expected gauge, rate, mean, p99 or count"},
      {"metrics:\n  - {name: a, kind: count, better: lower, margin: 1, critical: true}\n",
       "p.yaml:2:64:", "a count metric can fail a release but not pass one"},
      {"metrics:\n  - {name: a, better: lower, margin: -1}\n",
       "p.yaml:2:38:", "must not be negative"},
      {"min_blocks: 1\n", "p.yaml:1:13:", "min_blocks"},
      {"min_seconds: 2s\n", "p.yaml:1:14:", "min_seconds"},
      {"min_service_seconds: 2h\n", "p.yaml:1:22:", "min_service_seconds"},
      {"warmup: -5s\n", "p.yaml:1:9:", "warmup"},
      {"metrics:\n  - {name: a, better: lower, margin: 1}\n  - {name: a, better: lower, margin: "
       "2}\n",
       "p.yaml:3:12:", "metric listed twice"},
      {"metrics: [\n", "p.yaml:", "syntax"},
      {"metrics:\n  - {measure: tpot, kind: mean, better: lower, margin: 1}\n",
       "p.yaml:2:15:", "metrics[0].measure: unknown measure 'tpot' (known: per_token_latency, "},
      {"metrics:\n  - {name: a, measure: e2e_latency, kind: p99, better: lower, margin: 1}\n",
       "p.yaml:2:24:", "give a name or a measure, not both"},
      {"metrics:\n  - {measure: queue_depth, kind: rate, better: lower, margin: 1}\n",
       "p.yaml:2:34:", "metrics[0].kind: measure queue_depth is compared as gauge"},
      {"metrics:\n  - {measure: per_token_latency, better: lower, margin: 1}\n",
       "p.yaml:2:5:", "measure per_token_latency is compared as mean or p99"},
      {"metrics:\n  - {kind: mean, better: lower, margin: 1}\n",
       "p.yaml:2:5:", "metrics[0].name: missing (or give a measure)"},
      {"metrics:\n  - {measure: e2e_latency, kind: p99, better: lower, margin: 1}\n"
       "  - {measure: e2e_latency, kind: p99, better: lower, margin: 2}\n",
       "p.yaml:3:15:", "metrics[1].measure: metric listed twice"},
      {"metrics:\n  - {measure: work_per_joule, kind: rate, better: higher, margin: 1}\n",
       "p.yaml:2:37:", "metrics[0].kind: measure work_per_joule is compared as gauge"},
      {"metrics:\n  - {measure: running_requests, kind: mean, better: lower, margin: 1}\n",
       "p.yaml:2:39:", "metrics[0].kind: measure running_requests is compared as gauge"},
      {"metrics:\n  - {measure: joules, better: higher, margin: 1}\n",
       "p.yaml:2:15:", "running_requests, work_per_joule)"},
      {"without_service:\n  - {measure: per_token_latency, kind: mean, better: lower, "
       "margin: 1}\n",
       "p.yaml:2:15:", "without_service[0].measure: a service measure has no data"},
      {"without_service:\n  - {measure: work_per_joule, better: higher, margin: 1, "
       "critical: true}\n",
       "p.yaml:2:68:", "without_service[0].critical: every without_service entry is required"},
      {"without_service:\n  - {name: DCGM_FI_DEV_PCIE_REPLAY_COUNTER, kind: count, better: lower, "
       "margin: 1}\n",
       "p.yaml:2:51:", "without_service[0].kind: a count metric cannot pass a release"},
      {"metrics:\n  - {name: DCGM_FI_DEV_SM_CLOCK, better: higher, margin: 0.05}\n"
       "without_service:\n  - {name: DCGM_FI_DEV_SM_CLOCK, better: higher, margin: 0.1}\n",
       "p.yaml:4:12:", "without_service[0].name: repeats a metrics entry with another"},
      {"without_service: {name: a}\n", "p.yaml:1:18:", "without_service: expected a list"},
  };
  for (const Case& c : cases) {
    Result<Policy> p = ParsePolicy(c.text, "p.yaml");
    ASSERT_FALSE(p.has_value()) << c.text;
    EXPECT_THAT(p.error().message(), HasSubstr(c.where)) << c.text;
    EXPECT_THAT(p.error().message(), HasSubstr(c.detail)) << c.text;
  }
}

TEST(PolicyTest, MissingFileIsNotFound) {
  Result<Policy> p = LoadPolicy("/nonexistent/policy.yaml");
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(p.error().message(), HasSubstr("/nonexistent/policy.yaml"));
}

}  // namespace
}  // namespace gpucanary::analysis
