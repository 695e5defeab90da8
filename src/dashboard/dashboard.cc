#include "dashboard/dashboard.h"

#include <string>

namespace gpucanary::dashboard {
namespace {

// The asset names are not content-addressed, so a cached copy may be stale
// after an upgrade: browsers revalidate every use (RFC 9111 §5.2.2.4), which
// the ETag turns into a body-less 304.
constexpr std::string_view kCacheControl = "no-cache";

// Everything the page loads comes from the daemon itself (the empty data:
// icon spares browsers a /favicon.ico request).
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'";

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

const Asset* FindAsset(std::string_view path) {
  for (const Asset& asset : Assets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, and
// §13.1.2: If-None-Match = "*" / #entity-tag, evaluated with the weak
// comparison (the opaque tags are equal, W/ or not).
bool IfNoneMatchMatches(std::string_view header, std::string_view etag) {
  std::size_t i = 0;
  while (i < header.size()) {
    if (IsOws(header[i]) || header[i] == ',') {
      ++i;
      continue;
    }
    if (header[i] == '*') return true;
    if (header.substr(i, 2) == "W/") i += 2;
    if (i >= header.size() || header[i] != '"') return false;  // malformed: no match
    const std::size_t close = header.find('"', i + 1);
    if (close == std::string_view::npos) return false;
    if (header.substr(i, close - i + 1) == etag) return true;
    i = close + 1;
  }
  return false;
}

bool Handle(const net::HttpRequest& request, net::HttpResponse& response) {
  const Asset* asset = FindAsset(request.path);
  if (asset == nullptr) return false;
  response = net::HttpResponse{};
  if (request.method != "GET" && request.method != "HEAD") {
    response.status = 405;
    response.headers.emplace_back("Allow", "GET, HEAD");
    response.content_type = "text/plain; charset=utf-8";
    response.body = "method not allowed\n";
    return true;
  }
  response.headers.emplace_back("ETag", std::string(asset->etag));
  response.headers.emplace_back("Cache-Control", std::string(kCacheControl));
  if (IfNoneMatchMatches(request.Header("if-none-match"), asset->etag)) {
    response.status = 304;  // RFC 9110 §15.4.5: the validators and no body
    return true;
  }
  response.content_type = std::string(asset->content_type);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (asset->path == "/") {
    response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  }
  response.body = std::string(asset->body);
  return true;
}

}  // namespace gpucanary::dashboard
