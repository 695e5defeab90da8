#include "sim/sglang_render.h"

namespace gpucanary::sim {
namespace {

void Scalar(const ServiceFamily& family, const SglangState& s, double value, ExpositionSink& sink) {
  const model::LabelView labels[] = {{"model_name", s.model_name}};
  sink.Family(family);
  sink.Sample("", labels, value);
}

// Multiprocess collection: _sum, then the buckets (labels sorted, so `le`
// first), then _count.
template <std::size_t N>
void Histogram(const ServiceFamily& family, const SglangState& s, const VllmHistogram<N>& h,
               ExpositionSink& sink) {
  if (h.count == 0) return;
  const model::LabelView model[] = {{"model_name", s.model_name}};
  sink.Family(family);
  sink.Sample("_sum", model, h.sum);
  ForEachBucket(h, AppendPythonFloat, [&](std::string_view le, std::uint64_t cumulative) {
    const model::LabelView labels[] = {{"le", le}, {"model_name", s.model_name}};
    sink.Sample("_bucket", labels, static_cast<double>(cumulative));
  });
  sink.Sample("_count", model, static_cast<double>(h.count));
}

}  // namespace

void VisitSglang(const SglangState& s, ExpositionSink& sink) {
  const auto& f = kSglangFamilies;
  if (s.requests_finished > 0) {
    Scalar(f[0], s, s.prompt_tokens_total, sink);
    Scalar(f[1], s, s.generation_tokens_total, sink);
  }
  if (s.scheduled) {
    Scalar(f[2], s, s.token_usage, sink);
    Scalar(f[3], s, s.cache_hit_rate, sink);
  }
  Histogram(f[4], s, s.time_to_first_token_seconds, sink);
  Histogram(f[5], s, s.e2e_request_latency_seconds, sink);
  Histogram(f[6], s, s.time_per_output_token_seconds, sink);
  if (s.scheduled) {
    Scalar(f[7], s, s.num_running_reqs, sink);
    Scalar(f[8], s, s.num_used_tokens, sink);
    Scalar(f[9], s, s.gen_throughput, sink);
    Scalar(f[10], s, s.num_queue_reqs, sink);
  }
}

void RenderSglangExposition(const SglangState& state, std::string& out) {
  TextExpositionSink sink(TextStyle{.append_number = AppendPythonFloat}, out);
  VisitSglang(state, sink);
}

}  // namespace gpucanary::sim
