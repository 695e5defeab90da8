#include "sim/service_exposition.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "recording/openmetrics_text.h"

namespace gpucanary::sim {

TextExpositionSink::~TextExpositionSink() { EndFamily(); }

void TextExpositionSink::EndFamily() {
  if (open_ && style_.blank_line_after_family) out_ += '\n';
  open_ = false;
}

void TextExpositionSink::Family(const ServiceFamily& family) {
  EndFamily();
  if (family.help.empty()) {
    out_ += "# TYPE ";
    out_ += family.name;
    out_ += ' ';
    out_ += family.type;
    out_ += '\n';
  } else {
    recording::AppendFamilyHeader(out_, family.name, family.type, family.help);
  }
  family_ = family.name;
  open_ = true;
}

void TextExpositionSink::Sample(std::string_view suffix, std::span<const model::LabelView> labels,
                                double value) {
  out_ += family_;
  out_ += suffix;
  if (!labels.empty()) {
    char sep = '{';
    for (const model::LabelView& l : labels) {
      out_ += sep;
      out_ += l.name;
      out_ += "=\"";
      out_ += l.value;  // the servers' label values here need no escaping
      out_ += '"';
      sep = ',';
    }
    out_ += '}';
  }
  out_ += ' ';
  style_.append_number(value, out_);
  out_ += '\n';
}

void AppendRustFloat(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "inf" : "-inf";
    return;
  }
  // std::to_chars in fixed format without a precision: the shortest digits
  // that round-trip, never an exponent; 310 digits hold any finite double.
  std::array<char, 400> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed);
  out.append(buf.data(), res.ptr);
}

void AppendCppFloat(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "Nan";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  std::array<char, 32> buf{};
  const int n = std::snprintf(buf.data(), buf.size(), "%.16g", v);
  out.append(buf.data(), static_cast<std::size_t>(n));
}

}  // namespace gpucanary::sim
