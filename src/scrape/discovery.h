#pragma once
// Keeps every job's targets current from its sources: static_configs (once),
// file_sd_configs (file mtimes polled every refresh_interval),
// prometheus_sd_configs (the API polled every refresh_interval) and
// kubernetes_sd_configs (listed and watched by scrape/kubernetes_sd.h on
// threads of their own; a watch event wakes the refreshing thread, so its
// targets change within one refresh). A source that fails keeps its last
// good targets; its error stays visible in Sources() until it succeeds
// again.
//
// Refreshes run on one background thread (Start) or on the caller's
// (RefreshNow), never two at once, so a slow Prometheus or a large file
// never delays a scrape. Time comes from the injected Clock: with a
// ManualClock, moving the clock past a refresh time triggers it.
//
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "scrape/config.h"
#include "scrape/kubernetes_sd.h"
#include "scrape/target.h"

namespace gpucanary::scrape {

class Discovery {
 public:
  // Receives a job's whole target list whenever it may have changed (and
  // once for every job on the first refresh). Called on the refreshing
  // thread, never concurrently; must not call back into Discovery.
  using Update = std::function<void(const JobConfig& job, std::vector<Target> targets)>;

  struct Options {
    int poll_ms = 100;                   // longest wait before looking at the clock again
    int prometheus_timeout_ms = 10'000;  // per /api/v1/targets request
    // Where background refreshes report errors (a file that became bad, a
    // Prometheus that cannot be reached), each once per failed refresh; on
    // the discovery thread. RefreshNow returns its errors instead.
    std::function<void(const Status&)> on_error;
    // For kubernetes_sd_configs (its on_change is Discovery's own).
    KubernetesSd::Options kubernetes;
    // How long RefreshNow waits for a Kubernetes source's first lists.
    int kubernetes_sync_timeout_ms = 10'000;
  };

  struct SourceStatus {
    std::string job;
    std::string kind;  // "static", "file", "prometheus", "kubernetes"
    // The file patterns, the Prometheus URL, or the Kubernetes API server and
    // what it reads ("https://10.96.0.1:443 role=pod namespaces=gpu").
    std::string name;
    std::int64_t last_refresh_ms = 0;  // 0: not yet
    std::size_t targets = 0;           // addresses it currently contributes
    std::string last_error;            // "" when the last refresh succeeded
  };

  // `clock` must outlive this object.
  Discovery(const ScrapeConfig& config, Clock& clock, Update on_update, Options options);
  ~Discovery();  // Stop()
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

  // Reads every source now (every file again, every Prometheus asked; a
  // Kubernetes source is started and its first lists awaited, up to
  // kubernetes_sync_timeout_ms) and reports each job's targets. Returns ok when every source is
  // good, else a kParseError / kUnavailable whose message lists each failure on its own line
  // ("targets.json:3:14: [0].targets[0]: bad target address ...").
  Status RefreshNow();

  // Starts the background thread: sources are refreshed when due. Call
  // after a first RefreshNow (which Start does itself when there was none).
  void Start();
  // Stops the thread; idempotent.
  void Stop();

  std::vector<SourceStatus> Sources() const;

 private:
  struct Job;
  // Refreshes the sources that are due (all when `force`); returns the errors.
  std::vector<Status> Refresh(bool force);
  void Loop();
  // A Kubernetes source changed (on its thread): wake the loop.
  void OnKubernetesChange();

  Clock& clock_;
  const Update on_update_;
  const Options options_;

  Mutex refresh_mu_;  // serialises refreshes; guards jobs_
  std::vector<std::unique_ptr<Job>> jobs_ GUARDED_BY(refresh_mu_);
  bool refreshed_once_ GUARDED_BY(refresh_mu_) = false;

  mutable Mutex mu_;  // guards what follows
  CondVar wake_cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool kubernetes_changed_ GUARDED_BY(mu_) = false;
  std::vector<SourceStatus> status_ GUARDED_BY(mu_);
  std::int64_t next_due_ms_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace gpucanary::scrape
