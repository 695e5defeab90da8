#pragma once
// The service measures (docs/vocabulary.md, "Service measures"): what an LLM
// inference server says about its speed and load, in one vocabulary whatever
// server says it. A policy names a measure (`{measure: per_token_latency,
// ...}`); the judge files each server's samples under it, so one policy
// judges a canary on any of the servers below.
//
//   const vocab::ServiceMetric* m =
//       vocab::FindServiceMetric(vocab::Server::kSglang, vocab::ServiceMeasure::kPerTokenLatency);
//   // m->metric == "sglang:time_per_output_token_seconds", a histogram in seconds
//   vocab::DetectServer({"vllm:inter_token_latency_seconds", ...})  // Server::kVllm
//
// One row per (server, measure) the server exposes; a server that does not
// expose a measure has no row (TGI has no time to first token nor KV-cache
// usage). Every row is checked against an exposition from the server's own
// docs or source (src/vocab/testdata/README.md). Values convert to the
// measure's unit by `scale`: latencies in seconds, tokens in tokens (a rate:
// tokens/s), queue depth in requests, KV-cache usage as a fraction (0..1).
//
// Thread-safe: constant data and pure functions.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vocab/vocab.h"

namespace gpucanary::vocab {

enum class ServiceMeasure : std::uint8_t {
  kPerTokenLatency,
  kTimeToFirstToken,
  kE2eLatency,
  kGeneratedTokens,
  kQueueDepth,
  kKvCacheUsage,
  kRunningRequests,
};

enum class Server : std::uint8_t { kVllm, kVllmLegacy, kSglang, kTgi, kTritonTrtllm };

inline constexpr std::array<Word<ServiceMeasure>, 7> kServiceMeasures = {{
    {ServiceMeasure::kPerTokenLatency, "per_token_latency",
     "seconds between generated tokens of a request (inter-token latency, TPOT)"},
    {ServiceMeasure::kTimeToFirstToken, "time_to_first_token",
     "seconds from a request's arrival to its first generated token"},
    {ServiceMeasure::kE2eLatency, "e2e_latency", "seconds from a request's arrival to its end"},
    {ServiceMeasure::kGeneratedTokens, "generated_tokens",
     "output tokens generated (a counter: compared as tokens/s)"},
    {ServiceMeasure::kQueueDepth, "queue_depth", "requests waiting to be scheduled"},
    {ServiceMeasure::kKvCacheUsage, "kv_cache_usage", "fraction of the KV cache in use (0 to 1)"},
    {ServiceMeasure::kRunningRequests, "running_requests",
     "requests in the running batch (the decode batch: the load a per-token latency is read at)"},
}};

inline constexpr std::array<Word<Server>, 5> kServers = {{
    {Server::kVllm, "vllm", "vLLM 0.11 and later (inter-token latency, kv_cache_usage_perc)"},
    {Server::kVllmLegacy, "vllm_legacy",
     "vLLM 0.4 to 0.10 (time_per_output_token_seconds, gpu_cache_usage_perc)"},
    {Server::kSglang, "sglang", "SGLang (--enable-metrics)"},
    {Server::kTgi, "tgi", "Hugging Face text-generation-inference"},
    {Server::kTritonTrtllm, "triton_trtllm",
     "NVIDIA Triton Inference Server with the TensorRT-LLM backend"},
}};

template <>
constexpr std::span<const Word<ServiceMeasure>> Words<ServiceMeasure>() {
  return kServiceMeasures;
}
template <>
constexpr std::span<const Word<Server>> Words<Server>() {
  return kServers;
}
static_assert(internal::InEnumOrder<ServiceMeasure>());
static_assert(internal::InEnumOrder<Server>());

// GPU measures: derived from DCGM fields alone, for a canary whose servers
// expose no service metrics (a training job, batch inference, a server that
// is not scraped). A policy names one as it names a service measure
// (`{measure: work_per_joule, ...}`); it is compared as a gauge.
enum class GpuMeasure : std::uint8_t {
  kWorkPerJoule,
};

inline constexpr std::array<Word<GpuMeasure>, 1> kGpuMeasures = {{
    {GpuMeasure::kWorkPerJoule, "work_per_joule",
     "tensor-pipe cycles per joule: DCGM_FI_PROF_PIPE_TENSOR_ACTIVE x DCGM_FI_DEV_SM_CLOCK / "
     "DCGM_FI_DEV_POWER_USAGE, summed over an arm's GPUs (MHz per watt)"},
}};

template <>
constexpr std::span<const Word<GpuMeasure>> Words<GpuMeasure>() {
  return kGpuMeasures;
}
static_assert(internal::InEnumOrder<GpuMeasure>());

// How a server exposes a measure.
enum class SourceType : std::uint8_t {
  kHistogram,     // `metric` is a histogram family: _bucket, _sum, _count
  kCounter,       // `metric` is a counter sample (its increase per second is the rate)
  kGauge,         // `metric` is a gauge sample
  kCounterRatio,  // increase of counter `metric` / increase of counter `denominator`
                  // (a mean from two cumulative counters)
};

// A label the samples must carry (`name` empty: none). Servers that put
// several quantities in one family (TensorRT-LLM's request_type,
// kv_cache_block_type) need one.
struct LabelSelector {
  std::string_view name;
  std::string_view value;
  bool empty() const { return name.empty(); }
};

struct ServiceMetric {
  Server server;
  ServiceMeasure measure;
  std::string_view metric;  // family (kHistogram) or sample name
  SourceType type;
  double scale;  // a value (an observation, a sum) times scale is in the measure's unit
  LabelSelector selector;
  std::string_view denominator;  // kCounterRatio only
  std::string_view note;         // how the server's quantity differs from the measure, if it does
};

// Every row, server by server in enum order.
std::span<const ServiceMetric> ServiceMetrics();
// The row of (server, measure); nullptr when the server does not expose it.
const ServiceMetric* FindServiceMetric(Server server, ServiceMeasure measure);
// The unit values of `measure` are in after scaling: "s", "tokens", "requests", "fraction".
std::string_view MeasureUnit(ServiceMeasure measure);

// The series names a row's samples have: a histogram's _bucket, _sum and
// _count, a ratio's two counters, else the metric itself.
std::vector<std::string> SampleNames(const ServiceMetric& row);

// The name a reader files a row's selected samples under: `metric{name="value"}`
// for a row with a label selector (TensorRT-LLM's queue depth is
// nv_trt_llm_request_metrics{request_type="waiting"}), else the metric.
std::string SelectedName(const ServiceMetric& row);
// The row-selected name of a sample called `sample` whose label values
// `label(name)` gives (nullopt: the sample has no such label), if a row with
// a selector selects it; nullopt otherwise. A sample so selected is its
// row's series, apart from the rest of its family.
template <typename LabelFn>
std::optional<std::string> SelectedSampleName(std::string_view sample, LabelFn label);

// Whether `sample` is a counter some server's measure reads (a kCounter row's
// metric, a kCounterRatio row's two counters). Servers that write counters
// without "_total" (TGI, Triton) have them recorded as `unknown` by an
// OpenMetrics writer, which cannot declare a counter without the suffix;
// readers take these names as counters all the same.
bool IsServiceCounter(std::string_view sample);

// The server whose metrics these are, from the family (or sample) names of
// one scrape or recording; nullopt when none of the five is recognized. A
// vLLM that exposes the current names is kVllm even while it still exposes
// the deprecated ones (0.11 serves both).
std::optional<Server> DetectServer(std::span<const std::string_view> names);
std::optional<Server> DetectServer(const std::vector<std::string>& names);

template <typename LabelFn>
std::optional<std::string> SelectedSampleName(std::string_view sample, LabelFn label) {
  for (const ServiceMetric& row : ServiceMetrics()) {
    if (row.selector.empty() || row.metric != sample) continue;
    const std::optional<std::string_view> value = label(row.selector.name);
    if (value && *value == row.selector.value) return SelectedName(row);
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& out, ServiceMeasure value);
std::ostream& operator<<(std::ostream& out, Server value);
std::ostream& operator<<(std::ostream& out, GpuMeasure value);

}  // namespace gpucanary::vocab
