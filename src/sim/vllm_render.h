#pragma once
// The vLLM serving metrics the simulator exposes, rendered as vLLM serves them:
// prometheus_client's text format 0.0.4 (generate_latest). vLLM names its
// counters without "_total" and prometheus_client appends it in the output, so
// the text reads `# TYPE vllm:generation_tokens_total counter`. Histograms print
// cumulative `_bucket{...,le="..."}` lines ending with le="+Inf", then `_count`
// and `_sum`. Numbers are Python floats as prometheus_client prints them
// (floatToGoString: "12.0", "0.3", "1.234567e+06", "+Inf").
//
// Two versions, chosen per node group in a scenario (`server:`):
// - VllmVersion::kCurrent (`vllm`, the default): vLLM >= 0.11 (v1 engine,
//   vllm/v1/metrics/loggers.py PrometheusStatLogger): labels model_name and
//   engine; vllm:inter_token_latency_seconds and vllm:kv_cache_usage_perc.
// - VllmVersion::kLegacy (`vllm_legacy`): vLLM 0.4-0.10 names,
//   vllm:time_per_output_token_seconds and vllm:gpu_cache_usage_perc, label
//   model_name only.
// Neither carries a host label: as with the real server, the host is only in
// the scrape target (docs/scraping.md gives a target its node).
// vllm:request_success_total adds finished_reason="stop". prometheus_client's
// "_created" series are not printed (PROMETHEUS_DISABLE_CREATED_SERIES=True).
// src/vocab/testdata/vllm.prom and vllm_legacy.prom are the references; the
// render test compares families, types, label names and bucket bounds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpucanary::sim {

enum class VllmVersion : std::uint8_t { kCurrent, kLegacy };

// "vllm", "vllm_legacy": the names a scenario's `server:` takes.
std::string_view VllmVersionName(VllmVersion version);
std::optional<VllmVersion> ParseVllmVersion(std::string_view name);

// vLLM's bucket bounds (vllm/v1/metrics/loggers.py; the same in both versions
// since 0.10: earlier releases had a prefix of each list).
inline constexpr std::array<double, 21> kE2eLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
inline constexpr std::array<double, 22> kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// vllm:inter_token_latency_seconds (current), vllm:time_per_output_token_seconds
// (legacy).
inline constexpr std::array<double, 19> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                        0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                        7.5,  10.0,  20.0, 40.0,  80.0};

// The families one vLLM version exposes, in exposition order: the sample
// name (counters with their "_total"), vLLM's help text, and the # TYPE. A
// name both versions use has one help text (a recording declares it once).
struct VllmFamilyInfo {
  std::string_view name;
  std::string_view help;
  std::string_view type;
};
inline constexpr std::array<VllmFamilyInfo, 9> kVllmFamilies = {{
    {"vllm:num_requests_running", "Number of requests in model execution batches.", "gauge"},
    {"vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge"},
    {"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge"},
    {"vllm:prompt_tokens_total", "Number of prefill tokens processed.", "counter"},
    {"vllm:generation_tokens_total", "Number of generation tokens processed.", "counter"},
    {"vllm:request_success_total", "Count of successfully processed requests.", "counter"},
    {"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
     "histogram"},
    {"vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
     "histogram"},
    {"vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
     "histogram"},
}};
inline constexpr std::array<VllmFamilyInfo, 9> kLegacyVllmFamilies = {{
    {"vllm:num_requests_running", "Number of requests in model execution batches.", "gauge"},
    {"vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge"},
    {"vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", "gauge"},
    {"vllm:prompt_tokens_total", "Number of prefill tokens processed.", "counter"},
    {"vllm:generation_tokens_total", "Number of generation tokens processed.", "counter"},
    {"vllm:request_success_total", "Count of successfully processed requests.", "counter"},
    {"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
     "histogram"},
    {"vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
     "histogram"},
    {"vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
     "histogram"},
}};
inline constexpr const std::array<VllmFamilyInfo, 9>& VllmFamilies(VllmVersion version) {
  return version == VllmVersion::kLegacy ? kLegacyVllmFamilies : kVllmFamilies;
}
// Indices into the family tables of the three histograms.
inline constexpr std::size_t kTtftFamily = 6;
inline constexpr std::size_t kTpotFamily = 7;
inline constexpr std::size_t kE2eFamily = 8;

// A Prometheus histogram with N finite upper bounds (+Inf implied).
template <std::size_t N>
struct VllmHistogram {
  const std::array<double, N>* bounds = nullptr;
  std::array<std::uint64_t, N> buckets{};  // observations <= bounds[i], non-cumulative
  std::uint64_t count = 0;                 // all observations (the +Inf bucket)
  double sum = 0;

  // Records one observation (seconds). Prometheus buckets are "le": a value
  // equal to a bound falls in that bound's bucket.
  void Observe(double seconds) { Observe(seconds, 1); }

  // Records `n` observations of the same value at once (`n` = 0: nothing).
  void Observe(double seconds, std::uint64_t n) {
    if (n == 0) return;
    for (std::size_t i = 0; i < N; ++i) {
      if (seconds <= (*bounds)[i]) {
        buckets[i] += n;
        break;
      }
    }
    count += n;
    sum += seconds * static_cast<double>(n);
  }
};

// Calls visit(le, cumulative) for each bucket of `h` in order, the +Inf
// bucket last, with each finite bound written by `format(bound, out)` (the
// server's number format: AppendPythonFloat, ...). `le` is valid during the
// call only.
template <std::size_t N, typename Format, typename Visit>
void ForEachBucket(const VllmHistogram<N>& h, Format format, Visit visit) {
  std::string le;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= N; ++i) {
    le.clear();
    if (i < N) {
      cumulative += h.buckets[i];
      format((*h.bounds)[i], le);
    } else {
      cumulative = h.count;
      le = "+Inf";
    }
    visit(std::string_view(le), cumulative);
  }
}

// One vLLM server's metrics. Counters only grow; the simulator owns updates.
struct VllmState {
  VllmVersion version = VllmVersion::kCurrent;
  std::string model_name;  // label model_name, e.g. "meta-llama/Llama-3.1-8B-Instruct"
  std::string hostname;    // the node serving it: not a label of the server's own output

  double prompt_tokens_total = 0;
  double generation_tokens_total = 0;
  double request_success_total = 0;  // finished_reason="stop"

  double num_requests_running = 0;
  double num_requests_waiting = 0;
  double gpu_cache_usage_perc = 0;  // 0..1: 1 means 100 percent

  VllmHistogram<kE2eLatencyBuckets.size()> e2e_request_latency_seconds{&kE2eLatencyBuckets};
  VllmHistogram<kTtftBuckets.size()> time_to_first_token_seconds{&kTtftBuckets};
  // vLLM observes, every engine iteration, each decoding request's time since
  // its previous token (the iteration's length, prefill chunks included):
  // vllm:inter_token_latency_seconds, or time_per_output_token in legacy.
  VllmHistogram<kTpotBuckets.size()> time_per_output_token_seconds{&kTpotBuckets};
};

// Appends `state` as its version of vLLM's /metrics text to `out`. Allocates nothing beyond
// growing `out`. Thread-safe (no shared state).
void RenderVllmExposition(const VllmState& state, std::string& out);

// Appends `v` as prometheus_client's floatToGoString prints it.
void AppendPythonFloat(double v, std::string& out);

}  // namespace gpucanary::sim
