// The Store facade: opening and closing, the calls that forward to
// Store::Impl (store_impl.h says which file holds what), Stats, and the
// background sync.

#include "store/store.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <system_error>
#include <utility>

#include "core/mutex.h"
#include "store/store_impl.h"

namespace gpucanary::store {

namespace fs = std::filesystem;

namespace {

std::uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

}  // namespace

Store::Impl::Impl(fs::path dir, StoreOptions options)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      files_(PosixFileSystem()),
      active_(files_, dir_ / "chunks", options_.segment_bytes),
      wal_(files_, dir_ / "wal") {
  wal_.SetReaders(options_.wal_keep_from, options_.wal_keep_max_bytes, options_.log);
}

Store::Impl::~Impl() {
  {
    MutexLock lock(sync_mu_);
    stopping_ = true;
  }
  sync_cv_.NotifyAll();
  if (sync_thread_.joinable()) sync_thread_.join();
  {
    WriterMutexLock lock(mu_);
    (void)FlushSegment();
    (void)active_.Sync();
    (void)wal_.Sync();
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status Store::Impl::Sync() {
  // Synced through duplicated handles outside the lock: a commit may rotate
  // the files meanwhile.
  std::array<std::unique_ptr<SyncHandle>, 2> handles;  // the WAL's, the active segment's
  {
    WriterMutexLock lock(mu_);
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
  MutexLock lock(sync_mu_);
  while (!stopping_) {
    sync_cv_.WaitFor(sync_mu_, std::chrono::milliseconds(options_.sync_interval_ms));
    if (stopping_) break;
    lock.Unlock();
    if (Status s = Sync(); !s.ok()) Log("store: " + s.message());
    lock.Lock();
  }
}

StoreStats Store::Impl::Stats() const {
  ReaderMutexLock lock(mu_);
  StoreStats st;
  st.head_series = head_.live_series();
  st.head_index_builds = head_.index_builds();
  st.samples_appended = samples_appended_;
  st.samples_rejected = samples_rejected_;
  st.chunks_sealed = chunks_sealed_;
  st.damaged_chunks_skipped = damaged_chunks_skipped_.load(std::memory_order_relaxed);
  {
    MutexLock cache(cache_mu_);
    st.loaded_indexes = index_lru_.size();
  }
  st.chunk_bytes = chunk_bytes_;
  st.chunk_samples = chunk_samples_;
  st.segments = sealed_.size() + 1;
  st.segment_bytes = active_.size();
  std::int64_t lo = active_.mint();
  std::int64_t hi = active_.maxt();
  for (const auto& seg : sealed_) {
    st.segment_bytes += seg->bytes();
    lo = lo == kNoTime ? seg->mint() : std::min(lo, seg->mint());
    hi = std::max(hi, seg->maxt());
  }
  head_.ForEach([&](const HeadSeries& s) {
    st.open_chunk_bytes += s.open.bytes();
    if (!s.open.empty()) {
      lo = lo == kNoTime ? s.open.mint() : std::min(lo, s.open.mint());
      hi = std::max(hi, s.open.maxt());
    }
  });
  st.min_time = lo == kNoTime ? 0 : lo;
  st.max_time = hi == kNoTime ? 0 : hi;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_ / "wal", ec)) {
    st.wal_bytes += FileSize(entry.path());
  }
  return st;
}

// --- Store.

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Open(const fs::path& dir, StoreOptions options) {
  auto impl = std::make_unique<Impl>(dir, std::move(options));
  if (Status s = impl->Open(); !s.ok()) return Error(s);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Status Store::ApplyRetention(std::int64_t now_ms) { return impl_->ApplyRetention(now_ms); }
Status Store::Checkpoint() { return impl_->Checkpoint(); }
Status Store::Sync() { return impl_->Sync(); }
StoreStats Store::stats() const { return impl_->Stats(); }

WriteFailures Store::write_failures() const { return impl_->GetWriteFailures(); }
const fs::path& Store::dir() const { return impl_->dir(); }

}  // namespace gpucanary::store
