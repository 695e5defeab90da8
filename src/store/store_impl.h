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

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

  Status Open();                                               // recovery.cc
  Result<SeriesRef> GetOrCreate(const model::Labels& labels);  // head_append.cc
  bool Exists(SeriesRef ref) const { return head_.Exists(ref); }
  Result<CommitResult> Commit(const std::vector<PendingSample>& batch);  // head_append.cc
  Result<QueryResult> Query(const std::vector<model::Matcher>& matchers, std::int64_t mint,
                            std::int64_t maxt) const;  // query.cc
  Status ApplyRetention(std::int64_t now_ms);          // retention.cc
  Status Checkpoint();                                 // checkpoint.cc
  Status Sync();                                       // store.cc
  StoreStats Stats() const;                            // store.cc
  const std::filesystem::path& dir() const { return dir_; }

 private:
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  std::shared_lock<std::shared_mutex> ReadLock() const {
    return std::shared_lock<std::shared_mutex>(mu_);
  }

  // recovery.cc
  Status RecoverSegments();
  void AttachActiveRecord(std::uint8_t type, std::string_view payload, std::uint64_t offset);
  Status RecoverWal();
  Status ReplayCheckpoint(std::uint32_t n);
  void ReplayWalRecord(std::uint8_t type, std::string_view payload);

  // head_append.cc
  void AcceptBatch(const std::vector<PendingSample>& batch, CommitResult& result);
  void AppendToHead(HeadSeries& s, std::int64_t t, std::uint64_t bits);
  void Seal(HeadSeries& s);

  // checkpoint.cc
  Status FlushSegment();
  Status RotateSegmentIfDue();
  Status CheckpointLocked();
  Status CheckpointOrRotateWalIfDue();

  // query.cc
  Status QuerySealed(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                     QueryResult& result) const;
  Status QueryHead(const std::vector<model::Matcher>& matchers, QueryBuilder& builder,
                   QueryResult& result) const;
  void TrimIndexCache() const;

  // store.cc
  void SyncLoop();

  const std::filesystem::path dir_;
  const StoreOptions options_;
  FileSystem& files_;
  int lock_fd_ = -1;

  mutable std::shared_mutex mu_;
  // Guarded by mu_ (head_.Exists excepted), down to the counters.
  Head head_;
  std::vector<std::unique_ptr<SealedSegment>> sealed_;  // by id
  ActiveSegment active_;
  Wal wal_;
  bool recovering_ = false;
  std::uint64_t commits_ = 0;
  std::vector<const PendingSample*> accepted_;  // Commit's scratch
  std::string wal_payload_;                     // Commit's scratch

  // Counters.
  std::uint64_t samples_appended_ = 0;
  std::uint64_t samples_rejected_ = 0;
  std::uint64_t chunks_sealed_ = 0;
  std::uint64_t chunk_bytes_ = 0;
  std::uint64_t chunk_samples_ = 0;

  mutable std::mutex cache_mu_;
  mutable std::vector<const SealedSegment*> index_lru_;  // cache_mu_; most recent last

  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool stopping_ = false;  // sync_mu_
  std::thread sync_thread_;
};

}  // namespace gpucanary::store
