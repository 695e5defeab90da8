// The real filesystem behind store/file.h: the system calls the record log,
// segments and checkpoints make.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "store/file.h"

namespace gpucanary::store {
namespace {

Status IoError(const std::filesystem::path& path, std::string_view what, int err) {
  return Status(StatusCode::kIoError,
                path.string() + ": " + std::string(what) + ": " + ErrnoMessage(err));
}

// Reads `length` bytes at `offset` of an open descriptor.
Status ReadAt(int fd, std::uint64_t offset, std::size_t length, std::string& out) {
  out.resize(length);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kIoError, "pread: " + ErrnoMessage(errno));
    }
    if (n == 0) return Status(StatusCode::kIoError, "pread: unexpected end of file");
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// A duplicate descriptor of a written file, closed when the handle goes.
class PosixSyncHandle final : public SyncHandle {
 public:
  explicit PosixSyncHandle(int fd) : fd_(fd) {}
  ~PosixSyncHandle() override { ::close(fd_); }
  PosixSyncHandle(const PosixSyncHandle&) = delete;
  PosixSyncHandle& operator=(const PosixSyncHandle&) = delete;

  Status Sync() override {
    if (::fdatasync(fd_) != 0) {
      return Status(StatusCode::kIoError, "fdatasync: " + ErrnoMessage(errno));
    }
    return Status::Ok();
  }

 private:
  const int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override { ::close(fd_); }
  PosixWritableFile(const PosixWritableFile&) = delete;
  PosixWritableFile& operator=(const PosixWritableFile&) = delete;

  Status WriteAt(std::uint64_t offset, std::string_view bytes) override {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError(path_, "write", errno);
      }
      done += static_cast<std::size_t>(n);
    }
    return Status::Ok();
  }

  Status Truncate(std::uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return IoError(path_, "truncate", errno);
    return Status::Ok();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return IoError(path_, "fdatasync", errno);
    return Status::Ok();
  }

  std::unique_ptr<SyncHandle> NewSyncHandle() override {
    const int fd = ::dup(fd_);
    if (fd < 0) return nullptr;
    return std::make_unique<PosixSyncHandle>(fd);
  }

 private:
  const int fd_;
  const std::filesystem::path path_;
};

class PosixFileSystemImpl final : public FileSystem {
 public:
  bool Exists(const std::filesystem::path& path) override {
    return ::access(path.c_str(), F_OK) == 0;
  }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::filesystem::path& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Error(IoError(path, "open", errno));
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path));
  }

  Result<std::string> ReadFile(const std::filesystem::path& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(IoError(path, "open", errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return Error(IoError(path, "stat", err));
    }
    std::string data;
    Status read = ReadAt(fd, 0, static_cast<std::size_t>(st.st_size), data);
    ::close(fd);
    if (!read.ok()) return Error(read.WithPrefix(path.string()));
    return data;
  }
};

}  // namespace

FileSystem& PosixFileSystem() {
  static PosixFileSystemImpl files;  // stateless: safe to use until exit
  return files;
}

Result<std::shared_ptr<const Mapping>> Mapping::Map(const std::filesystem::path& path,
                                                    std::size_t length) {
  if (length == 0) return std::shared_ptr<const Mapping>(new Mapping(nullptr, 0));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(IoError(path, "open", errno));
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays
  if (map == MAP_FAILED) return Error(IoError(path, "mmap", err));
  return std::shared_ptr<const Mapping>(new Mapping(static_cast<const char*>(map), length));
}

Mapping::~Mapping() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view bytes, bool sync) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp, "open", errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return IoError(tmp, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(tmp, "fsync", err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError(path, "rename", errno);
  if (!sync) return Status::Ok();
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

}  // namespace gpucanary::store
