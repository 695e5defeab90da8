// Opening the store and recovering what it held (docs/storage-format.md,
// "Recovery, step by step"): the LOCK, the sealed and active chunk segments,
// the checkpoint and the WAL segments after it, cutting torn tails. Runs in
// Open, before the store is shared (store_impl.h).

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <map>
#include <system_error>
#include <utility>

#include "core/mutex.h"
#include "store/bits.h"
#include "store/store_impl.h"

namespace gpucanary::store {

namespace fs = std::filesystem;

Status Store::Impl::Open() {
  std::error_code ec;
  fs::create_directories(dir_ / "wal", ec);
  fs::create_directories(dir_ / "chunks", ec);
  if (ec) return Status(StatusCode::kIoError, dir_.string() + ": " + ec.message());
  const fs::path lock = dir_ / "LOCK";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return Status(StatusCode::kIoError, lock.string() + ": " + ErrnoMessage(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status(StatusCode::kUnavailable,
                  dir_.string() + " is in use by another gpucanary (its LOCK is held)");
  }
  recovering_ = true;
  // Series reach the head out of ref order (the active segment names the
  // series it sealed chunks of, in sealing order; the checkpoint and the WAL
  // those below and above): the head indexes them once, at the end.
  head_.BeginBulkLoad();
  if (Status s = RecoverSegments(); !s.ok()) return s;
  if (Status s = RecoverWal(); !s.ok()) return s;
  head_.EndBulkLoad();
  recovering_ = false;
  {
    WriterMutexLock lock_mu(mu_);
    if (Status s = CheckpointLocked(); !s.ok()) return s;
  }
  if (options_.sync_interval_ms > 0) sync_thread_ = std::thread([this] { SyncLoop(); });
  return Status::Ok();
}

Status Store::Impl::RecoverSegments() {
  const fs::path chunks = dir_ / "chunks";
  std::vector<std::uint32_t> ids = NumberedFiles(chunks, "");
  // Index files without their segment are leftovers of a deletion.
  std::uint32_t active = ids.empty() ? 1 : ids.back();
  for (std::uint32_t id : ids) {
    if (id == active) break;
    auto seg = SealedSegment::Open(chunks, id, options_.log);
    if (!seg) {
      Log("store: segment " + SegmentFileName(id) +
          " unreadable, skipped: " + seg.error().message());
      continue;
    }
    sealed_.push_back(std::move(*seg));
  }
  // The active segment: scan it, cut a torn tail, attach its chunks to the
  // head series by ref.
  const fs::path path = chunks / SegmentFileName(active);
  std::uint64_t good = 0;
  if (fs::exists(path)) {
    auto scan = ReadLog(
        files_, path, kSegmentMagic,
        [&](std::uint8_t type, std::string_view payload, std::uint64_t offset) {
          AttachActiveRecord(type, payload, offset);
          return Status::Ok();
        },
        /*skip_damaged=*/true);
    if (!scan) {
      Log("store: " + path.string() + ": " + scan.error().message() + "; starting a new segment");
      active = active + 1;
    } else {
      good = scan->good_bytes;
      if (scan->skipped_records > 0) {
        Log("store: " + path.string() + ": skipped " + std::to_string(scan->skipped_bytes) +
            " damaged bytes from offset " + std::to_string(scan->first_skipped_offset) +
            " (the chunks there are lost; the records after them are kept)");
      }
      if (!scan->tail_error.empty()) {
        Log("store: " + path.string() + ": cut " + std::to_string(scan->file_bytes - good) +
            " bytes of torn tail at offset " + std::to_string(good) + " (" + scan->tail_error +
            ")");
      }
    }
  }
  return active_.Open(active, good);
}

// One record of the active segment found at open: a seg_series record
// creates its series in the head (by the ref the segment gives it), a
// seg_chunk record attaches the chunk to it. Malformed records are skipped.
void Store::Impl::AttachActiveRecord(std::uint8_t type, std::string_view payload,
                                     std::uint64_t offset) {
  std::size_t pos = 0;
  std::uint64_t ref = 0;
  if (!GetVarint(payload, pos, ref)) return;
  if (type == kSegSeriesRecord) {
    model::Labels labels;
    if (GetLabels(payload, pos, labels)) {
      HeadSeries& s = head_.Create(ref, labels);
      s.in_active_segment = true;
    }
    return;
  }
  ChunkLoc c;
  HeadSeries* s = head_.Find(ref);
  if (type != kSegChunkRecord || s == nullptr || !GetZVarint(payload, pos, c.mint) ||
      !GetZVarint(payload, pos, c.maxt)) {
    return;
  }
  c.offset = offset + pos;
  c.length = static_cast<std::uint32_t>(payload.size() - pos);
  s->active_chunks.push_back(c);
  s->last_t = std::max(s->last_t, c.maxt);
  active_.Extend(c.mint, c.maxt);
}

// A checkpoint is renamed into place only when whole: one that does not
// read to its end was damaged on disk, and the store refuses to guess.
Status Store::Impl::ReplayCheckpoint(std::uint32_t n) {
  const fs::path path = wal_.CheckpointPath(n);
  auto scan = wal_.ReadCheckpoint(
      n, [&](std::uint8_t type, std::string_view payload, std::uint64_t) NO_THREAD_SAFETY_ANALYSIS {
        CheckpointSeries cs;
        if (type != kCheckpointSeriesRecord || !DecodeCheckpointSeries(payload, cs)) {
          return Status(StatusCode::kParseError, path.string() + ": bad checkpoint record");
        }
        HeadSeries& s = head_.Create(cs.ref, cs.labels);
        if (cs.has_chunk) {
          std::vector<Sample> samples;
          if (Status st = DecodeChunk(cs.chunk, samples); !st.ok())
            return st.WithPrefix(path.string());
          for (const Sample& smp : samples) {
            if (smp.t > s.last_t) AppendToHead(s, smp.t, std::bit_cast<std::uint64_t>(smp.v));
          }
        }
        return Status::Ok();
      });
  if (!scan) return scan.error();
  if (!scan->tail_error.empty()) {
    return Status(StatusCode::kParseError,
                  path.string() + ": damaged checkpoint (" + scan->tail_error + ")");
  }
  return Status::Ok();
}

void Store::Impl::ReplayWalRecord(std::uint8_t type, std::string_view payload) {
  if (type == kSeriesRecord) {
    ForEachWalSeries(payload, [&](SeriesRef ref, const model::Labels& labels)
                                  NO_THREAD_SAFETY_ANALYSIS { head_.Create(ref, labels); });
  } else if (type == kSamplesRecord) {
    ForEachWalSample(payload, [&](std::int64_t ref, std::int64_t t,
                                  std::uint64_t bits) NO_THREAD_SAFETY_ANALYSIS {
      HeadSeries* s = ref >= 0 ? head_.Find(static_cast<SeriesRef>(ref)) : nullptr;
      // Samples not after the series' newest are already in a sealed chunk.
      if (s != nullptr && t > s->last_t) AppendToHead(*s, t, bits);
    });
  }
}

Status Store::Impl::RecoverWal() {
  std::vector<std::uint32_t> checkpoints = wal_.Checkpoints();
  std::uint32_t after = 0;
  // The newest whole checkpoint. One damaged on disk is set aside and the
  // one before it is used, with the WAL segments after it, which are kept
  // until a newer checkpoint is installed; when those are gone too, the
  // store refuses rather than guess what the damaged one held.
  while (!checkpoints.empty()) {
    const std::uint32_t n = checkpoints.back();
    checkpoints.pop_back();
    auto check = wal_.ReadCheckpoint(
        n, [](std::uint8_t, std::string_view, std::uint64_t) { return Status::Ok(); });
    if (check && check->tail_error.empty()) {
      after = n;
      if (Status s = ReplayCheckpoint(after); !s.ok()) return s;
      break;
    }
    const fs::path path = wal_.CheckpointPath(n);
    const std::string why = check ? check->tail_error : check.error().message();
    const std::uint32_t base = checkpoints.empty() ? 0 : checkpoints.back();
    const std::vector<std::uint32_t> segments = wal_.Segments();
    bool covered = true;  // every segment from base + 1 through n is there
    for (std::uint32_t k = base + 1; k <= n && covered; ++k) {
      covered = std::binary_search(segments.begin(), segments.end(), k);
    }
    if (!covered) {
      return Status(StatusCode::kParseError,
                    path.string() + ": damaged checkpoint (" + why +
                        "), and the WAL it covers is gone: moving it aside starts the store "
                        "without the series and samples only it held");
    }
    std::error_code ec;
    fs::rename(path, path.string() + ".damaged", ec);
    Log("store: " + path.string() + ": damaged checkpoint (" + why + "); set aside as " +
        path.filename().string() + ".damaged, recovering from " +
        (base == 0 ? std::string("the WAL alone")
                   : wal_.CheckpointPath(base).filename().string() + " and the WAL after it"));
  }
  std::uint32_t last = after;
  for (std::uint32_t n : wal_.Segments()) {
    if (n <= after) continue;
    last = n;
    const fs::path path = wal_.SegmentPath(n);
    auto scan =
        wal_.ReadSegment(n, [&](std::uint8_t type, std::string_view payload, std::uint64_t) {
          ReplayWalRecord(type, payload);
          return Status::Ok();
        });
    if (!scan) {
      Log("store: " + path.string() + ": " + scan.error().message() + ", skipped");
      continue;
    }
    if (!scan->tail_error.empty()) {
      Log("store: " + path.string() + ": cut " +
          std::to_string(scan->file_bytes - scan->good_bytes) + " bytes of torn tail at offset " +
          std::to_string(scan->good_bytes) + " (" + scan->tail_error + ")");
      // Cut it so the file ends at a record boundary.
      if (Status s = wal_.CutSegment(n, scan->good_bytes); !s.ok()) return s;
    }
  }
  if (Status s = FlushSegment(); !s.ok()) return s;
  return wal_.OpenSegment(last + 1);
}

}  // namespace gpucanary::store
