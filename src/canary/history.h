#pragma once
// A canary's history window read from a remote Prometheus when the store
// lacks it (`canary.history_prometheus`, docs/canaries.md "History from
// Prometheus"). The judge starts `canary.history` before the release; a
// daemon that has only just started scraping (or scraped the hosts slowly)
// has little of that window, while the site's Prometheus usually has it.
//
//   auto history = CanaryHistory::Attach(store, options, policy, canary_hosts, baseline_hosts,
//                                        from_s, until_s, now_ms, inputs, log);
//   auto replay = analysis::OpenStoreReplay(store, std::move(inputs), from_s, &sources);
//   ...
//   if (history) history->Annotate(report);   // after every Snapshot / Finish
//
// Attach gives each store input whose hosts the store lacks at the start of
// the window an analysis::PrometheusHistory (fetched on its own thread); the
// input's source files each host's Prometheus samples before the host's first
// second in the store, and the store's after. Prometheus being unreachable or
// answering an error never stops the canary: it runs on the store's own
// history, and the report's notes and the log say so.
//
// Thread-compatible: Annotate is called by the canary's loop.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/live/prometheus_history.h"
#include "analysis/live/store_source.h"
#include "analysis/policy/policy.h"
#include "promql/client.h"
#include "store/store.h"

namespace gpucanary::canary {

// `canary.history_prometheus:` (docs/configuration.md).
struct HistoryPrometheusOptions {
  std::string url;  // base URL of the Prometheus HTTP API; "" turns the feature off
  promql::ClientOptions client = DefaultClient();

  static promql::ClientOptions DefaultClient() {
    promql::ClientOptions o;
    o.timeout_ms = 10000;  // a canary's judging waits at most this for its history
    return o;
  }
};

class CanaryHistory {
 public:
  // A host counts as covered by the store (and Prometheus is not asked for
  // it) when the store has a sample of it, under either host label, in the
  // window's first min(kCoveredWithinS, a tenth of the window) seconds: a
  // host scraped every 15-30 s before the canary has one there.
  static constexpr std::int64_t kCoveredWithinS = 30;

  // Starts fetching [from_s, min(until_s, now + 1 s)) from Prometheus for
  // the hosts of each input (`canary_hosts` for canary inputs,
  // `baseline_hosts` for baseline ones; the input's first matcher names the
  // host label) that the store does not cover, and attaches the fetches to
  // `inputs`. Returns null
  // when the feature is off or nothing needs fetching. `log` (may be null)
  // gets one line when fetching starts and one when it is over.
  static std::unique_ptr<CanaryHistory> Attach(
      const store::Store& store, const HistoryPrometheusOptions& options,
      const analysis::Policy& policy, const std::vector<std::string>& canary_hosts,
      const std::vector<std::string>& baseline_hosts, std::int64_t from_s, std::int64_t until_s,
      std::int64_t now_ms, std::vector<analysis::StoreInput>& inputs,
      std::function<void(std::string_view)> log);

  // Adds Note() to `report.notes`. Logs it once, when every fetch has
  // failed or been read through (its counts are final).
  void Annotate(analysis::Report& report);

  // Where the history came from: still being read; how many samples of
  // which hosts came from Prometheus (so far); or why none did.
  std::string Note() const;

 private:
  CanaryHistory() = default;

  std::string url_;
  std::int64_t from_s_ = 0;
  std::int64_t until_s_ = 0;
  std::vector<std::shared_ptr<analysis::PrometheusHistory>> fetches_;
  std::function<void(std::string_view)> log_;
  bool logged_ = false;
};

}  // namespace gpucanary::canary
