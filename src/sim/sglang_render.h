#pragma once
// The SGLang metrics the simulator exposes for a node with `server: sglang`,
// rendered as SGLang (--enable-metrics) serves them on :30000/metrics. The
// reference is src/vocab/testdata/sglang.prom, the output SGLang publishes in
// docs/references/production_metrics.md; the families and buckets are those
// of python/sglang/srt/metrics/collector.py of that release
// (TokenizerMetricsCollector, SchedulerMetricsCollector).
//
// SGLang runs prometheus_client in multiprocess mode (PROMETHEUS_MULTIPROC_DIR),
// which shapes the text: labels in name order, so a bucket reads
// `{le="0.1",model_name="..."}`; a histogram prints `_sum`, then its buckets,
// then `_count`; numbers as Python floats ("162.0", "8.128902e+06"); and a
// family has no line at all until its first value is recorded: the counters
// and the e2e histogram appear with the first finished request, the TTFT
// histogram with the first token, the per-token histogram with a request's
// second token, the scheduler's gauges with the first batch.
//
// What the server counts, and when (the tokenizer manager of that release,
// for streamed requests):
// - sglang:prompt_tokens_total, sglang:generation_tokens_total: a request's
//   prompt and output tokens, added when it finishes (not as generated);
// - sglang:time_to_first_token_seconds: first token - arrival, at the first token;
// - sglang:time_per_output_token_seconds: at every token k >= 2 of a request,
//   (t_k - t_first) / (k - 1), the running mean gap since its first token;
// - sglang:e2e_request_latency_seconds: finish - arrival;
// - gauges: running requests, queued requests, KV tokens held
//   (sglang:num_used_tokens) and their share of the pool (sglang:token_usage),
//   generated tokens/s (over the last 100 ms step), cache hit rate 0 (no
//   prefix is ever shared: the simulator has no prefix cache).
// sglang:func_latency_seconds (the server's own function timings) is not
// rendered.

#include <array>
#include <cstdint>
#include <string>

#include "sim/service_exposition.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {

// collector.py's bucket bounds.
inline constexpr std::array<double, 20> kSglangTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
    0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 15.0, 20.0, 25.0, 30.0};
inline constexpr std::array<double, 18> kSglangTpotBuckets = {0.005, 0.01, 0.015, 0.02, 0.025, 0.03,
                                                              0.04,  0.05, 0.075, 0.1,  0.15,  0.2,
                                                              0.3,   0.4,  0.5,   0.75, 1.0,   2.5};
inline constexpr std::array<double, 15> kSglangE2eBuckets = {
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0};

// The families, in the order of the published output.
inline constexpr std::array<ServiceFamily, 11> kSglangFamilies = {{
    {"sglang:prompt_tokens_total", "Number of prefill tokens processed.", "counter"},
    {"sglang:generation_tokens_total", "Number of generation tokens processed.", "counter"},
    {"sglang:token_usage", "The token usage", "gauge"},
    {"sglang:cache_hit_rate", "The cache hit rate", "gauge"},
    {"sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
     "histogram"},
    {"sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
     "histogram"},
    {"sglang:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
     "histogram"},
    {"sglang:num_running_reqs", "The number of running requests", "gauge"},
    {"sglang:num_used_tokens", "The number of used tokens", "gauge"},
    {"sglang:gen_throughput", "The generate throughput (token/s)", "gauge"},
    {"sglang:num_queue_reqs", "The number of requests in the waiting queue", "gauge"},
}};

// One SGLang server's metrics. ServingNode keeps it for a node that runs SGLang.
struct SglangState {
  std::string model_name;  // label model_name (--served-model-name)

  std::uint64_t requests_finished = 0;  // not a metric: the counters exist from the first
  double prompt_tokens_total = 0;
  double generation_tokens_total = 0;

  bool scheduled = false;  // a batch has run: the scheduler's gauges exist
  double num_running_reqs = 0;
  double num_used_tokens = 0;
  double token_usage = 0;
  double gen_throughput = 0;
  double num_queue_reqs = 0;
  double cache_hit_rate = 0;

  VllmHistogram<kSglangTtftBuckets.size()> time_to_first_token_seconds{&kSglangTtftBuckets};
  VllmHistogram<kSglangE2eBuckets.size()> e2e_request_latency_seconds{&kSglangE2eBuckets};
  VllmHistogram<kSglangTpotBuckets.size()> time_per_output_token_seconds{&kSglangTpotBuckets};
};

// Walks `state` as SGLang's exposition (families with no value left out).
void VisitSglang(const SglangState& state, ExpositionSink& sink);

// Appends `state` as SGLang's /metrics text to `out`.
void RenderSglangExposition(const SglangState& state, std::string& out);

}  // namespace gpucanary::sim
