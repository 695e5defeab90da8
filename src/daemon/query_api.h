#pragma once
// Reading the store over HTTP with Prometheus's query API (docs/http-api.md),
// so the tools that read Prometheus (Grafana, promtool, gpucanary's own
// PromQL client) read gpucanary's 1 s data unchanged. The query language is
// PromQL's vector selector, optionally with a range: `metric{a="b"}` (the
// latest sample within 5 minutes) or `metric{a="b"}[10m]` (raw samples);
// functions and operators are refused with bad_data.
//
//   GET|POST /api/v1/query        query, time
//   GET|POST /api/v1/query_range  query, start, end, step (at most 11,000 points)
//   GET|POST /api/v1/series       match[] (repeated), start, end
//   GET      /api/v1/labels       start, end
//   GET      /api/v1/label/<name>/values
//
// Answers follow Prometheus 2.42 byte for byte where it matters to clients:
// the status envelope, errorType (bad_data 400, execution 422, internal 500),
// times as JSON numbers in seconds with milliseconds, values as strings
// ("NaN", "+Inf", never an exponent), series sorted by labels, staleness
// markers never returned.
//
// Each endpoint is one function in query_api.cc, found through a route
// table (daemon/router.h); the JSON pieces it writes are daemon/api_format.h.
//
// Thread-safe.

#include <cstdint>

#include "core/clock.h"
#include "daemon/router.h"
#include "net/http_message.h"
#include "store/store.h"

namespace gpucanary::daemon {

struct QueryApiOptions {
  std::int64_t lookback_ms = 5LL * 60 * 1000;  // Prometheus's --query.lookback-delta
  std::int64_t max_points = 11000;             // per series, query_range
  std::uint64_t max_samples = 50'000'000;      // per query (--query.max-samples)
};

class QueryApi {
 public:
  // `store` and `clock` must outlive this.
  QueryApi(const store::Store& store, const Clock& clock, QueryApiOptions options = {});

  // Answers one of the endpoints above (405 with "Allow: GET, POST" for
  // another method); false (response untouched) when the path is not one of
  // them.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  Router router_;
};

}  // namespace gpucanary::daemon
