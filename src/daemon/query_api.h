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
// the status envelope, errorType (bad_data 400, execution 422, unavailable
// 503, internal 500),
// times as JSON numbers in seconds with milliseconds, values as strings
// ("NaN", "+Inf", never an exponent), series sorted by labels, staleness
// markers never returned.
//
// Each endpoint is one function in query_api.cc, found through a route
// table (daemon/router.h); the JSON pieces it writes are daemon/api_format.h.
//
// Expensive reads are bounded as in Prometheus: a query may hold at most
// max_samples points (--query.max-samples; 422 execution "query processing
// would load too many samples into memory in query execution"), and at most
// max_concurrency queries run at once (--query.max-concurrency; the others
// get 503 unavailable with "Retry-After: 1" at once rather than wait, since
// a waiting query would hold one of the daemon's few handler threads).
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>

#include "core/clock.h"
#include "daemon/router.h"
#include "net/http_message.h"
#include "store/store.h"

namespace gpucanary::daemon {

struct QueryApiOptions {
  std::int64_t lookback_ms = 5LL * 60 * 1000;  // Prometheus's --query.lookback-delta
  std::int64_t max_points = 11000;             // per series, query_range
  // The points one query may hold, as Prometheus counts them: a range
  // selector's samples, a range query's points at its steps, an instant
  // query's one per series. Prometheus's default is 50,000,000; a point costs
  // 16 bytes in memory and about 25 bytes of JSON, so 5,000,000 (an hour of 1 s
  // samples of about 1,400 series) keeps one answer near 200 MB on a node whose
  // memory belongs to its GPUs' jobs (docs/configuration.md).
  std::uint64_t max_samples = 5'000'000;
  // Queries (every endpoint above) running at once; more get 503.
  int max_concurrency = 2;
  // Tests: called by each query that got its slot, before it reads the store.
  std::function<void()> on_slot_taken;
};

class QueryApi {
 public:
  // `store` and `clock` must outlive this.
  QueryApi(const store::Store& store, const Clock& clock, QueryApiOptions options = {});
  QueryApi(const QueryApi&) = delete;
  QueryApi& operator=(const QueryApi&) = delete;

  // Answers one of the endpoints above (405 with "Allow: GET, POST" for
  // another method); false (response untouched) when the path is not one of
  // them.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  const QueryApiOptions options_;
  std::atomic<int> running_{0};  // queries holding a slot
  Router router_;
};

}  // namespace gpucanary::daemon
