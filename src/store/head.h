#pragma once
// The in-memory head of the store (docs/storage-format.md, "Chunks" and
// "Reading"), as Prometheus's tsdb/head.go holds it: every series in memory
// by ref and by label set, with its open chunk and the chunks it has in the
// active segment; the interned label strings and the postings of the live
// series. Appending and sealing are the store's (head_append.cc): they also
// write the WAL and the active segment.
//
// Thread-compatible: Store::Impl guards a Head with its mu_ (store_impl.h),
// except Exists, which is lock-free.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "model/labels.h"
#include "model/matcher.h"
#include "store/appender.h"
#include "store/chunk.h"
#include "store/postings.h"
#include "store/segment.h"

namespace gpucanary::store {

// No sample yet.
inline constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

struct HeadSeries {
  SeriesRef ref = 0;
  SymLabels labels;
  std::uint64_t hash = 0;
  std::vector<ChunkLoc> active_chunks;  // sealed into the active segment
  bool in_active_segment = false;       // its seg_series record is there
  OpenChunk open;
  std::int64_t last_t = kNoTime;  // newest sample, sealed or open
  std::uint64_t last_bits = 0;
  // The newest sample accepted in the commit numbered `batch` (in-batch order
  // checks without a map per commit).
  std::uint64_t batch = 0;
  std::int64_t batch_t = kNoTime;
  std::uint64_t batch_bits = 0;
};

class Head {
 public:
  // The series `ref`, or null.
  HeadSeries* Find(SeriesRef ref) {
    auto it = series_.find(ref);
    return it == series_.end() ? nullptr : it->second.get();
  }
  // REQUIRES: `ref` is in the head.
  HeadSeries& at(SeriesRef ref) { return *series_.at(ref); }
  const HeadSeries& at(SeriesRef ref) const { return *series_.at(ref); }

  // The series `ref`, created with `labels` when new (an existing one is
  // returned as it is, whatever `labels` says). Refs may come in any order;
  // the next ref handed out is past every ref seen. Indexing a new series
  // appends to the postings when `ref` is past every ref in the head (the
  // store's own refs always are); a smaller ref is inserted in place, linear
  // in the lists it joins, never by rebuilding the index. Between
  // BeginBulkLoad and EndBulkLoad nothing is indexed.
  HeadSeries& Create(SeriesRef ref, const model::Labels& labels);

  // Recovery: series arrive out of ref order (the active segment's, then the
  // checkpoint's, then the WAL's), so Create stops indexing at
  // BeginBulkLoad, and EndBulkLoad builds postings, the sorted ref list and
  // the label-hash map once from every series: O(n log n) for the whole
  // recovery instead of a rebuild, or an insertion, per series.
  // REQUIRES between the two: no Lookup or Match (Find, at, ForEach and
  // SortedRefs are fine).
  void BeginBulkLoad() { bulk_load_ = true; }
  void EndBulkLoad();

  // The ref of the series with exactly `labels` (whose LabelsHash is
  // `hash`), or 0.
  SeriesRef Lookup(const model::Labels& labels, std::uint64_t hash) const;

  // Whether `ref` was ever handed out. Lock-free: refs are handed out in
  // order and never reused; a series dropped since is caught at Commit.
  bool Exists(SeriesRef ref) const {
    return ref != 0 && ref < published_next_ref_.load(std::memory_order_acquire);
  }

  SeriesRef next_ref() const { return next_ref_; }
  std::size_t live_series() const { return live_series_; }
  const Symbols& symbols() const { return symbols_; }
  model::Labels LabelsOf(const HeadSeries& s) const { return ExpandLabels(symbols_, s.labels); }

  // The refs of the series whose labels satisfy every matcher, sorted.
  std::vector<std::uint64_t> Match(const std::vector<model::Matcher>& matchers) const;

  // Every series' ref, sorted (a copy of the index's list; sorted anew
  // during a bulk load).
  std::vector<SeriesRef> SortedRefs() const;

  // Calls fn(HeadSeries&) for every series, in the map's order.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (auto& [ref, s] : series_) fn(*s);
  }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [ref, s] : series_) fn(static_cast<const HeadSeries&>(*s));
  }

  // Removes the series that are idle as of `now_ms`: nothing in the active
  // segment, no open chunk, and a newest sample older than `idle_ms` (a
  // series with no sample yet stays: a writer is about to use it). Rebuilds
  // the index when any went (once per call, however many went). Returns how
  // many went.
  std::size_t DropIdle(std::int64_t now_ms, std::int64_t idle_ms);

  // How many times the index was built from every series (EndBulkLoad, a
  // DropIdle that dropped some): once per recovery, whatever its order.
  std::uint64_t index_builds() const { return index_builds_; }

 private:
  // Adds one new series to postings, live_refs_ and by_hash_.
  void Index(const HeadSeries& s);
  // Rebuilds postings, live_refs_ and by_hash_ from series_: O(n log n).
  void RebuildIndex();

  Symbols symbols_;
  std::unordered_map<SeriesRef, std::unique_ptr<HeadSeries>> series_;
  SeriesRef next_ref_ = 1;
  std::atomic<SeriesRef> published_next_ref_{1};  // next_ref_, for lock-free readers
  std::unordered_map<std::uint64_t, std::vector<SeriesRef>> by_hash_;
  Postings postings_;
  std::vector<std::uint64_t> live_refs_;  // sorted; stale while bulk_load_
  std::size_t live_series_ = 0;
  bool bulk_load_ = false;
  std::uint64_t index_builds_ = 0;
};

}  // namespace gpucanary::store
