// The judge on a canary without service metrics (a DCGM-only fleet: training,
// batch inference, a server whose /metrics is not scraped), on hand-built
// ticks: the policy's without_service measures decide a pass instead of the
// critical service metrics, and the report says that no service metrics were
// seen (docs/analysis-method.md, "Without service metrics").

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/judge/test_fleet.h"
#include "analysis/policy/policy.h"

namespace gpucanary::analysis {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kT0 = 1764680000;

// 2 canary and 2 baseline nodes of 4 H100s each, DCGM fields only: SM clock,
// tensor and DRAM activity, SM active, power. `shape` changes a canary GPU's
// fields from `from` on; `service` adds a vLLM token counter on every node.
struct DcgmFleet {
  enum Metric : std::int32_t { kClock, kTensor, kDram, kSmActive, kPower, kReasons, kTokens };
  std::vector<GpuInfo> gpus;
  std::vector<NodeInfo> nodes;
  std::vector<MetricInfo> metrics = {
      {"DCGM_FI_DEV_SM_CLOCK", MetricKind::kGauge},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", MetricKind::kGauge},
      {"DCGM_FI_PROF_DRAM_ACTIVE", MetricKind::kGauge},
      {"DCGM_FI_PROF_SM_ACTIVE", MetricKind::kGauge},
      {"DCGM_FI_DEV_POWER_USAGE", MetricKind::kGauge},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", MetricKind::kGauge},
      {"vllm:generation_tokens_total", MetricKind::kCounter},
  };
  struct Fields {
    double clock = 1980, tensor = 0.45, dram = 0.30, sm_active = 0.80, power = 600;
  };
  std::function<void(Fields&)> shape = [](Fields&) {};
  std::int64_t from = kT0;
  bool service = false;
  bool clock_reported = true;
  std::mt19937_64 rng{11};

  DcgmFleet() { judge_testing::AddTwoByTwoNodes(4, "NVIDIA H100 80GB HBM3", gpus, nodes); }
  Catalog catalog() const { return Catalog{&gpus, &nodes, &metrics}; }

  Tick Make(std::int64_t t) {
    std::normal_distribution<double> noise(0, 1);
    Tick tick;
    tick.time_s = t;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      Fields f;
      if (gpus[g].role == Role::kCanary && t >= from) shape(f);
      const auto id = static_cast<std::int32_t>(g);
      // Work and power move together (a busier second draws more power).
      const double load = 1 + 0.04 * noise(rng);
      if (clock_reported) tick.gpu_points.push_back({id, kClock, f.clock + 3 * noise(rng), {}});
      tick.gpu_points.push_back({id, kTensor, f.tensor * load, {}});
      tick.gpu_points.push_back({id, kDram, f.dram * load, {}});
      tick.gpu_points.push_back({id, kSmActive, f.sm_active * load, {}});
      tick.gpu_points.push_back({id, kPower, f.power * (0.6 + 0.4 * load), {}});
      tick.gpu_points.push_back({id, kReasons, 0, {}});
      tick.gpus.push_back(id);
    }
    if (service) {
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        tick.node_points.push_back({static_cast<std::int32_t>(n), kTokens, 1e6, 4000.0});
        tick.nodes.push_back(static_cast<std::int32_t>(n));
      }
    }
    return tick;
  }
};

Report JudgeFleet(DcgmFleet& fleet, std::int64_t seconds, const Policy& policy = DefaultPolicy()) {
  Judge judge({.policy = policy, .release_start_s = std::nullopt});
  for (std::int64_t s = 0; s < seconds; ++s) judge.Add(fleet.Make(kT0 + s), fleet.catalog());
  return judge.Finish();
}

const MetricResult* FindMetric(const Report& r, std::string_view name) {
  for (const MetricResult& m : r.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool HasNote(const Report& r, std::string_view text) {
  for (const std::string& n : r.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(JudgeWithoutServiceTest, HealthyDcgmOnlyCanaryPassesOnGpuTelemetry) {
  DcgmFleet fleet;
  const Report r = JudgeFleet(fleet, 400);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_FALSE(r.service_metrics_seen);
  ASSERT_TRUE(r.decided_at.has_value());
  // Work per joule, a ratio of bursty activity, waits min_service_seconds.
  EXPECT_GE(*r.decided_at, static_cast<double>(kT0 + 29));
  EXPECT_TRUE(HasNote(r, "no service metrics seen")) << ::testing::PrintToString(r.notes);
  // In the report's order: the policy's metrics, the rest of without_service,
  // the DRAM efficiency rule.
  EXPECT_TRUE(HasNote(r,
                      "a pass needs DCGM_FI_DEV_SM_CLOCK, work_per_joule, tokens_per_dram_active "
                      "shown not worse"))
      << ::testing::PrintToString(r.notes);
  // Not the service notes: per_token_latency is not required here.
  EXPECT_FALSE(HasNote(r, "critical and no data"));
  const MetricResult* work = FindMetric(r, "work_per_joule");
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->result, "pass");
  EXPECT_EQ(work->kind, "gauge");
  EXPECT_TRUE(work->critical);
  // tensor 0.45 x 1980 MHz / 600 W, within the noise.
  EXPECT_NEAR(work->baseline, 0.45 * 1980 / 600, 0.05);
  const MetricResult* tpot = FindMetric(r, "per_token_latency");
  ASSERT_NE(tpot, nullptr);
  EXPECT_EQ(tpot->result, "no_data");
  EXPECT_FALSE(tpot->critical);
}

// Issue 18: both arms idle (a model loaded, no traffic anywhere: the real
// b1 trace) is inconclusive, and says why and what would decide it: not
// "more time", which would never help.
TEST(JudgeWithoutServiceTest, BothArmsIdleSayNothingToCompare) {
  DcgmFleet fleet;
  fleet.from = kT0 - 1000;  // every tick, baseline too
  Report r;
  {
    Judge judge({.policy = DefaultPolicy(), .release_start_s = std::nullopt});
    for (std::int64_t s = 0; s < 300; ++s) {
      Tick tick = fleet.Make(kT0 + s);
      for (Point& p : tick.gpu_points) {
        // Idle: no tensor work; a trickle of memory traffic; idle clock and power.
        if (p.metric == DcgmFleet::kTensor) p.value = 0;
        if (p.metric == DcgmFleet::kDram) p.value = 0.001;
        if (p.metric == DcgmFleet::kSmActive) p.value = 0;
        if (p.metric == DcgmFleet::kPower) p.value = 70;
        if (p.metric == DcgmFleet::kClock) p.value = 345;
      }
      judge.Add(tick, fleet.catalog());
    }
    r = judge.Finish();
  }
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(HasNote(r, "neither arm did any work")) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(HasNote(r, "next: judge the canary while it serves"))
      << ::testing::PrintToString(r.notes);
  EXPECT_FALSE(HasNote(r, "more time")) << ::testing::PrintToString(r.notes);
}

TEST(JudgeWithoutServiceTest, LessWorkPerJouleFailsTheRelease) {
  DcgmFleet fleet;
  // The same tensor and DRAM activity at 15% more power: 13% less work per
  // joule, with clocks, throttling and DRAM efficiency unchanged.
  fleet.shape = [](DcgmFleet::Fields& f) { f.power *= 1.15; };
  const Report r = JudgeFleet(fleet, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const MetricResult* work = FindMetric(r, "work_per_joule");
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->result, "low");
  EXPECT_NEAR(work->change, 1 / 1.15 - 1, 0.02);
  ASSERT_FALSE(r.causes.empty());
  EXPECT_EQ(r.causes[0].scope, vocab::Scope::kRelease);
  EXPECT_EQ(r.causes[0].origin, "metric:work_per_joule");
}

TEST(JudgeWithoutServiceTest, MemoryThrashFailsOnTensorPerDramActivity) {
  DcgmFleet fleet;
  fleet.shape = [](DcgmFleet::Fields& f) {
    f.dram *= 1.6;    // DRAM busy...
    f.tensor *= 0.8;  // ...while the tensor pipes idle
  };
  const Report r = JudgeFleet(fleet, 400);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  ASSERT_FALSE(r.causes.empty());
  EXPECT_EQ(r.causes[0].kind, vocab::CauseKind::kMemoryThrash);
  EXPECT_EQ(r.causes[0].scope, vocab::Scope::kRelease);
}

TEST(JudgeWithoutServiceTest, WithServiceMetricsTheyStayOutOfTheReport) {
  DcgmFleet fleet;
  fleet.service = true;  // a token counter: the service decides, not the GPU measures
  fleet.shape = [](DcgmFleet::Fields& f) { f.power *= 1.15; };
  const Report r = JudgeFleet(fleet, 400);
  EXPECT_TRUE(r.service_metrics_seen);
  EXPECT_EQ(FindMetric(r, "work_per_joule"), nullptr);
  EXPECT_FALSE(HasNote(r, "no service metrics seen"));
  // per_token_latency has no data (only tokens are served here): the service
  // rule stands, and the worse work per joule does not fail the release.
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(HasNote(r, "per_token_latency: critical and no data"));
  for (const Cause& c : r.causes) EXPECT_NE(c.origin, "metric:work_per_joule");
}

TEST(JudgeWithoutServiceTest, AMeasureWithoutDataIsNotRequiredButOneWithDataIs) {
  DcgmFleet fleet;
  fleet.clock_reported = false;  // like the 10 Hz H100 traces: no SM clock column
  const Report r = JudgeFleet(fleet, 400);
  // Work per joule needs the clock; the DRAM efficiency rule decides alone.
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_TRUE(HasNote(r,
                      "a pass needs tokens_per_dram_active shown not worse (no data: "
                      "DCGM_FI_DEV_SM_CLOCK, work_per_joule)"))
      << ::testing::PrintToString(r.notes);
}

TEST(JudgeWithoutServiceTest, APolicyWithoutTheListStaysInconclusive) {
  Result<Policy> policy = ParsePolicy(
      "metrics:\n"
      "  - {measure: per_token_latency, kind: mean, better: lower, margin: 0.03, critical: "
      "true}\n",
      "p.yaml");
  ASSERT_TRUE(policy.has_value()) << policy.error().message();
  DcgmFleet fleet;
  const Report r = JudgeFleet(fleet, 400, *policy);
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_FALSE(r.service_metrics_seen);
  EXPECT_TRUE(HasNote(r, "per_token_latency: critical and no data"));
}

// What a live canary or `judge --prometheus` asks a Prometheus for covers
// the without_service entries: a DCGM field of theirs, not a GPU measure's
// name (work per joule reads the fixed fields).
TEST(JudgeWithoutServiceTest, InputNamesCoverTheList) {
  Result<Policy> policy = ParsePolicy(
      "without_service:\n"
      "  - {measure: work_per_joule, better: higher, margin: 0.05}\n"
      "  - {name: DCGM_FI_DEV_MEM_COPY_UTIL, kind: gauge, better: lower, margin: 0.1}\n",
      "p.yaml");
  ASSERT_TRUE(policy.has_value()) << policy.error().message();
  const std::vector<std::string> names = JudgeInputNames(*policy);
  EXPECT_THAT(names, ::testing::Contains("DCGM_FI_DEV_MEM_COPY_UTIL"));
  EXPECT_THAT(names, ::testing::Contains("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"));
  EXPECT_THAT(names, ::testing::Contains("DCGM_FI_DEV_POWER_USAGE"));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("work_per_joule")));
  // The running batch, read for tokens/s and per-token latency at equal
  // load: each server's series, named by no policy entry.
  EXPECT_THAT(names, ::testing::Contains("vllm:num_requests_running"));
  EXPECT_THAT(names, ::testing::Contains("sglang:num_running_reqs"));
}

}  // namespace
}  // namespace gpucanary::analysis
