#pragma once
// The plumbing shared by the renderers of SGLang, TGI and Triton (sglang_render.h,
// tgi_render.h, triton_render.h): each walks its server's state into an
// ExpositionSink, family by family and sample by sample, in the order and with
// the label order and bound formatting of the server's own metrics library.
// TextExpositionSink turns that walk into the /metrics text (live mode);
// offline.cc's sink turns it into recorded series. vLLM keeps its own
// renderer (vllm_render.h), byte for byte as before.
//
// Number formats, one per library:
//   AppendPythonFloat  prometheus_client (vLLM, SGLang): "12.0", "0.3", "1.234567e+06"
//   AppendRustFloat    metrics-exporter-prometheus (TGI), Rust's `{}` for f64 and
//                      u64: "201", "0.5", "0.00015000000000000001", never an exponent
//   AppendCppFloat     prometheus-cpp 1.0 (Triton): an ostream with precision 16,
//                      i.e. printf "%.16g": "6239", "0.4875", "1.5e+20", "Nan"
//
// Thread-safe: no shared state.

#include <span>
#include <string>
#include <string_view>

#include "model/label_view.h"

namespace gpucanary::sim {

// One family as the server declares it.
struct ServiceFamily {
  std::string_view name;  // the # TYPE name
  std::string_view help;  // empty: no # HELP line
  std::string_view type;  // "counter", "gauge" or "histogram"
};

// Receives one server's exposition in the server's own order.
class ExpositionSink {
 public:
  virtual ~ExpositionSink() = default;
  // Starts a family; the samples that follow are its.
  virtual void Family(const ServiceFamily& family) = 0;
  // One sample of the current family, named family.name + `suffix` ("", "_bucket", "_sum",
  // "_count"), with the server's labels in the server's order (a bucket's `le` where the
  // server writes it, its bound formatted as the server formats it).
  virtual void Sample(std::string_view suffix, std::span<const model::LabelView> labels,
                      double value) = 0;
};

// How one metrics library writes the text format.
struct TextStyle {
  void (*append_number)(double value, std::string& out);
  bool blank_line_after_family = false;  // metrics-exporter-prometheus ends each with "\n"
};

// Appends the walk as Prometheus text format 0.0.4 to `out`: "# HELP" (when
// the family has help), "# TYPE", then one line per sample.
class TextExpositionSink final : public ExpositionSink {
 public:
  TextExpositionSink(TextStyle style, std::string& out) : style_(style), out_(out) {}
  ~TextExpositionSink() override;  // ends the last family
  TextExpositionSink(const TextExpositionSink&) = delete;
  TextExpositionSink& operator=(const TextExpositionSink&) = delete;

  void Family(const ServiceFamily& family) override;
  void Sample(std::string_view suffix, std::span<const model::LabelView> labels,
              double value) override;

 private:
  void EndFamily();

  TextStyle style_;
  std::string& out_;
  std::string_view family_;
  bool open_ = false;
};

// Rust's Display for f64 (and u64): the shortest digits that round-trip, in
// positional notation ("1024", "1433.6000000000001"); "NaN", "inf", "-inf".
void AppendRustFloat(double v, std::string& out);

// prometheus-cpp 1.0's WriteValue: "%.16g"; "Nan", "+Inf", "-Inf".
void AppendCppFloat(double v, std::string& out);

}  // namespace gpucanary::sim
