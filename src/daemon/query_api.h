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
// max_concurrency queries run at once (--query.max-concurrency). As in
// Prometheus, a query over that limit waits for a slot: up to max_queued
// queries wait, each at most queue_wait_ms (a waiting query holds one of the
// daemon's handler threads, so the daemon sizes max_queued to leave one free
// for writes); a query beyond those, or one whose wait ran out, gets 503
// unavailable with "Retry-After: 1". A page drawing ten charts at once is
// served, more slowly, rather than shown ten errors.
//
// Thread-safe.

#include <cstdint>
#include <functional>

#include "core/clock.h"
#include "core/mutex.h"
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
  // Queries (every endpoint above) running at once; more wait (below).
  int max_concurrency = 2;
  // Queries waiting for a slot at once; more get 503 at once.
  int max_queued = 0;
  // How long a query waits for a slot before it gets 503.
  int queue_wait_ms = 10'000;
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

  // Queries waiting for a slot now.
  int waiting_for_a_slot() const;

 private:
  // The query slots: max_concurrency running, max_queued waiting.
  struct Gate {
    Mutex mu;
    CondVar freed;
    int running GUARDED_BY(mu) = 0;
    int waiting GUARDED_BY(mu) = 0;
  };

  class Slot {
   public:
    Slot(const QueryApiOptions& options, Gate& gate);
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool held() const { return held_; }

   private:
    Gate& gate_;
    bool held_ = false;
  };

  const QueryApiOptions options_;
  mutable Gate gate_;
  Router router_;
};

}  // namespace gpucanary::daemon
