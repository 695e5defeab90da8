#pragma once
// Store::Impl, shared by the files the store is split into (not part of the
// public API; include only from src/store). Each concern keeps its state in
// a small class: Head (head.h), ActiveSegment (active_segment.h), Wal
// (wal.h); Impl joins them, and its methods live by concern:
//   store.cc         the facade, Stats, Sync and the sync thread
//   recovery.cc      Open: the LOCK, sealed and active segments, checkpoint
//                    and WAL replay, torn tails
//   head_append.cc   GetOrCreate, Commit, appending to the head, sealing
//                    chunks; the Appender
//   checkpoint.cc    flushing and sealing the active segment, checkpoints
//   query.cc         Query and the read API over it
//   retention.cc     ApplyRetention
//
// Locking (as it was in the single store.cc: the same mutexes, the same
// critical sections):
//   mu_        guards head_ (but Head::Exists, which is lock-free), sealed_,
//              active_, wal_, commits_, accepted_, wal_payload_ and the
//              counters. Held exclusively by GetOrCreate when it creates,
//              Commit, Checkpoint, ApplyRetention, Sync while it flushes and
//              takes its sync handles, and ~Impl; shared by Query, Stats and
//              GetOrCreate's lookup. Open's recovery runs before the store is
//              shared, without it, and takes it only for its checkpoint.
//   cache_mu_  guards index_lru_. Taken inside mu_ (shared or exclusive);
//              SealedSegment's own mutex is taken inside it (ReleaseIndex).
//              Order: mu_ -> cache_mu_ -> SealedSegment::mu_.
//   sync_mu_   guards stopping_ (with sync_cv_). Never held with mu_: the
//              sync thread lets go of it before Sync takes mu_, and ~Impl
//              lets go of it before joining the thread and taking mu_.
// The fdatasyncs of Sync run outside every lock, on duplicated handles.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "store/active_segment.h"
#include "store/file.h"
#include "store/head.h"
#include "store/segment.h"
#include "store/store.h"
#include "store/wal.h"
#include "store/wal_record.h"

namespace gpucanary::store {

class QueryBuilder;  // query.cc

class Store::Impl {
 public:
  Impl(std::filesystem::path dir, StoreOptions options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Recovery runs before the store is shared, without mu_ (see above): the analysis cannot
  // tell, so it is off for Open and the recovery helpers.
  Status Open() NO_THREAD_SAFETY_ANALYSIS;                     // recovery.cc
  Result<SeriesRef> GetOrCreate(const model::Labels& labels);  // head_append.cc
  // Head::Exists is lock-free (head.h), the one read of head_ without mu_.
  bool Exists(SeriesRef ref) const NO_THREAD_SAFETY_ANALYSIS { return head_.Exists(ref); }
  Result<CommitResult> Commit(const std::vector<PendingSample>& batch);  // head_append.cc
  Result<QueryResult> Query(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                            std::int64_t maxt) const;  // query.cc
  // Each distinct matching series with data in [mint, maxt], once, as its
  // interned label set (no chunk is read or copied); under the reader lock,
  // so `fn` must not call the store (query.cc).
  using LabelVisitor = std::function<void(const Symbols&, const SymLabels&)>;
  Status VisitSeries(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                     std::int64_t maxt, const LabelVisitor& fn) const;
  Status ApplyRetention(std::int64_t now_ms);  // retention.cc
  Status Checkpoint();                         // checkpoint.cc
  Status Sync();                               // store.cc
  StoreStats Stats() const;                    // store.cc
  // A commit that returned an error: counted, and logged at most once a
  // minute with how many more there were (head_append.cc).
  void NoteWriteFailure(const Status& error) EXCLUDES(mu_);
  WriteFailures GetWriteFailures() const EXCLUDES(mu_);
  const std::filesystem::path& dir() const { return dir_; }

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }

  // recovery.cc
  Status RecoverSegments() NO_THREAD_SAFETY_ANALYSIS;
  void AttachActiveRecord(std::uint8_t type, std::string_view payload,
                          std::uint64_t offset) NO_THREAD_SAFETY_ANALYSIS;
  Status RecoverWal() NO_THREAD_SAFETY_ANALYSIS;
  Status ReplayCheckpoint(std::uint32_t n) NO_THREAD_SAFETY_ANALYSIS;
  void ReplayWalRecord(std::uint8_t type, std::string_view payload) NO_THREAD_SAFETY_ANALYSIS;

  // head_append.cc
  void AcceptBatch(const std::vector<PendingSample>& batch, CommitResult& result) REQUIRES(mu_);
  void AppendToHead(HeadSeries& s, std::int64_t t, std::uint64_t bits) REQUIRES(mu_);
  void Seal(HeadSeries& s) REQUIRES(mu_);

  // checkpoint.cc
  Status FlushSegment() REQUIRES(mu_);
  Status RotateSegmentIfDue() REQUIRES(mu_);
  Status CheckpointLocked() REQUIRES(mu_);
  Status CheckpointOrRotateWalIfDue() REQUIRES(mu_);

  // query.cc
  Status QuerySealed(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                     QueryResult& result) const REQUIRES_SHARED(mu_);
  Status QueryHead(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                   QueryResult& result) const REQUIRES_SHARED(mu_);
  // Releases the least recently used indexes past kMaxLoadedIndexes, and
  // any not used for options_.index_idle_ms (a segment's index, tens of MB
  // at 40k series, stays loaded only while reads use that segment).
  void TrimIndexCache() const EXCLUDES(cache_mu_);
  Result<std::shared_ptr<const SegmentIndex>> IndexOf(const SealedSegment& seg) const
      EXCLUDES(cache_mu_);

  // store.cc
  void SyncLoop();

  const std::filesystem::path dir_;
  const StoreOptions options_;
  FileSystem& files_;
  int lock_fd_ = -1;

  mutable SharedMutex mu_;
  // Guarded by mu_ (head_.Exists excepted), down to the counters.
  Head head_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<SealedSegment>> sealed_ GUARDED_BY(mu_);  // by id
  ActiveSegment active_ GUARDED_BY(mu_);
  Wal wal_ GUARDED_BY(mu_);
  bool recovering_ GUARDED_BY(mu_) = false;
  std::uint64_t commits_ GUARDED_BY(mu_) = 0;
  std::vector<const PendingSample*> accepted_ GUARDED_BY(mu_);  // Commit's scratch
  std::string wal_payload_ GUARDED_BY(mu_);                     // Commit's scratch

  // Counters.
  std::uint64_t samples_appended_ GUARDED_BY(mu_) = 0;
  std::uint64_t samples_rejected_ GUARDED_BY(mu_) = 0;
  std::uint64_t chunks_sealed_ GUARDED_BY(mu_) = 0;
  // Chunks of sealed segments left out of answers: their records failed
  // their CRC (SealedSegment::Intact).
  mutable std::atomic<std::uint64_t> damaged_chunks_skipped_{0};
  std::uint64_t chunk_bytes_ GUARDED_BY(mu_) = 0;
  std::uint64_t chunk_samples_ GUARDED_BY(mu_) = 0;
  WriteFailures write_failures_ GUARDED_BY(mu_);
  std::uint64_t write_failures_unlogged_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point write_failure_logged_ GUARDED_BY(mu_){};

  mutable Mutex cache_mu_ ACQUIRED_AFTER(mu_);
  // Segments whose index is loaded, most recently used last, with when.
  struct LoadedIndex {
    const SealedSegment* segment;
    std::chrono::steady_clock::time_point used;
  };
  mutable std::vector<LoadedIndex> index_lru_ GUARDED_BY(cache_mu_);

  Mutex sync_mu_;
  CondVar sync_cv_;
  bool stopping_ GUARDED_BY(sync_mu_) = false;
  std::thread sync_thread_;
};

}  // namespace gpucanary::store
