#pragma once
// LineReader streams the lines of a text file, plain or gzip-compressed (zlib
// detects gzip by its magic bytes and reads anything else unchanged), through
// one reused buffer: memory stays bounded by the longest line, whatever the
// size of the file.
//
// Thread safety: none; one reader belongs to one thread.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpucanary::importers {

class LineReader {
 public:
  // Lines longer than this are refused, so a file without newlines cannot make
  // the reader buffer all of it.
  static constexpr size_t kMaxLineBytes = 1 << 20;

  // Opens `path` for reading; "-" reads standard input (named "<stdin>" in errors).
  // Returns kIoError (kNotFound when the file does not exist) on failure.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path);

  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line, without its "\n" or "\r\n". The view stays
  // valid until the next call. A last line without a newline is returned too.
  // Returns false at the end of the input; kParseError for a line longer than
  // kMaxLineBytes; kIoError for a read error or a truncated gzip stream.
  Result<bool> Next(std::string_view* line);

  // 1-based number of the line last returned (0 before the first).
  std::uint64_t line_number() const { return line_number_; }

  // Uncompressed bytes consumed so far.
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  LineReader(std::string path, void* gz);
  Status Fill();

  std::string path_;
  void* gz_;  // gzFile, opaque to keep zlib.h out of this header
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unread byte in buffer_
  size_t end_ = 0;    // one past the last valid byte in buffer_
  bool eof_ = false;
  std::uint64_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace gpucanary::importers
