// The default policy on each inference server of the service-measure table
// (src/vocab/service_measures.h), on hand-built ticks whose series have the
// names, types and units of that server's committed exposition
// (src/vocab/testdata): a healthy canary passes, one whose per-token latency
// is 40% worse fails, and both are judged by the same policy. Also: a node
// gauge in a policy is compared as the node's value (not as a counter's
// increase per GPU).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/judge/test_fleet.h"
#include "analysis/policy/policy.h"
#include "vocab/service_measures.h"

namespace gpucanary::analysis {
namespace {

constexpr std::int64_t kT0 = 1764680000;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

using vocab::Server;
using vocab::ServiceMeasure;
using vocab::ServiceMetric;
using vocab::SourceType;

// 2 canary and 2 baseline nodes of 2 GPUs each, running `server`: each tick
// carries each GPU's SM clock and each node's generated-token counter and
// per-token-latency samples as that server exposes them (a histogram's _sum
// and _count, or Triton's request-duration counter in microseconds over its
// output-token counter), plus the queue-depth gauge.
class ServerFleet {
 public:
  explicit ServerFleet(Server server) {
    const ServiceMetric* tokens =
        vocab::FindServiceMetric(server, ServiceMeasure::kGeneratedTokens);
    const ServiceMetric* latency =
        vocab::FindServiceMetric(server, ServiceMeasure::kPerTokenLatency);
    const ServiceMetric* queue = vocab::FindServiceMetric(server, ServiceMeasure::kQueueDepth);
    const ServiceMetric* running =
        vocab::FindServiceMetric(server, ServiceMeasure::kRunningRequests);
    metrics_.push_back({"DCGM_FI_DEV_SM_CLOCK", MetricKind::kGauge});
    metrics_.push_back({"DCGM_FI_DEV_XID_ERRORS", MetricKind::kGauge});
    metrics_.push_back({"DCGM_FI_PROF_DRAM_ACTIVE", MetricKind::kGauge});
    metrics_.push_back({"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", MetricKind::kGauge});
    tokens_ = Metric(std::string(tokens->metric), MetricKind::kCounter);
    latency_scale_ = latency->scale;
    per_request_ = server == Server::kTgi;  // one observation per request: its mean
    if (latency->type == SourceType::kHistogram) {
      latency_num_ = Metric(std::string(latency->metric) + "_sum", MetricKind::kCounter);
      latency_den_ = Metric(std::string(latency->metric) + "_count", MetricKind::kCounter);
    } else {
      latency_num_ = Metric(std::string(latency->metric), MetricKind::kCounter);
      latency_den_ = Metric(std::string(latency->denominator), MetricKind::kCounter);
    }
    if (queue->selector.empty()) queue_ = Metric(std::string(queue->metric), MetricKind::kGauge);
    if (running != nullptr && running->selector.empty()) {
      running_ = Metric(std::string(running->metric), MetricKind::kGauge);
    }
    judge_testing::AddTwoByTwoNodes(kGpusPerNode, "H100", gpus_, nodes_);
  }
  static constexpr int kGpusPerNode = 2;

  Catalog catalog() const { return Catalog{&gpus_, &nodes_, &metrics_}; }
  // Per-token latency factor of a node (1: as the baseline).
  std::function<double(int)> latency_factor = [](int) { return 1.0; };
  // Requests waiting on a node.
  std::function<double(int)> queue_depth = [](int) { return 4.0; };
  // Requests running per GPU on a node at second s (NaN: the server
  // exposes no running-requests series), and the seconds per token a node
  // takes at a load (before latency_factor): flat unless a test bends it.
  std::function<double(int, std::int64_t)> load = [](int, std::int64_t) {
    return std::numeric_limits<double>::quiet_NaN();
  };
  std::function<double(double)> latency_at = [](double) { return 0.016; };
  // Tokens a node generates per GPU per second at a load (before noise):
  // 1000 unless a test ties them to the load.
  std::function<double(int, double)> tokens_per_gpu = [](int, double) { return 1000.0; };
  // The token counter's value on a node at second s (its increase is the
  // tokens generated that second); a restart makes it fall.
  std::function<double(int, std::int64_t)> tokens_value = [](int, std::int64_t) { return 1e6; };
  // DRAM activity of a node's GPUs at a load (NaN: not exported; the
  // tensor pipe is exported with it, at half of it).
  std::function<double(int, double)> dram_active = [](int, double) {
    return std::numeric_limits<double>::quiet_NaN();
  };
  // The last XID on a GPU at second s (0: none).
  std::function<int(int, std::int64_t)> xid = [](int, std::int64_t) { return 0; };

  Tick Make(std::int64_t t) {
    std::normal_distribution<double> noise(0, 1);
    Tick tick;
    tick.time_s = t;
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      tick.gpu_points.push_back(
          {static_cast<std::int32_t>(g), 0, 1980 + 5 * noise(rng_), std::nullopt});
      const int code = xid(static_cast<int>(g), t);
      if (code > 0) {
        tick.gpu_points.push_back(
            {static_cast<std::int32_t>(g), 1, static_cast<double>(code), std::nullopt});
      }
      const int node = gpus_[g].node;
      const double dram = dram_active(node, load(node, t));
      if (!std::isnan(dram)) {
        const double d = dram * (1 + 0.01 * noise(rng_));
        tick.gpu_points.push_back({static_cast<std::int32_t>(g), 2, d, std::nullopt});
        tick.gpu_points.push_back({static_cast<std::int32_t>(g), 3, d / 2, std::nullopt});
      }
      tick.gpus.push_back(static_cast<std::int32_t>(g));
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const auto node = static_cast<std::int32_t>(n);
      const double x = load(static_cast<int>(n), t);
      const double tokens =
          kGpusPerNode * tokens_per_gpu(static_cast<int>(n), x) * (1 + 0.05 * noise(rng_));
      const double seconds_per_token = latency_at(std::isnan(x) ? 0.0 : x) *
                                       latency_factor(static_cast<int>(n)) *
                                       (1 + 0.01 * noise(rng_));
      std::map<int, Point> points;
      points[tokens_] = {node, tokens_, tokens_value(static_cast<int>(n), t), tokens};
      // In the server's unit (seconds, or Triton's microseconds): per
      // token, or per request as TGI records each request's mean.
      const double events = per_request_ ? tokens / 100 : tokens;
      points[latency_num_] = {node, latency_num_, 1e3, events * seconds_per_token / latency_scale_};
      if (latency_den_ != tokens_) points[latency_den_] = {node, latency_den_, 1e6, events};
      if (queue_ >= 0) points[queue_] = {node, queue_, queue_depth(static_cast<int>(n)), {}};
      if (running_ >= 0 && !std::isnan(x)) {
        points[running_] = {node, running_, x * kGpusPerNode, {}};
      }
      for (const auto& [metric, p] : points) tick.node_points.push_back(p);
      tick.nodes.push_back(node);
    }
    return tick;
  }

 private:
  int Metric(const std::string& name, MetricKind kind) {
    for (std::size_t i = 0; i < metrics_.size(); ++i) {
      if (metrics_[i].name == name) return static_cast<int>(i);
    }
    metrics_.push_back({name, kind});
    return static_cast<int>(metrics_.size() - 1);
  }

  std::vector<GpuInfo> gpus_;
  std::vector<NodeInfo> nodes_;
  std::vector<MetricInfo> metrics_;
  int tokens_ = -1, latency_num_ = -1, latency_den_ = -1, queue_ = -1, running_ = -1;
  double latency_scale_ = 1;
  bool per_request_ = false;
  std::mt19937_64 rng_{7};
};

Report JudgeServerFleet(ServerFleet& fleet, const Policy& policy = DefaultPolicy(),
                        std::optional<std::int64_t> release_start = std::nullopt) {
  Judge judge({.policy = policy, .release_start_s = release_start});
  for (std::int64_t s = 0; s < 400; ++s) judge.Add(fleet.Make(kT0 + s), fleet.catalog());
  return judge.Finish();
}

const MetricResult* FindMetric(const Report& r, std::string_view name) {
  for (const MetricResult& m : r.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

class JudgeServersTest : public ::testing::TestWithParam<Server> {};

TEST_P(JudgeServersTest, HealthyCanaryPassesUnderTheDefaultPolicy) {
  ServerFleet fleet(GetParam());
  const Report r = JudgeServerFleet(fleet);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->result, "pass");
  EXPECT_NEAR(latency->baseline, 0.016, 0.001);  // seconds, whatever the server's unit
  const MetricResult* tokens = FindMetric(r, "generated_tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_NEAR(tokens->baseline, 1000, 50);  // tokens/s per GPU
}

TEST_P(JudgeServersTest, PerTokenLatency40PercentWorseFails) {
  ServerFleet fleet(GetParam());
  fleet.latency_factor = [](int node) { return node < 2 ? 1.4 : 1.0; };
  const Report r = JudgeServerFleet(fleet);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->result, "high");
  EXPECT_NEAR(latency->change, 0.40, 0.02);
}

INSTANTIATE_TEST_SUITE_P(EveryServer, JudgeServersTest,
                         ::testing::Values(Server::kVllm, Server::kVllmLegacy, Server::kSglang,
                                           Server::kTgi, Server::kTritonTrtllm),
                         [](const ::testing::TestParamInfo<Server>& param_info) {
                           return std::string(vocab::Name(param_info.param));
                         });

// Per-token latency at equal load (docs/analysis-method.md): a decode step
// costs 10 ms plus 0.2 ms per request running per GPU. The baseline nodes'
// loads swing between 10 and 70 requests per GPU; the canary nodes run 1.4x
// the baseline's mean load. Read as is, the canary is ~17% slower per token.
double Wave(std::int64_t t, double period) {
  return std::sin(2 * 3.141592653589793 * static_cast<double>(t) / period);
}
double StepLatency(double requests_per_gpu) { return 0.010 + 0.0002 * requests_per_gpu; }
ServerFleet LoadedFleet(double canary_load) {
  ServerFleet fleet(Server::kVllm);
  fleet.load = [canary_load](int node, std::int64_t t) {
    const std::int64_t n = node;
    if (node < 2) return canary_load + 5 * Wave(t + 13 * n, 47);
    return 40 + 30 * Wave(t + 29 * n, 61 + 7 * node);
  };
  fleet.latency_at = StepLatency;
  return fleet;
}

bool HasNote(const Report& r, std::string_view part) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

TEST(JudgeLoadTest, CanaryAtHigherLoadIsComparedAtEqualLoad) {
  ServerFleet fleet = LoadedFleet(56);
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_NEAR(latency->change, 0.0, 0.02);
  EXPECT_EQ(latency->result, "pass");
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_TRUE(HasNote(r, "per_token_latency: compared at equal load: the canary ran 56"));
}

// The same loads, a release 10% slower per step: still +10% at equal load
// (the normalisation takes out the load, not the slowdown).
TEST(JudgeLoadTest, SlowerStepsAtHigherLoadStillFail) {
  ServerFleet fleet = LoadedFleet(56);
  fleet.latency_factor = [](int node) { return node < 2 ? 1.10 : 1.0; };
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_NEAR(latency->change, 0.10, 0.02);
  EXPECT_EQ(latency->result, "high");
  EXPECT_EQ(r.verdict, Verdict::kFail);
}

// A canary at 4x the highest baseline load: no baseline node ran there, so
// its latency is not compared (not extrapolated), and the report says so.
TEST(JudgeLoadTest, LoadNoBaselineRanAtIsNotCompared) {
  ServerFleet fleet = LoadedFleet(280);
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->result, "no_data");
  EXPECT_NE(r.verdict, Verdict::kFail);
  EXPECT_TRUE(HasNote(r, "ran at a load no baseline node ran at and are not compared"));
}

// Without a running-requests series (TGI exposes none) latency is compared
// as read: the canary at 1.4x the load is slower per token, and fails.
TEST(JudgeLoadTest, WithoutRunningRequestsLatencyIsComparedAsRead) {
  ServerFleet fleet = LoadedFleet(56);
  fleet.load = [](int, std::int64_t) { return std::numeric_limits<double>::quiet_NaN(); };
  fleet.latency_at = [](double) { return 0.016; };
  fleet.latency_factor = [](int node) {
    // The latency the load would give, with no running series to show it.
    const double x = node < 2 ? 56.0 : 40.0;
    return StepLatency(x) / 0.016;
  };
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* latency = FindMetric(r, "per_token_latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_GT(latency->change, 0.15);
  EXPECT_EQ(latency->result, "high");
  EXPECT_FALSE(HasNote(r, "compared at equal load"));
}

// Tokens/s at equal load: below saturation a node generates what it is
// offered, one token per running request per step. A canary offered less
// traffic (28 requests per GPU against the baseline's mean 40) generates
// ~20% fewer tokens per GPU as read, at the same speed per step.
ServerFleet ThroughputFleet(double canary_load, double canary_step_factor) {
  ServerFleet fleet = LoadedFleet(canary_load);
  fleet.latency_factor = [canary_step_factor](int node) {
    return node < 2 ? canary_step_factor : 1.0;
  };
  fleet.tokens_per_gpu = [canary_step_factor](int node, double x) {
    return x / (StepLatency(x) * (node < 2 ? canary_step_factor : 1.0));
  };
  // A step streams the weights (a fixed DRAM time) and each sequence's KV
  // cache: DRAM activity grows far slower than the tokens with the batch.
  fleet.dram_active = [](int, double x) { return 0.5 + 0.002 * x; };
  return fleet;
}

TEST(JudgeLoadTest, CanaryOfferedLessTrafficIsNotSlower) {
  ServerFleet fleet = ThroughputFleet(28, 1.0);
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* tokens = FindMetric(r, "generated_tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_NEAR(tokens->change, 0.0, 0.02);
  EXPECT_EQ(tokens->result, "pass");
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_TRUE(HasNote(r, "generated_tokens: compared at equal load: the canary ran 28"));
  EXPECT_TRUE(HasNote(r, "tokens/s per GPU"));
  // Tokens per DRAM-active second follow the batch too (-15% as read).
  const MetricResult* per_dram = FindMetric(r, "tokens_per_dram_active");
  ASSERT_NE(per_dram, nullptr);
  EXPECT_NEAR(per_dram->change, 0.0, 0.02);
  EXPECT_EQ(per_dram->result, "pass");
  EXPECT_TRUE(HasNote(r, "tokens per DRAM-active second (")) << r.notes.size();
}

// At the same lower load, a release 10% slower per step generates ~9% fewer
// tokens at equal load: it fails.
TEST(JudgeLoadTest, FewerTokensFromSlowerStepsStillFail) {
  ServerFleet fleet = ThroughputFleet(28, 1.10);
  const Report r = JudgeServerFleet(fleet);
  const MetricResult* tokens = FindMetric(r, "generated_tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_NEAR(tokens->change, -0.09, 0.02);
  EXPECT_EQ(tokens->result, "low");
  EXPECT_EQ(r.verdict, Verdict::kFail);
}

// Crash loops (docs/analysis-method.md, "Hard rules"): the release starts at
// +60 s; a server "restarts" when its token counter falls back to ~0.
constexpr std::int64_t kRelease = kT0 + 60;
std::function<double(int, std::int64_t)> Restarting(const std::set<int>& nodes,
                                                    const std::vector<std::int64_t>& at) {
  return [nodes, at](int node, std::int64_t t) {
    if (nodes.count(node) == 0) return 1e6 + 1000.0 * static_cast<double>(t - kT0);
    std::int64_t from = kT0;  // the last restart at or before t
    for (std::int64_t r : at) from = t >= kRelease + r ? kRelease + r : from;
    return 1000.0 * static_cast<double>(t - from + 1);
  };
}

const Cause* FindCause(const Report& r, std::string_view origin_part) {
  for (const Cause& c : r.causes) {
    if (c.summary.find(origin_part) != std::string::npos) return &c;
  }
  return nullptr;
}

TEST(JudgeCrashLoopTest, CanaryServerRestartingAfterTheReleaseFailsIt) {
  ServerFleet fleet(Server::kVllm);
  fleet.tokens_value = Restarting({0}, {5, 110, 215});
  const Report r = JudgeServerFleet(fleet, DefaultPolicy(), kRelease);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  const Cause* loop = FindCause(r, "a crash loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->kind, vocab::CauseKind::kSoftwareRegression);
  EXPECT_EQ(loop->scope, vocab::Scope::kRelease);
  EXPECT_TRUE(loop->failing);
  EXPECT_NE(loop->summary.find("restarted 3 times since the release (+5 s, +110 s, +215 s)"),
            std::string::npos)
      << loop->summary;
  EXPECT_DOUBLE_EQ(loop->decided_at, static_cast<double>(kRelease + 215));
}

// The deploy's restart and one crash are not a loop.
TEST(JudgeCrashLoopTest, TwoRestartsAreNotALoop) {
  ServerFleet fleet(Server::kVllm);
  fleet.tokens_value = Restarting({0}, {5, 110});
  const Report r = JudgeServerFleet(fleet, DefaultPolicy(), kRelease);
  EXPECT_EQ(FindCause(r, "a crash loop"), nullptr);
  EXPECT_NE(r.verdict, Verdict::kFail);
}

// Baseline servers restarting as often: the infrastructure, not the release.
TEST(JudgeCrashLoopTest, BaselineRestartingToo) {
  ServerFleet fleet(Server::kVllm);
  fleet.tokens_value = Restarting({0, 2}, {5, 110, 215});
  const Report r = JudgeServerFleet(fleet, DefaultPolicy(), kRelease);
  EXPECT_EQ(FindCause(r, "a crash loop"), nullptr);
}

// With an XID the crashes are the XID's, and the cause is named xid_errors
// in one sentence with it. XID 31 (a page fault: the release's kernels) is
// not critical and alone would be the node's (one GPU); the crash loop makes
// it the release's. XID 79 (fallen off the bus) is critical: the default
// policy fails a canary GPU that shows it, and the crash loop goes with it.
TEST(JudgeCrashLoopTest, TheXidNamesTheMechanism) {
  for (const int code : {31, 79}) {
    SCOPED_TRACE(code);
    ServerFleet fleet(Server::kVllm);
    fleet.tokens_value = Restarting({0}, {5, 110, 215});
    fleet.xid = [code](int gpu, std::int64_t t) {
      return gpu == 0 && t >= kRelease + 3 ? code : 0;
    };
    const Report r = JudgeServerFleet(fleet, DefaultPolicy(), kRelease);
    EXPECT_EQ(r.verdict, Verdict::kFail);
    const Cause* loop = FindCause(r, "a crash loop");
    ASSERT_NE(loop, nullptr);
    EXPECT_EQ(loop->kind, vocab::CauseKind::kXidErrors);
    EXPECT_EQ(loop->scope, vocab::Scope::kRelease);
    EXPECT_NE(loop->summary.find("XID " + std::to_string(code)), std::string::npos)
        << loop->summary;
    EXPECT_EQ(loop->summary.find("already before"), std::string::npos) << loop->summary;
  }
}

// A hardware XID the GPU already showed before the release is the node's,
// and so is the crash loop it brings.
TEST(JudgeCrashLoopTest, AHardwareXidFromBeforeKeepsItTheNodes) {
  ServerFleet fleet(Server::kVllm);
  fleet.tokens_value = Restarting({0}, {5, 110, 215});
  fleet.xid = [](int gpu, std::int64_t t) {
    if (gpu != 0) return 0;
    if (t < kRelease - 30) return 0;
    return t < kRelease + 100 ? 79 : 48;  // another hardware XID after the release
  };
  const Report r = JudgeServerFleet(fleet, DefaultPolicy(), kRelease);
  const Cause* loop = FindCause(r, "a crash loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->kind, vocab::CauseKind::kXidErrors);
  EXPECT_EQ(loop->scope, vocab::Scope::kNode);
  EXPECT_FALSE(loop->failing);
  EXPECT_EQ(loop->nodes, std::vector<std::string>{"canary-0"});
}

// A node gauge named in a policy is the node's value: twice the requests
// waiting on the canary reads +100%, and fails a 50% margin. (It used to be
// read as a counter's increase per GPU: no data at all.)
TEST(JudgeNodeGaugeTest, NodeGaugeIsComparedAsTheNodesValue) {
  for (const char* entry :
       {"{name: \"vllm:num_requests_waiting\", kind: gauge, better: lower, margin: 0.5}",
        "{measure: queue_depth, kind: gauge, better: lower, margin: 0.5}"}) {
    SCOPED_TRACE(entry);
    Result<Policy> policy = ParsePolicy(std::string("metrics:\n  - ") + entry + "\n", "p.yaml");
    ASSERT_TRUE(policy.has_value()) << policy.error().message();
    ServerFleet fleet(Server::kVllm);
    fleet.queue_depth = [](int node) { return node < 2 ? 8.0 : 4.0; };
    const Report r = JudgeServerFleet(fleet, *policy);
    ASSERT_EQ(r.metrics.size(), 1U);
    EXPECT_DOUBLE_EQ(r.metrics[0].baseline, 4.0);
    EXPECT_DOUBLE_EQ(r.metrics[0].canary, 8.0);
    EXPECT_EQ(r.metrics[0].result, "high");
    EXPECT_EQ(r.verdict, Verdict::kFail);
  }
}

// A policy of one critical p99 measure with its margin.
Policy P99Policy(const std::string& measure, const std::string& margin) {
  Result<Policy> policy =
      ParsePolicy("metrics:\n  - {measure: " + measure +
                      ", kind: p99, better: lower, margin: " + margin + ", critical: true}\n",
                  "p.yaml");
  EXPECT_TRUE(policy.has_value()) << policy.error().message();
  return policy.value_or(Policy{});
}

// Adds node `node`'s histogram of `metric` to `tick`: at each bound of
// `bounds`, the increase this second `count_at(bound)` on top of `before`
// (the cumulative counts so far, updated).
void AddHistogram(Tick& tick, int node, int metric, const std::vector<double>& bounds,
                  const std::function<double(double)>& count_at, std::vector<double>& before) {
  HistogramPoint h;
  h.node = node;
  h.metric = metric;
  h.first = static_cast<std::uint32_t>(tick.buckets.size());
  h.count = static_cast<std::uint32_t>(bounds.size());
  before.resize(bounds.size(), 0);
  for (std::size_t b = 0; b < bounds.size(); ++b) {
    const double count = count_at(bounds[b]);
    before[b] += count;
    tick.buckets.push_back({bounds[b], before[b], count});
  }
  tick.histograms.push_back(h);
  tick.nodes.push_back(node);
}

// The p99 of a measure whose servers bucket differently: Triton's time to
// first token is a histogram in milliseconds, SGLang's in seconds with other
// bounds. Each node observes TTFTs uniform in [0.1 s, 0.3 s): the p99 is
// compared in seconds (not 1000x: Triton's bounds are scaled), and an arm
// that mixes both servers pools their observations at the union of their
// bounds (not as if the two bucket layouts were one).
TEST(JudgeTailTest, P99IsInSecondsAndMixedBucketLayoutsPool) {
  std::vector<GpuInfo> gpus;
  std::vector<NodeInfo> nodes;
  std::vector<MetricInfo> metrics = {
      {"nv_inference_first_response_histogram_ms", MetricKind::kHistogram},
      {"sglang:time_to_first_token_seconds", MetricKind::kHistogram},
  };
  // Nodes 0-1 canary (Triton), 2 baseline Triton, 3 baseline SGLang; one GPU each.
  judge_testing::AddTwoByTwoNodes(1, "H100", gpus, nodes);
  const std::vector<double> triton_ms = {50, 100, 150, 200, 250, 300, 500, 1000, kInfinity};
  const std::vector<double> sglang_s = {0.1, 0.25, 0.5, 1, kInfinity};
  Judge judge(
      {.policy = P99Policy("time_to_first_token", "0.25"), .release_start_s = std::nullopt});
  // 100 requests a second per node, TTFT uniform in [0.1, 0.3) s: the
  // cumulative count at bound b (seconds) is 100 * clamp((b - 0.1) / 0.2).
  const auto cumulative = [](double seconds) {
    if (std::isinf(seconds)) return 100.0;
    return 100.0 * std::clamp((seconds - 0.1) / 0.2, 0.0, 1.0);
  };
  std::vector<std::vector<double>> totals(4);
  for (std::int64_t s = 0; s < 300; ++s) {
    Tick tick;
    tick.time_s = kT0 + s;
    for (int n = 0; n < 4; ++n) {
      const bool sglang = n == 3;
      AddHistogram(
          tick, n, sglang ? 1 : 0, sglang ? sglang_s : triton_ms,
          [&](double le) { return cumulative(sglang || std::isinf(le) ? le : le / 1000); },
          totals[static_cast<std::size_t>(n)]);
    }
    judge.Add(tick, Catalog{&gpus, &nodes, &metrics});
  }
  const Report r = judge.Finish();
  const MetricResult* ttft = FindMetric(r, "time_to_first_token");
  ASSERT_NE(ttft, nullptr);
  // The canary's p99 from Triton's buckets: between 250 and 300 ms, linearly
  // (0.25 + 0.05 * (99 - 75) / 25 = 0.298 s).
  EXPECT_NEAR(ttft->canary, 0.298, 1e-9);
  // The baseline pools Triton's node with SGLang's at the union of their
  // bounds, SGLang's 0.25..0.5 s bucket spread linearly: 180 of 200 by
  // 0.3 s, 200 by 0.5 s, so the 198th falls at 0.3 + 0.2 * 18 / 20 = 0.48 s
  // (coarse buckets blur a tail, as in Prometheus; never SGLang's 1 s bound
  // nor a bound read in the wrong unit).
  EXPECT_NEAR(ttft->baseline, 0.48, 1e-9);
  EXPECT_EQ(ttft->result, "pass");
  EXPECT_EQ(r.verdict, Verdict::kPass);
}

// Issue 18, tails under load: end-to-end latency includes queueing, so a
// canary node handed more requests than a baseline node (a load balancer's
// doing, not the release's) has a longer tail at the same speed. A tail
// block is compared only where the canary completed no more requests per
// GPU than the baseline (within 20%); a slower release at the same or a
// lower load still fails. vLLM's e2e histogram, 2 canary and 2 baseline
// nodes of one GPU: each node completes `rate` requests a second with
// latencies uniform in [1, 3) s times `slower`.
Report JudgeE2eTails(double canary_rate, double canary_slower) {
  std::vector<GpuInfo> gpus;
  std::vector<NodeInfo> nodes;
  std::vector<MetricInfo> metrics = {{"vllm:e2e_request_latency_seconds", MetricKind::kHistogram}};
  judge_testing::AddTwoByTwoNodes(1, "H100", gpus, nodes);
  const std::vector<double> bounds = {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 20, kInfinity};
  Judge judge({.policy = P99Policy("e2e_latency", "0.20"), .release_start_s = std::nullopt});
  std::vector<std::vector<double>> totals(4);
  for (std::int64_t s = 0; s < 600; ++s) {
    Tick tick;
    tick.time_s = kT0 + s;
    for (int n = 0; n < 4; ++n) {
      const bool canary = n < 2;
      const double rate = canary ? canary_rate : 100;
      const double slower = canary ? canary_slower : 1;
      AddHistogram(
          tick, n, 0, bounds,
          [&](double le) {
            return std::isinf(le) ? rate : rate * std::clamp((le / slower - 1) / 2, 0.0, 1.0);
          },
          totals[static_cast<std::size_t>(n)]);
    }
    judge.Add(tick, Catalog{&gpus, &nodes, &metrics});
  }
  return judge.Finish();
}

TEST(JudgeTailTest, ATailAtAHigherLoadThanTheBaselinesIsNotCompared) {
  // 1.5x the requests, 1.6x the latency (queueing): not the release's.
  const Report more = JudgeE2eTails(150, 1.6);
  const MetricResult* e2e = FindMetric(more, "e2e_latency");
  ASSERT_NE(e2e, nullptr);
  EXPECT_EQ(e2e->result, "no_data");
  EXPECT_NE(more.verdict, Verdict::kFail);
  EXPECT_TRUE(HasNote(more,
                      "e2e_latency: 60 of 60 blocks not compared: the canary completed "
                      "1.50x the baseline's requests per GPU there"))
      << ::testing::PrintToString(more.notes);
  EXPECT_TRUE(HasNote(more, "inconclusive: e2e_latency was not compared"));
  EXPECT_FALSE(HasNote(more, "no data")) << ::testing::PrintToString(more.notes);
  // The same latency at the baseline's load, or at less: the release's.
  for (const double rate : {100.0, 70.0}) {
    const Report same = JudgeE2eTails(rate, 1.6);
    const MetricResult* m = FindMetric(same, "e2e_latency");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->result, "high") << rate;
    EXPECT_EQ(same.verdict, Verdict::kFail) << rate;
  }
  // Within 20% more requests: compared as before (a healthy canary passes).
  const Report close = JudgeE2eTails(115, 1.0);
  EXPECT_EQ(FindMetric(close, "e2e_latency")->result, "pass");
}

}  // namespace
}  // namespace gpucanary::analysis
