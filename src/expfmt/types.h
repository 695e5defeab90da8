#pragma once
// Value types shared by the exposition parser, validator and reader.
//
// Spec references (quoted where implemented):
//   Prometheus text 0.0.4: prometheus/docs docs/instrumenting/exposition_formats.md
//   OpenMetrics 1.0:       prometheus/OpenMetrics specification/OpenMetrics.md ("ABNF")

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/label_view.h"
#include "model/metric_type.h"

namespace gpucanary::expfmt {

enum class Format : std::uint8_t {
  kPrometheusText,  // text/plain; version=0.0.4
  kOpenMetrics,     // application/openmetrics-text; version=1.0.0
};

std::string_view FormatName(Format format);

// Timestamps are int64 milliseconds since the epoch, the unit of Prometheus's
// storage. OpenMetrics timestamps (float seconds) are rounded to the nearest
// millisecond; ones beyond the int64 range are clamped and flagged.
inline constexpr std::int64_t kNoTimestamp = std::numeric_limits<std::int64_t>::min();

struct ExemplarView {
  std::vector<model::LabelView> labels;
  double value = 0;
  std::int64_t timestamp_ms = kNoTimestamp;
};

struct SampleView {
  std::string_view name;
  // The labels as they appear on the sample. Both views of each point into
  // the parsed buffer or into the parser's scratch space (when the value had
  // escapes); they stay valid until the parser's next Next() call.
  std::vector<model::LabelView> labels;
  // The raw label block as written, braces included ("" without braces). Two
  // samples with the same raw block have the same labels; validators use it
  // to cache label-set hashes.
  std::string_view label_text;
  double value = 0;
  std::int64_t timestamp_ms = kNoTimestamp;  // kNoTimestamp when absent
  bool timestamp_clamped = false;            // OM timestamp outside int64 ms range
  bool has_exemplar = false;
  ExemplarView exemplar;

  bool has_timestamp() const { return timestamp_ms != kNoTimestamp; }
  // The value of label `name`, or nullopt. Linear scan: label sets are small.
  std::optional<std::string_view> Label(std::string_view label_name) const;
};

enum class MetadataKind : std::uint8_t { kHelp, kType, kUnit };

struct MetadataView {
  MetadataKind kind = MetadataKind::kHelp;
  std::string_view name;
  std::string_view text;  // HELP text (unescaped) or UNIT text
  model::MetricType type = model::MetricType::kUnknown;
};

// Where and why input was rejected. Line and column are 1-based; the column
// counts bytes from the start of the line.
struct ParseError {
  std::uint64_t line = 0;
  std::uint32_t column = 0;
  std::string message;

  // "FILE:LINE:COLUMN: message" (or "LINE:COLUMN: message" when file is empty).
  std::string Format(std::string_view file) const;
};

}  // namespace gpucanary::expfmt
