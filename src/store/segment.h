#pragma once
// Chunk segments (docs/storage-format.md, "Chunk segments"): the record
// payloads, the segment index file, and a sealed segment opened for reading.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "model/labels.h"
#include "store/file.h"
#include "store/postings.h"

namespace gpucanary::store {

inline constexpr std::string_view kSegmentMagic = "GCCHNK01";
inline constexpr std::string_view kIndexMagic = "GCCHIDX1";
inline constexpr std::uint8_t kSegSeriesRecord = 4;
inline constexpr std::uint8_t kSegChunkRecord = 5;

// Where a sealed chunk's bytes are in its segment file.
struct ChunkLoc {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::int64_t mint = 0;
  std::int64_t maxt = 0;
};

// Label sets in record payloads: nlabels:varint {name:str value:str}*.
void PutLabels(std::string& out, const model::Labels& labels);
bool GetLabels(std::string_view in, std::size_t& pos, model::Labels& labels);

// seg_chunk payload prefix: ref, mint, maxt; the chunk follows.
void PutSegChunkHeader(std::string& out, std::uint64_t ref, std::int64_t mint, std::int64_t maxt);

// What a chunk segment holds: every series with its chunks, and postings.
struct SegmentIndex {
  std::int64_t mint = 0;
  std::int64_t maxt = 0;
  Symbols symbols;
  std::vector<SymLabels> labels;              // by series id (position)
  std::vector<std::vector<ChunkLoc>> chunks;  // by series id
  Postings postings;
  std::vector<std::uint64_t> all_ids;
  std::size_t memory_bytes = 0;  // rough heap held
};

struct IndexEntry {
  model::Labels labels;
  std::vector<ChunkLoc> chunks;
};

// Writes the index of a segment (atomically). `entries` in any order.
Status WriteSegmentIndex(const std::filesystem::path& path, std::int64_t mint, std::int64_t maxt,
                         std::vector<IndexEntry> entries);

// Reads an index file. Errors: kIoError, kParseError (bad magic, bad crc,
// truncated).
Result<std::shared_ptr<SegmentIndex>> ReadSegmentIndex(const std::filesystem::path& path);

// Scans a segment file's records into an index (to rebuild a missing or bad
// index file, or to recover the active segment). `scan` gets where the good
// records end and why the scan stopped. Damaged records between good ones
// are stepped over (ReadLog's skip_damaged); `skipped_bytes` (may be null)
// gets how many bytes they held.
Result<std::vector<IndexEntry>> ScanSegment(const std::filesystem::path& path,
                                            std::uint64_t* good_bytes, std::string* tail_error,
                                            std::int64_t* mint, std::int64_t* maxt,
                                            std::uint64_t* skipped_bytes = nullptr);

// A sealed, read-only chunk segment. Its index is loaded on demand and may
// be released (ReleaseIndex) to bound memory. Thread-safe.
class SealedSegment {
 public:
  // Opens segment `id` in `dir`, (re)building a missing or unreadable index
  // file (reported through `log`).
  static Result<std::unique_ptr<SealedSegment>> Open(
      const std::filesystem::path& dir, std::uint32_t id,
      const std::function<void(std::string_view)>& log);
  ~SealedSegment();
  SealedSegment(const SealedSegment&) = delete;
  SealedSegment& operator=(const SealedSegment&) = delete;

  Result<std::shared_ptr<const SegmentIndex>> Index() const;
  void ReleaseIndex() const;
  bool index_loaded() const;

  // One chunk's bytes, from the read-only mapping of the file (valid while
  // the segment lives). Errors: kParseError when `loc` is outside the file.
  Result<std::string_view> Chunk(const ChunkLoc& loc) const;
  // Whether `loc` lies inside a record whose CRC holds. A sealed segment's
  // index has its own CRC, but its chunks are only framed: a byte flipped
  // on disk after sealing would decode to invented values. So the first
  // call walks every record of the file once (through the mapping: zlib's
  // CRC-32 of 64 MiB takes about 20 ms) and keeps the intact stretches; a
  // damaged record is logged then, once. Chunks outside them are not read.
  bool Intact(const ChunkLoc& loc) const;
  // The mapping Chunk's views point into (hold it to keep them valid).
  const std::shared_ptr<const Mapping>& mapping() const { return map_; }

  // Deletes the files (the object must not be used afterwards but to destroy).
  void Remove();

  std::uint32_t id() const { return id_; }
  std::int64_t mint() const { return mint_; }
  std::int64_t maxt() const { return maxt_; }
  std::uint64_t bytes() const { return bytes_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  SealedSegment() = default;

  std::uint32_t id_ = 0;
  std::filesystem::path path_;
  std::filesystem::path index_path_;
  std::shared_ptr<const Mapping> map_;  // the whole file
  std::int64_t mint_ = 0;
  std::int64_t maxt_ = 0;
  std::uint64_t bytes_ = 0;
  mutable Mutex mu_;
  mutable std::shared_ptr<const SegmentIndex> index_ GUARDED_BY(mu_);
  std::function<void(std::string_view)> log_;
  // Intact()'s walk: done once; then the payload stretches [begin, end) of
  // consecutive good records, sorted (one for an undamaged file).
  mutable std::once_flag verified_;
  mutable std::vector<std::pair<std::uint64_t, std::uint64_t>> intact_;
};

// "chunks/00000012" style names.
std::string SegmentFileName(std::uint32_t id);

}  // namespace gpucanary::store
