#include "store/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "store/bits.h"
#include "store/postings.h"
#include "store/record_log.h"
#include "store/segment.h"

namespace gpucanary::store {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kWalMagic = "GCWAL001";
constexpr std::string_view kCheckpointMagic = "GCCKPT01";
constexpr std::uint8_t kSeriesRecord = 1;
constexpr std::uint8_t kSamplesRecord = 2;
constexpr std::uint8_t kCheckpointSeriesRecord = 3;
constexpr std::size_t kMaxLoadedIndexes = 8;
constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

// The numbered files in a folder ("00000012", "checkpoint.00000011"), sorted.
std::vector<std::uint32_t> Numbered(const fs::path& dir, std::string_view prefix) {
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

std::uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

struct HeadSeries {
  SeriesRef ref = 0;
  SymLabels labels;
  std::uint64_t hash = 0;
  std::vector<ChunkLoc> active_chunks;  // sealed into the active segment
  bool in_active_segment = false;       // its seg_series record is there
  OpenChunk open;
  std::int64_t last_t = kNoTime;  // newest sample, sealed or open
  std::uint64_t last_bits = 0;
  // The newest sample accepted in the commit numbered `batch` (in-batch order
  // checks without a map per commit).
  std::uint64_t batch = 0;
  std::int64_t batch_t = kNoTime;
  std::uint64_t batch_bits = 0;
};

struct PendingSample {
  SeriesRef ref;
  std::int64_t t;
  std::uint64_t bits;
};

}  // namespace

class Store::Impl {
 public:
  Impl(fs::path dir, StoreOptions options) : dir_(std::move(dir)), options_(std::move(options)) {}
  ~Impl();

  Status Open();
  Result<SeriesRef> GetOrCreate(const Labels& labels);
  bool Exists(SeriesRef ref) const;
  Result<CommitResult> Commit(const std::vector<PendingSample>& batch);
  Result<QueryResult> Query(const std::vector<Matcher>& matchers, std::int64_t mint,
                            std::int64_t maxt) const;
  Status ApplyRetention(std::int64_t now_ms);
  Status Checkpoint();
  Status Sync();
  StoreStats Stats() const;
  const fs::path& dir() const { return dir_; }

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  fs::path WalPath(std::uint32_t n) const { return dir_ / "wal" / SegmentFileName(n); }
  fs::path CheckpointPath(std::uint32_t n) const {
    return dir_ / "wal" / ("checkpoint." + SegmentFileName(n));
  }

  HeadSeries* Find(SeriesRef ref) {
    auto it = series_.find(ref);
    return it == series_.end() ? nullptr : it->second.get();
  }
  HeadSeries& Create(SeriesRef ref, const Labels& labels);
  void AppendToHead(HeadSeries& s, std::int64_t t, std::uint64_t bits);
  void Seal(HeadSeries& s);
  Status FlushSegment();
  Status RotateSegmentIfDue();
  Status OpenActiveSegment(std::uint32_t id, std::uint64_t size);
  Status MapActive();
  Status OpenWal(std::uint32_t n);
  Status CheckpointLocked();
  Status RecoverSegments();
  Status RecoverWal();
  void RebuildIndex();
  void TrimIndexCache() const;
  std::shared_lock<std::shared_mutex> ReadLock() const {
    return std::shared_lock<std::shared_mutex>(mu_);
  }
  void SyncLoop();

  const fs::path dir_;
  const StoreOptions options_;
  int lock_fd_ = -1;

  mutable std::shared_mutex mu_;
  // Head.
  Symbols symbols_;
  std::unordered_map<SeriesRef, std::unique_ptr<HeadSeries>> series_;
  SeriesRef next_ref_ = 1;
  std::atomic<SeriesRef> published_next_ref_{1};  // next_ref_, for lock-free readers
  std::unordered_map<std::uint64_t, std::vector<SeriesRef>> by_hash_;
  Postings postings_;
  std::vector<std::uint64_t> live_refs_;
  std::size_t live_series_ = 0;
  std::string pending_series_records_;  // WAL series records not yet written

  // Chunk segments.
  std::vector<std::unique_ptr<SealedSegment>> sealed_;  // by id
  LogFile active_;
  // Read-only mapping of the active segment, longer than the file (room to
  // grow); queries hold it while they read.
  std::shared_ptr<const Mapping> active_map_;
  std::uint32_t active_id_ = 0;
  std::int64_t active_mint_ = kNoTime;
  std::int64_t active_maxt_ = kNoTime;
  std::string segment_buffer_;  // records not yet written to active_

  // WAL.
  LogFile wal_;
  std::uint32_t wal_id_ = 0;
  std::uint64_t wal_since_checkpoint_ = 0;
  bool recovering_ = false;
  std::uint64_t commits_ = 0;
  std::vector<const PendingSample*> accepted_;  // Commit's scratch
  std::string wal_payload_;

  // Counters.
  std::uint64_t samples_appended_ = 0;
  std::uint64_t samples_rejected_ = 0;
  std::uint64_t chunks_sealed_ = 0;
  std::uint64_t chunk_bytes_ = 0;
  std::uint64_t chunk_samples_ = 0;

  mutable std::mutex cache_mu_;
  mutable std::vector<const SealedSegment*> index_lru_;  // most recent last

  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool stopping_ = false;
  std::thread sync_thread_;
};

// --- Opening and recovery.

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
  if (Status s = RecoverSegments(); !s.ok()) return s;
  if (Status s = RecoverWal(); !s.ok()) return s;
  recovering_ = false;
  {
    std::unique_lock lock_mu(mu_);
    if (Status s = CheckpointLocked(); !s.ok()) return s;
  }
  if (options_.sync_interval_ms > 0) sync_thread_ = std::thread([this] { SyncLoop(); });
  return Status::Ok();
}

Status Store::Impl::RecoverSegments() {
  const fs::path chunks = dir_ / "chunks";
  std::vector<std::uint32_t> ids = Numbered(chunks, "");
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
    std::map<std::uint64_t, Labels> labels_of;
    auto scan =
        ReadLog(PosixFileSystem(), path, kSegmentMagic,
                [&](std::uint8_t type, std::string_view payload, std::uint64_t offset) {
                  std::size_t pos = 0;
                  std::uint64_t ref = 0;
                  if (!GetVarint(payload, pos, ref)) return Status::Ok();
                  if (type == kSegSeriesRecord) {
                    Labels labels;
                    if (GetLabels(payload, pos, labels)) {
                      HeadSeries& s = Create(ref, labels);
                      s.in_active_segment = true;
                    }
                    return Status::Ok();
                  }
                  ChunkLoc c;
                  HeadSeries* s = Find(ref);
                  if (type != kSegChunkRecord || s == nullptr ||
                      !GetZVarint(payload, pos, c.mint) || !GetZVarint(payload, pos, c.maxt)) {
                    return Status::Ok();
                  }
                  c.offset = offset + pos;
                  c.length = static_cast<std::uint32_t>(payload.size() - pos);
                  s->active_chunks.push_back(c);
                  s->last_t = std::max(s->last_t, c.maxt);
                  active_mint_ = active_mint_ == kNoTime ? c.mint : std::min(active_mint_, c.mint);
                  active_maxt_ = std::max(active_maxt_, c.maxt);
                  return Status::Ok();
                });
    if (!scan) {
      Log("store: " + path.string() + ": " + scan.error().message() + "; starting a new segment");
      active = active + 1;
    } else {
      good = scan->good_bytes;
      if (!scan->tail_error.empty()) {
        Log("store: " + path.string() + ": cut " + std::to_string(scan->file_bytes - good) +
            " bytes of torn tail at offset " + std::to_string(good) + " (" + scan->tail_error +
            ")");
      }
    }
  }
  return OpenActiveSegment(active, good);
}

Status Store::Impl::RecoverWal() {
  const fs::path wal_dir = dir_ / "wal";
  std::vector<std::uint32_t> checkpoints = Numbered(wal_dir, "checkpoint.");
  std::uint32_t after = 0;
  if (!checkpoints.empty()) {
    after = checkpoints.back();
    const fs::path path = CheckpointPath(after);
    auto scan = ReadLog(PosixFileSystem(), path, kCheckpointMagic,
                        [&](std::uint8_t type, std::string_view payload, std::uint64_t) {
                          std::size_t pos = 0;
                          std::uint64_t ref = 0;
                          Labels labels;
                          if (type != kCheckpointSeriesRecord || !GetVarint(payload, pos, ref) ||
                              !GetLabels(payload, pos, labels) || pos >= payload.size()) {
                            return Status(StatusCode::kParseError,
                                          path.string() + ": bad checkpoint record");
                          }
                          HeadSeries& s = Create(ref, labels);
                          if (payload[pos++] == 1) {
                            std::vector<Sample> samples;
                            if (Status st = DecodeChunk(payload.substr(pos), samples); !st.ok()) {
                              return st.WithPrefix(path.string());
                            }
                            for (const Sample& smp : samples) {
                              if (smp.t > s.last_t)
                                AppendToHead(s, smp.t, std::bit_cast<std::uint64_t>(smp.v));
                            }
                          }
                          return Status::Ok();
                        });
    if (!scan) return scan.error();
    if (!scan->tail_error.empty()) {
      // Checkpoints are renamed into place only when whole.
      return Status(StatusCode::kParseError,
                    path.string() + ": damaged checkpoint (" + scan->tail_error + ")");
    }
  }
  std::uint32_t last = after;
  for (std::uint32_t n : Numbered(wal_dir, "")) {
    if (n <= after) continue;
    last = n;
    const fs::path path = WalPath(n);
    auto scan = ReadLog(PosixFileSystem(), path, kWalMagic,
                        [&](std::uint8_t type, std::string_view payload, std::uint64_t) {
                          std::size_t pos = 0;
                          std::uint64_t count = 0;
                          if (!GetVarint(payload, pos, count)) return Status::Ok();
                          if (type == kSeriesRecord) {
                            Labels labels;
                            for (std::uint64_t i = 0; i < count; ++i) {
                              std::uint64_t ref = 0;
                              if (!GetVarint(payload, pos, ref) || !GetLabels(payload, pos, labels))
                                break;
                              Create(ref, labels);
                            }
                          } else if (type == kSamplesRecord) {
                            std::int64_t ref = 0;
                            std::int64_t t = 0;
                            for (std::uint64_t i = 0; i < count; ++i) {
                              std::int64_t dr = 0;
                              std::int64_t dt = 0;
                              std::uint64_t bits = 0;
                              if (!GetZVarint(payload, pos, dr) || !GetZVarint(payload, pos, dt) ||
                                  !GetFixed64(payload, pos, bits)) {
                                break;
                              }
                              ref = WrapAdd(ref, dr);
                              t = WrapAdd(t, dt);
                              HeadSeries* s =
                                  ref >= 0 ? Find(static_cast<SeriesRef>(ref)) : nullptr;
                              if (s != nullptr && t > s->last_t) AppendToHead(*s, t, bits);
                            }
                          }
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
      auto cut = LogFile::Open(PosixFileSystem(), path, kWalMagic, scan->good_bytes);
      if (!cut) return cut.error();
    }
  }
  if (Status s = FlushSegment(); !s.ok()) return s;
  return OpenWal(last + 1);
}

Status Store::Impl::OpenActiveSegment(std::uint32_t id, std::uint64_t size) {
  const fs::path path = dir_ / "chunks" / SegmentFileName(id);
  auto f = LogFile::Open(PosixFileSystem(), path, kSegmentMagic, size);
  if (!f) return f.error();
  active_ = std::move(*f);
  active_id_ = id;
  active_map_.reset();
  return MapActive();
}

// Maps the active segment with room to grow: readers see sealed chunks
// through the mapping without a system call. Remapped (under the exclusive
// lock) when the file outgrows it; readers keep the old mapping alive.
Status Store::Impl::MapActive() {
  if (active_map_ != nullptr && active_.size() <= active_map_->size()) return Status::Ok();
  std::size_t len = std::max<std::size_t>(options_.segment_bytes + (16u << 20), 1u << 20);
  while (len < active_.size()) len *= 2;
  auto map = Mapping::Map(active_.path(), len);
  if (!map) return map.error();
  active_map_ = std::move(*map);
  return Status::Ok();
}

Status Store::Impl::OpenWal(std::uint32_t n) {
  auto f = LogFile::Open(PosixFileSystem(), WalPath(n), kWalMagic, 0);
  if (!f) return f.error();
  wal_ = std::move(*f);
  wal_id_ = n;
  return Status::Ok();
}

Store::Impl::~Impl() {
  {
    std::lock_guard<std::mutex> lock(sync_mu_);
    stopping_ = true;
  }
  sync_cv_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  {
    std::unique_lock lock(mu_);
    (void)FlushSegment();
    (void)active_.Sync();
    (void)wal_.Sync();
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

// --- The head.

HeadSeries& Store::Impl::Create(SeriesRef ref, const Labels& labels) {
  if (HeadSeries* existing = Find(ref); existing != nullptr) return *existing;
  next_ref_ = std::max(next_ref_, ref + 1);
  published_next_ref_.store(next_ref_, std::memory_order_release);
  auto s = std::make_unique<HeadSeries>();
  s->ref = ref;
  s->labels = InternLabels(symbols_, labels);
  s->hash = LabelsHash(labels);
  by_hash_[s->hash].push_back(ref);
  // Refs from recovery may arrive out of order; postings need sorted lists.
  if (!live_refs_.empty() && ref < live_refs_.back()) {
    series_[ref] = std::move(s);
    ++live_series_;
    RebuildIndex();
    return *series_[ref];
  }
  postings_.Add(ref, s->labels);
  live_refs_.push_back(ref);
  series_[ref] = std::move(s);
  ++live_series_;
  return *series_[ref];
}

void Store::Impl::RebuildIndex() {
  postings_.Clear();
  live_refs_.clear();
  by_hash_.clear();
  for (const auto& [ref, s] : series_) {
    live_refs_.push_back(ref);
    by_hash_[s->hash].push_back(ref);
  }
  std::sort(live_refs_.begin(), live_refs_.end());
  for (SeriesRef ref : live_refs_) postings_.Add(ref, series_[ref]->labels);
}

Result<SeriesRef> Store::Impl::GetOrCreate(const Labels& labels) {
  const std::uint64_t hash = LabelsHash(labels);
  auto lookup = [&]() -> SeriesRef {
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return 0;
    for (SeriesRef ref : it->second) {
      if (ExpandLabels(symbols_, series_.at(ref)->labels) == labels) return ref;
    }
    return 0;
  };
  {
    auto lock = ReadLock();
    if (SeriesRef ref = lookup(); ref != 0) return ref;
  }
  if (Status s = ValidateLabels(labels); !s.ok()) return Error(s);
  std::unique_lock lock(mu_);
  if (SeriesRef ref = lookup(); ref != 0) return ref;
  if (live_series_ >= options_.max_series) {
    return Error(StatusCode::kOutOfRange,
                 "series limit reached (" + std::to_string(options_.max_series) + ")");
  }
  const SeriesRef ref = next_ref_;
  Create(ref, labels);
  // Series records go to the WAL ahead of the first samples that name them.
  std::string payload;
  PutVarint(payload, 1);
  PutVarint(payload, ref);
  PutLabels(payload, labels);
  AppendRecord(pending_series_records_, kSeriesRecord, payload);
  return ref;
}

bool Store::Impl::Exists(SeriesRef ref) const {
  // Lock-free: refs are handed out in order and never reused. A series
  // dropped since is caught at Commit.
  return ref != 0 && ref < published_next_ref_.load(std::memory_order_acquire);
}

void Store::Impl::AppendToHead(HeadSeries& s, std::int64_t t, std::uint64_t bits) {
  if (!s.open.empty() && (s.open.size() >= options_.max_chunk_samples ||
                          t - s.open.mint() >= options_.max_chunk_span_ms)) {
    Seal(s);
  }
  s.open.Append(t, std::bit_cast<double>(bits));
  s.last_t = t;
  s.last_bits = bits;
}

void Store::Impl::Seal(HeadSeries& s) {
  std::vector<Sample> samples;
  samples.reserve(s.open.size());
  s.open.Decode(samples);
  if (!s.in_active_segment) {
    std::string payload;
    PutVarint(payload, s.ref);
    PutLabels(payload, ExpandLabels(symbols_, s.labels));
    AppendRecord(segment_buffer_, kSegSeriesRecord, payload);
    s.in_active_segment = true;
  }
  std::string payload;
  PutSegChunkHeader(payload, s.ref, samples.front().t, samples.back().t);
  const std::size_t header = payload.size();
  EncodeChunk(samples, payload);
  ChunkLoc loc;
  // The record frame puts 5 bytes (length, type) before the payload.
  loc.offset = active_.size() + segment_buffer_.size() + 5 + header;
  loc.length = static_cast<std::uint32_t>(payload.size() - header);
  loc.mint = samples.front().t;
  loc.maxt = samples.back().t;
  AppendRecord(segment_buffer_, kSegChunkRecord, payload);
  s.active_chunks.push_back(loc);
  s.open.Clear();
  active_mint_ = active_mint_ == kNoTime ? loc.mint : std::min(active_mint_, loc.mint);
  active_maxt_ = std::max(active_maxt_, loc.maxt);
  ++chunks_sealed_;
  chunk_bytes_ += loc.length;
  chunk_samples_ += samples.size();
}

Status Store::Impl::FlushSegment() {
  if (segment_buffer_.empty()) return Status::Ok();
  Status s = active_.Write(segment_buffer_);
  segment_buffer_.clear();
  return s.ok() ? MapActive() : s;
}

Status Store::Impl::RotateSegmentIfDue() {
  const bool full = active_.size() >= options_.segment_bytes;
  const bool long_span =
      active_mint_ != kNoTime && active_maxt_ - active_mint_ >= options_.segment_span_ms;
  if (!full && !long_span) return Status::Ok();
  std::vector<IndexEntry> entries;
  for (const auto& [ref, s] : series_) {
    if (s->active_chunks.empty()) continue;
    entries.push_back({ExpandLabels(symbols_, s->labels), s->active_chunks});
  }
  const fs::path chunks = dir_ / "chunks";
  if (Status st = active_.Sync(); !st.ok()) return st;
  if (Status st = WriteSegmentIndex(chunks / (SegmentFileName(active_id_) + ".idx"), active_mint_,
                                    active_maxt_, std::move(entries));
      !st.ok()) {
    return st;
  }
  auto sealed = SealedSegment::Open(chunks, active_id_, options_.log);
  if (!sealed) return sealed.error();
  sealed_.push_back(std::move(*sealed));
  for (const auto& [ref, s] : series_) {
    s->active_chunks.clear();
    s->in_active_segment = false;
  }
  active_mint_ = active_maxt_ = kNoTime;
  if (Status st = OpenActiveSegment(active_id_ + 1, 0); !st.ok()) return st;
  // The WAL before this point may name chunks of the sealed segment only
  // through the head; a checkpoint makes it unnecessary.
  return CheckpointLocked();
}

Result<CommitResult> Store::Impl::Commit(const std::vector<PendingSample>& batch) {
  std::unique_lock lock(mu_);
  CommitResult result;
  std::string& payload = wal_payload_;
  payload.clear();
  std::vector<const PendingSample*>& accepted = accepted_;
  accepted.clear();
  const std::uint64_t batch_id = ++commits_;
  for (const PendingSample& p : batch) {
    HeadSeries* s = Find(p.ref);
    if (s == nullptr) {
      if (result.first_error.ok()) {
        result.first_error =
            Status(StatusCode::kNotFound, "unknown series " + std::to_string(p.ref));
      }
      ++samples_rejected_;
      continue;
    }
    const bool seen = s->batch == batch_id;
    const std::int64_t last_t = seen ? s->batch_t : s->last_t;
    const std::uint64_t last_bits = seen ? s->batch_bits : s->last_bits;
    if (p.t < last_t || (p.t == last_t && p.bits != last_bits)) {
      const bool dup = p.t == last_t;
      (dup ? result.duplicates : result.out_of_order)++;
      ++samples_rejected_;
      if (result.first_error.ok()) {
        result.first_error = Status(
            dup ? StatusCode::kInvalidArgument : StatusCode::kOutOfRange,
            std::string(dup ? "duplicate sample for timestamp" : "out of order sample") + " " +
                LabelsToString(ExpandLabels(symbols_, s->labels)) + " at " + std::to_string(p.t));
      }
      continue;
    }
    if (p.t == last_t) continue;  // an exact repeat
    s->batch = batch_id;
    s->batch_t = p.t;
    s->batch_bits = p.bits;
    accepted.push_back(&p);
  }
  // WAL: pending series records, then one samples record.
  std::string records;
  records.swap(pending_series_records_);
  const std::size_t series_bytes = records.size();
  if (!accepted.empty()) {
    PutVarint(payload, accepted.size());
    std::int64_t prev_ref = 0;
    std::int64_t prev_t = 0;
    for (const PendingSample* p : accepted) {
      PutZVarint(payload, static_cast<std::int64_t>(p->ref) - prev_ref);
      PutZVarint(payload, p->t - prev_t);
      PutFixed64(payload, p->bits);
      prev_ref = static_cast<std::int64_t>(p->ref);
      prev_t = p->t;
    }
    AppendRecord(records, kSamplesRecord, payload);
  }
  if (!records.empty()) {
    if (Status s = wal_.Write(records); !s.ok()) {
      // The series stay; their records must still reach the WAL first.
      records.resize(series_bytes);
      pending_series_records_.insert(0, records);
      samples_rejected_ += accepted.size();
      return Error(s);
    }
    wal_since_checkpoint_ += records.size();
  }
  for (const PendingSample* p : accepted) AppendToHead(*series_.at(p->ref), p->t, p->bits);
  result.appended = accepted.size();
  samples_appended_ += accepted.size();
  if (Status s = FlushSegment(); !s.ok()) return Error(s);
  if (Status s = RotateSegmentIfDue(); !s.ok()) return Error(s);
  if (wal_since_checkpoint_ >= options_.checkpoint_after_bytes) {
    if (Status s = CheckpointLocked(); !s.ok()) return Error(s);
  } else if (wal_.size() >= options_.wal_segment_bytes) {
    if (Status s = wal_.Sync(); !s.ok()) return Error(s);
    if (Status s = OpenWal(wal_id_ + 1); !s.ok()) return Error(s);
  }
  return result;
}

Status Store::Impl::CheckpointLocked() {
  if (Status s = FlushSegment(); !s.ok()) return s;
  if (Status s = active_.Sync(); !s.ok()) return s;
  if (Status s = wal_.is_open() ? wal_.Sync() : Status::Ok(); !s.ok()) return s;
  // The checkpoint covers every WAL segment up to the current one.
  const std::uint32_t covers = wal_.is_open() ? wal_id_ : wal_id_ - 1;
  std::string out(kCheckpointMagic);
  std::string payload;
  std::vector<Sample> samples;
  // In ref order, so recovery builds sorted postings directly.
  std::vector<SeriesRef> refs;
  refs.reserve(series_.size());
  for (const auto& [ref, s] : series_) refs.push_back(ref);
  std::sort(refs.begin(), refs.end());
  for (SeriesRef ref : refs) {
    const auto& s = series_[ref];
    payload.clear();
    PutVarint(payload, s->ref);
    PutLabels(payload, ExpandLabels(symbols_, s->labels));
    if (s->open.empty()) {
      payload.push_back(0);
    } else {
      payload.push_back(1);
      samples.clear();
      s->open.Decode(samples);
      EncodeChunk(samples, payload);
    }
    AppendRecord(out, kCheckpointSeriesRecord, payload);
  }
  if (Status s = WriteFileAtomic(CheckpointPath(covers), out); !s.ok()) return s;
  pending_series_records_.clear();
  if (Status s = OpenWal(covers + 1); !s.ok()) return s;
  wal_since_checkpoint_ = 0;
  std::error_code ec;
  for (std::uint32_t n : Numbered(dir_ / "wal", "")) {
    if (n <= covers) fs::remove(WalPath(n), ec);
  }
  for (std::uint32_t n : Numbered(dir_ / "wal", "checkpoint.")) {
    if (n < covers) fs::remove(CheckpointPath(n), ec);
  }
  return Status::Ok();
}

Status Store::Impl::Checkpoint() {
  std::unique_lock lock(mu_);
  return CheckpointLocked();
}

Status Store::Impl::Sync() {
  // Synced through duplicated handles outside the lock: a commit may rotate
  // the files meanwhile.
  std::array<std::unique_ptr<SyncHandle>, 2> handles;  // the WAL's, the active segment's
  {
    std::unique_lock lock(mu_);
    if (Status s = FlushSegment(); !s.ok()) return s;
    if (wal_.is_open()) handles[0] = wal_.NewSyncHandle();
    if (active_.is_open()) handles[1] = active_.NewSyncHandle();
  }
  Status result;
  for (std::unique_ptr<SyncHandle>& handle : handles) {
    if (handle == nullptr) continue;
    if (Status s = handle->Sync(); !s.ok() && result.ok()) result = s;
    handle.reset();
  }
  return result;
}

void Store::Impl::SyncLoop() {
  std::unique_lock<std::mutex> lock(sync_mu_);
  while (!stopping_) {
    sync_cv_.wait_for(lock, std::chrono::milliseconds(options_.sync_interval_ms));
    if (stopping_) break;
    lock.unlock();
    if (Status s = Sync(); !s.ok()) Log("store: " + s.message());
    lock.lock();
  }
}

// --- Reading.

namespace {

// Query's series, one entry per label set across segments and the head.
// Merges one series' chunks from several sources (segments and the head,
// each with its own symbol table) into one SeriesData. Label sets are
// compared and hashed as interned strings; a set is expanded into Labels
// once, when its series is first seen.
class QueryBuilder {
 public:
  SeriesData& Entry(const Symbols& symbols, const SymLabels& sym) {
    const std::uint64_t hash = Hash(symbols, sym);
    auto [it, inserted] = first_.try_emplace(hash, out_.size());
    if (!inserted) {
      for (std::size_t i = it->second; i != kNoSlot; i = next_[i]) {
        if (Same(out_[i].labels, symbols, sym)) return out_[i];
      }
      next_.push_back(it->second);  // a hash collision: chained in front
      it->second = out_.size();
    } else {
      next_.push_back(kNoSlot);
    }
    out_.emplace_back();
    out_.back().labels = ExpandLabels(symbols, sym);
    return out_.back();
  }

  // The series sorted by labels (a permutation is sorted, then each entry
  // moved once).
  std::vector<SeriesData> Take() {
    std::vector<std::uint32_t> order(out_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
    std::sort(order.begin(), order.end(),
              [&](std::uint32_t a, std::uint32_t b) { return out_[a].labels < out_[b].labels; });
    std::vector<SeriesData> sorted;
    sorted.reserve(out_.size());
    for (std::uint32_t i : order) sorted.push_back(std::move(out_[i]));
    return sorted;
  }

 private:
  static constexpr std::size_t kNoSlot = ~std::size_t{0};

  // Each string's hash seeds the next one's (collisions are resolved by
  // Same, so this need not match LabelsHash).
  static std::uint64_t Hash(const Symbols& symbols, const SymLabels& sym) {
    std::uint64_t h = 0;
    for (std::uint32_t id : sym) {
      const std::string_view text = symbols.Get(id);
      h = XXH3_64bits_withSeed(text.data(), text.size(), h);
    }
    return h;
  }
  static bool Same(const Labels& labels, const Symbols& symbols, const SymLabels& sym) {
    if (labels.size() * 2 != sym.size()) return false;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i].name != symbols.Get(sym[2 * i]) ||
          labels[i].value != symbols.Get(sym[2 * i + 1])) {
        return false;
      }
    }
    return true;
  }

  std::vector<SeriesData> out_;
  std::vector<std::size_t> next_;  // per entry: the next with the same hash
  std::unordered_map<std::uint64_t, std::size_t> first_;
};

bool Overlaps(const ChunkLoc& c, std::int64_t mint, std::int64_t maxt) {
  return c.maxt >= mint && c.mint <= maxt;
}

}  // namespace

Result<QueryResult> Store::Impl::Query(const std::vector<Matcher>& matchers, std::int64_t mint,
                                       std::int64_t maxt) const {
  auto lock = ReadLock();
  QueryResult result;
  result.mint = mint;
  result.maxt = maxt;
  QueryBuilder builder;
  for (const auto& seg : sealed_) {
    if (seg->maxt() < mint || seg->mint() > maxt) continue;
    auto index = seg->Index();
    if (!index) return Error(index.error());
    {
      std::lock_guard<std::mutex> cache(cache_mu_);
      std::erase(index_lru_, seg.get());
      index_lru_.push_back(seg.get());
    }
    result.keep_alive.push_back(seg->mapping());
    const SegmentIndex& idx = **index;
    const auto ids = idx.postings.Match(
        idx.symbols, matchers, [&](std::uint64_t id) -> const SymLabels& { return idx.labels[id]; },
        idx.all_ids);
    for (std::uint64_t id : ids) {
      SeriesData* entry = nullptr;
      for (const ChunkLoc& c : idx.chunks[id]) {
        if (!Overlaps(c, mint, maxt)) continue;
        auto bytes = seg->Chunk(c);
        if (!bytes) return Error(bytes.error());
        if (entry == nullptr) entry = &builder.Entry(idx.symbols, idx.labels[id]);
        entry->chunks.push_back({*bytes, c.mint, c.maxt});
      }
    }
  }
  TrimIndexCache();
  result.keep_alive.push_back(active_map_);
  const auto refs = postings_.Match(
      symbols_, matchers,
      [&](std::uint64_t ref) -> const SymLabels& { return series_.at(ref)->labels; }, live_refs_);
  for (std::uint64_t ref : refs) {
    const HeadSeries& s = *series_.at(ref);
    SeriesData* entry = nullptr;
    for (const ChunkLoc& c : s.active_chunks) {
      if (!Overlaps(c, mint, maxt)) continue;
      if (c.offset + c.length > active_.size()) {
        return Error(StatusCode::kInternal, "chunk past the active segment's end");
      }
      if (entry == nullptr) entry = &builder.Entry(symbols_, s.labels);
      entry->chunks.push_back(
          {std::string_view(active_map_->data() + c.offset, c.length), c.mint, c.maxt});
    }
    if (s.open.empty() || s.open.maxt() < mint || s.open.mint() > maxt) continue;
    if (entry == nullptr) entry = &builder.Entry(symbols_, s.labels);
    entry->open_stream = s.open.Snapshot();
    entry->open_samples = s.open.size();
  }
  result.series = builder.Take();
  return result;
}

void Store::Impl::TrimIndexCache() const {
  std::lock_guard<std::mutex> cache(cache_mu_);
  while (index_lru_.size() > kMaxLoadedIndexes) {
    index_lru_.front()->ReleaseIndex();
    index_lru_.erase(index_lru_.begin());
  }
}

// --- Retention.

Status Store::Impl::ApplyRetention(std::int64_t now_ms) {
  std::unique_lock lock(mu_);
  std::uint64_t total = active_.size();
  for (const auto& seg : sealed_) total += seg->bytes();
  std::size_t drop = 0;
  while (drop < sealed_.size()) {
    const SealedSegment& seg = *sealed_[drop];
    const bool too_old = options_.retention_ms > 0 && seg.maxt() < now_ms - options_.retention_ms;
    const bool too_big = options_.retention_bytes > 0 && total > options_.retention_bytes;
    if (!too_old && !too_big) break;
    total -= seg.bytes();
    ++drop;
  }
  if (drop > 0) {
    std::lock_guard<std::mutex> cache(cache_mu_);
    for (std::size_t i = 0; i < drop; ++i) {
      std::erase(index_lru_, sealed_[i].get());
      Log("store: retention: removed segment " + SegmentFileName(sealed_[i]->id()));
      sealed_[i]->Remove();
    }
    sealed_.erase(sealed_.begin(), sealed_.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  // Idle series: their open chunk is sealed now (it will not grow), and they
  // leave memory once nothing of them is in the active segment.
  for (auto& [ref, s] : series_) {
    if (!s->open.empty() && s->last_t < now_ms - options_.idle_series_ms) Seal(*s);
  }
  if (Status s = FlushSegment(); !s.ok()) return s;
  std::size_t dropped = 0;
  for (auto it = series_.begin(); it != series_.end();) {
    const HeadSeries& s = *it->second;
    // A series created with no sample yet is left: a writer is about to use it.
    const bool idle = !s.in_active_segment && s.open.empty() && s.last_t != kNoTime &&
                      s.last_t < now_ms - options_.idle_series_ms;
    if (!idle) {
      ++it;
      continue;
    }
    it = series_.erase(it);
    ++dropped;
  }
  if (dropped > 0) {
    live_series_ -= dropped;
    RebuildIndex();
    return CheckpointLocked();
  }
  return Status::Ok();
}

StoreStats Store::Impl::Stats() const {
  auto lock = ReadLock();
  StoreStats st;
  st.head_series = live_series_;
  st.samples_appended = samples_appended_;
  st.samples_rejected = samples_rejected_;
  st.chunks_sealed = chunks_sealed_;
  st.chunk_bytes = chunk_bytes_;
  st.chunk_samples = chunk_samples_;
  st.segments = sealed_.size() + 1;
  st.segment_bytes = active_.size();
  std::int64_t lo = active_mint_;
  std::int64_t hi = active_maxt_;
  for (const auto& seg : sealed_) {
    st.segment_bytes += seg->bytes();
    lo = lo == kNoTime ? seg->mint() : std::min(lo, seg->mint());
    hi = std::max(hi, seg->maxt());
  }
  for (const auto& [ref, s] : series_) {
    st.open_chunk_bytes += s->open.bytes();
    if (!s->open.empty()) {
      lo = lo == kNoTime ? s->open.mint() : std::min(lo, s->open.mint());
      hi = std::max(hi, s->open.maxt());
    }
  }
  st.min_time = lo == kNoTime ? 0 : lo;
  st.max_time = hi == kNoTime ? 0 : hi;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_ / "wal", ec)) {
    st.wal_bytes += FileSize(entry.path());
  }
  return st;
}

// --- Appender.

class Store::AppenderImpl : public Appender {
 public:
  explicit AppenderImpl(Store::Impl& store) : store_(store) {}

  Result<SeriesRef> Series(const Labels& labels) override { return store_.GetOrCreate(labels); }

  Status Append(SeriesRef ref, std::int64_t t_ms, double value) override {
    if (!store_.Exists(ref)) {
      return Status(StatusCode::kNotFound, "unknown series " + std::to_string(ref));
    }
    batch_.push_back({ref, t_ms, std::bit_cast<std::uint64_t>(value)});
    return Status::Ok();
  }

  Result<CommitResult> Commit() override {
    auto result = store_.Commit(batch_);
    batch_.clear();
    return result;
  }

  void Rollback() override { batch_.clear(); }

 private:
  Store::Impl& store_;
  std::vector<PendingSample> batch_;
};

// --- Store.

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const fs::path& dir, StoreOptions options) {
  auto impl = std::make_unique<Impl>(dir, std::move(options));
  if (Status s = impl->Open(); !s.ok()) return Error(s);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

std::unique_ptr<Appender> Store::NewAppender() { return std::make_unique<AppenderImpl>(*impl_); }

Result<QueryResult> Store::Query(const std::vector<Matcher>& matchers, std::int64_t mint,
                                 std::int64_t maxt) const {
  return impl_->Query(matchers, mint, maxt);
}

Result<std::vector<SeriesSamples>> Store::Select(const std::vector<Matcher>& matchers,
                                                 std::int64_t mint, std::int64_t maxt) const {
  auto q = impl_->Query(matchers, mint, maxt);
  if (!q) return Error(q.error());
  std::vector<SeriesSamples> out;
  out.reserve(q->series.size());
  for (SeriesData& s : q->series) {
    SeriesSamples ss;
    if (Status st = q->Collect(s, ss.samples); !st.ok()) return Error(st);
    if (ss.samples.empty()) continue;
    ss.labels = std::move(s.labels);
    out.push_back(std::move(ss));
  }
  return out;
}

Result<std::vector<Labels>> Store::SeriesIn(const std::vector<Matcher>& matchers, std::int64_t mint,
                                            std::int64_t maxt) const {
  auto q = impl_->Query(matchers, mint, maxt);
  if (!q) return Error(q.error());
  std::vector<Labels> out;
  out.reserve(q->series.size());
  for (SeriesData& s : q->series) out.push_back(std::move(s.labels));
  return out;
}

// --- QueryResult.

Status QueryResult::ForEach(const SeriesData& s,
                            const std::function<void(std::span<const Sample>)>& fn) const {
  // Grown, never shrunk: decoding into it costs no allocation or zeroing.
  thread_local std::vector<Sample> scratch;
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  auto emit = [&](const Sample* begin, const Sample* end) {
    const Sample* lo = std::lower_bound(begin, end, std::max(mint, last + 1),
                                        [](const Sample& a, std::int64_t t) { return a.t < t; });
    const Sample* hi =
        std::upper_bound(lo, end, maxt, [](std::int64_t t, const Sample& a) { return t < a.t; });
    if (lo == hi) return;
    fn(std::span<const Sample>(lo, static_cast<std::size_t>(hi - lo)));
    last = (hi - 1)->t;
  };
  for (const ChunkView& c : s.chunks) {
    if (c.maxt <= last) continue;
    const std::size_t n = ChunkSampleCount(c.bytes);
    if (n == 0) return Status(StatusCode::kParseError, "chunk: bad sample count");
    if (scratch.size() < n) scratch.resize(n);
    if (Status st = DecodeChunkTo(c.bytes, std::span<Sample>(scratch.data(), n)); !st.ok()) {
      return st;
    }
    emit(scratch.data(), scratch.data() + n);
  }
  if (s.open_samples > 0) {
    scratch.clear();
    OpenChunk::DecodeStream(s.open_stream, s.open_samples, scratch);
    emit(scratch.data(), scratch.data() + scratch.size());
  }
  return Status::Ok();
}

Status QueryResult::Collect(const SeriesData& s, std::vector<Sample>& out) const {
  std::size_t total = s.open_samples;
  for (const ChunkView& c : s.chunks) {
    std::size_t pos = 0;
    std::uint64_t n = 0;
    if (GetVarint(c.bytes, pos, n))
      total += static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 20));
  }
  out.reserve(out.size() + total);
  return ForEach(
      s, [&](std::span<const Sample> run) { out.insert(out.end(), run.begin(), run.end()); });
}

Result<std::vector<std::string>> Store::LabelNames(std::int64_t mint, std::int64_t maxt) const {
  auto series = SeriesIn({}, mint, maxt);
  if (!series) return Error(series.error());
  std::vector<std::string> out;
  for (const Labels& labels : *series) {
    for (const Label& l : labels) out.push_back(l.name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<std::vector<std::string>> Store::LabelValues(std::string_view name, std::int64_t mint,
                                                    std::int64_t maxt) const {
  auto series = SeriesIn({}, mint, maxt);
  if (!series) return Error(series.error());
  std::vector<std::string> out;
  for (const Labels& labels : *series) {
    const std::string_view v = LabelValue(labels, name);
    if (!v.empty()) out.emplace_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status Store::ApplyRetention(std::int64_t now_ms) { return impl_->ApplyRetention(now_ms); }
Status Store::Checkpoint() { return impl_->Checkpoint(); }
Status Store::Sync() { return impl_->Sync(); }
StoreStats Store::stats() const { return impl_->Stats(); }
const fs::path& Store::dir() const { return impl_->dir(); }

}  // namespace gpucanary::store
