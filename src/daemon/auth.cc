#include "daemon/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/base64.h"

namespace gpucanary::daemon {
namespace {

// The query API answers GET and POST alike (POST carries a form): both read.
constexpr std::array<std::string_view, 4> kQueryPaths = {"/api/v1/query", "/api/v1/query_range",
                                                         "/api/v1/series", "/api/v1/labels"};

bool IsQueryPath(std::string_view path) {
  for (std::string_view p : kQueryPaths) {
    if (path == p) return true;
  }
  return path.starts_with("/api/v1/label/");
}

bool StartsWithIgnoreCase(std::string_view header, std::string_view scheme) {
  return header.size() > scheme.size() &&
         net::EqualsIgnoreCase(header.substr(0, scheme.size()), scheme) &&
         header[scheme.size()] == ' ';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The credential an Authorization header carries: the token of
// "Bearer <token>", or the password of "Basic base64(user:password)" (the
// user when there is no password); "" for anything else. Schemes are
// case-insensitive (RFC 9110 §11.1).
std::string Credential(std::string_view header) {
  if (StartsWithIgnoreCase(header, "bearer")) return std::string(Trim(header.substr(6)));
  if (StartsWithIgnoreCase(header, "basic")) {
    std::optional<std::string> decoded = Base64Decode(Trim(header.substr(5)));
    if (!decoded) return {};
    const std::size_t colon = decoded->find(':');
    if (colon == std::string::npos) return {};
    std::string password = decoded->substr(colon + 1);
    return password.empty() ? decoded->substr(0, colon) : password;
  }
  return {};
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

bool IsLoopbackHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  const std::string text(host);
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::optional<TokenScope> RequiredScope(const net::HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/api/v1/write" || path == "/api/v1/releases" ||
      path.starts_with("/api/v1/flagger/")) {
    // GET /api/v1/releases lists them: a read.
    if (path == "/api/v1/releases" && (request.method == "GET" || request.method == "HEAD")) {
      return TokenScope::kRead;
    }
    return TokenScope::kWrite;
  }
  const bool read_method = request.method == "GET" || request.method == "HEAD";
  if (path.starts_with("/api/v1/")) {
    if (read_method || IsQueryPath(path)) return TokenScope::kRead;
    return TokenScope::kAdmin;
  }
  if (path == "/metrics") return TokenScope::kRead;
  return std::nullopt;  // /-/ready, /-/healthy, the dashboard's files
}

std::optional<TokenScope> BearerAuth::Needs(const net::HttpRequest& request) const {
  if (!config_.enabled()) return std::nullopt;
  return RequiredScope(request);
}

const TokenConfig* BearerAuth::Presented(const net::HttpRequest& request) const {
  const std::string credential = Credential(request.Header("authorization"));
  if (credential.empty()) return nullptr;
  // Every configured token is compared, whichever matches, so the time does
  // not tell which one (or whether one) did.
  const TokenConfig* found = nullptr;
  for (const TokenConfig& t : config_.tokens) {
    if (ConstantTimeEquals(t.token, credential)) found = &t;
  }
  return found;
}

bool BearerAuth::Allow(const net::HttpRequest& request, net::HttpResponse& response) const {
  const std::optional<TokenScope> needs = Needs(request);
  if (!needs) return true;
  const TokenConfig* token = Presented(request);
  if (token != nullptr && token->scope >= *needs) return true;
  const bool sent = !request.Header("authorization").empty();
  response.content_type = "application/json";
  if (token != nullptr) {
    response.status = 403;
    response.headers.emplace_back(
        "WWW-Authenticate", R"(Bearer realm="gpucanary", error="insufficient_scope", scope=")" +
                                std::string(ScopeName(*needs)) + "\"");
    response.body = nlohmann::json{{"status", "error"},
                                   {"errorType", "forbidden"},
                                   {"error", "token '" + token->name + "' has scope " +
                                                 std::string(ScopeName(token->scope)) + "; " +
                                                 request.method + " " + request.path + " needs " +
                                                 std::string(ScopeName(*needs))}}
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return false;
  }
  response.status = 401;
  response.headers.emplace_back(
      "WWW-Authenticate",
      sent ? R"(Bearer realm="gpucanary", error="invalid_token")" : R"(Bearer realm="gpucanary")");
  response.body =
      sent
          ? R"({"status":"error","errorType":"unauthorized","error":"invalid bearer token"})"
          : R"({"status":"error","errorType":"unauthorized","error":"this endpoint needs Authorization: Bearer <token>"})";
  return false;
}

}  // namespace gpucanary::daemon
