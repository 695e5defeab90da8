#include "analysis/replay/replay_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include "dcgm/fields.h"

namespace gpucanary::analysis {
namespace {

constexpr std::size_t kMaxLineBytes = 64u << 20;

Status OpenError(const std::string& path) {
  const int e = errno;
  return Status(e == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                path + ": " + ErrnoMessage(e));
}

// The last bytes of the uncompressed content, for expfmt::DetectFormat (as
// expfmt::ReadFile does it: a gzip stream is inflated once to reach its end).
Result<std::string> ReadTail(const std::string& path) {
  constexpr std::size_t kTail = 64;
  if (!path.ends_with(".gz")) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(OpenError(path));
    struct stat st {};
    std::string tail;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      const auto size = static_cast<std::size_t>(st.st_size);
      const std::size_t n = std::min(size, kTail);
      tail.resize(n);
      const ssize_t got = ::pread(fd, tail.data(), n, static_cast<off_t>(size - n));
      tail.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    }
    ::close(fd);
    return tail;
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Error(OpenError(path));
  std::string window;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int got = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (got < 0) {
      gzclose(f);
      return Error(StatusCode::kIoError, path + ": corrupt gzip stream");
    }
    if (got == 0) break;
    window.append(buf.data(), static_cast<std::size_t>(got));
    if (window.size() > kTail) window.erase(0, window.size() - kTail);
  }
  gzclose(f);
  return window;
}

}  // namespace

Result<std::unique_ptr<ReplaySource>> ReplaySource::Open(const ReplayInput& input, int index,
                                                         const ReplayOptions& options,
                                                         SeriesSink& sink) {
  if (input.path == "-") {
    return Error(StatusCode::kInvalidArgument, "replay reads files, not standard input");
  }
  expfmt::Format format = expfmt::Format::kOpenMetrics;
  if (input.format) {
    format = *input.format;
  } else {
    auto tail = ReadTail(input.path);
    if (!tail) return Error(tail.error());
    format = expfmt::DetectFormat(input.path, *tail);
  }
  gzFile f = gzopen(input.path.c_str(), "rb");
  if (f == nullptr) return Error(OpenError(input.path));
  gzbuffer(f, 256 * 1024);
  return std::unique_ptr<ReplaySource>(new ReplaySource(input, index, format, f, options, sink));
}

ReplaySource::ReplaySource(const ReplayInput& input, int index, expfmt::Format format, gzFile file,
                           const ReplayOptions& options, SeriesSink& sink)
    : path_(input.path),
      index_(index),
      window_(std::max(0, options.reorder_window_s)),
      file_(file),
      sink_(sink),
      reader_(format, input.path, expfmt::ReadOptions{},
              [this](const expfmt::SampleView& s, std::string_view family, model::MetricType type) {
                OnSample(s, family, type);
              }),
      buffer_(std::max<std::size_t>(options.chunk_bytes, 4096)) {
  if (std::find(options.sort_inputs.begin(), options.sort_inputs.end(), index) !=
      options.sort_inputs.end()) {
    sorter_ = std::make_unique<SecondSorter>(
        SortOptions{.run_bytes = options.sort_run_bytes, .dir = options.sort_dir});
  }
}

ReplaySource::~ReplaySource() { gzclose(file_); }

void TickSource::Recycle(std::vector<PendingSample>&& samples) {
  samples.clear();
  spare_.push_back(std::move(samples));
}

std::string ReplaySource::Where(const char* position) const {
  const char* begin = chunk_.data();
  const char* end = begin + chunk_.size();
  if (position < begin || position > end) position = begin;  // name not in the chunk (escaped)
  const char* line_start = position;
  while (line_start > begin && line_start[-1] != '\n') --line_start;
  const auto offset = chunk_offset_ + static_cast<std::uint64_t>(line_start - begin);
  return path_ + ":" + std::to_string(LineAt(offset)) + ":" +
         std::to_string(position - line_start + 1);
}

// Line numbers are only needed for an error, so they are not tracked while
// reading: the file is read again up to the offset and its line breaks counted.
std::uint64_t ReplaySource::LineAt(std::uint64_t offset) const {
  std::uint64_t line = 1;
  gzFile f = gzopen(path_.c_str(), "rb");
  if (f == nullptr) return line;
  std::vector<char> buf(1 << 16);
  while (offset > 0) {
    const int got =
        gzread(f, buf.data(), static_cast<unsigned>(std::min<std::uint64_t>(buf.size(), offset)));
    if (got <= 0) break;
    line += static_cast<std::uint64_t>(std::count(buf.data(), buf.data() + got, '\n'));
    offset -= static_cast<std::uint64_t>(got);
  }
  gzclose(f);
  return line;
}

void ReplaySource::OnSample(const expfmt::SampleView& sample, std::string_view family,
                            model::MetricType type) {
  if (!error_.ok()) return;
  ReplayStats& stats = sink_.mutable_stats();
  ++stats.samples;
  if (!sample.has_timestamp()) {
    error_ = Status(StatusCode::kParseError,
                    Where(sample.name.data()) +
                        ": sample without a timestamp; a recording needs one on every sample "
                        "(DESIGN.md §4)");
    return;
  }
  // The series key is the name and the raw label block, contiguous in the
  // line unless the parser had to copy the name.
  std::string_view key = sample.name;
  if (!sample.label_text.empty()) {
    if (sample.name.data() + sample.name.size() == sample.label_text.data()) {
      key = std::string_view(sample.name.data(), sample.name.size() + sample.label_text.size());
    } else {
      key_scratch_.assign(sample.name).append(sample.label_text);
      key = key_scratch_;
    }
  }
  const std::uint64_t hash =
      FlatHashMap<std::uint32_t>::NonZero(XXH3_64bits(key.data(), key.size()));
  bool inserted = false;
  std::uint32_t& slot = series_ids_.FindOrInsert(hash, inserted);
  if (inserted) {
    Result<std::uint32_t> id = sink_.AddSeries(index_, sample, family, type);
    if (!id) {
      error_ = Status(id.error().code(), Where(sample.name.data()) + ": " + id.error().message());
      return;
    }
    slot = *id;
  }
  const std::uint32_t series = slot;
  if (series == kIgnoredSeries) {
    ++stats.ignored;
    return;
  }
  const double value = sample.value;
  if (std::isnan(value) || dcgm::IsBlankSentinel(value)) {
    ++stats.missing;  // no data, never zero
    return;
  }
  const std::int64_t tick = TickOfMs(sample.timestamp_ms);
  if (sorter_ != nullptr) {
    // Any order: the increase is computed when the second is filed, in the
    // sorted order (each series' samples keep their file order, its time order).
    if (Status st = sorter_->Add(series, tick, value); !st.ok()) {
      error_ = Status(st.code(), Where(sample.name.data()) + ": " + st.message());
    }
    return;
  }
  if (max_tick_ != kNoTick && tick < max_tick_ - window_) {
    error_ = Status(StatusCode::kParseError,
                    Where(sample.name.data()) + ": sample of second " + std::to_string(tick) +
                        " comes after one of second " + std::to_string(max_tick_) +
                        ", more than the reorder window (" + std::to_string(window_) +
                        " s); a recording must be time-blocked (DESIGN.md §4)");
    out_of_order_ = true;
    return;
  }
  max_tick_ = std::max(max_tick_, tick);
  File(tick, PendingSample{series, value, sink_.Observe(series, value)});
}

void TickSource::File(std::int64_t tick, const PendingSample& sample) {
  // Nearly always the newest tick; an older one (within the window, or a
  // store slice filed series by series) is found by bisection.
  auto it = pending_.end();
  if (it != pending_.begin() && std::prev(it)->tick > tick) {
    it = std::upper_bound(pending_.begin(), pending_.end(), tick,
                          [](std::int64_t t, const PendingTick& p) { return t < p.tick; });
  }
  if (it == pending_.begin() || std::prev(it)->tick != tick) {
    PendingTick fresh;
    fresh.tick = tick;
    if (!spare_.empty()) {
      fresh.samples = std::move(spare_.back());
      spare_.pop_back();
    }
    it = pending_.insert(it, std::move(fresh));
    ++it;
  }
  std::prev(it)->samples.push_back(sample);
}

Status ReplaySource::ReadChunk() {
  if (eof_) return Status::Ok();
  if (!error_.ok()) return error_;
  if (sorter_ == nullptr) {
    Status st = ParseChunk();
    eof_ = parsed_;
    return st;
  }
  while (!parsed_) {
    if (Status st = ParseChunk(); !st.ok()) return st;
  }
  return FileSortedSecond();
}

Status ReplaySource::FileSortedSecond() {
  std::int64_t tick = kNoTick;
  Result<bool> more = sorter_->Next(tick, second_);
  if (!more) {
    error_ = Status(more.error().code(), path_ + ": " + more.error().message());
    return error_;
  }
  if (!*more) {
    eof_ = true;
    return Status::Ok();
  }
  for (const SortRecord& r : second_) {
    File(tick, PendingSample{r.series, r.value, sink_.Observe(r.series, r.value)});
  }
  max_tick_ = tick;
  return Status::Ok();
}

Status ReplaySource::ParseChunk() {
  if (have_ == buffer_.size()) {
    if (buffer_.size() >= kMaxLineBytes) {
      error_ = Status(StatusCode::kParseError, path_ + ":" + std::to_string(LineAt(bytes_)) +
                                                   ":1: a line is longer than " +
                                                   std::to_string(kMaxLineBytes) + " bytes");
      return error_;
    }
    buffer_.resize(buffer_.size() * 2);
  }
  const int got =
      gzread(file_, buffer_.data() + have_, static_cast<unsigned>(buffer_.size() - have_));
  if (got < 0) {
    int code = 0;
    const char* msg = gzerror(file_, &code);
    error_ = Status(StatusCode::kIoError,
                    path_ + ": " + (code == Z_ERRNO ? ErrnoMessage(errno) : std::string(msg)));
    return error_;
  }
  const bool eof = got == 0;
  have_ += static_cast<std::size_t>(got);
  std::size_t cut = have_;
  if (!eof) {
    const void* nl = memrchr(buffer_.data(), '\n', have_);
    if (nl == nullptr) return Status::Ok();  // no whole line yet: read more next time
    cut = static_cast<std::size_t>(static_cast<const char*>(nl) - buffer_.data()) + 1;
  }
  chunk_ = std::string_view(buffer_.data(), cut);
  chunk_offset_ = bytes_;
  bytes_ += cut;
  sink_.mutable_stats().bytes += cut;
  const bool more = reader_.Feed(chunk_, eof);
  chunk_ = {};
  if (!error_.ok()) return error_;
  if (!more) {
    const expfmt::ReadReport report = reader_.Finish();
    error_ = Status(StatusCode::kParseError,
                    report.messages.empty() ? path_ + ": invalid input" : report.messages.front());
    return error_;
  }
  std::memmove(buffer_.data(), buffer_.data() + cut, have_ - cut);
  have_ -= cut;
  if (eof) return Finish();
  return Status::Ok();
}

Status ReplaySource::Finish() {
  parsed_ = true;
  if (bytes_ == 0) {
    error_ = Status(StatusCode::kParseError, path_ + ": empty file: no samples to replay");
    return error_;
  }
  const expfmt::ReadReport report = reader_.Finish();
  if (!report.ok()) {
    error_ = Status(StatusCode::kParseError,
                    report.messages.empty() ? path_ + ": invalid input" : report.messages.front());
    return error_;
  }
  if (report.stats.samples == 0) {
    error_ = Status(StatusCode::kParseError, path_ + ": no samples to replay");
    return error_;
  }
  if (sorter_ != nullptr) {
    if (Status st = sorter_->Finish(); !st.ok()) {
      error_ = Status(st.code(), path_ + ": " + st.message());
      return error_;
    }
  }
  return Status::Ok();
}

}  // namespace gpucanary::analysis
