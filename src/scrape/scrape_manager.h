#pragma once
// The scraper: every target of the configured jobs fetched on its schedule
// and written to the store (docs/scraping.md).
//
// - Schedule. Each target scrapes at phase + k·interval of the Unix epoch,
//   phase = FNV-1a(URL) mod interval (as Prometheus spreads targets), and
//   every sample of a scrape gets that scheduled time in ms, not the arrival
//   time: timestamps of one series are exactly `interval` apart, which the
//   store's delta encoding turns into almost nothing.
// - Intervals. A target runs at its job's scrape_interval, or at
//   global.fast_interval while a SetFast matcher selects it (a running
//   canary); switching takes effect at the next slot of the new schedule,
//   on the same kept-alive connection.
// - I/O. One io thread drives every target's connection asynchronously
//   (keep-alive, gzip, Prometheus's Accept header, a deadline per scrape of
//   min(scrape_timeout, interval)); a slow, hanging or dead target holds
//   only its own connection. A slot that comes while the target's previous
//   scrape is still running is skipped and counted.
// - Ingest. Decompression, parsing and appending (the scrape cache, staleness
//   markers, the synthetic up / scrape_* series: scrape/ingester.h) run on
//   `ingest_threads` workers (0: on the io thread), one Commit per scrape.
// - Limits. Each job's sample_limit, label limits and body_size_limit
//   (Prometheus's, scrape/config.h ScrapeLimits): a scrape over one fails,
//   its target is down with the reason, and it is counted in Stats.
// - Discovery. static_configs, file_sd_configs and prometheus_sd_configs
//   (scrape/discovery.h). A target that leaves gets stale markers for all
//   its series; a target that stays keeps its connection and cache.
//
// Time: wall-clock times (the schedule, the timestamps) come from the
// injected Clock; waits are real-time steady timers of at most clock_poll_ms,
// so a ManualClock that a test moves is noticed within that time. Scrape
// durations and timeouts are real time.
//
// Thread-safe: every public member may be called from any thread except the
// scraper's own (a TargetMatcher must not call back into the manager).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "scrape/config.h"
#include "scrape/discovery.h"
#include "scrape/ingester.h"
#include "scrape/target.h"
#include "store/appender.h"

namespace gpucanary::scrape {

enum class TargetHealth : std::uint8_t { kUnknown, kUp, kDown };

// Prometheus's words in /api/v1/targets: "unknown", "up", "down".
std::string_view TargetHealthName(TargetHealth health);

// One target as an API shows it (like an entry of Prometheus's
// /api/v1/targets activeTargets). A snapshot: plain values.
struct TargetStatus {
  std::string job;
  std::string url;
  model::Labels labels;  // job, instance and the discovered labels
  TargetHealth health = TargetHealth::kUnknown;
  std::int64_t last_scrape_ms = 0;  // the scheduled time of the last finished scrape; 0: none
  double last_duration_s = 0;
  std::string last_error;        // why the last scrape failed; "" when it succeeded
  std::int64_t interval_ms = 0;  // the current one (fast or the job's)
  std::int64_t timeout_ms = 0;
  bool fast = false;
  std::int64_t next_scrape_ms = 0;
  std::uint64_t scrapes = 0;            // finished, successful or not
  std::uint64_t failures = 0;           // of those, up=0
  std::uint64_t exposition_errors = 0;  // of the failures, malformed bodies
  std::uint64_t skipped_slots = 0;      // slots missed (previous scrape still running, late)
  std::size_t last_samples = 0;
  std::uint64_t store_rejected = 0;     // samples the store refused, all scrapes
  std::uint64_t duplicate_samples = 0;  // a series again in the same scrape, all scrapes
  std::string last_store_error;
};

class ScrapeManager {
 public:
  struct Options {
    // Workers that decompress, parse and append; 0 does it on the io thread.
    int ingest_threads = 1;
    // Longest real-time wait before the Clock is read again (1..1000).
    int clock_poll_ms = 100;
    // Per response, decoded, whatever a job's body_size_limit (0 included) says.
    std::size_t body_limit_bytes = std::size_t{64} << 20;
    std::string user_agent = "gpucanary/0.1";
    Discovery::Options discovery;
  };

  struct Stats {
    std::uint64_t scrapes = 0;
    std::uint64_t failures = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t exposition_errors = 0;
    std::uint64_t skipped_slots = 0;
    std::uint64_t samples = 0;
    std::uint64_t stale_markers = 0;
    // Scrapes failed by a limit (Prometheus's
    // prometheus_target_scrapes_exceeded_sample_limit_total, ...).
    std::uint64_t exceeded_sample_limit = 0;
    std::uint64_t exceeded_label_limits = 0;
    std::uint64_t exceeded_body_size_limit = 0;
    // Samples not stored: a series again in the same scrape (the first kept;
    // prometheus_target_scrapes_sample_duplicate_timestamp_total), an
    // honoured timestamp over 10 minutes ahead
    // (prometheus_target_scrapes_sample_out_of_bounds_total), and those the
    // store refused (out of order, duplicate, new series over its limit).
    std::uint64_t duplicate_samples = 0;
    std::uint64_t out_of_bounds_samples = 0;
    std::uint64_t store_rejected = 0;
    std::uint64_t in_flight = 0;      // fetches and ingests now
    std::uint64_t max_in_flight = 0;  // the most at once so far
    std::size_t targets = 0;
    double io_cpu_seconds = 0;      // CPU time of the io thread so far
    double ingest_cpu_seconds = 0;  // CPU time of ingests on the workers so far
  };

  // `store` and `clock` must outlive this object. Starts the io thread (idle
  // until Start). REQUIRES: valid options (checked: GC_CHECK).
  ScrapeManager(store::Appendable& store, Clock& clock, Options options);
  ~ScrapeManager();  // Stop()
  ScrapeManager(const ScrapeManager&) = delete;
  ScrapeManager& operator=(const ScrapeManager&) = delete;

  // Installs `config` (at any time, also before Start): discovery restarts
  // and runs once on this thread; targets that are still there keep their
  // connection, cache and schedule; targets gone end with stale markers; new
  // ones start at their next slot. Returns the first discovery's errors
  // (bad target files, an unreachable Prometheus): what could be read is in
  // place anyway, and failing sources keep being retried.
  Status ApplyConfig(const ScrapeConfig& config);

  // Starts scraping and background discovery. Errors: kUnavailable after Stop.
  Status Start();

  // Stops scraping (no stale markers: a restart continues the series) and
  // joins every thread. Idempotent; cannot be restarted.
  void Stop();

  // Re-reads every discovery source now. Errors as ApplyConfig's; a bad file
  // keeps its last good targets.
  Status ReloadDiscovery();

  // Targets selected by `matcher` scrape at fast_interval until
  // ClearFast(key), from their next fast slot on; several keys (canaries)
  // may select the same target. Targets discovered later are matched too.
  void SetFast(const std::string& key, TargetMatcher matcher);
  void ClearFast(const std::string& key);

  // Every target now, sorted by job and URL.
  std::vector<TargetStatus> Targets() const;
  // The `instance` label values of the targets now, sorted and unique. The
  // same snapshot is returned until the set of targets changes, so a caller
  // that asks per request (remote_write's guard) copies nothing.
  std::shared_ptr<const std::vector<std::string>> Instances() const;
  std::vector<Discovery::SourceStatus> DiscoverySources() const;
  // The TYPE, HELP and UNIT of every metric family the targets' last
  // successful scrapes described, one entry per distinct (family, type, help,
  // unit), sorted (remote_write out sends them).
  std::vector<MetricMetadata> Metadata() const;
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::scrape
