// The write path (docs/storage-format.md, "The write-ahead log" and
// "Chunks"), as Prometheus's tsdb/head_append.go has it: series created
// through an Appender, a batch checked, written to the WAL and appended to the
// head in one step, open chunks sealed into the active segment when full.

#include <bit>
#include <chrono>
#include <string>
#include <utility>

#include "core/mutex.h"
#include "store/store_impl.h"

namespace gpucanary::store {

Result<SeriesRef> Store::Impl::GetOrCreate(const model::Labels& labels) {
  const std::uint64_t hash = model::LabelsHash(labels);
  {
    ReaderMutexLock lock(mu_);
    if (SeriesRef ref = head_.Lookup(labels, hash); ref != 0) return ref;
  }
  if (Status s = model::ValidateLabels(labels); !s.ok()) return Error(s);
  WriterMutexLock lock(mu_);
  if (SeriesRef ref = head_.Lookup(labels, hash); ref != 0) return ref;
  if (head_.live_series() >= options_.max_series) {
    return Error(StatusCode::kOutOfRange,
                 "series limit reached (" + std::to_string(options_.max_series) + ")");
  }
  const SeriesRef ref = head_.next_ref();
  head_.Create(ref, labels);
  // Series records go to the WAL ahead of the first samples that name them.
  wal_.QueueSeries(ref, labels);
  return ref;
}

// Sorts the batch into accepted_ (the samples to write) and rejections
// (counted in `result` and samples_rejected_), against each series' newest
// sample, or its newest in this batch.
void Store::Impl::AcceptBatch(const std::vector<PendingSample>& batch, CommitResult& result) {
  std::vector<const PendingSample*>& accepted = accepted_;
  accepted.clear();
  const std::uint64_t batch_id = ++commits_;
  for (const PendingSample& p : batch) {
    HeadSeries* s = head_.Find(p.ref);
    if (s == nullptr) {
      if (result.first_error.ok()) {
        result.first_error =
            Status(StatusCode::kNotFound, "unknown series " + std::to_string(p.ref));
      }
      ++samples_rejected_;
      continue;
    }
    if (p.t == kNoTime) {
      // kNoTime marks "no sample yet" (last_t, batch_t, the WAL replay's
      // checks): a sample at that time could not be told from none, so the
      // store holds none there. Out of bounds rather than a "duplicate" of a
      // sample that never was (or, with the sentinel's bits, dropped as an
      // exact repeat); counted with the out-of-order samples, older than
      // anything the series can hold.
      ++result.out_of_order;
      ++samples_rejected_;
      if (result.first_error.ok()) {
        result.first_error =
            Status(StatusCode::kOutOfRange,
                   "out of bounds sample " + model::LabelsToString(head_.LabelsOf(*s)) + " at " +
                       std::to_string(p.t) + ": the earliest timestamp the store holds is " +
                       std::to_string(kNoTime + 1));
      }
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
                model::LabelsToString(head_.LabelsOf(*s)) + " at " + std::to_string(p.t));
      }
      continue;
    }
    if (p.t == last_t) continue;  // an exact repeat
    s->batch = batch_id;
    s->batch_t = p.t;
    s->batch_bits = p.bits;
    accepted.push_back(&p);
  }
}

void Store::Impl::NoteWriteFailure(const Status& error) {
  std::string line;
  {
    WriterMutexLock lock(mu_);
    ++write_failures_.count;
    write_failures_.last_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
    write_failures_.last_error = error.message();
    const auto now = std::chrono::steady_clock::now();
    if (write_failures_.count > 1 && now - write_failure_logged_ < std::chrono::minutes(1)) {
      ++write_failures_unlogged_;
      return;
    }
    line = "store: a write failed and its batch was not kept: " + error.message();
    if (write_failures_unlogged_ > 0) {
      line += " (and " + std::to_string(write_failures_unlogged_) +
              " more failures since the last such line)";
    }
    write_failures_unlogged_ = 0;
    write_failure_logged_ = now;
  }
  Log(line);
}

WriteFailures Store::Impl::GetWriteFailures() const {
  ReaderMutexLock lock(mu_);
  return write_failures_;
}

Result<CommitResult> Store::Impl::Commit(const std::vector<PendingSample>& batch) {
  WriterMutexLock lock(mu_);
  CommitResult result;
  std::string& payload = wal_payload_;
  payload.clear();
  AcceptBatch(batch, result);
  const std::vector<const PendingSample*>& accepted = accepted_;
  // WAL: pending series records, then one samples record.
  if (!accepted.empty()) EncodeSamples(accepted, payload);
  if (Status s = wal_.WriteBatch(payload); !s.ok()) {
    samples_rejected_ += accepted.size();
    return Error(s);
  }
  for (const PendingSample* p : accepted) AppendToHead(head_.at(p->ref), p->t, p->bits);
  result.appended = accepted.size();
  samples_appended_ += accepted.size();
  if (Status s = FlushSegment(); !s.ok()) return Error(s);
  if (Status s = RotateSegmentIfDue(); !s.ok()) return Error(s);
  if (Status s = CheckpointOrRotateWalIfDue(); !s.ok()) return Error(s);
  return result;
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
    active_.AddSeries(s.ref, head_.LabelsOf(s));
    s.in_active_segment = true;
  }
  const ChunkLoc loc = active_.AddChunk(s.ref, samples);
  s.active_chunks.push_back(loc);
  s.open.Clear();
  ++chunks_sealed_;
  chunk_bytes_ += loc.length;
  chunk_samples_ += samples.size();
}

// --- Appender.

class Store::AppenderImpl : public Appender {
 public:
  explicit AppenderImpl(Store::Impl& store) : store_(store) {}

  Result<SeriesRef> Series(const model::Labels& labels) override {
    return store_.GetOrCreate(labels);
  }

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
    if (!result) store_.NoteWriteFailure(result.error());
    return result;
  }

  void Rollback() override { batch_.clear(); }

 private:
  Store::Impl& store_;
  std::vector<PendingSample> batch_;
};

std::unique_ptr<Appender> Store::NewAppender() { return std::make_unique<AppenderImpl>(*impl_); }

}  // namespace gpucanary::store
