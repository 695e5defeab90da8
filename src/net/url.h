#pragma once
// http:// and https:// URLs, URL query strings and form bodies (application/x-www-form-urlencoded,
// the WHATWG URL standard's rules): encoding one value, decoding a whole query.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gpucanary::net {

// The parts of an http:// or https:// URL a request needs.
struct HttpUrl {
  bool https = false;
  std::string host;          // "127.0.0.1", "localhost", "::1" (brackets removed)
  std::uint16_t port = 80;   // 443 for https unless given
  std::string target = "/";  // path and query, never empty; the fragment dropped
};

// Parses "http[s]://host[:port][/path][?query][#fragment]" (the scheme in
// any case). Errors: kInvalidArgument "bad URL 'ftp://x': only http:// and
// https:// are supported" style (another scheme, no host, bad port, user
// info, spaces or control characters).
Result<HttpUrl> ParseHttpUrl(std::string_view url);

// "host:port" as a URL's authority and the Host header write it (RFC 3986
// §3.2.2, RFC 9110 §7.2): an IPv6 address in brackets, "[::1]:80".
std::string HostPort(std::string_view host, std::uint16_t port);

// Percent-encodes everything but the unreserved characters A-Z a-z 0-9 - . _ ~
// (RFC 3986 §2.3), so the result is safe in a query value.
std::string UrlEncode(std::string_view text);

// Decodes %XX escapes in one URL path segment ("gpu%5Fid" -> "gpu_id"); '+'
// stays '+' (RFC 3986: only query strings read it as a space). Errors as
// ParseForm's.
Result<std::string> PathDecode(std::string_view segment);

// Splits "a=1&b=x%20y&b=z" into (name, value) pairs in order, '+' read as a
// space and %XX decoded; a pair without '=' has an empty value. Errors:
// kInvalidArgument for a '%' not followed by two hex digits ("bad percent
// escape at offset 4").
Result<std::vector<std::pair<std::string, std::string>>> ParseForm(std::string_view query);

}  // namespace gpucanary::net
