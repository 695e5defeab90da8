#pragma once
// One arm of a live canary read from a Prometheus-compatible engine
// (Prometheus, Mimir, Thanos, VictoriaMetrics) instead of the store, second
// by second: the baseline hosts another instance scrapes when a fleet is
// sharded (docs/scale-out.md §2). The samples reach the engine through that
// instance's remote_write out, `batch_send_deadline` plus the engine's
// ingestion after their scrape, so the arm is read with a lag: the owner
// marks seconds ready through now − `remote_lag` and this source asks for
// them then, once, with promql::QueryRaw (raw samples as stored: no step,
// no lookback fill). A sample that reaches the engine later than that is
// missing data, as a late local scrape is: never zero, never filled in.
//
// The series go through the same series table and rules as the store's
// (LabelledTickSource: type inference, NaN and DCGM blanks as no data), so
// an arm read here gives the ticks the same samples give from a store.
//
// A query that fails (the engine unreachable, an error answer) leaves its
// seconds without data and is counted and kept in last_error() for the
// canary's notes; the replay goes on.
//
// Thread-compatible: the replay's thread calls everything.

#include <cstdint>
#include <string>

#include "analysis/live/prometheus_history.h"
#include "analysis/live/store_source.h"

namespace gpucanary::analysis {

class PrometheusTickSource final : public LiveTickSource {
 public:
  // The series `selector` matches (HistorySelector's form), from second
  // `from_s` on, as input `index` of the replay whose series table is `sink`.
  PrometheusTickSource(PrometheusHistory::Server server, std::string selector, std::string name,
                       int index, int reorder_window_s, std::int64_t from_s, SeriesSink& sink);

  // Asks the engine for up to kSliceSeconds ready seconds and files their
  // samples; stalled() when none is ready. Never fails: a failed query is
  // counted (failed_queries, last_error) and its seconds have no data.
  Status ReadChunk() override;

  const std::string& selector() const { return selector_; }
  const Status& last_error() const { return last_error_; }
  std::uint64_t queries() const { return queries_; }
  std::uint64_t failed_queries() const { return failed_queries_; }
  std::uint64_t fetched_samples() const { return fetched_samples_; }

 private:
  const PrometheusHistory::Server server_;
  const std::string selector_;
  int window_;
  std::int64_t next_;  // first second not asked for yet
  Status last_error_;
  std::uint64_t queries_ = 0;
  std::uint64_t failed_queries_ = 0;
  std::uint64_t fetched_samples_ = 0;
};

}  // namespace gpucanary::analysis
