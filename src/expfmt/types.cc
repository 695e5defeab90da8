#include "expfmt/types.h"

namespace gpucanary::expfmt {

std::string_view FormatName(Format format) {
  return format == Format::kOpenMetrics ? "openmetrics" : "prometheus-0.0.4";
}

std::optional<std::string_view> SampleView::Label(std::string_view label_name) const {
  for (const model::LabelView& l : labels) {
    if (l.name == label_name) return l.value;
  }
  return std::nullopt;
}

std::string ParseError::Format(std::string_view file) const {
  std::string out;
  if (!file.empty()) {
    out.append(file);
    out += ':';
  }
  out += std::to_string(line);
  out += ':';
  out += std::to_string(column);
  out += ": ";
  out += message;
  return out;
}

}  // namespace gpucanary::expfmt
