#include "store/wal.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "store/segment.h"
#include "store/wal_record.h"

namespace gpucanary::store {

namespace fs = std::filesystem;

std::vector<std::uint32_t> NumberedFiles(const fs::path& dir, std::string_view prefix) {
  std::vector<std::uint32_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != prefix.size() + 8 || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::uint32_t n = 0;
    bool digits = true;
    for (std::size_t i = prefix.size(); i < name.size(); ++i) {
      digits = digits && name[i] >= '0' && name[i] <= '9';
      n = n * 10 + static_cast<std::uint32_t>(name[i] - '0');
    }
    if (digits) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path Wal::SegmentPath(std::uint32_t n) const { return dir_ / SegmentFileName(n); }

fs::path Wal::CheckpointPath(std::uint32_t n) const {
  return dir_ / ("checkpoint." + SegmentFileName(n));
}

Result<LogScan> Wal::ReadSegment(std::uint32_t n, const RecordFn& fn) const {
  return ReadLog(files_, SegmentPath(n), kWalMagic, fn);
}

Result<LogScan> Wal::ReadCheckpoint(std::uint32_t n, const RecordFn& fn) const {
  return ReadLog(files_, CheckpointPath(n), kCheckpointMagic, fn);
}

Status Wal::CutSegment(std::uint32_t n, std::uint64_t size) {
  auto cut = LogFile::Open(files_, SegmentPath(n), kWalMagic, size);
  return cut ? Status::Ok() : cut.error();
}

Status Wal::OpenSegment(std::uint32_t n) {
  auto f = LogFile::Open(files_, SegmentPath(n), kWalMagic, 0);
  if (!f) return f.error();
  file_ = std::move(*f);
  id_ = n;
  return Status::Ok();
}

void Wal::QueueSeries(SeriesRef ref, const model::Labels& labels) {
  AppendSeriesRecord(pending_series_, ref, labels);
}

Status Wal::WriteBatch(std::string_view samples_payload) {
  std::string records;
  records.swap(pending_series_);
  const std::size_t series_bytes = records.size();
  if (!samples_payload.empty()) AppendRecord(records, kSamplesRecord, samples_payload);
  if (records.empty()) return Status::Ok();
  if (Status s = file_.Write(records); !s.ok()) {
    // The series stay; their records must still reach the WAL first.
    records.resize(series_bytes);
    pending_series_.insert(0, records);
    return s;
  }
  since_checkpoint_ += records.size();
  return Status::Ok();
}

Status Wal::InstallCheckpoint(std::uint32_t covers, std::string_view bytes) {
  if (Status s = WriteFileAtomic(CheckpointPath(covers), bytes); !s.ok()) return s;
  pending_series_.clear();
  if (Status s = OpenSegment(covers + 1); !s.ok()) return s;
  since_checkpoint_ = 0;
  // The previous checkpoint and the WAL segments after it stay until the
  // next checkpoint: should this one be damaged on disk, recovery falls back
  // to them (docs/storage-format.md, "Recovery").
  std::uint32_t previous = 0;
  for (std::uint32_t n : Checkpoints()) {
    if (n < covers) previous = std::max(previous, n);
  }
  std::error_code ec;
  // Segments a reader of the WAL still needs (remote_write out) stay while
  // they fit in keep_max_bytes_; past that the oldest go, logged.
  const std::uint32_t keep = keep_from_ ? keep_from_() : UINT32_MAX;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> kept;  // number, bytes
  std::uint64_t kept_bytes = 0;
  for (std::uint32_t n : Segments()) {
    if (n > previous) continue;
    if (n < keep) {
      fs::remove(SegmentPath(n), ec);
      continue;
    }
    const std::uintmax_t size = fs::file_size(SegmentPath(n), ec);
    const std::uint64_t segment_bytes = ec ? 0 : static_cast<std::uint64_t>(size);
    kept.emplace_back(n, segment_bytes);
    kept_bytes += segment_bytes;
  }
  for (const auto& [n, segment_bytes] : kept) {
    if (kept_bytes <= keep_max_bytes_) break;
    fs::remove(SegmentPath(n), ec);
    kept_bytes -= segment_bytes;
    if (log_) {
      log_("store: WAL segment " + SegmentFileName(n) +
           " deleted before a remote_write reader had read it: the segments kept for readers "
           "exceeded " +
           std::to_string(keep_max_bytes_) + " bytes");
    }
  }
  for (std::uint32_t n : Checkpoints()) {
    if (n < previous) fs::remove(CheckpointPath(n), ec);
  }
  return Status::Ok();
}

}  // namespace gpucanary::store
