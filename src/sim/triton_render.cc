#include "sim/triton_render.h"

#include <algorithm>
#include <span>
#include <string_view>
#include <utility>

namespace gpucanary::sim {
namespace {

void Counter(const ServiceFamily& family, const TritonState& s, double value,
             ExpositionSink& sink) {
  const model::LabelView labels[] = {{"model", s.model}, {"version", s.version}};
  sink.Family(family);
  sink.Sample("", labels, value);
}

// One gauge family whose samples differ by the label `key` (which sorts
// between model and version, as request_type and kv_cache_block_type do).
struct Typed {
  std::string_view type;
  double value;
};
template <std::size_t N>
void TypedGauge(const ServiceFamily& family, std::string_view key, const TritonState& s,
                const std::array<Typed, N>& samples, ExpositionSink& sink) {
  sink.Family(family);
  for (const Typed& t : samples) {
    std::array<model::LabelView, 3> labels = {
        {{"model", s.model}, {key, t.type}, {"version", s.version}}};
    if (key < labels[0].name) std::swap(labels[0], labels[1]);
    sink.Sample("", labels, t.value);
  }
}

// prometheus-cpp: `_count`, `_sum`, the buckets (`le` last), the +Inf bucket.
template <std::size_t N>
void Histogram(const ServiceFamily& family, std::span<const model::LabelView> base,
               const VllmHistogram<N>& h, ExpositionSink& sink) {
  sink.Family(family);
  sink.Sample("_count", base, static_cast<double>(h.count));
  sink.Sample("_sum", base, h.sum);
  std::array<model::LabelView, 4> labels{};
  std::copy(base.begin(), base.end(), labels.begin());
  const std::span<const model::LabelView> with_le(labels.data(), base.size() + 1);
  ForEachBucket(h, AppendCppFloat, [&](std::string_view le, std::uint64_t cumulative) {
    labels[base.size()] = {"le", le};
    sink.Sample("_bucket", with_le, static_cast<double>(cumulative));
  });
}

}  // namespace

void VisitTriton(const TritonState& s, ExpositionSink& sink) {
  const auto& f = kTritonFamilies;
  Counter(f[0], s, s.request_success, sink);
  Counter(f[1], s, s.request_failure, sink);
  Counter(f[2], s, s.inference_count, sink);
  Counter(f[3], s, s.request_duration_us, sink);
  TypedGauge(f[4], "request_type", s,
             std::array<Typed, 5>{{{"waiting", s.waiting},
                                   {"context", s.context},
                                   {"scheduled", s.scheduled},
                                   {"max", s.max},
                                   {"active", s.active}}},
             sink);
  TypedGauge(f[5], "kv_cache_block_type", s,
             std::array<Typed, 5>{{{"fraction", s.kv_fraction},
                                   {"tokens_per", s.kv_tokens_per},
                                   {"used", s.kv_used},
                                   {"free", s.kv_free},
                                   {"max", s.kv_max}}},
             sink);
  const model::LabelView model_version[] = {{"model", s.model}, {"version", s.version}};
  Histogram(f[6], model_version, s.first_response_ms, sink);
  const model::LabelView output_tokens[] = {
      {"model", s.model}, {"response_metric_type", "total_output_tokens"}, {"version", s.version}};
  Histogram(f[7], output_tokens, s.output_token_len, sink);
}

void RenderTritonExposition(const TritonState& state, std::string& out) {
  TextExpositionSink sink(TextStyle{.append_number = AppendCppFloat}, out);
  VisitTriton(state, sink);
}

}  // namespace gpucanary::sim
