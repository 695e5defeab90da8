#include "expfmt/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace gpucanary::expfmt {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// Byte source over a plain file, gzip file or stdin. zlib's gzread reads plain
// files transparently, which is what we use for everything but stdin (whose
// tail we cannot look at before reading it).
class Source {
 public:
  virtual ~Source() = default;
  // Reads up to n bytes; 0 at end of input; -1 on error (message in error()).
  virtual std::int64_t Read(char* buf, std::size_t n) = 0;
  virtual std::string error() const = 0;
};

class GzSource final : public Source {
 public:
  explicit GzSource(gzFile f) : f_(f) { gzbuffer(f_, 256 * 1024); }
  ~GzSource() override { gzclose(f_); }
  std::int64_t Read(char* buf, std::size_t n) override {
    const int got = gzread(f_, buf, static_cast<unsigned>(n));
    return got;
  }
  std::string error() const override {
    int code = 0;
    const char* msg = gzerror(f_, &code);
    return code == Z_ERRNO ? ErrnoMessage(errno) : std::string(msg != nullptr ? msg : "gzip error");
  }

 private:
  gzFile f_;
};

Result<std::unique_ptr<Source>> OpenGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                 path + ": " + ErrnoMessage(errno));
  }
  return std::unique_ptr<Source>(std::make_unique<GzSource>(f));
}

// The last bytes of a file's uncompressed content, for format detection.
Result<std::string> ReadTail(const std::string& path, bool gzip) {
  constexpr std::size_t kTail = 64;
  if (!gzip) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Error(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                   path + ": " + ErrnoMessage(errno));
    }
    struct stat st {};
    std::string tail;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      const auto size = static_cast<std::size_t>(st.st_size);
      const std::size_t n = size < kTail ? size : kTail;
      tail.resize(n);
      const ssize_t got = ::pread(fd, tail.data(), n, static_cast<off_t>(size - n));
      tail.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    }
    ::close(fd);
    return tail;
  }
  // gzip: the uncompressed tail is only known after inflating the whole stream.
  auto src = OpenGz(path);
  if (!src) return Error(src.error());
  std::string window;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const std::int64_t got = (*src)->Read(buf.data(), buf.size());
    if (got < 0) return Error(StatusCode::kIoError, path + ": " + (*src)->error());
    if (got == 0) break;
    window.append(buf.data(), static_cast<std::size_t>(got));
    if (window.size() > kTail) window.erase(0, window.size() - kTail);
  }
  return window;
}

}  // namespace

Format DetectFormat(std::string_view name, std::string_view tail) {
  if (EndsWith(name, ".om") || EndsWith(name, ".om.gz")) return Format::kOpenMetrics;
  std::string_view t = tail;
  if (!t.empty() && t.back() == '\n') t.remove_suffix(1);
  if (t == "# EOF" || EndsWith(t, "\n# EOF")) return Format::kOpenMetrics;
  return Format::kPrometheusText;
}

ExpositionReader::ExpositionReader(Format format, std::string name, const ReadOptions& options,
                                   SampleCallback callback)
    : options_(options),
      parser_(std::string_view(), format),
      validator_(format),
      callback_(std::move(callback)) {
  report_.name = std::move(name);
  report_.format = format;
}

void ExpositionReader::Report(std::uint64_t line, std::uint32_t column,
                              const std::string& message) {
  ++report_.bad_lines;
  if (report_.messages.size() < options_.max_messages) {
    ParseError e{line, column, message};
    report_.messages.push_back(e.Format(report_.name));
  }
  if (!options_.skip_bad_lines) {
    stop_ = true;
    report_.stopped_early = true;
  }
}

bool ExpositionReader::Feed(std::string_view lines, bool last) {
  (void)last;
  if (stop_) return false;
  report_.bytes += lines.size();
  parser_.Reset(lines, next_line_);
  Violation v;
  for (;;) {
    const Entry entry = parser_.Next();
    if (entry == Entry::kEnd) break;
    switch (entry) {
      case Entry::kSample:
        if (validator_.OnSample(parser_.sample(), parser_.line(), v)) {
          if (callback_) {
            callback_(parser_.sample(), validator_.current_family(), validator_.current_type());
          }
        } else {
          Report(v.line != 0 ? v.line : parser_.line(), 1, v.message);
          v = Violation{};
        }
        break;
      case Entry::kMetadata:
        if (!validator_.OnMetadata(parser_.metadata(), parser_.line(), v)) {
          Report(v.line != 0 ? v.line : parser_.line(), 1, v.message);
          v = Violation{};
        }
        break;
      case Entry::kError:
        Report(parser_.error().line, parser_.error().column, parser_.error().message);
        break;
      default:
        break;
    }
    if (validator_.has_deferred()) {
      for (const Violation& d : validator_.TakeDeferred()) Report(d.line, 1, d.message);
    }
    if (stop_) break;
  }
  next_line_ = parser_.next_line();
  report_.lines = next_line_ - 1;
  return !stop_;
}

ReadReport ExpositionReader::Finish() {
  if (!stop_) {
    Violation v;
    const bool ended = validator_.OnEnd(parser_.eof_seen(), v);
    for (const Violation& d : validator_.TakeDeferred()) Report(d.line, 1, d.message);
    if (!ended && !stop_) {
      Report(report_.lines + (report_.lines == 0 ? 1 : 0), 1, v.message);
    }
  }
  report_.stats = validator_.stats();
  return std::move(report_);
}

ReadReport ReadBuffer(std::string_view text, Format format, std::string name,
                      const ReadOptions& options, const SampleCallback& callback) {
  ExpositionReader reader(format, std::move(name), options, callback);
  reader.Feed(text, true);
  return reader.Finish();
}

Result<ReadReport> ReadFile(const std::string& path, const ReadOptions& options,
                            const SampleCallback& callback) {
  const bool is_stdin = path == "-";
  const bool gzip = EndsWith(path, ".gz");
  std::unique_ptr<Source> src;
  std::string pending;  // stdin content, read before its format is known
  Format format = Format::kPrometheusText;
  if (is_stdin) {
    std::vector<char> buf(1 << 16);
    for (;;) {
      const ssize_t got = ::read(STDIN_FILENO, buf.data(), buf.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Error(StatusCode::kIoError, "<stdin>: " + ErrnoMessage(errno));
      if (got == 0) break;
      pending.append(buf.data(), static_cast<std::size_t>(got));
    }
    format = options.format ? *options.format : DetectFormat("", pending);
  } else {
    if (options.format) {
      format = *options.format;
    } else {
      auto tail = ReadTail(path, gzip);
      if (!tail) return Error(tail.error());
      format = DetectFormat(path, *tail);
    }
    auto opened = OpenGz(path);
    if (!opened) return Error(opened.error());
    src = std::move(*opened);
  }

  ExpositionReader reader(format, is_stdin ? "<stdin>" : path, options, callback);
  if (is_stdin) {
    reader.Feed(pending, true);
    return reader.Finish();
  }
  std::vector<char> buf(options.chunk_bytes);
  std::size_t have = 0;
  for (;;) {
    if (have == buf.size()) {
      if (buf.size() >= options.max_line_bytes) {
        return Error(
            StatusCode::kParseError,
            path + ": a line is longer than " + std::to_string(options.max_line_bytes) + " bytes");
      }
      buf.resize(buf.size() * 2);
    }
    const std::int64_t got = src->Read(buf.data() + have, buf.size() - have);
    if (got < 0) return Error(StatusCode::kIoError, path + ": " + src->error());
    const bool eof = got == 0;
    have += static_cast<std::size_t>(got);
    std::size_t cut = have;
    if (!eof) {
      const char* data = buf.data();
      while (cut > 0 && data[cut - 1] != '\n') --cut;
      if (cut == 0) continue;  // no complete line yet: read more (buffer grows)
    }
    const bool more = reader.Feed(std::string_view(buf.data(), cut), eof);
    if (!more || eof) break;
    std::memmove(buf.data(), buf.data() + cut, have - cut);
    have -= cut;
  }
  return reader.Finish();
}

}  // namespace gpucanary::expfmt
