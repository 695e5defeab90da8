#pragma once
// Where `gpucanary correlate` reads a time range of fleet telemetry besides
// recordings: a Prometheus (its raw samples of the series the correlation
// needs) or the daemon's embedded store. Both give a Replay for Correlate.
//
// Thread-safe (no shared state); each call blocks while it fetches.

#include <cstdint>
#include <memory>
#include <string>

#include "analysis/replay/replay.h"
#include "core/status.h"
#include "promql/client.h"
#include "store/store.h"

namespace gpucanary::analysis::correlate {

// The raw samples of CorrelateInputNames() over [from_s, to_s) from the
// Prometheus HTTP API at `url`, replayed. Errors: the client's (kUnavailable
// when it cannot be reached, the server's answer to the query).
Result<std::unique_ptr<Replay>> FetchPrometheusReplay(const std::string& url,
                                                      const promql::ClientOptions& client,
                                                      std::int64_t from_s, std::int64_t to_s);

// The store's series of CorrelateInputNames() over [from_s, to_s), replayed
// as a live canary's are (analysis/live/store_source.h).
Result<std::unique_ptr<Replay>> OpenStoreCorrelationReplay(const store::Store& store,
                                                           std::int64_t from_s, std::int64_t to_s);

}  // namespace gpucanary::analysis::correlate
