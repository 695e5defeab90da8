#pragma once
// The remote_write 1.0 receiver: what the daemon mounts at POST /api/v1/write
// on its net::HttpServer, writing what Prometheus (or any remote_write
// sender) posts into the store. docs/remote-write.md has the behaviour and
// the status-code table; in short (spec: "Receivers MUST return 5xx for
// retryable errors and 4xx for permanent ones"):
//
//   204  every series and sample was accepted (empty body);
//   400  bad data (snappy, protobuf, labels, label limits, sample order,
//        duplicates, timestamps outside the accepted window, the series
//        limit): a text body whose first line names the first problem
//        ("timeseries[3].labels[1] 'gpu': duplicate name") and the totals,
//        the next lines more problems. Never worth a retry;
//   405  not a POST;
//   413  body over the configured compressed or decompressed limit;
//   415  remote_write 2.0, or a Content-Type / Content-Encoding not 1.0's;
//   503  the store could not write (I/O error): nothing kept, retry helps;
//   500  a bug or an unknown store failure: nothing kept.
//
// Partial writes: the 1.0 spec lets a receiver keep the valid part of a batch
// that it answers 400 ("may still ingest the valid part"). This one does: a
// series with bad labels or over a label limit is skipped, a sample out of
// order within its series or outside the time window is skipped, and
// everything else of the request is committed in one store batch; the 400
// then says how much was kept. (Prometheus 2.42's own receiver rolls the
// whole batch back instead.) The sender does not retry a 400 either way, so
// keeping the valid part loses less.
//
// The time window: a sample may be at most creation_grace_period ahead of
// the receiver's clock and past_grace_period behind it. Without the upper
// bound one sample a year ahead on a series' labels would make every later
// sample of that series (its scrapes too) out of order for a year.
//
// Stale markers (NaN with bits 0x7ff0000000000002) and every other value are
// appended bit-exact. Exemplars, native histograms and metadata are outside
// the 1.0 spec and not stored: they are counted (ReceiverStats) and dropped,
// and do not make a request fail.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/clock.h"
#include "net/http_message.h"
#include "net/http_server.h"
#include "remote/write_request.h"
#include "store/appender.h"

namespace gpucanary::remote {

struct ReceiverOptions {
  // Both sizes are checked before allocating. The HttpServer in front must
  // allow bodies of at least max_compressed_bytes (its max_body_bytes, which
  // answers 413 itself).
  DecodeLimits limits;
  // Problems listed in a 400 body after the first line (each one line).
  std::size_t max_listed_errors = 10;
  // The accepted timestamp window, in ms against the receiver's clock (the
  // names are Grafana Mimir's limits): a sample after now +
  // creation_grace_period_ms is refused as kSampleTooFarInFuture, one before
  // now - past_grace_period_ms as kSampleTooFarInPast. past_grace_period_ms
  // 0: no lower bound but the earliest int64 timestamp, which the store
  // reserves (it marks "no sample yet"). REQUIRES: both >= 0.
  std::int64_t creation_grace_period_ms = 10LL * 60 * 1000;
  std::int64_t past_grace_period_ms = 0;
  // Per series: one over a limit is refused whole (its samples counted as
  // rejected). The defaults are the scraper's (docs/scraping.md, "Limits").
  LabelLimits label_limits{
      .label_limit = 64, .label_name_length_limit = 256, .label_value_length_limit = 2048};
};

// Counters since the receiver was made: a consistent-enough snapshot for
// /metrics (each counter is read atomically, not all at once).
struct ReceiverStats {
  std::uint64_t requests = 0;           // every request handled
  std::uint64_t requests_accepted = 0;  // of those, answered 204
  std::uint64_t series_received = 0;    // series in decoded requests
  std::uint64_t samples_received = 0;   // samples in decoded requests
  std::uint64_t samples_appended = 0;   // samples the store committed
  std::uint64_t samples_rejected = 0;   // received but not committed
  std::uint64_t exemplars_dropped = 0;
  std::uint64_t histograms_dropped = 0;
  std::uint64_t metadata_dropped = 0;
  // Per WriteError (index static_cast<size_t>(reason)). Request-level reasons
  // (unsupported_media_type, body_too_large, bad_snappy, bad_protobuf,
  // store_unavailable, internal) count requests; invalid_labels,
  // series_limit, label_limit, label_name_length_limit and
  // label_value_length_limit count series; out_of_order_sample,
  // duplicate_sample, sample_too_far_in_future and sample_too_far_in_past
  // count samples.
  std::array<std::uint64_t, kWriteErrorCount> errors{};

  std::uint64_t error(WriteError reason) const { return errors[static_cast<std::size_t>(reason)]; }
};

// Thread-safe: Handle may run on several server threads at once, each
// request with its own Appender. `appendable` and `clock` must outlive the
// receiver.
class Receiver {
 public:
  // The time window is judged against `clock`.
  Receiver(store::Appendable& appendable, const Clock& clock, ReceiverOptions options = {});
  // The same against the system's wall clock.
  explicit Receiver(store::Appendable& appendable, ReceiverOptions options = {});
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // Answers one request as the header comment says. Never throws.
  net::HttpResponse Handle(const net::HttpRequest& request);
  // The same, writing through `into` instead of the receiver's appendable
  // (the daemon's per-tenant view of it). `into` must outlive the call.
  net::HttpResponse Handle(const net::HttpRequest& request, store::Appendable& into);

  // Handle as a net::Handler for HttpServer::Listen (or a router). The
  // receiver must outlive the server using it.
  net::Handler HttpHandler();

  ReceiverStats stats() const;

 private:
  class Batch;
  net::HttpResponse Ingest(const WriteRequest& request, store::Appendable& into);
  void Count(WriteError reason, std::uint64_t n = 1);

  store::Appendable& appendable_;
  const Clock& clock_;
  const ReceiverOptions options_;

  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> requests_accepted_{0};
  std::atomic<std::uint64_t> series_received_{0};
  std::atomic<std::uint64_t> samples_received_{0};
  std::atomic<std::uint64_t> samples_appended_{0};
  std::atomic<std::uint64_t> samples_rejected_{0};
  std::atomic<std::uint64_t> exemplars_dropped_{0};
  std::atomic<std::uint64_t> histograms_dropped_{0};
  std::atomic<std::uint64_t> metadata_dropped_{0};
  std::array<std::atomic<std::uint64_t>, kWriteErrorCount> errors_{};
};

}  // namespace gpucanary::remote
