#pragma once
// The record framing every store log uses (docs/storage-format.md,
// "Records"): length:u32 type:u8 payload crc:u32, crc = zlib CRC-32 over type
// and payload. LogFile appends records to one file; ReadLog scans one,
// stopping at the torn tail.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gpucanary::store {

inline constexpr std::size_t kMaxRecordBytes = 16u << 20;
inline constexpr std::size_t kRecordOverhead = 9;

// Appends the framed record to `out`.
void AppendRecord(std::string& out, std::uint8_t type, std::string_view payload);

// An append-only file of records. Not thread-safe.
class LogFile {
 public:
  LogFile() = default;
  ~LogFile();
  LogFile(LogFile&& other) noexcept;
  LogFile& operator=(LogFile&& other) noexcept;
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  // Opens `path` for appending at `size` (truncating anything after it), or
  // creates it with `header` when it does not exist. Errors: kIoError.
  static Result<LogFile> Open(const std::filesystem::path& path, std::string_view header,
                              std::uint64_t size);

  // Writes the bytes (already framed records) with write(2): once this
  // returns, a kill -9 of the process cannot lose them. Errors: kIoError
  // (then the file is cut back to its size before the call).
  Status Write(std::string_view bytes);
  // fdatasync(2).
  Status Sync();
  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close();

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::filesystem::path path_;
};

struct LogScan {
  std::uint64_t good_bytes = 0;  // the end of the last good record
  std::uint64_t file_bytes = 0;
  std::string tail_error;  // why the scan stopped early; empty at a clean end
};

// Reads the records of `path` after its `header` bytes (which must match),
// calling `fn(type, payload, offset_of_payload)` for each good one. Stops at
// the first torn or corrupt record and says why in the result. Errors:
// kIoError (unreadable), kParseError (the header does not match), or what
// `fn` returns.
Result<LogScan> ReadLog(
    const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn);

// Reads `length` bytes at `offset` of an open descriptor.
Status ReadAt(int fd, std::uint64_t offset, std::size_t length, std::string& out);

// A read-only shared mapping of (the first `length` bytes of) a file,
// unmapped when the last holder lets go: readers keep the mapping they read
// from alive while the store remaps a growing file or deletes an old one.
// `length` may exceed the file (room to grow): only bytes the file has may be
// read.
class Mapping {
 public:
  static Result<std::shared_ptr<const Mapping>> Map(const std::filesystem::path& path,
                                                    std::size_t length);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Mapping(const char* data, std::size_t size) : data_(data), size_(size) {}
  const char* data_;
  std::size_t size_;
};

// Writes `bytes` to `path` atomically: a temporary file, fsync, rename, fsync
// of the directory.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace gpucanary::store
