#pragma once
// A client of the Prometheus HTTP query API, for reading baselines from
// Prometheus, Thanos, Mimir or VictoriaMetrics (docs/contracts.md §9).
// docs/promql-client.md has the behaviour and the reasons.
//
//   QueryRaw      the samples as stored: GET /api/v1/query with
//                 `<selector>[<window>]` at time=<end>, a matrix of the actual
//                 scrape timestamps, no lookback fill; long windows are split
//                 into several requests and the pieces joined.
//   QueryRange    GET /api/v1/query_range: the expression evaluated at
//                 start, start+step, ... <= end, each point the newest sample
//                 within the server's lookback (5 m by default); split so that
//                 no request asks for more than max_points points (Prometheus
//                 refuses over 11,000 per series).
//   QueryInstant  GET /api/v1/query at one time.
//
// Requests are GET, or POST form-encoded when the URL would be long; gzip
// answers are accepted; optional bearer token, basic auth and extra headers
// (X-Scope-OrgID for Mimir). http:// only (net::HttpConnection); one
// connection per call, kept alive across its requests.
//
// Errors (Result): the codes of ParseQueryResponse for an answer that is an
// error (kInvalidArgument for a bad query, kUnavailable when a retry may
// help, ...), those of net::Fetch when no answer came (kUnavailable
// "connect: Connection refused", timeouts), kInvalidArgument for bad
// arguments. Each message names the method, the URL and the query.
//
// Every function is thread-safe (no shared state) and blocks the caller.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "net/tls_options.h"
#include "net/url.h"
#include "promql/response.h"

namespace gpucanary::promql {

struct ClientOptions {
  // "Authorization: Bearer <token>" when not empty.
  std::string bearer_token;
  // "Authorization: Basic ..." when basic_auth_user is not empty (not with a
  // bearer token).
  std::string basic_auth_user;
  std::string basic_auth_password;
  // Extra request headers, e.g. {"X-Scope-OrgID", "tenant-1"}.
  std::vector<std::pair<std::string, std::string>> headers;
  // For an https:// base URL: the server's CA, a client certificate, ...
  net::TlsClientOptions tls{};
  // Each HTTP exchange (connect, send, receive) must finish within this.
  int timeout_ms = 60000;
  // Sent as the API's `timeout` parameter (capped by the server's
  // --query.timeout) when above 0.
  double query_timeout_s = 0;
  // Larger answers (after gzip) are an error (kOutOfRange).
  std::size_t max_body_bytes = std::size_t{512} << 20;
  // A request whose target (path and query string) would be longer is sent
  // as a form-encoded POST instead (proxies cap URLs at 4-8 KiB).
  std::size_t max_get_bytes = 4096;
  // QueryRaw asks for at most this much time per request.
  std::int64_t max_raw_window_ms = std::int64_t{3600} * 1000;
  // QueryRange asks for at most this many points per series per request.
  std::int64_t max_points = 11000;
};

// The samples of `selector` with start_ms <= t <= end_ms, as stored, in time
// order, one Series per label set (sorted by labels); a series' samples from
// the requests of a split window are joined. Samples Prometheus marks stale
// are not returned (the API drops them).
// REQUIRES: `selector` is an instant vector selector (`name{a="b"}`), so that
// `selector[<window>]` is valid PromQL. Errors: kInvalidArgument when
// end_ms < start_ms; the server's answer to a bad selector (kInvalidArgument);
// kParseError when the answer is not a matrix.
Result<QueryResult> QueryRaw(std::string_view base_url, std::string_view selector,
                             std::int64_t start_ms, std::int64_t end_ms,
                             const ClientOptions& options = {});

// `query` evaluated at start_ms + k * step_ms for every k with the time <=
// end_ms, the grid kept exact across the requests it is split into.
// Errors: kInvalidArgument when step_ms <= 0 or end_ms < start_ms.
Result<QueryResult> QueryRange(std::string_view base_url, std::string_view query,
                               std::int64_t start_ms, std::int64_t end_ms, std::int64_t step_ms,
                               const ClientOptions& options = {});

// `query` evaluated at time_ms: a vector, scalar, string or (for a range
// selector) matrix.
Result<QueryResult> QueryInstant(std::string_view base_url, std::string_view query,
                                 std::int64_t time_ms, const ClientOptions& options = {});

// Building blocks, public for tests.

// Percent-encodes everything but RFC 3986 unreserved characters
// (A-Z a-z 0-9 - . _ ~), for query strings and form bodies.
using net::UrlEncode;  // net/url.h

// Unix milliseconds as the API's seconds: 1796214071445 -> "1796214071.445",
// -1500 -> "-1.500".
std::string FormatApiTime(std::int64_t t_ms);

}  // namespace gpucanary::promql
