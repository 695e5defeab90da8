#include "daemon/api_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "core/time_format.h"

namespace gpucanary::daemon {

std::optional<std::int64_t> ParseApiTime(std::string_view text) {
  if (auto t = ParseRfc3339Millis(text)) return t;
  double seconds = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(seconds)) {
    return std::nullopt;
  }
  // Sub-millisecond digits are truncated, as Prometheus does.
  return static_cast<std::int64_t>(std::floor(seconds * 1000 + 1e-6));
}

void AppendPromValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[400];  // the longest fixed-notation double (denormals) fits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  out.append(buf, ec == std::errc() ? end : buf);
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

void AppendPromTime(std::string& out, std::int64_t t_ms) {
  char buf[32];
  const bool negative = t_ms < 0;
  const std::uint64_t abs_ms =
      negative ? ~static_cast<std::uint64_t>(t_ms) + 1 : static_cast<std::uint64_t>(t_ms);
  int n = 0;
  if (abs_ms % 1000 == 0) {
    n = std::snprintf(
        buf, sizeof buf, "%s%llu", negative ? "-" : "",
        static_cast<unsigned long long>(abs_ms / 1000));  // NOLINT(google-runtime-int)
  } else {
    n = std::snprintf(
        buf, sizeof buf, "%s%llu.%03llu", negative ? "-" : "",
        static_cast<unsigned long long>(abs_ms / 1000),   // NOLINT(google-runtime-int)
        static_cast<unsigned long long>(abs_ms % 1000));  // NOLINT(google-runtime-int)
  }
  out.append(buf, static_cast<std::size_t>(std::max(n, 0)));
}

void ReplyApiData(net::HttpResponse& response, int status, std::string_view data) {
  response.status = status;
  response.content_type = "application/json";
  response.body = R"({"status":"success","data":)";
  response.body += data;
  response.body += "}";
}

void ReplyApiError(net::HttpResponse& response, int status, std::string_view type,
                   std::string_view message) {
  response.status = status;
  response.content_type = "application/json";
  std::string body = R"({"status":"error","errorType":)";
  AppendJsonString(body, type);
  body += R"(,"error":)";
  AppendJsonString(body, message);
  body += "}";
  response.body = std::move(body);
}

}  // namespace gpucanary::daemon
