#include "sim/vllm_render.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

#include "recording/openmetrics_text.h"

namespace gpucanary::sim {
namespace {

void AppendHeader(std::string_view name, std::string_view help, std::string_view type,
                  std::string& out) {
  recording::AppendFamilyHeader(out, name, type, help);
}

// `{model_name="...",engine="0"` (legacy: `{model_name="..."`) without the
// closing brace: prometheus_client prints labels in labelnames order.
void AppendLabelsOpen(const VllmState& s, std::string& out) {
  out += "{model_name=\"";
  out += s.model_name;
  out += '"';
  if (s.version == VllmVersion::kCurrent) out += ",engine=\"0\"";
}

void AppendSample(std::string_view name, std::string_view suffix, const VllmState& s, double value,
                  std::string& out) {
  out += name;
  out += suffix;
  AppendLabelsOpen(s, out);
  out += "} ";
  AppendPythonFloat(value, out);
  out += '\n';
}

void AppendScalar(const VllmFamilyInfo& family, const VllmState& s, double value,
                  std::string& out) {
  AppendHeader(family.name, family.help, family.type, out);
  AppendSample(family.name, "", s, value, out);
}

template <std::size_t N>
void AppendHistogram(const VllmFamilyInfo& family, const VllmState& s, const VllmHistogram<N>& h,
                     std::string& out) {
  const std::string_view name = family.name;
  AppendHeader(name, family.help, "histogram", out);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= N; ++i) {
    out += name;
    out += "_bucket";
    AppendLabelsOpen(s, out);
    out += ",le=\"";
    if (i < N) {
      cumulative += h.buckets[i];
      AppendPythonFloat((*h.bounds)[i], out);
    } else {
      cumulative = h.count;
      out += "+Inf";
    }
    out += "\"} ";
    AppendPythonFloat(static_cast<double>(cumulative), out);
    out += '\n';
  }
  AppendSample(name, "_count", s, static_cast<double>(h.count), out);
  AppendSample(name, "_sum", s, h.sum, out);
}

}  // namespace

// prometheus_client utils.floatToGoString: Python repr(float), except that a
// positive value with more than 6 integer digits switches to Go's exponent form.
// repr is the shortest round-trip form, positional when 1e-4 <= |v| < 1e16,
// else "d.ddde+XX".
void AppendPythonFloat(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  // Shortest round-trip digits and exponent, from scientific form "d.ddde+XX".
  std::array<char, 64> sci{};
  const auto res =
      std::to_chars(sci.data(), sci.data() + sci.size(), v, std::chars_format::scientific);
  const std::string_view text(sci.data(), static_cast<std::size_t>(res.ptr - sci.data()));
  const std::size_t e_pos = text.find('e');
  std::string_view mantissa = text.substr(0, e_pos);
  std::string_view exp_text = text.substr(e_pos + 1);  // "+16" or "-05"
  const bool exp_negative = exp_text.front() == '-';
  exp_text.remove_prefix(1);
  int exponent = 0;
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  if (exp_negative) exponent = -exponent;
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.remove_prefix(1);
  std::array<char, 24> digits{};  // mantissa digits without the point
  std::size_t n = 0;
  for (char c : mantissa) {
    if (c != '.') digits[n++] = c;
  }
  if (negative) out += '-';
  if (exponent >= 16 || exponent < -4) {
    out += std::string_view(mantissa);
    out += exponent < 0 ? "e-" : "e+";
    const int mag = exponent < 0 ? -exponent : exponent;
    if (mag < 10) out += '0';
    std::array<char, 8> eb{};
    const auto er = std::to_chars(eb.data(), eb.data() + eb.size(), mag);
    out.append(eb.data(), er.ptr);
    return;
  }
  const std::string_view all(digits.data(), n);
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exponent - 1), '0');
    out += all;
    return;
  }
  const auto int_digits = static_cast<std::size_t>(exponent) + 1;
  if (!negative && int_digits > 6) {
    // Go style: "1.234567e+06" (trailing zeros and point stripped from mantissa).
    std::string_view m = all;
    while (m.size() > 1 && m.back() == '0') m.remove_suffix(1);
    out += m[0];
    if (m.size() > 1) {
      out += '.';
      out += m.substr(1);
    }
    out += "e+0";
    std::array<char, 8> eb{};
    const auto er = std::to_chars(eb.data(), eb.data() + eb.size(), exponent);
    out.append(eb.data(), er.ptr);
    return;
  }
  if (n <= int_digits) {
    out += all;
    out.append(int_digits - n, '0');
    out += ".0";
  } else {
    out += all.substr(0, int_digits);
    out += '.';
    out += all.substr(int_digits);
  }
}

std::string_view VllmVersionName(VllmVersion version) {
  return version == VllmVersion::kLegacy ? "vllm_legacy" : "vllm";
}

std::optional<VllmVersion> ParseVllmVersion(std::string_view name) {
  if (name == "vllm") return VllmVersion::kCurrent;
  if (name == "vllm_legacy") return VllmVersion::kLegacy;
  return std::nullopt;
}

void RenderVllmExposition(const VllmState& state, std::string& out) {
  const std::array<VllmFamilyInfo, 9>& f = VllmFamilies(state.version);
  AppendScalar(f[0], state, state.num_requests_running, out);
  AppendScalar(f[1], state, state.num_requests_waiting, out);
  AppendScalar(f[2], state, state.gpu_cache_usage_perc, out);
  AppendScalar(f[3], state, state.prompt_tokens_total, out);
  AppendScalar(f[4], state, state.generation_tokens_total, out);
  AppendHeader(f[5].name, f[5].help, f[5].type, out);
  out += f[5].name;
  AppendLabelsOpen(state, out);
  out += ",finished_reason=\"stop\"} ";
  AppendPythonFloat(state.request_success_total, out);
  out += '\n';
  AppendHistogram(f[kTtftFamily], state, state.time_to_first_token_seconds, out);
  AppendHistogram(f[kTpotFamily], state, state.time_per_output_token_seconds, out);
  AppendHistogram(f[kE2eFamily], state, state.e2e_request_latency_seconds, out);
}

}  // namespace gpucanary::sim
