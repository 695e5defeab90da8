#pragma once
// The chunk segment being written (docs/storage-format.md, "Chunk
// segments"): chunks sealed from the head are framed into a buffer, written
// to the file at the end of each commit, and read by queries through a
// read-only mapping of the file with room to grow. Sealing it into a
// SealedSegment with its index is the store's (checkpoint.cc).
//
// Not thread-safe: Store::Impl's mu_ guards its ActiveSegment
// (store_impl.h). A reader that keeps mapping() keeps the bytes it points
// into valid after the segment is remapped or replaced.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "core/status.h"
#include "model/labels.h"
#include "store/appender.h"
#include "store/chunk.h"
#include "store/file.h"
#include "store/head.h"  // kNoTime
#include "store/record_log.h"
#include "store/segment.h"

namespace gpucanary::store {

class ActiveSegment {
 public:
  // Segments in `dir` (DATA/chunks), through `files`; `segment_bytes` is the
  // size at which the store seals one (the mapping leaves room past it).
  ActiveSegment(FileSystem& files, std::filesystem::path dir, std::uint64_t segment_bytes)
      : files_(files), dir_(std::move(dir)), segment_bytes_(segment_bytes) {}

  // Makes segment `id` the active one: opened at `size` (cutting what
  // follows; created holding the magic when new or shorter than it), and
  // mapped. The time range is left as it is (recovery sets it first).
  // Errors: kIoError.
  Status Open(std::uint32_t id, std::uint64_t size);

  // Buffers the seg_series record of series `ref`.
  void AddSeries(SeriesRef ref, const model::Labels& labels);
  // Buffers the seg_chunk record of `samples` (1 or more, t increasing) of
  // series `ref`, and widens the time range to them. Returns where the
  // chunk's bytes will be in the file.
  ChunkLoc AddChunk(SeriesRef ref, std::span<const Sample> samples);
  // Widens the time range to [mint, maxt] (chunks found in the file).
  void Extend(std::int64_t mint, std::int64_t maxt) {
    mint_ = mint_ == kNoTime ? mint : std::min(mint_, mint);
    maxt_ = std::max(maxt_, maxt);
  }
  void ClearTimeRange() { mint_ = maxt_ = kNoTime; }

  // Writes the buffered records and remaps the file if it outgrew its
  // mapping. The buffer is emptied even when the write fails. Errors:
  // kIoError.
  Status Flush();
  // fdatasync of the file (nothing when none is open).
  Status Sync() { return file_.Sync(); }
  std::unique_ptr<SyncHandle> NewSyncHandle() const { return file_.NewSyncHandle(); }

  // Whether the segment is due to be sealed: `segment_bytes` written, or its
  // chunks span `span_ms`.
  bool Due(std::uint64_t segment_bytes, std::int64_t span_ms) const {
    return file_.size() >= segment_bytes || (mint_ != kNoTime && maxt_ - mint_ >= span_ms);
  }

  std::uint32_t id() const { return id_; }
  bool is_open() const { return file_.is_open(); }
  std::uint64_t size() const { return file_.size(); }  // written, not buffered
  std::int64_t mint() const { return mint_; }          // kNoTime: no chunk yet
  std::int64_t maxt() const { return maxt_; }
  const std::shared_ptr<const Mapping>& mapping() const { return map_; }

 private:
  Status Map();

  FileSystem& files_;
  const std::filesystem::path dir_;
  const std::uint64_t segment_bytes_;
  LogFile file_;
  // Read-only mapping of the file, longer than the file (room to grow);
  // queries hold it while they read.
  std::shared_ptr<const Mapping> map_;
  std::uint32_t id_ = 0;
  std::int64_t mint_ = kNoTime;
  std::int64_t maxt_ = kNoTime;
  std::string buffer_;  // records not yet written to file_
};

}  // namespace gpucanary::store
