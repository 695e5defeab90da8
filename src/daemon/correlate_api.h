#pragma once
// The correlation endpoint of `gpucanary serve` (docs/http-api.md,
// "Correlation"): docs/contracts.md §7 over the daemon's own store and the releases
// it was told about.
//
//   GET /api/v1/correlate?from=T&to=T[&resolution=S][&min_score=X][&source=store|prometheus]
//       from, to: Unix seconds or RFC 3339 (default: the last hour);
//       at most kMaxRangeS apart (kMaxPrometheusRangeS from a Prometheus).
//       source: the daemon's store (default), or the Prometheus of
//       `canary.history_prometheus` (its raw samples).
//   200 {"status":"success","data":{"regressions":[...], ...}} (correlate.h's JSON)
//   400 {"status":"error","errorType":"bad_data","error":"..."} for a bad parameter
//   502 {"status":"error","errorType":"unavailable",...} when the Prometheus fails
//
// The releases are the stored annotations that started from kRolloutLookbackS
// before `from` up to `to` (a release started just before the range may
// still be reaching nodes in it). The store is read through the same replay
// as a live canary's (analysis/live/store_source.h).
//
// Thread-safe: each request reads the store on its own.

#include <cstdint>

#include "canary/history.h"
#include "core/clock.h"
#include "daemon/router.h"
#include "net/http_message.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary::daemon {

class CorrelateApi {
 public:
  static constexpr std::int64_t kMaxRangeS = std::int64_t{7} * 86400;
  static constexpr std::int64_t kDefaultRangeS = 3600;
  static constexpr std::int64_t kMaxPrometheusRangeS = 86400;
  static constexpr std::int64_t kRolloutLookbackS = 1800;

  // `store`, `meta` and `clock` must outlive this; `prometheus.url` empty:
  // source=prometheus is refused.
  CorrelateApi(const store::Store& store, store::MetaDb& meta, const Clock& clock,
               canary::HistoryPrometheusOptions prometheus = {});
  CorrelateApi(const CorrelateApi&) = delete;
  CorrelateApi& operator=(const CorrelateApi&) = delete;

  // Answers GET /api/v1/correlate (405 with "Allow: GET, HEAD" for another
  // method); false (response untouched) for other paths.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response) const;

 private:
  void Correlate(const net::HttpRequest& request, net::HttpResponse& response) const;

  const store::Store& store_;
  store::MetaDb& meta_;
  const Clock& clock_;
  canary::HistoryPrometheusOptions prometheus_;
  Router router_;  // its route calls Correlate
};

}  // namespace gpucanary::daemon
