#pragma once
// The embedded time-series store: one data directory with a write-ahead log,
// chunk segments and their indexes (docs/storage-format.md). Appenders write
// committed batches to the WAL and the in-memory head; full chunks are sealed
// into the active chunk segment; Select reads any time range by label
// matchers (the result types are query.h's).
//
// Thread-safe: any number of appenders and readers at once. Commits are
// serialised; readers share a lock with each other.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/labels.h"
#include "model/matcher.h"
#include "store/appender.h"
#include "store/chunk.h"
#include "store/query.h"

namespace gpucanary::store {

struct StoreOptions {
  // Retention: chunk segments entirely older than this go (0: keep forever);
  // then the oldest while segments take more than retention_bytes (0: no
  // limit).
  std::int64_t retention_ms = 15LL * 24 * 3600 * 1000;
  std::uint64_t retention_bytes = 0;

  std::size_t max_chunk_samples = 240;
  std::int64_t max_chunk_span_ms = 2LL * 3600 * 1000;
  std::uint64_t segment_bytes = 64u << 20;
  std::int64_t segment_span_ms = 2LL * 3600 * 1000;
  std::uint64_t wal_segment_bytes = 64u << 20;
  std::uint64_t checkpoint_after_bytes = 128u << 20;  // of WAL since the last checkpoint
  std::int64_t idle_series_ms = 3600LL * 1000;        // dropped from memory after this
  // A sealed segment's index, loaded when a read needs it, is released when
  // no read used it for this long (checked after reads and at retention), or
  // when more than 8 are loaded (least recently used first).
  std::int64_t index_idle_ms = 5LL * 60 * 1000;
  // Series in memory at most (storage.max_series): Series() answers a new
  // one beyond it with kOutOfRange until idle ones leave. Each costs about
  // 0.75 KB of head (measured with dcgm-exporter's 9 labels), so the default
  // bounds the head near 1.5 GB: twice a 10,000-GPU fleet's dcgm series.
  std::size_t max_series = 2'000'000;

  // fdatasync of the WAL and active segment by a background thread (ms; 0:
  // only on Close and checkpoints).
  int sync_interval_ms = 1000;

  // Where recovery reports what it did (cut tails, replayed records).
  std::function<void(std::string_view)> log;

  // Readers of the WAL (remote_write out, remote/sender.h): the smallest WAL
  // segment number one of them still needs (UINT32_MAX: none). Checkpoints
  // keep those segments, up to wal_keep_max_bytes of them (the oldest beyond
  // are deleted and logged). Called with the store's lock held: it must
  // return at once and must not call the store. Empty: nothing kept.
  std::function<std::uint32_t()> wal_keep_from;
  std::uint64_t wal_keep_max_bytes = std::uint64_t{1} << 30;

  // Called after each checkpoint is installed (the daemon backs its
  // metadata up then), with the store's lock held: it must return at once
  // and must not call the store (wake a thread that does the work).
  std::function<void()> on_checkpoint;
};

struct StoreStats {
  std::size_t head_series = 0;         // series in memory
  std::size_t open_chunk_bytes = 0;    // heap held by open chunks
  std::uint64_t samples_appended = 0;  // since open
  std::uint64_t samples_rejected = 0;  // out of order or duplicate
  std::uint64_t chunks_sealed = 0;
  std::uint64_t chunk_bytes = 0;    // encoded chunk bytes sealed since open
  std::uint64_t chunk_samples = 0;  // samples in those chunks
  std::size_t segments = 0;         // chunk segments on disk, active included
  std::uint64_t segment_bytes = 0;  // their size
  std::uint64_t wal_bytes = 0;      // WAL segments and checkpoint on disk
  std::int64_t min_time = 0;        // oldest sample on disk or in memory (ms)
  std::int64_t max_time = 0;
  // Times the head's label index was built from every series since open:
  // 1 for the recovery (whatever order its series came in), plus 1 per
  // ApplyRetention that dropped idle series.
  std::uint64_t head_index_builds = 0;
  // Chunk reads left out because the chunk's record on disk failed its CRC
  // (a sealed segment damaged after it was written): counted per read.
  std::uint64_t damaged_chunks_skipped = 0;
  std::size_t loaded_indexes = 0;  // sealed segments whose index is in memory
};

// Commits that could not write (a full disk, an I/O error): what the store
// lost, for /metrics, logs and the notes of canaries running meanwhile.
struct WriteFailures {
  std::uint64_t count = 0;   // since open
  std::int64_t last_ms = 0;  // wall-clock time of the last one; 0: none
  std::string last_error;    // its message
};

class Store : public Appendable {
 public:
  // Opens (creating) the store in `dir`, recovering from the WAL and cutting
  // torn tails (reported through options.log). Errors: kIoError when the
  // directory cannot be used, kUnavailable when another process holds its
  // LOCK.
  static Result<std::unique_ptr<Store>> Open(const std::filesystem::path& dir,
                                             StoreOptions options = {});

  // Syncs and closes.
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::unique_ptr<Appender> NewAppender() override;

  // Every series matching all `matchers` with data in [mint, maxt] (ms,
  // inclusive), undecoded. Errors: kIoError or kParseError (an index on disk
  // unreadable).
  Result<QueryResult> Query(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                            std::int64_t maxt) const;

  // Query, decoded: every matching series with at least one sample in the
  // range, with those samples, sorted by labels.
  Result<std::vector<SeriesSamples>> Select(const std::vector<model::Matcher>& matchers,
                                            std::int64_t mint, std::int64_t maxt) const;

  // Label sets of the matching series with data in [mint, maxt], sorted.
  Result<std::vector<model::Labels>> SeriesIn(const std::vector<model::Matcher>& matchers,
                                              std::int64_t mint, std::int64_t maxt) const;

  // Calls `fn` once for each distinct matching series with data in [mint,
  // maxt], in no particular order, without reading or copying any chunk: for
  // questions about label sets only (which hosts, which models). The labels
  // are valid during the call only, and `fn` must not call the store (a
  // reader lock is held).
  Status ForEachSeries(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                       std::int64_t maxt,
                       const std::function<void(const model::Labels&)>& fn) const;

  // Label names / the values of one label over series with data in the range.
  Result<std::vector<std::string>> LabelNames(std::int64_t mint, std::int64_t maxt) const;
  Result<std::vector<std::string>> LabelValues(std::string_view name, std::int64_t mint,
                                               std::int64_t maxt) const;

  // Deletes chunk segments past retention as of `now_ms`; drops idle series
  // from memory. Called by the owner periodically (the daemon: every minute).
  Status ApplyRetention(std::int64_t now_ms);

  // Writes a checkpoint now and truncates the WAL (normally automatic).
  Status Checkpoint();
  // fdatasync of the WAL and the active segment now.
  Status Sync();

  StoreStats stats() const;
  // Cheap (no walk over the series): read by each canary every second.
  WriteFailures write_failures() const;
  const std::filesystem::path& dir() const;

 private:
  class Impl;
  class AppenderImpl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::store
