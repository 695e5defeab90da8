#pragma once
// The write side of the store, as the scraper and the remote_write receiver
// see it. One Appender per writer (a scrape loop, one remote_write request);
// the store behind it is shared and thread-safe, an Appender is not.
//
// Samples appended are invisible and not durable until Commit(); Commit()
// writes them to the write-ahead log and the in-memory head in one step, so a
// batch is all there or not at all after a crash. Rollback() drops them.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"
#include "model/labels.h"

namespace gpucanary::store {

// A series' handle in one store, stable for the store's lifetime (not across
// restarts: look labels up again after reopening).
using SeriesRef = std::uint64_t;

// Prometheus's staleness marker, a NaN with these exact bits (value.StaleNaN):
// "this series ended here". The store keeps the bits; readers treat the
// series as absent from that sample on ("no data", never zero).
inline constexpr std::uint64_t kStaleNaNBits = 0x7ff0000000000002ULL;

// True when `v` carries exactly the staleness marker's bits.
bool IsStaleNaN(double v);
double StaleNaN();

struct CommitResult {
  std::size_t appended = 0;      // samples now in the store
  std::size_t out_of_order = 0;  // older than the series' last sample
  std::size_t duplicates = 0;    // same timestamp, different value
  Status first_error;            // ok when nothing was rejected
};

class Appender {
 public:
  virtual ~Appender() = default;

  // The series with these labels, created when new. REQUIRES: `labels` sorted
  // (SortLabels). Errors: kInvalidArgument when ValidateLabels fails;
  // kOutOfRange when the store's series limit is reached.
  virtual Result<SeriesRef> Series(const model::Labels& labels) = 0;

  // Adds one sample (t in milliseconds since the Unix epoch). Checked at
  // Commit against the series' last committed sample: an older timestamp is
  // kOutOfRange ("out of order sample"), the same timestamp with a different
  // value is kInvalidArgument ("duplicate sample for timestamp"), an exact
  // repeat is dropped silently. Such samples are rejected one by one: the rest
  // of the batch is kept. Errors here: kNotFound for a ref the store never
  // handed out. The store drops series idle for an hour from memory; a
  // sample for such a ref is rejected at Commit (kNotFound in first_error),
  // so a writer that caches refs looks the labels up again with Series().
  virtual Status Append(SeriesRef ref, std::int64_t t_ms, double value) = 0;

  // Makes the batch durable (WAL) and visible, keeping the valid samples and
  // counting the rejected ones (the first rejection's error is kept to be
  // reported). Errors: kIoError when the WAL could not be written (then
  // nothing of the batch is kept).
  virtual Result<CommitResult> Commit() = 0;

  // Drops the samples appended since the last Commit.
  virtual void Rollback() = 0;
};

// What writers hold: something that hands out Appenders (the store; in
// tests, whatever captures samples). Thread-safe: NewAppender may be called
// from any thread, each Appender then used by one thread at a time.
class Appendable {
 public:
  virtual ~Appendable() = default;
  virtual std::unique_ptr<Appender> NewAppender() = 0;
};

}  // namespace gpucanary::store
