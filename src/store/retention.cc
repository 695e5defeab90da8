// Retention (docs/storage-format.md, "Retention"): whole sealed chunk
// segments go, by age and then by size; idle series have their open chunk
// sealed and leave memory.

#include <string>

#include "core/mutex.h"
#include "store/store_impl.h"

namespace gpucanary::store {

Status Store::Impl::ApplyRetention(std::int64_t now_ms) {
  WriterMutexLock lock(mu_);
  std::uint64_t total = active_.size();
  for (const auto& seg : sealed_) total += seg->bytes();
  std::size_t drop = 0;
  while (drop < sealed_.size()) {
    const SealedSegment& seg = *sealed_[drop];
    const bool too_old = options_.retention_ms > 0 && seg.maxt() < now_ms - options_.retention_ms;
    const bool too_big = options_.retention_bytes > 0 && total > options_.retention_bytes;
    if (!too_old && !too_big) break;
    total -= seg.bytes();
    ++drop;
  }
  if (drop > 0) {
    MutexLock cache(cache_mu_);
    for (std::size_t i = 0; i < drop; ++i) {
      const SealedSegment* gone = sealed_[i].get();
      std::erase_if(index_lru_, [gone](const LoadedIndex& l) { return l.segment == gone; });
      Log("store: retention: removed segment " + SegmentFileName(sealed_[i]->id()));
      sealed_[i]->Remove();
    }
    sealed_.erase(sealed_.begin(), sealed_.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  TrimIndexCache();  // indexes no read used lately
  // Idle series: their open chunk is sealed now (it will not grow), and they
  // leave memory once nothing of them is in the active segment.
  head_.ForEach([&](HeadSeries& s) {
    mu_.AssertHeld();  // ForEach runs this here, under mu_
    if (!s.open.empty() && s.last_t < now_ms - options_.idle_series_ms) Seal(s);
  });
  if (Status s = FlushSegment(); !s.ok()) return s;
  if (head_.DropIdle(now_ms, options_.idle_series_ms) > 0) return CheckpointLocked();
  return Status::Ok();
}

}  // namespace gpucanary::store
