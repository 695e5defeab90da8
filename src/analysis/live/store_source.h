#pragma once
// A Replay source that reads the embedded store instead of a recording: how a
// live canary feeds the judge (docs/canaries.md, "One engine, two feeds").
// Everything after the source — series table, GPU and node mapping, counter
// increases, histogram buckets, missing data — is Replay's, so the same
// telemetry gives the same ticks from a file or from the store.
//
//   std::vector<LiveTickSource*> sources;
//   auto replay = OpenStoreReplay(store, {{"canary", Role::kCanary, canary_matchers},
//                                         {"baseline", Role::kBaseline, base_matchers}},
//                                 from_s, &sources);
//   for (auto* s : sources) s->SetReadyThrough(now_s - lag);
//   while (*(*replay)->Next(tick)) judge.Add(tick, Catalog::Of(**replay));
//
// The store keeps no metric types, so they are inferred: a `_bucket` series
// with an `le` label is a histogram bucket of the family without `_bucket`;
// `_count` and `_sum` series are histogram counters; DCGM counters and names
// ending in `_total` are counters (Replay's rule); everything else is a gauge.
// NaN samples (staleness markers included) and DCGM blank sentinels are no
// data, as in a recording.
//
// With a PrometheusHistory (prometheus_history.h), the window's seconds
// before the store has a host's data come from that Prometheus: the source
// stalls until the fetch is done, then, slice by slice, files each host's
// fetched samples of seconds before the first second the store has any
// sample of that host (over all its series), and every store sample, through
// the same series table and rules. A series with the same labels on both
// sides is one series (its counter increases run on across the switch).
//
// Thread-compatible: the Replay's thread calls SetReadyThrough and Close.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/live/prometheus_history.h"
#include "analysis/replay/replay.h"
#include "analysis/replay/replay_source.h"
#include "core/flat_hash_map.h"
#include "model/matcher.h"
#include "store/store.h"

namespace gpucanary::analysis {

// A source whose series arrive as label sets (the store's, a Prometheus's):
// interns each label set once in the replay's series table (metric types
// inferred as the comment above says) and files samples under their ticks,
// NaN and DCGM blanks as no data.
class LabelledTickSource : public TickSource {
 protected:
  // Input `index` of the replay whose series table is `sink`; `name` names
  // it in messages.
  LabelledTickSource(std::string name, int index, SeriesSink& sink)
      : name_(std::move(name)), index_(index), sink_(sink) {}

  // The replay series of `labels` (with __name__), interned on first sight.
  Result<std::uint32_t> SeriesOf(const model::Labels& labels);
  void FileSample(std::uint32_t index, std::int64_t t_ms, double value);

  std::string name_;
  int index_;
  SeriesSink& sink_;

 private:
  FlatHashMap<std::uint32_t> series_ids_;  // LabelsHash -> replay series
};

// A live source: seconds become readable as time passes.
class LiveTickSource : public LabelledTickSource {
 public:
  // Seconds up to and including `tick` may be read (the store: every scrape
  // that can carry them has landed; an engine: its remote lag has passed).
  void SetReadyThrough(std::int64_t tick) { ready_ = std::max(ready_, tick); }
  // No more seconds will become ready: once what is ready is read, eof().
  void Close() { closed_ = true; }

 protected:
  using LabelledTickSource::LabelledTickSource;
  // Begins a ReadChunk that reads from second `next`: true when a second
  // is ready; else the source is stalled, or at its end once closed.
  bool BeginRead(std::int64_t next);
  std::int64_t ready() const { return ready_; }

 private:
  std::int64_t ready_ = kNoTick;  // last second that may be read
  bool closed_ = false;
};

class StoreTickSource final : public LiveTickSource {
 public:
  // Reads the series matching `matchers` from second `from_s` on, as input
  // `index` of the replay whose series table is `sink`.
  // `history` (may be null) serves the seconds before the store has a host's data.
  StoreTickSource(const store::Store& store, std::vector<model::Matcher> matchers, std::string name,
                  int index, int reorder_window_s, std::int64_t from_s, SeriesSink& sink,
                  std::shared_ptr<PrometheusHistory> history = nullptr);

  // Reads up to kSliceSeconds ready seconds from the store (and the
  // history); stalled() when none is ready or the history is still being
  // fetched. Errors: the store's (a chunk that does not decode).
  Status ReadChunk() override;

  // At most this many seconds per ReadChunk by default: a live canary's
  // ticks come out as soon as they are ready.
  static constexpr std::int64_t kSliceSeconds = 16;

  // Seconds per ReadChunk from now on (>= 1). A long read (a day for the
  // correlation) takes long slices: each store query matches every series
  // and decodes every chunk it touches whole, so 16 s slices of 15 s
  // scrapes decode each one-hour chunk 225 times. Memory grows with it:
  // the slice's samples are held until their ticks are emitted.
  void SetSliceSeconds(std::int64_t seconds) { slice_s_ = std::max<std::int64_t>(1, seconds); }

 private:
  // Files the history's samples of seconds up to `last` that come before
  // their host's first second in the store (`result` is this slice's).
  Status FileHistory(const store::QueryResult& result, std::int64_t last);

  const store::Store& store_;
  std::vector<model::Matcher> matchers_;
  int window_;
  std::int64_t slice_s_ = kSliceSeconds;
  std::int64_t next_;  // first second not read yet

  std::shared_ptr<PrometheusHistory> history_;  // null once past its window
  struct HistoryCursor {
    std::size_t series = 0;  // index into history_->series()
    std::size_t next = 0;    // its first sample not filed or skipped yet
    std::uint32_t index = kIgnoredSeries;
    bool interned = false;
    std::string host;
  };
  std::vector<HistoryCursor> cursors_;
  // Host -> the first second the store has a sample of it (from next_ on).
  std::map<std::string, std::int64_t, std::less<>> store_since_;
};

struct StoreInput {
  std::string name;  // names the input in messages ("canary {Hostname=~\"node-4\"}")
  Role role = Role::kBaseline;
  std::vector<model::Matcher> matchers;
  std::shared_ptr<PrometheusHistory> history = nullptr;  // optional, see StoreTickSource
  // Set: the input is read from this engine instead of the store, second by
  // second, with `remote_selector` (prometheus_follow.h); matchers and
  // history are not used.
  std::optional<PrometheusHistory::Server> remote = std::nullopt;
  std::string remote_selector = {};
};

// A replay of `inputs` from the store (and engines, for remote inputs), from
// second `from_s` on. `sources` (optional) receives the sources, in input
// order, to advance them.
Result<std::unique_ptr<Replay>> OpenStoreReplay(const store::Store& store,
                                                std::vector<StoreInput> inputs, std::int64_t from_s,
                                                std::vector<LiveTickSource*>* sources,
                                                const ReplayOptions& options = {});

}  // namespace gpucanary::analysis
