#pragma once
// The HTTP messages the server hands to handlers and the client returns:
// plain values, no Boost types, so users of src/net compile without Beast.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpucanary::net {

// One request as the server received it. Thread-compatible.
struct HttpRequest {
  std::string method;  // "GET", as sent (methods are case-sensitive, RFC 9110 §9.1)
  std::string target;  // the raw request-target: "/api/state?x=1"
  // `target` up to the first '?', and what follows it. Neither is
  // percent-decoded: "/a%20b" stays "/a%20b"; handlers that need decoding do it.
  std::string path;                                          // "/api/state"
  std::string query;                                         // "x=1"; "" when there is no '?'
  int version = 11;                                          // 10 for HTTP/1.0, 11 for HTTP/1.1
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in wire order
  std::string body;

  // The value of the first header named `lower_name` (compared ASCII
  // case-insensitively); "" when absent. The view points into `headers`.
  std::string_view Header(std::string_view lower_name) const;
};

// A response. For the server, the handler fills it in: `headers` are extra
// headers; Content-Length, Transfer-Encoding and Connection are the server's
// and are ignored here. For the client, Fetch fills it in: `headers` holds
// every header received, names lower-cased, and `body` is decoded (gzip
// undone) while the headers stay as received (Content-Encoding included).
struct HttpResponse {
  int status = 200;
  std::string content_type;  // empty: no Content-Type header (the caller decides)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Same lookup as HttpRequest::Header.
  std::string_view Header(std::string_view lower_name) const;
};

// ASCII case-insensitive equality, for header names and tokens.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// RFC 9110 §5.6.2: a field name is a token, 1*tchar.
bool IsHeaderName(std::string_view name);

// `s` with ASCII letters lower-cased (header names as HttpRequest and
// HttpResponse keep them).
std::string AsciiLower(std::string_view s);

}  // namespace gpucanary::net
