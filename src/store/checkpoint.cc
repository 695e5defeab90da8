// What bounds the WAL and the active segment (docs/storage-format.md,
// "Checkpoints" and "Chunk segments"): flushing sealed chunks to the active
// segment, sealing it into a SealedSegment with its index, starting a new WAL
// segment, and checkpoints. All under mu_, exclusively (store_impl.h).

#include <utility>

#include "core/mutex.h"
#include "store/store_impl.h"

namespace gpucanary::store {

namespace fs = std::filesystem;

Status Store::Impl::FlushSegment() { return active_.Flush(); }

Status Store::Impl::RotateSegmentIfDue() {
  if (!active_.Due(options_.segment_bytes, options_.segment_span_ms)) return Status::Ok();
  std::vector<IndexEntry> entries;
  head_.ForEach([&](const HeadSeries& s) {
    mu_.AssertHeld();  // ForEach runs this in the caller, which holds mu_
    if (s.active_chunks.empty()) return;
    entries.push_back({head_.LabelsOf(s), s.active_chunks});
  });
  const fs::path chunks = dir_ / "chunks";
  if (Status st = active_.Sync(); !st.ok()) return st;
  if (Status st = WriteSegmentIndex(chunks / (SegmentFileName(active_.id()) + ".idx"),
                                    active_.mint(), active_.maxt(), std::move(entries));
      !st.ok()) {
    return st;
  }
  auto sealed = SealedSegment::Open(chunks, active_.id(), options_.log);
  if (!sealed) return sealed.error();
  sealed_.push_back(std::move(*sealed));
  head_.ForEach([](HeadSeries& s) {
    s.active_chunks.clear();
    s.in_active_segment = false;
  });
  active_.ClearTimeRange();
  if (Status st = active_.Open(active_.id() + 1, 0); !st.ok()) return st;
  // The WAL before this point may name chunks of the sealed segment only
  // through the head; a checkpoint makes it unnecessary.
  return CheckpointLocked();
}

Status Store::Impl::CheckpointOrRotateWalIfDue() {
  if (wal_.since_checkpoint() >= options_.checkpoint_after_bytes) return CheckpointLocked();
  if (wal_.size() >= options_.wal_segment_bytes) {
    if (Status s = wal_.Sync(); !s.ok()) return s;
    return wal_.OpenSegment(wal_.segment() + 1);
  }
  return Status::Ok();
}

Status Store::Impl::CheckpointLocked() {
  if (Status s = FlushSegment(); !s.ok()) return s;
  if (Status s = active_.Sync(); !s.ok()) return s;
  if (Status s = wal_.is_open() ? wal_.Sync() : Status::Ok(); !s.ok()) return s;
  // The checkpoint covers every WAL segment up to the current one.
  const std::uint32_t covers = wal_.is_open() ? wal_.segment() : wal_.segment() - 1;
  CheckpointBuilder checkpoint;
  // In ref order, so recovery builds sorted postings directly.
  for (SeriesRef ref : head_.SortedRefs()) {
    const HeadSeries& s = head_.at(ref);
    checkpoint.Add(s.ref, head_.LabelsOf(s), s.open);
  }
  if (Status s = wal_.InstallCheckpoint(covers, checkpoint.bytes()); !s.ok()) return s;
  if (options_.on_checkpoint) options_.on_checkpoint();
  return Status::Ok();
}

Status Store::Impl::Checkpoint() {
  WriterMutexLock lock(mu_);
  return CheckpointLocked();
}

}  // namespace gpucanary::store
