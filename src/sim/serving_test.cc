#include "sim/serving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "expfmt/reader.h"
#include "sim/engine.h"
#include "sim/offline.h"
#include "sim/scenario.h"

namespace gpucanary::sim {
namespace {

constexpr double kDt = 0.1;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// What a Prometheus query over a window [warm-up, end] of one run would see.
struct Window {
  double seconds = 0;
  VllmHistogram<kE2eLatencyBuckets.size()> e2e;
  VllmHistogram<kTtftBuckets.size()> ttft;
  VllmHistogram<kTpotBuckets.size()> tpot;
  double generated = 0;
  double prompt = 0;
  double succeeded = 0;
  double mean_in_system = 0;  // waiting + running, averaged over the window's steps
  double mean_load = 0;
  std::size_t max_waiting = 0;
  std::size_t waiting_at_half = 0;  // waiting queue half-way through the window
  std::size_t waiting_at_end = 0;

  double p99() const { return HistogramQuantile(e2e, 0.99); }
  double mean_e2e() const { return e2e.sum / static_cast<double>(e2e.count); }
  double mean_tpot() const { return tpot.sum / static_cast<double>(tpot.count); }
};

// Runs one node at a constant rate and speed and measures after `warmup_s`.
Window RunNode(double rps, double speed, double seconds, double warmup_s = 60,
               std::uint64_t seed = 7, const ServingProfile& profile = ServingProfile{}) {
  ServingNode node(profile, "node-1", seed);
  const int steps = static_cast<int>(std::lround(seconds / kDt));
  const int warm = static_cast<int>(std::lround(warmup_s / kDt));
  VllmState start;
  Window w;
  w.seconds = seconds - warmup_s;
  double in_system = 0;
  double load = 0;
  for (int i = 0; i < steps; ++i) {
    node.Step(kDt, rps, speed);
    if (i + 1 == warm) start = node.state();
    if (i + 1 <= warm) continue;
    in_system += static_cast<double>(node.num_waiting() + node.num_running());
    load += node.gpu_load();
    w.max_waiting = std::max(w.max_waiting, node.num_waiting());
    if (i + 1 == (warm + steps) / 2) w.waiting_at_half = node.num_waiting();
  }
  const VllmState& end = node.state();
  w.e2e = HistogramDelta(end.e2e_request_latency_seconds, start.e2e_request_latency_seconds);
  w.ttft = HistogramDelta(end.time_to_first_token_seconds, start.time_to_first_token_seconds);
  w.tpot = HistogramDelta(end.time_per_output_token_seconds, start.time_per_output_token_seconds);
  w.generated = end.generation_tokens_total - start.generation_tokens_total;
  w.prompt = end.prompt_tokens_total - start.prompt_tokens_total;
  w.succeeded = end.request_success_total - start.request_success_total;
  w.mean_in_system = in_system / (steps - warm);
  w.mean_load = load / (steps - warm);
  w.waiting_at_end = node.num_waiting();
  return w;
}

// --- HistogramQuantile, against values computed by hand -------------------

VllmHistogram<kE2eLatencyBuckets.size()> E2e(const std::vector<double>& values) {
  VllmHistogram<kE2eLatencyBuckets.size()> h{&kE2eLatencyBuckets};
  for (double v : values) h.Observe(v);
  return h;
}

TEST(HistogramQuantileTest, InterpolatesLinearlyInsideTheBucket) {
  // 6 observations in (0, 0.3], 4 in (0.3, 0.5].
  std::vector<double> v(6, 0.2);
  v.insert(v.end(), 4, 0.4);
  const auto h = E2e(v);
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.5), 0.3 * 5 / 6);        // rank 5 of 6 in bucket 0
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.6), 0.3);                // rank 6: bucket 0's top
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.8), 0.3 + 0.2 * 2 / 4);  // rank 8: 2 of 4 in bucket 1
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 1.0), 0.5);
}

TEST(HistogramQuantileTest, SkipsEmptyBucketsAndStartsTheFirstAtZero) {
  // 10 observations at 12 s: all in (10, 15].
  const auto h = E2e(std::vector<double>(10, 12.0));
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.5), 12.5);
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.99), 10 + 5 * 0.99);
  const auto first = E2e(std::vector<double>(4, 0.1));
  EXPECT_DOUBLE_EQ(HistogramQuantile(first, 0.25), 0.075);
}

TEST(HistogramQuantileTest, RankInTheInfBucketGivesTheHighestFiniteBound) {
  std::vector<double> v(98, 0.2);
  v.push_back(10000);  // both over vLLM's top e2e bound, 7680 s
  v.push_back(20000);
  const auto h = E2e(v);
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.98), 0.3);
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 0.99), kE2eLatencyBuckets.back());
  EXPECT_DOUBLE_EQ(HistogramQuantile(h, 1.0), kE2eLatencyBuckets.back());
}

TEST(HistogramQuantileTest, SpecialCasesFollowPrometheus) {
  const auto empty = E2e({});
  EXPECT_TRUE(std::isnan(HistogramQuantile(empty, 0.5)));
  const auto h = E2e({1.0});
  EXPECT_EQ(HistogramQuantile(h, -0.1), -kInf);
  EXPECT_EQ(HistogramQuantile(h, 1.1), kInf);
  EXPECT_TRUE(std::isnan(HistogramQuantile(h, kNan)));
  // q = 0 with an empty first bucket: Prometheus computes 0 * (0 / 0).
  EXPECT_TRUE(std::isnan(HistogramQuantile(h, 0.0)));
}

TEST(HistogramQuantileTest, DeltaIsTheWindowBetweenTwoReadings) {
  auto h = E2e({0.2, 0.2, 12.0});
  const auto before = h;
  h.Observe(40.0);
  h.Observe(45.0);
  const auto d = HistogramDelta(h, before);
  EXPECT_EQ(d.count, 2u);
  EXPECT_DOUBLE_EQ(d.sum, 85.0);
  EXPECT_EQ(d.buckets[0], 0u);
  EXPECT_DOUBLE_EQ(HistogramQuantile(d, 0.5), 40.0);  // rank 1: the top of (30, 40]
  EXPECT_DOUBLE_EQ(HistogramQuantile(d, 1.0), 50.0);
}

// --- The serving model ---------------------------------------------------

TEST(ServingNodeTest, NoTrafficMeansAnIdleNode) {
  ServingNode node(ServingProfile{}, "node-1", 1);
  for (int i = 0; i < 600; ++i) node.Step(kDt, 0, 1.0);
  EXPECT_EQ(node.gpu_load(), 0);
  EXPECT_EQ(node.tokens_per_second(), 0);
  EXPECT_EQ(node.arrived_total(), 0u);
  EXPECT_EQ(node.state().generation_tokens_total, 0);
  EXPECT_EQ(node.state().num_requests_running, 0);
  EXPECT_EQ(node.state().gpu_cache_usage_perc, 0);
  EXPECT_EQ(node.state().e2e_request_latency_seconds.count, 0u);
}

TEST(ServingNodeTest, DrainsToIdleWhenTrafficStops) {
  ServingNode node(ServingProfile{}, "node-1", 2);
  for (int i = 0; i < 300; ++i) node.Step(kDt, 50, 1.0);
  EXPECT_GT(node.num_running(), 50u);
  EXPECT_GT(node.gpu_load(), 0.5);
  for (int i = 0; i < 300; ++i) node.Step(kDt, 0, 1.0);  // cordoned: 30 s, longer than any request
  EXPECT_EQ(node.num_running(), 0u);
  EXPECT_EQ(node.num_waiting(), 0u);
  EXPECT_EQ(node.kv_tokens_held(), 0);
  EXPECT_EQ(node.gpu_load(), 0);
  EXPECT_EQ(node.tokens_per_second(), 0);
  EXPECT_EQ(node.state().request_success_total, static_cast<double>(node.arrived_total()));
}

TEST(ServingNodeTest, UnderCapacityThroughputIsTheOfferedLoad) {
  const ServingProfile p;
  const Window w = RunNode(50, 1.0, 660);
  EXPECT_NEAR(w.succeeded / w.seconds, 50, 50 * 0.03);
  EXPECT_NEAR(w.generated / w.seconds, 50 * p.output_tokens_mean, 50 * p.output_tokens_mean * 0.03);
  EXPECT_NEAR(w.prompt / w.seconds, 50 * p.prompt_tokens_mean, 50 * p.prompt_tokens_mean * 0.03);
  EXPECT_LT(w.max_waiting, 50u);  // short queues
  EXPECT_LT(w.p99(), 10.0);       // a few seconds
  EXPECT_GT(w.p99(), 2.0);        // 200 tokens at ~15 ms an iteration
  EXPECT_LT(HistogramQuantile(w.ttft, 0.99), 0.5);
  EXPECT_GT(w.mean_load, 0.5);
  EXPECT_LT(w.mean_load, 1.0);
}

TEST(ServingNodeTest, LittlesLawHolds) {
  // L = lambda * W: requests in the node = completion rate * mean e2e latency,
  // at nominal speed and at one where the batch fills and requests queue.
  for (double speed : {1.0, 0.72}) {
    const Window w = RunNode(45, speed, 660);
    const double lambda = w.succeeded / w.seconds;
    EXPECT_NEAR(w.mean_in_system, lambda * w.mean_e2e(), w.mean_in_system * 0.01) << speed;
  }
}

TEST(ServingNodeTest, LightLoadLatencyIsPrefillThenDecodeIterations) {
  // 2 req/s: no queueing, a batch of ~5, so TTFT = prompt / prefill rate and
  // e2e = TTFT + (output - 1) iterations of (iter_base + iter_per_seq * B).
  const ServingProfile p;
  const Window w = RunNode(2, 1.0, 1860);
  const double ttft = w.ttft.sum / static_cast<double>(w.ttft.count);
  EXPECT_NEAR(ttft, p.prompt_tokens_mean / p.prefill_tokens_per_s, 0.1 * ttft);
  const double batch = w.mean_in_system;
  const double t_iter = p.iter_base_s + p.iter_per_seq_s * batch;
  EXPECT_NEAR(w.mean_e2e(), ttft + (p.output_tokens_mean - 1) * t_iter, 0.02 * w.mean_e2e());
  // Twice as slow: every phase takes twice as long.
  const Window half = RunNode(2, 0.5, 1860);
  EXPECT_NEAR(half.mean_e2e(), 2 * w.mean_e2e(), 0.05 * w.mean_e2e());
}

TEST(ServingNodeTest, TimePerOutputTokenIsTheDecodeIterationTime) {
  // Light load: each decode token comes one iteration after the previous one.
  const ServingProfile p;
  const Window light = RunNode(2, 1.0, 1860);
  const double t_iter = p.iter_base_s + p.iter_per_seq_s * light.mean_in_system;
  EXPECT_NEAR(light.mean_tpot(), t_iter, 0.03 * t_iter);
  // Every generated token but each request's first is one observation.
  EXPECT_NEAR(static_cast<double>(light.tpot.count), light.generated - light.succeeded,
              0.01 * light.generated);
  // A release 10% slower (slowdown 1.1) at the same offered load: every
  // iteration takes 10% longer and the batch grows with the latency.
  const Window nominal = RunNode(50, 1.0, 660);
  const Window slower = RunNode(50, 1 / 1.1, 660);
  EXPECT_GE(slower.mean_tpot(), 1.08 * nominal.mean_tpot());
  const Window subtle = RunNode(50, 1 / 1.05, 660);
  EXPECT_GE(subtle.mean_tpot(), 1.04 * nominal.mean_tpot());
  EXPECT_LT(subtle.mean_tpot(), slower.mean_tpot());
  // 50 req/s at speed 1: ~16 ms a token, all in vLLM's (0.01, 0.025] bucket.
  EXPECT_EQ(nominal.tpot.buckets[1], nominal.tpot.count);
}

TEST(ServingNodeTest, LatencyBlowsUpNonlinearlyWhenCapacityFallsUnderTheLoad) {
  const Window nominal = RunNode(50, 1.0, 660);
  const Window slow = RunNode(50, 0.6, 660);
  EXPECT_GT(slow.p99(), 5 * nominal.p99());
  EXPECT_GT(slow.mean_e2e(), 10 * nominal.mean_e2e());
  // Capacity under demand: the waiting queue grows without bound.
  EXPECT_GT(slow.waiting_at_half, 1000u);
  EXPECT_GT(slow.waiting_at_end, slow.waiting_at_half + 1000);
  EXPECT_LT(slow.generated / slow.seconds, 0.85 * 50 * ServingProfile{}.output_tokens_mean);
  // A full batch: the GPUs are saturated.
  EXPECT_GT(slow.mean_load, 0.98);
  // TTFT includes the queueing: tens of seconds (nominal: well under 1 s).
  EXPECT_GT(HistogramQuantile(slow.ttft, 0.5), 40.0);
  EXPECT_LT(HistogramQuantile(nominal.ttft, 0.5), 1.0);
}

TEST(ServingNodeTest, SustainableRateSeparatesBoundedFromGrowingQueues) {
  const ServingProfile p;
  for (double speed : {1.0, 0.6}) {
    const double capacity = SustainableRequestRate(p, speed);
    const Window under = RunNode(0.85 * capacity, speed, 660);
    EXPECT_LT(under.max_waiting, 200u) << speed;
    const double rate = 1.15 * capacity;
    const Window over = RunNode(rate, speed, 660);
    // The queue grows at the excess rate, within the model's approximations.
    const double growth =
        static_cast<double>(over.waiting_at_end - over.waiting_at_half) / (over.seconds / 2);
    EXPECT_NEAR(growth, rate - capacity, 0.3 * (rate - capacity)) << speed;
  }
  EXPECT_NEAR(DecodeCapacityTokensPerS(p, 1.0), 256 / (0.012 + 0.000015 * 256), 1e-9);
  EXPECT_NEAR(SustainableRequestRate(p, 0.5), 0.5 * SustainableRequestRate(p, 1.0), 1e-9);
}

// The table in docs/simulator.md ("Serving model (vLLM)"):
//   build/h2/src/sim/sim_test --gtest_filter=ServingNodeTest.P99VersusSpeedAtFiftyRps
TEST(ServingNodeTest, P99VersusSpeedAtFiftyRps) {
  std::printf(
      "| speed | capacity req/s | tokens/s | p50 e2e s | p99 e2e s | mean e2e s | "
      "p99 TTFT s | mean TPOT ms | waiting at 11 min |\n");
  double previous_mean = 0;
  for (double speed : {1.0, 1 / 1.05, 1 / 1.1, 0.8, 0.75, 0.7, 0.6, 0.5}) {
    const Window w = RunNode(50, speed, 660);
    std::printf("| %.3f | %.1f | %.0f | %.2f | %.2f | %.2f | %.3f | %.2f | %zu |\n", speed,
                SustainableRequestRate(ServingProfile{}, speed), w.generated / w.seconds,
                HistogramQuantile(w.e2e, 0.5), w.p99(), w.mean_e2e(),
                HistogramQuantile(w.ttft, 0.99), 1000 * w.mean_tpot(), w.waiting_at_end);
    EXPECT_GT(w.mean_e2e(), previous_mean) << speed;
    previous_mean = w.mean_e2e();
  }
}

TEST(ServingNodeTest, CountersOnlyGrowAndGaugesStayInRange) {
  const ServingProfile p;
  ServingNode node(p, "node-1", 3);
  VllmState last = node.state();
  for (int i = 0; i < 3000; ++i) {
    const double rate = 40 + 30 * std::sin(i / 300.0);
    const double speed = i % 500 < 250 ? 1.0 : 0.5;
    node.Step(kDt, rate, speed);
    const VllmState& s = node.state();
    ASSERT_GE(s.generation_tokens_total, last.generation_tokens_total);
    ASSERT_GE(s.prompt_tokens_total, last.prompt_tokens_total);
    ASSERT_GE(s.request_success_total, last.request_success_total);
    ASSERT_GE(s.e2e_request_latency_seconds.count, last.e2e_request_latency_seconds.count);
    ASSERT_GE(s.e2e_request_latency_seconds.sum, last.e2e_request_latency_seconds.sum);
    ASSERT_GE(s.time_to_first_token_seconds.count, last.time_to_first_token_seconds.count);
    ASSERT_GE(s.time_per_output_token_seconds.sum, last.time_per_output_token_seconds.sum);
    // Every token but a request's first (prefill's) is one TPOT observation.
    ASSERT_EQ(static_cast<double>(s.time_per_output_token_seconds.count +
                                  s.time_to_first_token_seconds.count),
              s.generation_tokens_total);
    for (std::size_t b = 0; b < kE2eLatencyBuckets.size(); ++b) {
      ASSERT_GE(s.e2e_request_latency_seconds.buckets[b],
                last.e2e_request_latency_seconds.buckets[b]);
    }
    ASSERT_EQ(s.generation_tokens_total, std::floor(s.generation_tokens_total));  // whole tokens
    ASSERT_EQ(s.prompt_tokens_total, std::floor(s.prompt_tokens_total));
    ASSERT_LE(s.num_requests_running, p.max_num_seqs);
    ASSERT_GE(s.gpu_cache_usage_perc, 0);
    ASSERT_LE(s.gpu_cache_usage_perc, 1);
    ASSERT_GE(node.gpu_load(), 0);
    ASSERT_LE(node.gpu_load(), 1);
    ASSERT_EQ(s.e2e_request_latency_seconds.count,
              static_cast<std::uint64_t>(s.request_success_total));
    // Every request that arrived is waiting, running, finished or rejected.
    ASSERT_EQ(node.arrived_total(), node.num_waiting() + node.num_running() +
                                        s.e2e_request_latency_seconds.count +
                                        node.rejected_total());
    last = s;
  }
}

TEST(ServingNodeTest, WaitingQueueIsCappedAndRejectionsCounted) {
  ServingProfile p;
  p.max_waiting = 3000;  // past the ring's first size, so it grows, then stops
  ServingNode node(p, "node-1", 4);
  std::size_t most = 0;
  for (int i = 0; i < 600; ++i) {
    node.Step(kDt, 200, 0.2);
    most = std::max(most, node.num_waiting());
  }
  EXPECT_EQ(most, 3000u);
  EXPECT_GE(node.num_waiting(), 2990u);  // a few admitted in the last step
  EXPECT_GT(node.rejected_total(), 5000u);
  EXPECT_EQ(node.state().num_requests_waiting, static_cast<double>(node.num_waiting()));
  // The queue still drains in FIFO order once the load goes.
  const double finished = node.state().request_success_total;
  for (int i = 0; i < 600; ++i) node.Step(kDt, 0, 1.0);
  EXPECT_GT(node.state().request_success_total, finished + 2500);
}

TEST(ServingNodeTest, ZeroNegativeAndNanSpeedCrawlWithoutNans) {
  ServingNode node(ServingProfile{}, "node-1", 5);
  for (int i = 0; i < 100; ++i) node.Step(kDt, 50, i % 3 == 0 ? 0.0 : (i % 3 == 1 ? -1.0 : kNan));
  EXPECT_GT(node.arrived_total(), 400u);
  // At speed 0.001 prompts go at 40 tokens/s: at most a short one or two
  // got through in 10 s.
  EXPECT_LE(node.state().time_to_first_token_seconds.count, 2u);
  EXPECT_GT(node.gpu_load(), 0.99);  // busy on the prompt, however slowly
  // A NaN rate brings nothing new; the backlog drains at full speed.
  const std::uint64_t arrived = node.arrived_total();
  for (int i = 0; i < 300; ++i) node.Step(kDt, kNan, 1.0);
  EXPECT_EQ(node.arrived_total(), arrived);
  EXPECT_EQ(node.state().request_success_total, static_cast<double>(arrived));
  EXPECT_TRUE(std::isfinite(node.state().e2e_request_latency_seconds.sum));
  EXPECT_EQ(node.gpu_load(), 0);
}

TEST(ServingNodeTest, LoadGrowsWithTheBatchAndReachesOneWhenSaturated) {
  const Window light = RunNode(5, 1.0, 160);
  const Window typical = RunNode(50, 1.0, 160);
  const Window saturated = RunNode(100, 1.0, 160);
  EXPECT_GT(light.mean_load, 0.1);
  EXPECT_LT(light.mean_load, typical.mean_load - 0.2);
  EXPECT_GT(saturated.mean_load, 0.99);
}

std::string Rendered(std::uint64_t seed, int steps) {
  ServingNode node(ServingProfile{}, "node-1", seed);
  for (int i = 0; i < steps; ++i) node.Step(kDt, 50, i < steps / 2 ? 1.0 : 0.7);
  std::string out;
  RenderVllmExposition(node.state(), out);
  return out;
}

TEST(ServingNodeTest, SameSeedSameStateOtherSeedOtherState) {
  EXPECT_EQ(Rendered(11, 1200), Rendered(11, 1200));
  EXPECT_NE(Rendered(11, 1200), Rendered(12, 1200));
}

TEST(ServingNodeTest, RenderedExpositionParsesBack) {
  ServingNode node(ServingProfile{}, "node-7", 9);
  for (int i = 0; i < 1200; ++i) node.Step(kDt, 50, i < 600 ? 1.0 : 0.6);
  std::string text;
  RenderVllmExposition(node.state(), text);

  std::map<std::string, double> value;  // sample name (+ le) -> value
  std::map<std::string, model::MetricType> type;
  const expfmt::ReadReport report = expfmt::ReadBuffer(
      text, expfmt::Format::kPrometheusText, "node-7", expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view family, model::MetricType t) {
        EXPECT_FALSE(s.Label("Hostname").has_value());  // vLLM has no host label
        EXPECT_EQ(s.Label("engine"), "0");
        EXPECT_EQ(*s.Label("model_name"), "meta-llama/Llama-3.1-70B-Instruct");
        std::string key(s.name);
        if (const auto le = s.Label("le")) key += "{le=" + std::string(*le) + "}";
        value[key] = s.value;
        type[std::string(family)] = t;
      });
  ASSERT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]);
  EXPECT_EQ(report.stats.duplicate_samples, 0u);
  const VllmState& s = node.state();
  EXPECT_EQ(type["vllm:e2e_request_latency_seconds"], model::MetricType::kHistogram);
  EXPECT_EQ(type["vllm:generation_tokens_total"], model::MetricType::kCounter);
  EXPECT_EQ(value["vllm:generation_tokens_total"], s.generation_tokens_total);
  EXPECT_EQ(value["vllm:num_requests_waiting"], s.num_requests_waiting);
  EXPECT_GT(value["vllm:num_requests_waiting"], 100);
  EXPECT_EQ(value["vllm:e2e_request_latency_seconds_count"],
            static_cast<double>(s.e2e_request_latency_seconds.count));
  EXPECT_EQ(value["vllm:e2e_request_latency_seconds_bucket{le=+Inf}"],
            static_cast<double>(s.e2e_request_latency_seconds.count));
  EXPECT_NEAR(value["vllm:e2e_request_latency_seconds_sum"], s.e2e_request_latency_seconds.sum,
              1e-6 * s.e2e_request_latency_seconds.sum);
  // The quantile from the parsed cumulative buckets equals the one from the state.
  VllmHistogram<kE2eLatencyBuckets.size()> parsed{&kE2eLatencyBuckets};
  double below = 0;
  std::string le_text;
  for (std::size_t i = 0; i < kE2eLatencyBuckets.size(); ++i) {
    le_text.clear();
    AppendPythonFloat(kE2eLatencyBuckets[i], le_text);
    const double cumulative = value["vllm:e2e_request_latency_seconds_bucket{le=" + le_text + "}"];
    parsed.buckets[i] = static_cast<std::uint64_t>(cumulative - below);
    below = cumulative;
  }
  parsed.count = s.e2e_request_latency_seconds.count;
  EXPECT_DOUBLE_EQ(HistogramQuantile(parsed, 0.99),
                   HistogramQuantile(s.e2e_request_latency_seconds, 0.99));
  // Time per output token, with vLLM's buckets.
  EXPECT_EQ(type["vllm:inter_token_latency_seconds"], model::MetricType::kHistogram);
  EXPECT_GT(s.time_per_output_token_seconds.count, 0u);
  EXPECT_EQ(value["vllm:inter_token_latency_seconds_count"],
            static_cast<double>(s.time_per_output_token_seconds.count));
  EXPECT_EQ(value["vllm:inter_token_latency_seconds_bucket{le=+Inf}"],
            static_cast<double>(s.time_per_output_token_seconds.count));
  EXPECT_EQ(value.count("vllm:inter_token_latency_seconds_bucket{le=2.5}"), 1u);
  EXPECT_NEAR(value["vllm:inter_token_latency_seconds_sum"], s.time_per_output_token_seconds.sum,
              1e-6 * s.time_per_output_token_seconds.sum);
}

TEST(ServingNodeTest, OfflineRecordingsCarryInterTokenLatency) {
  Result<Scenario> scenario = ParseScenario(
      "duration: 20s\nfleet: [{nodes: \"n[1-2]\", gpu: h100-sxm, gpus: 2}]\n"
      "releases: {a: {profile: baseline}}\ntraffic: {rps: 40}\n"
      "events: [{at: 0s, deploy: a, nodes: all}]\n",
      "tpot.yaml");
  ASSERT_TRUE(scenario.has_value()) << scenario.error().message();
  Engine engine(*scenario);
  const std::string path = ::testing::TempDir() + "gpucanary-serving-tpot.om";
  auto writer = recording::RecordingWriter::Open(path);
  ASSERT_TRUE(writer.has_value()) << writer.error().message();
  OfflineOptions options;
  options.duration_s = 20;
  ASSERT_TRUE(WriteScenarioRecording(engine, options, **writer).has_value());
  ASSERT_TRUE((*writer)->Close().ok());

  std::map<std::string, double> last_count;  // node -> last _count
  std::map<std::string, model::MetricType> type;
  auto report = expfmt::ReadFile(
      path, expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view family, model::MetricType t) {
        type[std::string(family)] = t;
        if (s.name == "vllm:inter_token_latency_seconds_count") {
          // The scrape's instance names the node (no host label on vLLM).
          EXPECT_EQ(s.Label("job"), "vllm");
          const std::string instance(s.Label("instance").value_or(""));
          last_count[instance.substr(0, instance.rfind(':'))] = s.value;
        }
      });
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(report->ok()) << (report->messages.empty() ? "" : report->messages[0]);
  EXPECT_EQ(type["vllm:inter_token_latency_seconds"], model::MetricType::kHistogram);
  ASSERT_EQ(last_count.size(), 2u);
  for (std::size_t i = 0; i < engine.node_count(); ++i) {
    const VllmState& s = engine.server(i)->state();
    EXPECT_GT(s.time_per_output_token_seconds.count, 1000u);
    EXPECT_EQ(last_count[s.hostname], static_cast<double>(s.time_per_output_token_seconds.count));
  }
  std::remove(path.c_str());
}

// ---- What the other servers record --------------------------------------

// A load that varies (idle, light, past capacity, a slow GPU, idle again),
// so queueing, batching and draining all happen.
double RateAt(int step) { return step < 50 ? 0 : (step < 900 ? 30 : (step < 1500 ? 90 : 0)); }
double SpeedAt(int step) { return step >= 1100 && step < 1300 ? 0.5 : 1.0; }
constexpr int kSteps = 3000;

// The server a node exposes changes what it records, never what it does: the
// same draws, dynamics and GPU load, vLLM's state byte for byte.
TEST(ServingServersTest, SameRequestsAndLoadWhateverTheServer) {
  ServingProfile p;
  p.max_waiting = 1000;  // some arrivals are refused past capacity
  ServingNode vllm(p, "node-1", 21);
  std::vector<ServingNode> others;
  for (const ServerKind& kind :
       {ServerKind(vocab::Server::kSglang), ServerKind(vocab::Server::kTgi),
        ServerKind(vocab::Server::kTritonTrtllm), ServerKind()}) {
    others.emplace_back(p, "node-1", 21, kind);
  }
  for (int i = 0; i < kSteps; ++i) {
    vllm.Step(kDt, RateAt(i), SpeedAt(i));
    for (ServingNode& n : others) {
      n.Step(kDt, RateAt(i), SpeedAt(i));
      ASSERT_EQ(n.gpu_load(), vllm.gpu_load()) << ServerKindName(n.server()) << " step " << i;
    }
  }
  std::string want;
  RenderVllmExposition(vllm.state(), want);
  EXPECT_GT(vllm.rejected_total(), 0u);
  for (const ServingNode& n : others) {
    std::string got;
    RenderVllmExposition(n.state(), got);
    EXPECT_EQ(got, want) << ServerKindName(n.server());
    EXPECT_EQ(n.arrived_total(), vllm.arrived_total());
  }
  // A node without a server renders nothing; one with vLLM renders vLLM.
  std::string none;
  RenderServerExposition(others.back(), none);
  EXPECT_EQ(none, "");
  std::string mine;
  RenderServerExposition(vllm, mine);
  EXPECT_EQ(mine, want);
}

ServingNode RunServer(vocab::Server server, int steps) {
  ServingProfile p;
  p.max_waiting = 1000;
  ServingNode node(p, "node-1", 21, server);
  for (int i = 0; i < steps; ++i) node.Step(kDt, RateAt(i), SpeedAt(i));
  return node;
}

// SGLang counts a request's tokens when it finishes, observes TTFT at its
// first token, and at every later token k the running mean gap
// (t_k - t_first) / (k - 1): once drained, its counters equal vLLM's, and
// the per-token histogram has one observation per token after each first.
TEST(ServingServersTest, SglangCountsRequestsWhenTheyFinish) {
  const ServingNode mid = RunServer(vocab::Server::kSglang, 1000);
  const SglangState& m = mid.sglang();
  EXPECT_LT(m.generation_tokens_total, mid.state().generation_tokens_total);  // in flight
  EXPECT_EQ(m.time_to_first_token_seconds.count, mid.state().time_to_first_token_seconds.count);
  EXPECT_TRUE(m.scheduled);
  EXPECT_EQ(m.num_running_reqs, mid.state().num_requests_running);
  EXPECT_EQ(m.num_queue_reqs, mid.state().num_requests_waiting);
  EXPECT_EQ(m.token_usage, mid.state().gpu_cache_usage_perc);
  EXPECT_EQ(m.gen_throughput, mid.tokens_per_second());

  const ServingNode node = RunServer(vocab::Server::kSglang, kSteps);
  const SglangState& s = node.sglang();
  const VllmState& v = node.state();
  ASSERT_EQ(node.num_running() + node.num_waiting(), 0u);  // drained
  EXPECT_EQ(static_cast<double>(s.requests_finished), v.request_success_total);
  EXPECT_EQ(s.prompt_tokens_total, v.prompt_tokens_total);
  EXPECT_EQ(s.generation_tokens_total, v.generation_tokens_total);
  EXPECT_EQ(s.e2e_request_latency_seconds.count, v.e2e_request_latency_seconds.count);
  EXPECT_DOUBLE_EQ(s.e2e_request_latency_seconds.sum, v.e2e_request_latency_seconds.sum);
  EXPECT_EQ(s.time_to_first_token_seconds.count, v.time_to_first_token_seconds.count);
  EXPECT_DOUBLE_EQ(s.time_to_first_token_seconds.sum, v.time_to_first_token_seconds.sum);
  EXPECT_EQ(static_cast<double>(s.time_per_output_token_seconds.count),
            v.generation_tokens_total - v.request_success_total);
  // The running mean lies within the iteration times the batch saw.
  const double mean = s.time_per_output_token_seconds.sum /
                      static_cast<double>(s.time_per_output_token_seconds.count);
  EXPECT_GT(mean, 0.012);
  EXPECT_LT(mean, 0.1);
  EXPECT_EQ(s.num_running_reqs, 0);
  EXPECT_EQ(s.num_used_tokens, 0);
}

// TGI records one observation per finished request in each of its request
// histograms: e2e, queue and inference time, mean time per token (inference
// time / output tokens) and output tokens; tgi_request_count counts every
// request received.
TEST(ServingServersTest, TgiObservesEachRequestOnceWhenItFinishes) {
  const ServingNode node = RunServer(vocab::Server::kTgi, kSteps);
  const TgiState& t = node.tgi();
  const VllmState& v = node.state();
  ASSERT_EQ(node.num_running() + node.num_waiting(), 0u);
  EXPECT_EQ(t.request_count, static_cast<double>(node.arrived_total()));
  EXPECT_EQ(t.request_success, v.request_success_total);
  const auto n = static_cast<std::uint64_t>(v.request_success_total);
  for (const VllmHistogram<35>* h :
       {&t.request_duration, &t.request_queue_duration, &t.request_inference_duration,
        &t.request_mean_time_per_token_duration}) {
    EXPECT_EQ(h->count, n);
  }
  EXPECT_EQ(t.request_generated_tokens.count, n);
  EXPECT_EQ(t.request_generated_tokens.sum, v.generation_tokens_total);
  EXPECT_DOUBLE_EQ(t.request_duration.sum, v.e2e_request_latency_seconds.sum);
  EXPECT_NEAR(t.request_queue_duration.sum + t.request_inference_duration.sum,
              t.request_duration.sum, 1e-6 * t.request_duration.sum);
  // Per request: mean time per token = inference time / its tokens, so the
  // means sit between a decode iteration and a prefill-heavy short request.
  const double mean_tpt = t.request_mean_time_per_token_duration.sum / static_cast<double>(n);
  EXPECT_GT(mean_tpt, 0.012);
  EXPECT_LT(mean_tpt, 0.2);
  EXPECT_TRUE(t.batched);
  EXPECT_EQ(t.queue_size, 0);
}

// Triton counts successes, refusals and request microseconds, the first
// response in whole milliseconds and each request's output length.
TEST(ServingServersTest, TritonCountsRequestsAndTheirDurations) {
  const ServingNode node = RunServer(vocab::Server::kTritonTrtllm, kSteps);
  const TritonState& t = node.triton();
  const VllmState& v = node.state();
  EXPECT_EQ(t.request_success, v.request_success_total);
  EXPECT_EQ(t.inference_count, v.request_success_total);
  EXPECT_EQ(t.request_failure, static_cast<double>(node.rejected_total()));
  EXPECT_GT(t.request_failure, 0);
  // Whole microseconds per request: within 1 us of vLLM's e2e seconds each.
  EXPECT_NEAR(t.request_duration_us, v.e2e_request_latency_seconds.sum * 1e6,
              v.request_success_total);
  EXPECT_EQ(t.request_duration_us, std::floor(t.request_duration_us));
  EXPECT_EQ(t.output_token_len.count, v.e2e_request_latency_seconds.count);
  EXPECT_EQ(t.output_token_len.sum, v.generation_tokens_total);
  EXPECT_EQ(t.first_response_ms.count, v.time_to_first_token_seconds.count);
  EXPECT_NEAR(t.first_response_ms.sum, v.time_to_first_token_seconds.sum * 1e3,
              static_cast<double>(t.first_response_ms.count));
  EXPECT_EQ(t.max, 256);
  EXPECT_EQ(t.kv_max, 6250);  // 400000 tokens in blocks of 64
  EXPECT_EQ(t.kv_used, 0);
  EXPECT_EQ(t.kv_free, 6250);

  // Mid-run: blocks of 64 tokens, rounded up.
  const ServingNode mid = RunServer(vocab::Server::kTritonTrtllm, 1000);
  const TritonState& m = mid.triton();
  EXPECT_EQ(m.kv_used, std::ceil(static_cast<double>(mid.kv_tokens_held()) / 64));
  EXPECT_EQ(m.kv_used + m.kv_free, m.kv_max);
  EXPECT_DOUBLE_EQ(m.kv_fraction, m.kv_used / m.kv_max);
  EXPECT_EQ(m.waiting, static_cast<double>(mid.num_waiting()));
  EXPECT_EQ(m.active, static_cast<double>(mid.num_running()));
}

}  // namespace
}  // namespace gpucanary::sim
