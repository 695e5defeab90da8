#pragma once
// remote_write out (docs/remote-write-out.md): sends every sample the store
// commits to one Prometheus-compatible receiver, reading them back from the
// store's WAL (wal_watcher.h) so that the WAL is the durable queue. One
// Sender per receiver: a reader thread tails the WAL and deals samples to
// `shards` queues by series; each shard has its own thread and kept-alive
// connection and sends one request at a time, retrying 5xx, 429 and
// connection failures with backoff. Per shard, how far the receiver has
// acknowledged is saved in STATE_DIR/position before each request and after
// each answer, so that after a restart (a kill -9 included) nothing
// committed is skipped and nothing new is mixed into the batch that was in
// flight.
//
// Thread-safe.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/metric_type.h"
#include "model/relabel.h"
#include "net/tls_options.h"
#include "remote/wal_watcher.h"

namespace gpucanary::remote {

struct QueueConfig {
  int shards = 4;                 // parallel senders, fixed
  std::size_t capacity = 10'000;  // samples queued per shard before the reader waits
  std::size_t max_samples_per_send = 2'000;
  std::int64_t batch_send_deadline_ms = 5'000;  // a partial batch goes after this
  std::int64_t min_backoff_ms = 30;
  std::int64_t max_backoff_ms = 5'000;
  bool retry_on_http_429 = true;
  std::uint64_t max_backlog_bytes = std::uint64_t{1} << 30;  // WAL kept while behind
};

struct MetadataConfig {
  bool send = true;
  std::int64_t send_interval_ms = 60'000;
};

// One `remote_write_out` entry (docs/remote-write-out.md, "Configuration").
struct SenderConfig {
  std::string name;  // the queue's name: metrics' remote_name, STATE_DIR's folder
  std::string url;
  int timeout_ms = 30'000;  // remote_timeout
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<net::TlsClientOptions> tls;
  std::string authorization;  // the Authorization header's value; "" for none
  std::vector<model::RelabelRule> write_relabel;
  QueueConfig queue;
  MetadataConfig metadata;
};

// One metric family's TYPE, HELP and UNIT, as a scrape saw them.
struct FamilyMetadata {
  std::string family;
  model::MetricType type = model::MetricType::kUnknown;
  std::string help;
  std::string unit;
};

struct SenderStats {
  std::uint64_t samples_sent = 0;
  std::uint64_t samples_failed = 0;
  std::uint64_t samples_retried = 0;
  std::uint64_t dropped_relabel = 0;
  std::uint64_t dropped_unknown_series = 0;
  std::uint64_t wal_lost = 0;  // stretches of WAL deleted or damaged before they were read
  std::uint64_t dropped_resent_refused = 0;
  std::uint64_t samples_pending = 0;
  std::uint64_t wal_backlog_bytes = 0;
  std::int64_t highest_sent_timestamp_ms = 0;  // 0: none yet
  std::uint64_t requests_2xx = 0;
  std::uint64_t requests_4xx = 0;
  std::uint64_t requests_429 = 0;
  std::uint64_t requests_5xx = 0;
  std::uint64_t requests_error = 0;  // no answer
  std::uint64_t metadata_sent = 0;
  std::uint64_t metadata_failed = 0;
  int shards = 0;
};

class Sender {
 public:
  using MetadataSource = std::function<std::vector<FamilyMetadata>()>;
  using Log = std::function<void(std::string_view)>;

  // A sender for `config` reading the WAL in `wal_dir` (DATA/wal) and keeping
  // its position in `state_dir` (DATA/remote_write/<name>, created). Reads
  // the position file, so that KeepFrom is right before the store opens.
  // `metadata` (may be empty) gives the families to send. Errors: kIoError
  // (state_dir cannot be made), kInvalidArgument (a bad URL).
  static Result<std::unique_ptr<Sender>> Create(SenderConfig config, std::filesystem::path wal_dir,
                                                std::filesystem::path state_dir, Log log,
                                                MetadataSource metadata = {});
  ~Sender();  // Stop()
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // The smallest WAL segment this sender still needs (UINT32_MAX: none), for
  // store::StoreOptions::wal_keep_from. Lock-free.
  std::uint32_t KeepFrom() const;

  // Starts reading and sending. Call once, after the store is open.
  Status Start();
  // Stops the threads: a request in flight is abandoned (its batch is sent
  // again after the next Start), after at most remote_timeout. Idempotent.
  void Stop();
  // Tells the threads to stop and returns at once; Stop then waits. Lets an
  // owner of several senders wait for them together.
  void RequestStop();

  SenderStats stats() const;
  const SenderConfig& config() const;

 private:
  class Impl;
  explicit Sender(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The request body for `series` (each already relabelled and sorted) with
// their samples: snappy_block(protobuf(WriteRequest)). For tests and the
// benchmark; the sender builds its bodies the same way.
struct SeriesBatch {
  model::Labels labels;
  std::vector<std::pair<std::int64_t, double>> samples;  // (t, v), in time order
};
std::string EncodeSeriesBatch(const std::vector<SeriesBatch>& series);

}  // namespace gpucanary::remote
