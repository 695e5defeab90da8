#pragma once
// Where `gpucanary correlate` reads a time range of fleet telemetry besides
// recordings: a Prometheus (the series the correlation needs) or the
// daemon's embedded store. Both give a Replay for Correlate.
//
// From a Prometheus, a range up to kRawMaxS is read raw (every stored
// sample). A longer one is folded on the server, one point per series per
// bucket of the width returned (at most kMaxFoldedBuckets buckets): a day of
// 1,000 GPUs at 15 s is 115 M raw samples, more than the HTTP API can hand
// over in a minute (Prometheus's own limit is 50 M per query). Each series is
// folded the way the correlation reduces it (docs/analysis-method.md,
// "Reading a day"): gauges to their mean over the bucket (avg_over_time),
// counters, histogram buckets and the throttle bitmask to their last value
// (last_over_time: increases between buckets stay exact; the bitmask is a
// sample of the bucket), the last XID to its largest (max_over_time: an XID
// in the bucket is not lost).
//
// Thread-safe (no shared state); each call blocks while it fetches.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/replay/replay.h"
#include "core/status.h"
#include "promql/client.h"
#include "store/store.h"

namespace gpucanary::analysis::correlate {

inline constexpr std::int64_t kRawMaxS = std::int64_t{3} * 3600;
inline constexpr std::int64_t kMaxFoldedBuckets = 360;

struct PrometheusRead {
  std::unique_ptr<Replay> replay;
  // 0: raw samples. Else the bucket width (seconds) the series were folded
  // to; Correlate must use it as its resolution.
  std::int64_t resolution_s = 0;
  int queries = 0;  // HTTP queries made (split windows not counted)
};

// How a series of `name` is folded into one point per bucket: "avg", "last"
// or "max" (the PromQL *_over_time function's prefix).
std::string_view FoldOf(std::string_view name);

// The bucket width a folded read of [from_s, to_s) uses: the smallest of
// 60, 120, 300, 600, 900, 1800, 3600 s giving at most kMaxFoldedBuckets
// buckets, and never below `resolution_s` (rounded up to that list).
std::int64_t FoldedResolution(std::int64_t from_s, std::int64_t to_s, std::int64_t resolution_s);

// The series of CorrelateInputNames() over [from_s, to_s) from the
// Prometheus HTTP API at `url`, raw or folded (above), replayed. A folded
// point stands at its bucket's last second. Errors: the client's
// (kUnavailable when it cannot be reached, the server's answer to a query).
Result<PrometheusRead> FetchPrometheusReplay(const std::string& url,
                                             const promql::ClientOptions& client,
                                             std::int64_t from_s, std::int64_t to_s,
                                             std::int64_t resolution_s = 0);

// The store's series of CorrelateInputNames() over [from_s, to_s), replayed
// as a live canary's are (analysis/live/store_source.h).
Result<std::unique_ptr<Replay>> OpenStoreCorrelationReplay(const store::Store& store,
                                                           std::int64_t from_s, std::int64_t to_s);

}  // namespace gpucanary::analysis::correlate
