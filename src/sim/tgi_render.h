#pragma once
// The text-generation-inference (TGI 3.x) metrics the simulator exposes for a
// node with `server: tgi`, rendered as TGI serves them on /metrics (port 80
// in the official image). Sources: router/src/server.rs (the counters and
// histograms a finished request records, the bucket bounds, the descriptions),
// backends/v3/src/queue.rs (tgi_queue_size), backends/v3/src/backend.rs
// (tgi_batch_current_size); the reference is src/vocab/testdata/tgi.prom.
//
// TGI's exporter is the Rust crate metrics-exporter-prometheus 0.15: no
// labels on these families; counters keep their names (no "_total"); a
// "# HELP" from the description server.rs gives (the first one, where it
// describes a name twice); a histogram prints its buckets, then `_sum` and
// `_count`; every family ends with a blank line; numbers as Rust prints f64
// and u64 ("201", "0.00015000000000000001", "1024"). A family exists once the
// router has first touched it: tgi_request_count and tgi_queue_size with the
// first request, tgi_batch_current_size with the first batch, the rest with
// the first request that succeeds.
//
// Per finished request (server.rs, one observation each, at its end):
//   tgi_request_duration                      finish - arrival (e2e)
//   tgi_request_queue_duration                start of its batch - arrival
//   tgi_request_inference_duration            finish - start of its batch
//   tgi_request_mean_time_per_token_duration  inference duration / output tokens
//   tgi_request_generated_tokens              output tokens
// Buckets: durations 0.0001 * 1.5^k, k = 1..35 (all "*_duration" names);
// generated tokens max_total_tokens / 100 * k, k = 1..100, max_total_tokens
// 4096. tgi_request_validation_duration and tgi_request_input_length are not
// rendered (no validation step is simulated; max_input_tokens is not set).

#include <array>
#include <cstdint>
#include <string>

#include "sim/service_exposition.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {

// The bounds as server.rs computes them: `value *= 1.5` 35 times from 0.0001,
// and `(max_total_tokens as f64 / 100.0) * (x + 1) as f64`.
const std::array<double, 35>& TgiDurationBuckets();
const std::array<double, 100>& TgiGeneratedTokensBuckets();
inline constexpr double kTgiMaxTotalTokens = 4096;

// The families, in the order rendered.
inline constexpr std::array<ServiceFamily, 9> kTgiFamilies = {{
    {"tgi_request_success", "Number of successful requests", "counter"},
    {"tgi_request_count", "Total number of requests", "counter"},
    {"tgi_queue_size", "Current queue size", "gauge"},
    {"tgi_batch_current_size", "Current batch size", "gauge"},
    {"tgi_request_mean_time_per_token_duration", "Mean time per token per request", "histogram"},
    {"tgi_request_duration", "Request duration", "histogram"},
    {"tgi_request_queue_duration", "Request queue duration", "histogram"},
    {"tgi_request_inference_duration", "Request inference duration", "histogram"},
    {"tgi_request_generated_tokens", "Generated tokens per request", "histogram"},
}};

// One TGI router's metrics. ServingNode keeps it for a node that runs TGI.
struct TgiState {
  double request_count = 0;    // every request received (counted on arrival)
  double request_success = 0;  // finished requests
  double queue_size = 0;
  double batch_current_size = 0;
  bool batched = false;  // a batch has run: tgi_batch_current_size exists

  VllmHistogram<35> request_mean_time_per_token_duration{&TgiDurationBuckets()};
  VllmHistogram<35> request_duration{&TgiDurationBuckets()};
  VllmHistogram<35> request_queue_duration{&TgiDurationBuckets()};
  VllmHistogram<35> request_inference_duration{&TgiDurationBuckets()};
  VllmHistogram<100> request_generated_tokens{&TgiGeneratedTokensBuckets()};
};

// Walks `state` as TGI's exposition (families not yet touched left out).
void VisitTgi(const TgiState& state, ExpositionSink& sink);

// Appends `state` as TGI's /metrics text to `out`.
void RenderTgiExposition(const TgiState& state, std::string& out);

}  // namespace gpucanary::sim
