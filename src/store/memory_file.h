#pragma once
// An in-memory FileSystem (store/file.h) for tests, with the failures a disk
// can give on demand: a write that stops part way (a full disk), a file that
// cannot be opened or read, a failing sync. Header-only: tests include it,
// the library does not. Thread-safe.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/mutex.h"
#include "core/status.h"
#include "store/file.h"

namespace gpucanary::store {

class MemoryFileSystem final : public FileSystem {
 public:
  // The contents of `path`, or "" when it does not exist.
  std::string Contents(const std::filesystem::path& path) const {
    MutexLock lock(mu_);
    auto it = files_.find(path.string());
    return it == files_.end() ? std::string() : it->second;
  }
  void SetContents(const std::filesystem::path& path, std::string contents) {
    MutexLock lock(mu_);
    files_[path.string()] = std::move(contents);
  }
  void Remove(const std::filesystem::path& path) {
    MutexLock lock(mu_);
    files_.erase(path.string());
  }

  // The next WriteAt writes at most `bytes` bytes: a longer one writes its
  // first `bytes` and fails as a full disk does (kIoError "<path>: write: No
  // space left on device"). Applies to one WriteAt only.
  void FailNextWriteAfter(std::size_t bytes) {
    MutexLock lock(mu_);
    fail_write_after_ = bytes;
  }
  // While set, OpenWritable fails (kIoError "<path>: open: injected").
  void FailOpens(bool fail) {
    MutexLock lock(mu_);
    fail_opens_ = fail;
  }
  // While set, ReadFile of an existing file fails (kIoError "<path>: pread:
  // injected").
  void FailReads(bool fail) {
    MutexLock lock(mu_);
    fail_reads_ = fail;
  }
  // While set, syncs fail (kIoError "[<path>: ]fdatasync: injected").
  void FailSyncs(bool fail) {
    MutexLock lock(mu_);
    fail_syncs_ = fail;
  }
  // Successful syncs of `path` so far (through the file or a SyncHandle).
  int syncs(const std::filesystem::path& path) const {
    MutexLock lock(mu_);
    auto it = syncs_.find(path.string());
    return it == syncs_.end() ? 0 : it->second;
  }

  bool Exists(const std::filesystem::path& path) override {
    MutexLock lock(mu_);
    return files_.count(path.string()) > 0;
  }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::filesystem::path& path) override {
    MutexLock lock(mu_);
    if (fail_opens_) return Error(StatusCode::kIoError, path.string() + ": open: injected");
    files_.try_emplace(path.string());
    return std::unique_ptr<WritableFile>(std::make_unique<File>(*this, path.string()));
  }

  Result<std::string> ReadFile(const std::filesystem::path& path) override {
    MutexLock lock(mu_);
    auto it = files_.find(path.string());
    if (it == files_.end()) {
      return Error(StatusCode::kIoError, path.string() + ": open: No such file or directory");
    }
    if (fail_reads_) return Error(StatusCode::kIoError, path.string() + ": pread: injected");
    return it->second;
  }

 private:
  class Syncer final : public SyncHandle {
   public:
    Syncer(MemoryFileSystem& files, std::string path) : files_(files), path_(std::move(path)) {}
    Status Sync() override { return files_.DoSync(path_, "fdatasync: injected"); }

   private:
    MemoryFileSystem& files_;
    const std::string path_;
  };

  class File final : public WritableFile {
   public:
    File(MemoryFileSystem& files, std::string path) : files_(files), path_(std::move(path)) {}

    Status WriteAt(std::uint64_t offset, std::string_view bytes) override {
      MutexLock lock(files_.mu_);
      std::string& data = files_.files_[path_];
      std::size_t n = bytes.size();
      const bool fail = files_.fail_write_after_ < n;
      if (fail) n = files_.fail_write_after_;
      files_.fail_write_after_ = kNoFailure;
      // As pwrite(2): a write past the end leaves a zero-filled hole.
      if (data.size() < offset + n) data.resize(offset + n);
      std::copy_n(bytes.data(), n, data.begin() + static_cast<std::ptrdiff_t>(offset));
      if (fail) return Status(StatusCode::kIoError, path_ + ": write: No space left on device");
      return Status::Ok();
    }
    Status Truncate(std::uint64_t size) override {
      MutexLock lock(files_.mu_);
      files_.files_[path_].resize(size);
      return Status::Ok();
    }
    Status Sync() override { return files_.DoSync(path_, path_ + ": fdatasync: injected"); }
    std::unique_ptr<SyncHandle> NewSyncHandle() override {
      return std::make_unique<Syncer>(files_, path_);
    }

   private:
    MemoryFileSystem& files_;
    const std::string path_;
  };

  Status DoSync(const std::string& path, const std::string& error) {
    MutexLock lock(mu_);
    if (fail_syncs_) return Status(StatusCode::kIoError, error);
    ++syncs_[path];
    return Status::Ok();
  }

  static constexpr std::size_t kNoFailure = ~std::size_t{0};

  mutable Mutex mu_;
  std::map<std::string, std::string> files_ GUARDED_BY(mu_);
  std::map<std::string, int> syncs_ GUARDED_BY(mu_);
  std::size_t fail_write_after_ GUARDED_BY(mu_) = kNoFailure;
  bool fail_opens_ GUARDED_BY(mu_) = false;
  bool fail_reads_ GUARDED_BY(mu_) = false;
  bool fail_syncs_ GUARDED_BY(mu_) = false;
};

}  // namespace gpucanary::store
