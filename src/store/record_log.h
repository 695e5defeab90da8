#pragma once
// The record framing every store log uses (docs/storage-format.md,
// "Records"): length:u32 type:u8 payload crc:u32, crc = zlib CRC-32 over type
// and payload. LogFile appends records to one file; ReadLog scans one,
// stopping at the torn tail. Both do their I/O through the filesystem seam
// (store/file.h), so record_log_test runs them in memory.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "store/file.h"

namespace gpucanary::store {

inline constexpr std::size_t kMaxRecordBytes = 16u << 20;
inline constexpr std::size_t kRecordOverhead = 9;

// Appends the framed record to `out`.
void AppendRecord(std::string& out, std::uint8_t type, std::string_view payload);

// An append-only file of records. Not thread-safe.
class LogFile {
 public:
  LogFile() = default;  // closed
  LogFile(LogFile&& other) noexcept = default;
  LogFile& operator=(LogFile&& other) noexcept = default;  // closes what this held
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  // Opens `path` in `files` for appending at `size` (truncating anything
  // after it), or (re)creates it holding just `header` when it does not
  // exist or `size` is less than the header's. Errors: kIoError.
  static Result<LogFile> Open(FileSystem& files, const std::filesystem::path& path,
                              std::string_view header, std::uint64_t size);

  // Writes the bytes (already framed records) at the end of the file (one
  // pwrite(2) loop for the real file): once this returns, a kill -9 of the
  // process cannot lose them. Errors: kIoError (then the file is cut back to
  // its size before the call, so no half record is left for the next write
  // to follow).
  Status Write(std::string_view bytes);
  // fdatasync(2); nothing when closed.
  Status Sync();
  // A handle that syncs this file from outside the lock that guards the
  // LogFile; null when closed or when none can be had.
  std::unique_ptr<SyncHandle> NewSyncHandle() const;
  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return file_ != nullptr; }
  void Close() { file_.reset(); }

 private:
  std::unique_ptr<WritableFile> file_;
  std::uint64_t size_ = 0;
  std::filesystem::path path_;
};

// One framed record, as found in a buffer.
struct RecordView {
  std::uint8_t type = 0;
  std::string_view payload;
};

// Checks the record starting at `pos` of `data`: returns "" and sets *out
// (when not null) when it is whole and its CRC holds, else why not:
// "truncated record header" or "truncated record" (the data end inside it:
// a writer may not be done), "bad record length", "bad crc".
std::string_view CheckRecordAt(std::string_view data, std::size_t pos, RecordView* out);

struct LogScan {
  std::uint64_t good_bytes = 0;  // the end of the last good record
  std::uint64_t file_bytes = 0;
  std::string tail_error;  // why the scan stopped early; empty at a clean end
  // With skip_damaged: damaged records stepped over between good ones.
  std::uint64_t skipped_records = 0;  // damaged stretches, each one or more records
  std::uint64_t skipped_bytes = 0;
  std::uint64_t first_skipped_offset = 0;
};

// Reads the records of `path` in `files` after its `header` bytes (which
// must match), calling `fn(type, payload, offset_of_payload)` for each good
// one. Stops at the first torn or corrupt record and says why in the result
// ("truncated record header", "bad record length", "truncated record", "bad
// crc"; "torn header" when the file is a prefix of the header, good_bytes 0).
// Errors: kIoError (unreadable), kParseError (the header does not match), or
// what `fn` returns.
//
// `skip_damaged` (chunk segments: damage there is a flipped byte, not a
// crash's torn tail): a record that fails its checks is stepped over when a
// good record follows it, found at the position its length gives or, when
// the length itself is damaged, by looking forward byte by byte for a
// record whose length (at most kMaxResyncRecordBytes) and CRC hold. Only
// damage with no good record after it ends the scan as a torn tail. The
// WAL keeps the default: after a torn write, what follows is never trusted.
inline constexpr std::size_t kMaxResyncRecordBytes = 1u << 20;
Result<LogScan> ReadLog(
    FileSystem& files, const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn,
    bool skip_damaged = false);

// ReadLog over bytes already in memory (a segment's mapping); `path` only
// names them in errors.
Result<LogScan> ScanRecords(
    std::string_view data, const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn,
    bool skip_damaged = false);

}  // namespace gpucanary::store
