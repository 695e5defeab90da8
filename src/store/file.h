#pragma once
// The store's filesystem seam (LevelDB's Env / WritableFile idea, only as
// big as the record log needs): LogFile writes through a WritableFile and
// ReadLog reads through FileSystem::ReadFile, so the record log can be tested
// in memory (store/memory_file.h) with every failure a disk can give.
// PosixFileSystem() is the real one (posix_file.cc): one pwrite(2) loop per
// write, ftruncate(2), fdatasync(2); the production syscalls are exactly what
// they were before the seam.
//
// Also here, not behind the interface: the read-only file Mapping and
// WriteFileAtomic, POSIX utilities the segments and checkpoints use directly
// (the store's readers point into mappings; an in-memory store would need
// more than this seam).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gpucanary::store {

// Syncs one file, independently of the object that writes it: the store
// takes one under its lock and syncs outside it, while a commit may close or
// replace the writer. Not thread-safe.
class SyncHandle {
 public:
  virtual ~SyncHandle() = default;
  // fdatasync(2). Errors: kIoError "fdatasync: <reason>".
  virtual Status Sync() = 0;
};

// A file open for writing at explicit offsets. The caller keeps track of the
// size. Not thread-safe.
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Writes all of `bytes` at `offset`. Errors: kIoError "<path>: write:
  // <reason>"; then any part of `bytes` may be in the file (the caller cuts
  // it back with Truncate).
  virtual Status WriteAt(std::uint64_t offset, std::string_view bytes) = 0;
  // Sets the file's size (cuts or zero-extends). Errors: kIoError "<path>:
  // truncate: <reason>".
  virtual Status Truncate(std::uint64_t size) = 0;
  // Makes the written bytes durable (fdatasync(2)). Errors: kIoError
  // "<path>: fdatasync: <reason>".
  virtual Status Sync() = 0;
  // A handle that syncs this file and may outlive it; null when none can be
  // had (then there is nothing to sync through it).
  virtual std::unique_ptr<SyncHandle> NewSyncHandle() = 0;
};

// Opens and reads files. Implementations are thread-safe.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Whether `path` exists (access(2), F_OK).
  virtual bool Exists(const std::filesystem::path& path) = 0;
  // Opens `path` for writing, creating it empty when missing; its contents
  // are kept. Errors: kIoError "<path>: open: <reason>".
  virtual Result<std::unique_ptr<WritableFile>> OpenWritable(const std::filesystem::path& path) = 0;
  // The whole contents of `path`. Errors: kIoError "<path>: open|stat|pread:
  // <reason>".
  virtual Result<std::string> ReadFile(const std::filesystem::path& path) = 0;
};

// The real filesystem (open(2), pwrite(2), pread(2), ...). Lives for the
// whole process.
FileSystem& PosixFileSystem();

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
// With `sync` false the file and folder are not fsynced: atomic against a
// crashed process (the rename), not against a lost machine.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view bytes, bool sync = true);

}  // namespace gpucanary::store
