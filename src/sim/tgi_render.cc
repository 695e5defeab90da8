#include "sim/tgi_render.h"

#include <span>

namespace gpucanary::sim {
namespace {

void Scalar(const ServiceFamily& family, double value, ExpositionSink& sink) {
  sink.Family(family);
  sink.Sample("", {}, value);
}

// metrics-exporter-prometheus: the buckets, the +Inf bucket, `_sum`, `_count`.
template <std::size_t N>
void Histogram(const ServiceFamily& family, const VllmHistogram<N>& h, ExpositionSink& sink) {
  sink.Family(family);
  ForEachBucket(h, AppendRustFloat, [&](std::string_view le, std::uint64_t cumulative) {
    const model::LabelView labels[] = {{"le", le}};
    sink.Sample("_bucket", labels, static_cast<double>(cumulative));
  });
  sink.Sample("_sum", {}, h.sum);
  sink.Sample("_count", {}, static_cast<double>(h.count));
}

}  // namespace

const std::array<double, 35>& TgiDurationBuckets() {
  static const std::array<double, 35> buckets = [] {
    std::array<double, 35> b{};
    double value = 0.0001;
    for (double& bound : b) {
      value *= 1.5;
      bound = value;
    }
    return b;
  }();
  return buckets;
}

const std::array<double, 100>& TgiGeneratedTokensBuckets() {
  static const std::array<double, 100> buckets = [] {
    std::array<double, 100> b{};
    for (std::size_t x = 0; x < b.size(); ++x) {
      b[x] = (kTgiMaxTotalTokens / 100.0) * static_cast<double>(x + 1);
    }
    return b;
  }();
  return buckets;
}

void VisitTgi(const TgiState& s, ExpositionSink& sink) {
  const auto& f = kTgiFamilies;
  const bool succeeded = s.request_success > 0;
  if (succeeded) Scalar(f[0], s.request_success, sink);
  if (s.request_count > 0) {
    Scalar(f[1], s.request_count, sink);
    Scalar(f[2], s.queue_size, sink);
  }
  if (s.batched) Scalar(f[3], s.batch_current_size, sink);
  if (!succeeded) return;
  Histogram(f[4], s.request_mean_time_per_token_duration, sink);
  Histogram(f[5], s.request_duration, sink);
  Histogram(f[6], s.request_queue_duration, sink);
  Histogram(f[7], s.request_inference_duration, sink);
  Histogram(f[8], s.request_generated_tokens, sink);
}

void RenderTgiExposition(const TgiState& state, std::string& out) {
  TextExpositionSink sink(
      TextStyle{.append_number = AppendRustFloat, .blank_line_after_family = true}, out);
  VisitTgi(state, sink);
}

}  // namespace gpucanary::sim
