#include "importers/line_reader.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/status.h"

namespace gpucanary::importers {
namespace {

constexpr size_t kInitialBufferBytes = size_t{256} * 1024;

gzFile AsGz(void* gz) { return static_cast<gzFile>(gz); }

}  // namespace

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  errno = 0;
  gzFile gz = nullptr;
  if (path == "-") {
    const int fd = ::dup(STDIN_FILENO);
    if (fd >= 0) gz = gzdopen(fd, "rb");
    if (gz == nullptr && fd >= 0) ::close(fd);
  } else {
    gz = gzopen(path.c_str(), "rb");
  }
  if (gz == nullptr) {
    const int error_number = errno;
    return Error(error_number == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                 "cannot open '" + path + "': " +
                     (error_number ? ErrnoMessage(error_number) : std::string("zlib error")));
  }
  gzbuffer(gz, 256 * 1024);
  return std::unique_ptr<LineReader>(new LineReader(path == "-" ? "<stdin>" : path, gz));
}

LineReader::LineReader(std::string path, void* gz)
    : path_(std::move(path)), gz_(gz), buffer_(kInitialBufferBytes) {}

LineReader::~LineReader() { gzclose(AsGz(gz_)); }

Result<bool> LineReader::Next(std::string_view* line) {
  size_t scan_from = begin_;
  while (true) {
    const char* data = buffer_.data();
    const void* newline = std::memchr(data + scan_from, '\n', end_ - scan_from);
    size_t line_end = 0;
    size_t next_begin = 0;
    if (newline != nullptr) {
      line_end = static_cast<size_t>(static_cast<const char*>(newline) - data);
      next_begin = line_end + 1;
    } else if (eof_) {
      if (begin_ == end_) return false;
      line_end = end_;
      next_begin = end_;
    } else {
      // No complete line buffered: keep the partial line, read more after it.
      const size_t scanned = end_ - begin_;
      if (Status status = Fill(); !status.ok()) return Error(std::move(status));
      scan_from = begin_ + scanned;
      continue;
    }
    size_t length = line_end - begin_;
    if (length > kMaxLineBytes) {
      return Error(StatusCode::kParseError, path_ + ":" + std::to_string(line_number_ + 1) +
                                                ":1: line longer than " +
                                                std::to_string(kMaxLineBytes) + " bytes");
    }
    if (length > 0 && data[begin_ + length - 1] == '\r') --length;
    *line = std::string_view(data + begin_, length);
    bytes_read_ += next_begin - begin_;
    begin_ = next_begin;
    ++line_number_;
    return true;
  }
}

Status LineReader::Fill() {
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) {
    if (buffer_.size() > kMaxLineBytes) {
      return Status(StatusCode::kParseError, path_ + ":" + std::to_string(line_number_ + 1) +
                                                 ":1: line longer than " +
                                                 std::to_string(kMaxLineBytes) + " bytes");
    }
    buffer_.resize(std::min(buffer_.size() * 2, kMaxLineBytes + 2));
  }
  errno = 0;
  const int n =
      gzread(AsGz(gz_), buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
  if (n > 0) {
    end_ += static_cast<size_t>(n);
    return Status::Ok();
  }
  int zlib_error = Z_OK;
  const char* message = gzerror(AsGz(gz_), &zlib_error);
  if (n < 0 || (zlib_error != Z_OK && zlib_error != Z_STREAM_END)) {
    std::string why = zlib_error == Z_ERRNO       ? ErrnoMessage(errno)
                      : zlib_error == Z_BUF_ERROR ? "truncated gzip stream"
                                                  : std::string(message);
    return Status(StatusCode::kIoError, "cannot read '" + path_ + "': " + why);
  }
  eof_ = true;
  return Status::Ok();
}

}  // namespace gpucanary::importers
