#pragma once
// The write-ahead log's files (docs/storage-format.md, "The write-ahead
// log"), as Prometheus's tsdb/wlog keeps them: numbered segments in
// DATA/wal, the active one appended to, and the checkpoint that replaces the
// segments it covers. What the records hold is wal_record.h's; replaying
// them into the head is recovery.cc's.
//
// Not thread-safe: Store::Impl's mu_ guards its Wal (store_impl.h).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/labels.h"
#include "store/appender.h"
#include "store/file.h"
#include "store/record_log.h"

namespace gpucanary::store {

// The numbers of the files in `dir` named `prefix` and 8 digits
// ("00000012", "checkpoint.00000011"), sorted; none when `dir` is unreadable.
std::vector<std::uint32_t> NumberedFiles(const std::filesystem::path& dir, std::string_view prefix);

class Wal {
 public:
  using RecordFn = std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>;

  // The log in `dir` (DATA/wal), through `files`. Opens nothing yet.
  Wal(FileSystem& files, std::filesystem::path dir) : files_(files), dir_(std::move(dir)) {}

  std::filesystem::path SegmentPath(std::uint32_t n) const;
  std::filesystem::path CheckpointPath(std::uint32_t n) const;
  std::vector<std::uint32_t> Segments() const { return NumberedFiles(dir_, ""); }
  std::vector<std::uint32_t> Checkpoints() const { return NumberedFiles(dir_, "checkpoint."); }

  // Reads segment / checkpoint `n` as ReadLog does.
  Result<LogScan> ReadSegment(std::uint32_t n, const RecordFn& fn) const;
  Result<LogScan> ReadCheckpoint(std::uint32_t n, const RecordFn& fn) const;
  // Cuts segment `n` at `size` (a torn tail found by ReadSegment). Errors:
  // kIoError.
  Status CutSegment(std::uint32_t n, std::uint64_t size);

  // Starts writing segment `n`, created empty (closing the one before).
  // Errors: kIoError.
  Status OpenSegment(std::uint32_t n);

  // Queues the series record of a new series: it is written ahead of the
  // next batch's samples.
  void QueueSeries(SeriesRef ref, const model::Labels& labels);
  // Writes the queued series records and then, unless `samples_payload` is
  // empty, a samples record with it, in one write. Errors: kIoError; then
  // nothing of it is in the segment and the series records stay queued.
  Status WriteBatch(std::string_view samples_payload);

  // Installs checkpoint `covers` holding `bytes` (written atomically), drops
  // the queued series records (the checkpoint has their series), starts
  // segment covers + 1 and deletes the segments and older checkpoints it
  // replaces. Errors: kIoError.
  Status InstallCheckpoint(std::uint32_t covers, std::string_view bytes);

  // Readers of the WAL (remote_write out): InstallCheckpoint keeps the
  // segments numbered keep_from() or later that it would delete, while they
  // take at most max_bytes; past that the oldest go and `log` says so.
  // keep_from is called with the store's lock held and must return at once;
  // UINT32_MAX (or no function) keeps nothing.
  void SetReaders(std::function<std::uint32_t()> keep_from, std::uint64_t max_bytes,
                  std::function<void(std::string_view)> log) {
    keep_from_ = std::move(keep_from);
    keep_max_bytes_ = max_bytes;
    log_ = std::move(log);
  }

  // fdatasync of the active segment (nothing when none is open).
  Status Sync() { return file_.Sync(); }
  std::unique_ptr<SyncHandle> NewSyncHandle() const { return file_.NewSyncHandle(); }

  bool is_open() const { return file_.is_open(); }
  std::uint32_t segment() const { return id_; }  // the active segment's number
  std::uint64_t size() const { return file_.size(); }
  std::uint64_t since_checkpoint() const { return since_checkpoint_; }  // bytes written

 private:
  FileSystem& files_;
  const std::filesystem::path dir_;
  std::string pending_series_;  // series records not yet written
  LogFile file_;
  std::uint32_t id_ = 0;
  std::uint64_t since_checkpoint_ = 0;
  std::function<std::uint32_t()> keep_from_;
  std::uint64_t keep_max_bytes_ = 0;
  std::function<void(std::string_view)> log_;
};

}  // namespace gpucanary::store
