#include "store/record_log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace gpucanary::store {
namespace {

Status IoError(const std::filesystem::path& path, std::string_view what, int err) {
  return Status(StatusCode::kIoError,
                path.string() + ": " + std::string(what) + ": " + ErrnoMessage(err));
}

std::uint32_t Crc(std::uint8_t type, std::string_view payload) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef t = type;
  crc = crc32(crc, &t, 1);
  // zlib takes uInt lengths; records are at most 16 MiB.
  crc =
      crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  return static_cast<std::uint32_t>(crc);
}

void PutU32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::uint32_t GetU32(const char* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void AppendRecord(std::string& out, std::uint8_t type, std::string_view payload) {
  PutU32(out, static_cast<std::uint32_t>(payload.size()));
  out.push_back(static_cast<char>(type));
  out.append(payload);
  PutU32(out, Crc(type, payload));
}

LogFile::~LogFile() { Close(); }

LogFile::LogFile(LogFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}

LogFile& LogFile::operator=(LogFile&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
  }
  return *this;
}

void LogFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<LogFile> LogFile::Open(const std::filesystem::path& path, std::string_view header,
                              std::uint64_t size) {
  LogFile f;
  f.path_ = path;
  const bool exists = ::access(path.c_str(), F_OK) == 0;
  f.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return Error(IoError(path, "open", errno));
  if (!exists || size < header.size()) {
    if (::ftruncate(f.fd_, 0) != 0) return Error(IoError(path, "truncate", errno));
    f.size_ = 0;
    if (Status s = f.Write(header); !s.ok()) return Error(s);
    return f;
  }
  if (::ftruncate(f.fd_, static_cast<off_t>(size)) != 0) {
    return Error(IoError(path, "truncate", errno));
  }
  f.size_ = size;
  return f;
}

Status LogFile::Write(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(size_ + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      // Leave no half record behind for the next write to follow.
      (void)::ftruncate(fd_, static_cast<off_t>(size_));
      return IoError(path_, "write", err);
    }
    done += static_cast<std::size_t>(n);
  }
  size_ += bytes.size();
  return Status::Ok();
}

Status LogFile::Sync() {
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) return IoError(path_, "fdatasync", errno);
  return Status::Ok();
}

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

Result<LogScan> ReadLog(
    const std::filesystem::path& path, std::string_view header,
    const std::function<Status(std::uint8_t, std::string_view, std::uint64_t)>& fn) {
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

  LogScan scan;
  scan.file_bytes = data.size();
  if (data.size() < header.size() || std::string_view(data).substr(0, header.size()) != header) {
    if (data.size() < header.size() && std::string_view(header).substr(0, data.size()) == data) {
      scan.tail_error = "torn header";  // created, crashed before the header was whole
      return scan;
    }
    return Error(StatusCode::kParseError, path.string() + ": not a gpucanary log (bad magic)");
  }
  std::size_t pos = header.size();
  scan.good_bytes = pos;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordOverhead) {
      scan.tail_error = "truncated record header";
      break;
    }
    const std::uint32_t len = GetU32(data.data() + pos);
    if (len > kMaxRecordBytes || data.size() - pos - kRecordOverhead < len) {
      scan.tail_error = len > kMaxRecordBytes ? "bad record length" : "truncated record";
      break;
    }
    const auto type = static_cast<std::uint8_t>(data[pos + 4]);
    const std::string_view payload(data.data() + pos + 5, len);
    if (GetU32(data.data() + pos + 5 + len) != Crc(type, payload)) {
      scan.tail_error = "bad crc";
      break;
    }
    if (Status s = fn(type, payload, pos + 5); !s.ok()) return Error(s);
    pos += kRecordOverhead + len;
    scan.good_bytes = pos;
  }
  return scan;
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

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view bytes) {
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
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError(tmp, "fsync", err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError(path, "rename", errno);
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

}  // namespace gpucanary::store
