#include "remote/wal_watcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "store/file.h"
#include "store/record_log.h"
#include "store/segment.h"
#include "store/wal.h"
#include "store/wal_record.h"

namespace gpucanary::remote {

namespace fs = std::filesystem;

namespace {

// Bytes read from a segment per read(2); a record larger than this is read
// in several.
constexpr std::size_t kReadBytes = 4U << 20;

std::uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const std::uintmax_t n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

}  // namespace

std::string FormatPosition(const WalPosition& p) {
  return store::SegmentFileName(p.segment) + ":" + std::to_string(p.offset) + ":" +
         std::to_string(p.index);
}

WalWatcher::WalWatcher(fs::path dir) : dir_(std::move(dir)) {}

WalWatcher::~WalWatcher() {
  if (fd_ >= 0) ::close(fd_);
}

WalPosition WalWatcher::End(const fs::path& dir) {
  const std::vector<std::uint32_t> segments = store::NumberedFiles(dir, "");
  if (segments.empty()) return {};
  const std::uint32_t n = segments.back();
  return {n, FileSize(dir / store::SegmentFileName(n)), 0};
}

std::uint32_t WalWatcher::OldestSegment(const fs::path& dir) {
  const std::vector<std::uint32_t> segments = store::NumberedFiles(dir, "");
  return segments.empty() ? 0 : segments.front();
}

Status WalWatcher::OpenSegment(std::uint32_t n) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  const fs::path path = dir_ / store::SegmentFileName(n);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status(StatusCode::kIoError, path.string() + ": " + ErrnoMessage(errno));
  }
  fd_ = fd;
  segment_ = n;
  file_offset_ = 0;
  buf_.clear();
  parsed_ = 0;
  resume_index_ = 0;
  return Status::Ok();
}

Status WalWatcher::Start(const WalPosition& from, Handler& handler) {
  // The series of the newest checkpoint that can be read: samples in the
  // segments after it name series it holds.
  std::vector<std::uint32_t> checkpoints = store::NumberedFiles(dir_, "checkpoint.");
  while (!checkpoints.empty()) {
    const fs::path path = dir_ / ("checkpoint." + store::SegmentFileName(checkpoints.back()));
    checkpoints.pop_back();
    auto scan = store::ReadLog(store::PosixFileSystem(), path, store::kCheckpointMagic,
                               [&](std::uint8_t type, std::string_view payload, std::uint64_t) {
                                 store::CheckpointSeries series;
                                 if (type == store::kCheckpointSeriesRecord &&
                                     store::DecodeCheckpointSeries(payload, series)) {
                                   handler.Series(series.ref, series.labels);
                                 }
                                 return Status::Ok();
                               });
    if (scan && scan->tail_error.empty()) break;
  }
  const std::uint32_t oldest = OldestSegment(dir_);
  skip_until_ = from;
  if (oldest == 0) {
    segment_ = from.segment;
    return Status::Ok();
  }
  if (from.segment != 0 && from.segment < oldest) {
    handler.Lost("WAL segments " + store::SegmentFileName(from.segment) + " to " +
                 store::SegmentFileName(oldest - 1) + " were deleted before they were read");
    skip_until_ = {oldest, 0, 0};
  }
  // Series records before `from` are read too (their samples are skipped).
  return OpenSegment(oldest);
}

Result<std::size_t> WalWatcher::ReadMore() {
  if (parsed_ > 0) {
    buf_.erase(0, parsed_);
    file_offset_ += parsed_;
    parsed_ = 0;
  }
  const std::size_t had = buf_.size();
  buf_.resize(had + kReadBytes);
  for (;;) {
    const ssize_t n =
        ::pread(fd_, buf_.data() + had, kReadBytes, static_cast<off_t>(file_offset_ + had));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      buf_.resize(had);
      return Error(StatusCode::kIoError,
                   (dir_ / store::SegmentFileName(segment_)).string() + ": " + ErrnoMessage(errno));
    }
    buf_.resize(had + static_cast<std::size_t>(n));
    return static_cast<std::size_t>(n);
  }
}

bool WalWatcher::ParseBuffered(Handler& handler) {
  const std::string_view data(buf_);
  if (file_offset_ == 0 && parsed_ == 0) {
    if (data.size() < store::kWalMagic.size()) return true;  // the header is being written
    if (data.substr(0, store::kWalMagic.size()) != store::kWalMagic) {
      handler.Lost("WAL segment " + store::SegmentFileName(segment_) +
                   " does not start with the WAL's magic: skipped");
      parsed_ = data.size();
      return true;
    }
    parsed_ = store::kWalMagic.size();
  }
  while (parsed_ < data.size()) {
    store::RecordView record;
    if (!store::CheckRecordAt(data, parsed_, &record).empty()) return true;  // not whole yet
    const std::uint64_t offset = file_offset_ + parsed_;
    if (record.type == store::kSeriesRecord) {
      store::ForEachWalSeries(record.payload, [&](store::SeriesRef ref, const model::Labels& l) {
        handler.Series(ref, l);
      });
    } else if (record.type == store::kSamplesRecord &&
               WalPosition{segment_, offset, UINT32_MAX} >= skip_until_) {
      std::uint32_t index = 0;
      bool stopped = false;
      store::ForEachWalSample(
          record.payload, [&](std::int64_t ref, std::int64_t t, std::uint64_t bits) {
            const std::uint32_t i = index++;
            if (stopped || i < resume_index_) return;
            const WalPosition pos{segment_, offset, i};
            if (pos < skip_until_ || ref < 0) return;
            if (!handler.Sample(static_cast<store::SeriesRef>(ref), t, bits, pos)) {
              resume_index_ = i;
              stopped = true;
            }
          });
      if (stopped) return false;
    }
    resume_index_ = 0;
    parsed_ += store::kRecordOverhead + record.payload.size();
  }
  return true;
}

Result<bool> WalWatcher::Poll(Handler& handler) {
  for (;;) {
    if (fd_ < 0) {
      const std::vector<std::uint32_t> segments = store::NumberedFiles(dir_, "");
      auto it = std::lower_bound(segments.begin(), segments.end(), segment_);
      if (it == segments.end()) return true;
      if (Status s = OpenSegment(*it); !s.ok()) return Error(s);
    }
    if (!ParseBuffered(handler)) return false;
    // Whether the store has moved to a newer segment, asked before reading:
    // once it has, nothing more is written to this one.
    const std::vector<std::uint32_t> segments = store::NumberedFiles(dir_, "");
    auto next = std::upper_bound(segments.begin(), segments.end(), segment_);
    auto n = ReadMore();
    if (!n) return Error(n.error());
    if (*n > 0) continue;
    if (next == segments.end()) return true;  // caught up
    if (parsed_ < buf_.size()) {
      handler.Lost(std::to_string(buf_.size() - parsed_) + " bytes at the end of WAL segment " +
                   store::SegmentFileName(segment_) + " are not a whole record (a torn write)");
    }
    if (*next != segment_ + 1) {
      handler.Lost("WAL segments " + store::SegmentFileName(segment_ + 1) + " to " +
                   store::SegmentFileName(*next - 1) + " were deleted before they were read");
    }
    if (Status s = OpenSegment(*next); !s.ok()) return Error(s);
  }
}

WalPosition WalWatcher::position() const {
  const WalPosition here{segment_, file_offset_ + parsed_, resume_index_};
  return std::max(here, skip_until_);
}

std::uint64_t WalWatcher::BytesBehind() const {
  std::uint64_t behind = 0;
  for (std::uint32_t n : store::NumberedFiles(dir_, "")) {
    if (n < segment_) continue;
    behind += FileSize(dir_ / store::SegmentFileName(n));
  }
  const std::uint64_t done = file_offset_ + parsed_;
  return behind > done ? behind - done : 0;
}

}  // namespace gpucanary::remote
