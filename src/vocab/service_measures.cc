#include "vocab/service_measures.h"

#include <ostream>

namespace gpucanary::vocab {
namespace {

using M = ServiceMeasure;
using S = Server;
using T = SourceType;

// Sources: src/vocab/testdata/README.md names, per server, the upstream
// file each row was read from.
constexpr std::array<ServiceMetric, 32> kRows = {{
    // vLLM >= 0.11 (vllm/v1/metrics/loggers.py); labels model_name, engine.
    {S::kVllm,
     M::kPerTokenLatency,
     "vllm:inter_token_latency_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kVllm,
     M::kTimeToFirstToken,
     "vllm:time_to_first_token_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kVllm, M::kE2eLatency, "vllm:e2e_request_latency_seconds", T::kHistogram, 1, {}, {}, {}},
    {S::kVllm, M::kGeneratedTokens, "vllm:generation_tokens_total", T::kCounter, 1, {}, {}, {}},
    {S::kVllm, M::kQueueDepth, "vllm:num_requests_waiting", T::kGauge, 1, {}, {}, {}},
    {S::kVllm, M::kRunningRequests, "vllm:num_requests_running", T::kGauge, 1, {}, {}, {}},
    {S::kVllm,
     M::kKvCacheUsage,
     "vllm:kv_cache_usage_perc",
     T::kGauge,
     1,
     {},
     {},
     "a fraction despite the name (1 = 100%)"},
    // vLLM 0.4 to 0.10 (vllm/engine/metrics.py); label model_name.
    {S::kVllmLegacy,
     M::kPerTokenLatency,
     "vllm:time_per_output_token_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kVllmLegacy,
     M::kTimeToFirstToken,
     "vllm:time_to_first_token_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kVllmLegacy,
     M::kE2eLatency,
     "vllm:e2e_request_latency_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kVllmLegacy,
     M::kGeneratedTokens,
     "vllm:generation_tokens_total",
     T::kCounter,
     1,
     {},
     {},
     {}},
    {S::kVllmLegacy, M::kQueueDepth, "vllm:num_requests_waiting", T::kGauge, 1, {}, {}, {}},
    {S::kVllmLegacy, M::kRunningRequests, "vllm:num_requests_running", T::kGauge, 1, {}, {}, {}},
    {S::kVllmLegacy,
     M::kKvCacheUsage,
     "vllm:gpu_cache_usage_perc",
     T::kGauge,
     1,
     {},
     {},
     "a fraction despite the name (1 = 100%)"},
    // SGLang (docs/references/production_metrics.md); label model_name.
    {S::kSglang,
     M::kPerTokenLatency,
     "sglang:time_per_output_token_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kSglang,
     M::kTimeToFirstToken,
     "sglang:time_to_first_token_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kSglang,
     M::kE2eLatency,
     "sglang:e2e_request_latency_seconds",
     T::kHistogram,
     1,
     {},
     {},
     {}},
    {S::kSglang, M::kGeneratedTokens, "sglang:generation_tokens_total", T::kCounter, 1, {}, {}, {}},
    {S::kSglang, M::kQueueDepth, "sglang:num_queue_reqs", T::kGauge, 1, {}, {}, {}},
    {S::kSglang, M::kRunningRequests, "sglang:num_running_reqs", T::kGauge, 1, {}, {}, {}},
    {S::kSglang,
     M::kKvCacheUsage,
     "sglang:token_usage",
     T::kGauge,
     1,
     {},
     {},
     "share of the KV token pool in use"},
    // TGI (router/src/server.rs, backends/v3/src/queue.rs); no labels.
    {S::kTgi,
     M::kPerTokenLatency,
     "tgi_request_mean_time_per_token_duration",
     T::kHistogram,
     1,
     {},
     {},
     "one observation per request: its mean time per token"},
    {S::kTgi, M::kE2eLatency, "tgi_request_duration", T::kHistogram, 1, {}, {}, {}},
    {S::kTgi,
     M::kGeneratedTokens,
     "tgi_request_generated_tokens_sum",
     T::kCounter,
     1,
     {},
     {},
     "the _sum of the per-request histogram: counted when a request ends"},
    {S::kTgi, M::kQueueDepth, "tgi_queue_size", T::kGauge, 1, {}, {}, {}},
    // Triton + TensorRT-LLM (tensorrtllm_backend README "Triton Metrics",
    // triton server docs/user_guide/metrics.md); labels model, version.
    {S::kTritonTrtllm,
     M::kPerTokenLatency,
     "nv_inference_request_duration_us",
     T::kCounterRatio,
     1e-6,
     {},
     "nv_llm_output_token_len_sum",
     "request time per generated token, prefill included (no inter-token metric upstream)"},
    {S::kTritonTrtllm,
     M::kTimeToFirstToken,
     "nv_inference_first_response_histogram_ms",
     T::kHistogram,
     1e-3,
     {},
     {},
     "only with --metrics-config histogram_latencies=true"},
    {S::kTritonTrtllm,
     M::kE2eLatency,
     "nv_inference_request_duration_us",
     T::kCounterRatio,
     1e-6,
     {},
     "nv_inference_request_success",
     "a mean only (no histogram): p99 is not available"},
    {S::kTritonTrtllm,
     M::kGeneratedTokens,
     "nv_llm_output_token_len_sum",
     T::kCounter,
     1,
     {},
     {},
     "the _sum of the per-request histogram: counted when a request ends"},
    {S::kTritonTrtllm,
     M::kQueueDepth,
     "nv_trt_llm_request_metrics",
     T::kGauge,
     1,
     {"request_type", "waiting"},
     {},
     {}},
    {S::kTritonTrtllm,
     M::kKvCacheUsage,
     "nv_trt_llm_kv_cache_block_metrics",
     T::kGauge,
     1,
     {"kv_cache_block_type", "fraction"},
     {},
     {}},
    {S::kTritonTrtllm,
     M::kRunningRequests,
     "nv_trt_llm_request_metrics",
     T::kGauge,
     1,
     {"request_type", "active"},
     {},
     "active requests: those in context (prefill) and in generation"},
}};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::span<const ServiceMetric> ServiceMetrics() { return kRows; }

const ServiceMetric* FindServiceMetric(Server server, ServiceMeasure measure) {
  for (const ServiceMetric& row : kRows) {
    if (row.server == server && row.measure == measure) return &row;
  }
  return nullptr;
}

std::string_view MeasureUnit(ServiceMeasure measure) {
  switch (measure) {
    case M::kPerTokenLatency:
    case M::kTimeToFirstToken:
    case M::kE2eLatency:
      return "s";
    case M::kGeneratedTokens:
      return "tokens";
    case M::kQueueDepth:
    case M::kRunningRequests:
      return "requests";
    case M::kKvCacheUsage:
      return "fraction";
  }
  return "";
}

std::vector<std::string> SampleNames(const ServiceMetric& row) {
  const std::string m(row.metric);
  switch (row.type) {
    case T::kHistogram:
      return {m + "_bucket", m + "_sum", m + "_count"};
    case T::kCounterRatio:
      return {m, std::string(row.denominator)};
    case T::kCounter:
    case T::kGauge:
      break;
  }
  return {m};
}

std::optional<Server> DetectServer(std::span<const std::string_view> names) {
  bool vllm = false, vllm_current = false, sglang = false, tgi = false, triton = false;
  for (std::string_view n : names) {
    if (StartsWith(n, "vllm:")) {
      vllm = true;
      vllm_current |= StartsWith(n, "vllm:inter_token_latency_seconds") ||
                      StartsWith(n, "vllm:kv_cache_usage_perc");
    }
    sglang |= StartsWith(n, "sglang:");
    tgi |= StartsWith(n, "tgi_");
    triton |= StartsWith(n, "nv_trt_llm_") || StartsWith(n, "nv_llm_");
  }
  if (vllm) return vllm_current ? S::kVllm : S::kVllmLegacy;
  if (sglang) return S::kSglang;
  if (tgi) return S::kTgi;
  if (triton) return S::kTritonTrtllm;
  return std::nullopt;
}

std::optional<Server> DetectServer(const std::vector<std::string>& names) {
  std::vector<std::string_view> views(names.begin(), names.end());
  return DetectServer(std::span<const std::string_view>(views));
}

std::string SelectedName(const ServiceMetric& row) {
  std::string out(row.metric);
  if (row.selector.empty()) return out;
  out += '{';
  out += row.selector.name;
  out += "=\"";
  out += row.selector.value;
  out += "\"}";
  return out;
}

bool IsServiceCounter(std::string_view sample) {
  for (const ServiceMetric& row : kRows) {
    if (row.type == SourceType::kCounter && sample == row.metric) return true;
    if (row.type == SourceType::kCounterRatio &&
        (sample == row.metric || sample == row.denominator)) {
      return true;
    }
  }
  return false;
}

std::ostream& operator<<(std::ostream& out, ServiceMeasure value) { return out << Name(value); }
std::ostream& operator<<(std::ostream& out, Server value) { return out << Name(value); }
std::ostream& operator<<(std::ostream& out, GpuMeasure value) { return out << Name(value); }

}  // namespace gpucanary::vocab
