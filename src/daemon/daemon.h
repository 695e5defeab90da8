#pragma once
// `gpucanary serve`: the store, the metadata database, the scraper and the
// HTTP API in one process (docs/http-api.md). Start listens first (only
// /-/healthy answers 200, everything else 503, while the store recovers),
// opens the data directory (recovering from the WAL after a crash; refusing
// missing or damaged metadata unless empty_metadata), then starts the canary
// service and scraping, and only then is ready; Stop (or destruction) shuts
// it all down in order: listener, canaries, scraper, store.
//
// Endpoints: Prometheus's query API (daemon/query_api.h), POST /api/v1/write
// (remote_write 1.0), GET /api/v1/targets, GET /metrics (its own health),
// GET /-/ready and /-/healthy.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "daemon/serve_config.h"

namespace gpucanary::daemon {

struct DaemonOptions {
  // Where the daemon reports what it does (recovery, retention, errors).
  std::function<void(std::string_view)> log;
  int http_threads = 2;
  int retention_interval_ms = 60'000;
  // Start with empty metadata when meta.sqlite is missing from a data
  // directory that holds telemetry, or is damaged (kept aside as
  // meta.sqlite.damaged-<ms>). Off: the daemon refuses to start then
  // (`serve --empty-metadata`, docs/configuration.md).
  bool empty_metadata = false;
  // The store checkpoints after this many bytes of WAL (0: the store's
  // default, 128 MiB). Tests make it small to see what a checkpoint does.
  std::uint64_t store_checkpoint_after_bytes = 0;
};

class Daemon {
 public:
  // Errors: the store's (kUnavailable when another process holds the data
  // directory), the listener's, or the scrape configuration's.
  static Result<std::unique_ptr<Daemon>> Start(const ServeConfig& config, Clock& clock,
                                               DaemonOptions options = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The port the HTTP API listens on (the configured one, or the one the OS
  // chose for port 0).
  std::uint16_t port() const;
  void Stop();

 private:
  class Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::daemon
