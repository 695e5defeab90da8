#include "recording/openmetrics_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>

namespace gpucanary::recording {
namespace {

void AppendUnsigned(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits{};
  auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  (void)ec;  // 24 bytes always hold a uint64
  out.append(digits.data(), end);
}

}  // namespace

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
