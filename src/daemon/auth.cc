#include "daemon/auth.h"

#include <array>
#include <cstdint>

namespace gpucanary::daemon {
namespace {

// The query API answers GET and POST alike (POST carries a form): both read.
constexpr std::array<std::string_view, 4> kQueryPaths = {"/api/v1/query", "/api/v1/query_range",
                                                         "/api/v1/series", "/api/v1/labels"};

// Requests that only read, whatever their method: the query API (POST
// carries a form), and Flagger's webhooks, which ask whether to promote or
// roll back and cannot send an Authorization header (Flagger's webhook spec
// has no headers).
bool IsReadPath(std::string_view path) {
  for (std::string_view p : kQueryPaths) {
    if (path == p) return true;
  }
  return path.starts_with("/api/v1/label/") || path.starts_with("/api/v1/flagger/");
}

// The token of "Bearer <token>" (scheme case-insensitive, RFC 9110 §11.1);
// "" if the header is anything else.
std::string_view BearerToken(std::string_view header) {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || !net::EqualsIgnoreCase(header.substr(0, 6), kScheme) ||
      header[kScheme.size()] != ' ') {
    return {};
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

}  // namespace

bool ConstantTimeEquals(std::string_view secret, std::string_view presented) {
  // Every byte of the secret is compared whatever happened before, so the
  // time does not tell how much of a guess was right.
  std::uint8_t diff = secret.size() == presented.size() ? 0 : 1;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const char p = i < presented.size() ? presented[i] : '\0';
    diff = static_cast<std::uint8_t>(
        diff | (static_cast<std::uint8_t>(secret[i]) ^ static_cast<std::uint8_t>(p)));
  }
  return diff == 0;
}

bool BearerAuth::Protects(const net::HttpRequest& request) const {
  if (config_.token.empty()) return false;
  const std::string& path = request.path;
  if (path == "/api/v1/write") return config_.protect_remote_write;
  const bool read_method = request.method == "GET" || request.method == "HEAD";
  if (path.starts_with("/api/v1/")) {
    if (read_method || IsReadPath(path)) return config_.protect_reads;
    return true;
  }
  if (path == "/metrics") return config_.protect_reads;
  return false;
}

bool BearerAuth::Allow(const net::HttpRequest& request, net::HttpResponse& response) const {
  if (!Protects(request)) return true;
  const std::string_view header = request.Header("authorization");
  const std::string_view token = BearerToken(header);
  if (!token.empty() && ConstantTimeEquals(config_.token, token)) return true;
  response.status = 401;
  response.content_type = "application/json";
  response.headers.emplace_back(
      "WWW-Authenticate", token.empty() ? R"(Bearer realm="gpucanary")"
                                        : R"(Bearer realm="gpucanary", error="invalid_token")");
  response.body =
      token.empty()
          ? R"({"status":"error","errorType":"unauthorized","error":"this endpoint needs Authorization: Bearer <token>"})"
          : R"({"status":"error","errorType":"unauthorized","error":"invalid bearer token"})";
  return false;
}

}  // namespace gpucanary::daemon
