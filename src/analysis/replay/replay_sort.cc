#include "analysis/replay/replay_sort.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <utility>

namespace gpucanary::analysis {
namespace {

constexpr std::size_t kReadRecords = (64u << 10) / sizeof(SortRecord);

std::string TempDir(const std::string& dir) {
  if (!dir.empty()) return dir;
  // $TMPDIR, else /tmp (the standard library reads the environment).
  std::error_code error;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(error);
  return error ? std::string("/tmp") : tmp.string();
}

// An unlinked read-write file in `dir`: O_TMPFILE where the file system has
// it, else mkstemp and unlink.
int OpenUnlinked(const std::string& dir) {
#ifdef O_TMPFILE
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
#endif
  std::string name = dir + "/gpucanary-replay-XXXXXX";
  const int tmp = ::mkostemp(name.data(), O_CLOEXEC);
  if (tmp >= 0) ::unlink(name.c_str());
  return tmp;
}

}  // namespace

SecondSorter::SecondSorter(SortOptions options)
    : options_(std::move(options)),
      run_records_(std::max<std::size_t>(1, options_.run_bytes / sizeof(SortRecord))) {
  run_.reserve(std::min<std::size_t>(run_records_, std::size_t{1} << 16));
}

SecondSorter::~SecondSorter() {
  if (fd_ >= 0) ::close(fd_);
}

Status SecondSorter::Add(std::uint32_t series, std::int64_t tick, double value) {
  if (!have_base_) {
    have_base_ = true;
    base_ = tick;
  }
  const std::int64_t second = tick - base_;
  if (second > std::numeric_limits<std::int32_t>::max() ||
      second < std::numeric_limits<std::int32_t>::min()) {
    return Status(StatusCode::kOutOfRange, "sample of second " + std::to_string(tick) +
                                               " is more than 2^31 s from the " +
                                               "first sample's, " + std::to_string(base_));
  }
  if (run_.size() == run_records_) GC_RETURN_IF_ERROR(Spill());
  run_.push_back(SortRecord{series, static_cast<std::int32_t>(second), value});
  ++records_;
  return Status::Ok();
}

// Stable sort of run_ by second: counting sort when the run's span of seconds
// is small against its size (every recording of scrapes), else a merge sort.
void SecondSorter::SortRun() {
  if (run_.size() < 2) return;
  auto [lo, hi] = std::minmax_element(
      run_.begin(), run_.end(),
      [](const SortRecord& a, const SortRecord& b) { return a.second < b.second; });
  const std::int64_t min = lo->second;
  const auto span = static_cast<std::uint64_t>(std::int64_t{hi->second} - min) + 1;
  if (span > std::max<std::uint64_t>(4 * run_.size(), 1u << 16)) {
    std::stable_sort(run_.begin(), run_.end(),
                     [](const SortRecord& a, const SortRecord& b) { return a.second < b.second; });
    return;
  }
  counts_.assign(span + 1, 0);
  for (const SortRecord& r : run_) ++counts_[static_cast<std::size_t>(r.second - min) + 1];
  for (std::size_t i = 1; i < counts_.size(); ++i) counts_[i] += counts_[i - 1];
  scratch_.resize(run_.size());
  for (const SortRecord& r : run_)
    scratch_[counts_[static_cast<std::size_t>(r.second - min)]++] = r;
  run_.swap(scratch_);
}

Status SecondSorter::Spill() {
  SortRun();
  if (fd_ < 0) {
    dir_ = TempDir(options_.dir);
    fd_ = OpenUnlinked(dir_);
    if (fd_ < 0) {
      return Status(StatusCode::kIoError, "cannot create a temporary file in " + dir_ +
                                              " to sort the recording: " + ErrnoMessage(errno) +
                                              " (set TMPDIR to another directory)");
    }
  }
  Run run;
  run.offset = file_bytes_;
  run.left = run_.size();
  const auto* data = reinterpret_cast<const char*>(run_.data());
  std::size_t size = run_.size() * sizeof(SortRecord);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, data, size, static_cast<off_t>(file_bytes_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Status(StatusCode::kIoError, "cannot write the sort's temporary file in " + dir_ +
                                              ": " + ErrnoMessage(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
    file_bytes_ += static_cast<std::uint64_t>(n);
  }
  runs_.push_back(std::move(run));
  run_.clear();
  return Status::Ok();
}

Status SecondSorter::Finish() {
  SortRun();
  for (Run& run : runs_) GC_RETURN_IF_ERROR(Refill(run));
  if (!run_.empty()) {
    Run last;
    last.buffer = std::move(run_);
    runs_.push_back(std::move(last));
    last_in_memory_ = true;
  }
  run_ = {};
  scratch_ = {};
  counts_ = {};
  return Status::Ok();
}

Status SecondSorter::Refill(Run& run) {
  run.pos = 0;
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(run.left, kReadRecords));
  run.buffer.resize(n);
  auto* data = reinterpret_cast<char*>(run.buffer.data());
  std::size_t size = n * sizeof(SortRecord);
  while (size > 0) {
    const ssize_t got = ::pread(fd_, data, size, static_cast<off_t>(run.offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return Status(StatusCode::kIoError, "cannot read the sort's temporary file in " + dir_ +
                                              ": " +
                                              (got == 0 ? "short file" : ErrnoMessage(errno)));
    }
    data += got;
    size -= static_cast<std::size_t>(got);
    run.offset += static_cast<std::uint64_t>(got);
  }
  run.left -= n;
  return Status::Ok();
}

Result<bool> SecondSorter::Next(std::int64_t& tick, std::vector<SortRecord>& records) {
  records.clear();
  bool any = false;
  std::int32_t t = 0;
  for (const Run& run : runs_) {
    if (run.pos < run.buffer.size() && (!any || run.buffer[run.pos].second < t)) {
      t = run.buffer[run.pos].second;
      any = true;
    }
  }
  if (!any) return false;
  for (Run& run : runs_) {
    while (run.pos < run.buffer.size() && run.buffer[run.pos].second == t) {
      records.push_back(run.buffer[run.pos++]);
      if (run.pos == run.buffer.size() && run.left > 0) GC_RETURN_IF_ERROR(Refill(run));
    }
  }
  tick = base_ + t;
  return true;
}

}  // namespace gpucanary::analysis
