#include "recording/openmetrics_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

namespace gpucanary::recording {
namespace {

bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

void AppendUnsigned(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits{};
  auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  (void)ec;  // 24 bytes always hold a uint64
  out.append(digits.data(), end);
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  const char first = name.front();
  if (!IsAsciiAlpha(first) && first != '_' && first != ':') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c) && c != '_' && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty()) return false;
  const char first = name.front();
  if (!IsAsciiAlpha(first) && first != '_') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c) && c != '_') return false;
  }
  return true;
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    std::uint32_t code_point = 0;
    std::uint32_t min_code_point = 0;
    if ((b0 & 0xE0U) == 0xC0U) {
      length = 2;
      code_point = b0 & 0x1FU;
      min_code_point = 0x80;
    } else if ((b0 & 0xF0U) == 0xE0U) {
      length = 3;
      code_point = b0 & 0x0FU;
      min_code_point = 0x800;
    } else if ((b0 & 0xF8U) == 0xF0U) {
      length = 4;
      code_point = b0 & 0x07U;
      min_code_point = 0x10000;
    } else {
      return false;  // stray continuation byte or 0xF8..0xFF
    }
    if (n - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0U) != 0x80U) return false;
      code_point = (code_point << 6) | (b & 0x3FU);
    }
    if (code_point < min_code_point || code_point > 0x10FFFF) return false;
    if (code_point >= 0xD800 && code_point <= 0xDFFF) return false;
    i += length;
  }
  return true;
}

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void AppendEscaped(std::string& out, std::string_view text) {
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out.append(text.data() + run_start, i - run_start);
    out += '\\';
    out += (c == '\n') ? 'n' : c;
    run_start = i + 1;
  }
  out.append(text.data() + run_start, text.size() - run_start);
}

void AppendValue(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  // The shortest round-trip form of any double fits in 24 characters
  // ("-2.2250738585072014e-308" is the longest).
  std::array<char, 32> text{};
  auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), value);
  (void)ec;
  out.append(text.data(), end);
}

void AppendTimestamp(std::string& out, std::int64_t timestamp_ms) {
  // Work on the magnitude in uint64 so that INT64_MIN does not overflow.
  std::uint64_t magnitude = static_cast<std::uint64_t>(timestamp_ms);
  if (timestamp_ms < 0) {
    out += '-';
    magnitude = ~magnitude + 1;
  }
  AppendUnsigned(out, magnitude / 1000);
  const auto millis = static_cast<unsigned>(magnitude % 1000);
  out += '.';
  out += static_cast<char>('0' + millis / 100);
  out += static_cast<char>('0' + millis / 10 % 10);
  out += static_cast<char>('0' + millis % 10);
}

}  // namespace gpucanary::recording
