#pragma once
// The Triton Inference Server + TensorRT-LLM backend metrics the simulator
// exposes for a node with `server: triton_trtllm`, rendered as Triton serves
// them on :8002/metrics with `--metrics-config histogram_latencies=true`.
// The reference is src/vocab/testdata/triton_trtllm.prom (the backend
// README's "Triton Metrics" output plus nv_llm_output_token_len and
// nv_inference_first_response_histogram_ms; sources in its README.md).
//
// Triton's exporter is prometheus-cpp 1.0: labels in name order (a
// std::map), a bucket's `le` last; a histogram prints `_count`, `_sum`, then
// its buckets; numbers as an ostream with precision 16 ("%.16g"); counters
// without "_total". Every family exists from model load, at 0. Labels
// model="tensorrt_llm", version="1" (the TensorRT-LLM model of the usual
// ensemble, the decoupled one that streams tokens).
//
// What is counted, and when:
//   nv_inference_request_success, nv_inference_count   +1 per finished request
//   nv_inference_request_failure                        +1 per request refused (full queue)
//   nv_inference_request_duration_us                    + (finish - arrival), integer us
//   nv_inference_first_response_histogram_ms            first token - arrival, integer ms
//                                                       (buckets 100, 500, 2000, 5000)
//   nv_llm_output_token_len{response_metric_type="total_output_tokens"}
//                                                       output tokens per finished request
//                                                       (buckets 10, 50, 100, 500, 1000)
//   nv_trt_llm_request_metrics{request_type=...}        waiting, context (in prefill),
//                                                       scheduled and active (running), max
//                                                       (max_num_seqs)
//   nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=...}
//                                                       blocks of 64 tokens: max (KV capacity /
//                                                       64), used (KV tokens held / 64, rounded
//                                                       up), free, fraction (used / max),
//                                                       tokens_per (64)
// Not rendered, as nothing simulated fills them: the runtime-memory,
// inflight-batcher, general and disaggregated-serving nv_trt_llm_* families,
// and Triton's exec count, queue, compute and pending-request metrics (the
// TensorRT-LLM executor queues requests itself; Triton's own queue stays empty).

#include <array>
#include <cstdint>
#include <string>

#include "sim/service_exposition.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {

inline constexpr std::array<double, 4> kTritonFirstResponseBucketsMs = {100, 500, 2000, 5000};
inline constexpr std::array<double, 5> kTritonOutputTokenLenBuckets = {10, 50, 100, 500, 1000};
inline constexpr double kTritonTokensPerBlock = 64;

// The families, in prometheus-cpp's order (counters, gauges, histograms).
inline constexpr std::array<ServiceFamily, 8> kTritonFamilies = {{
    {"nv_inference_request_success", "Number of successful inference requests, all batch sizes",
     "counter"},
    {"nv_inference_request_failure", "Number of failed inference requests, all batch sizes",
     "counter"},
    {"nv_inference_count", "Number of inferences performed (does not include cached requests)",
     "counter"},
    {"nv_inference_request_duration_us",
     "Cumulative inference request duration in microseconds (includes cached requests)", "counter"},
    {"nv_trt_llm_request_metrics", "TRT LLM request metrics", "gauge"},
    {"nv_trt_llm_kv_cache_block_metrics", "TRT LLM KV cache block metrics", "gauge"},
    {"nv_inference_first_response_histogram_ms",
     "Duration from request to first response in milliseconds", "histogram"},
    {"nv_llm_output_token_len", "TRT LLM response metrics", "histogram"},
}};

// One Triton server's metrics. ServingNode keeps it for a node that runs Triton.
struct TritonState {
  std::string model = "tensorrt_llm";  // label model
  std::string version = "1";           // label version

  double request_success = 0;
  double request_failure = 0;
  double inference_count = 0;
  double request_duration_us = 0;

  // nv_trt_llm_request_metrics
  double waiting = 0;
  double context = 0;
  double scheduled = 0;
  double max = 0;
  double active = 0;
  // nv_trt_llm_kv_cache_block_metrics
  double kv_fraction = 0;
  double kv_tokens_per = kTritonTokensPerBlock;
  double kv_used = 0;
  double kv_free = 0;
  double kv_max = 0;

  VllmHistogram<kTritonFirstResponseBucketsMs.size()> first_response_ms{
      &kTritonFirstResponseBucketsMs};
  VllmHistogram<kTritonOutputTokenLenBuckets.size()> output_token_len{
      &kTritonOutputTokenLenBuckets};
};

// Walks `state` as Triton's exposition.
void VisitTriton(const TritonState& state, ExpositionSink& sink);

// Appends `state` as Triton's /metrics text to `out`.
void RenderTritonExposition(const TritonState& state, std::string& out);

}  // namespace gpucanary::sim
