#pragma once
// Live canaries (docs/canaries.md): a release that names its canary hosts
// starts one; its GPUs and a matched baseline are scraped fast, the store's
// samples are cut into ticks by the same Replay as `gpucanary judge`
// (analysis/live), the judge runs on every tick, and every verdict change is
// committed to the metadata database before it is served. On `fail` the
// canary ends and the fail handler (the circuit breaker) is called once.
// After a restart, Resume rebuilds each running canary's judge from the
// store, so its verdict comes back the same.
//
//   CanaryManager manager(store, meta, clock, options, hooks);
//   manager.Resume();
//   manager.StartThread();                      // Poll every options.poll_ms
//   auto id = manager.Start({.release_id = "r2", .started_at = t, .targets = {"node-4"}});
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "canary/history.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "model/matcher.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary::canary {

struct CanaryOptions {
  analysis::Policy policy;               // the judge's policy
  std::int64_t history_s = 300;          // canary GPUs' own history before started_at
  std::int64_t duration_s = 600;         // the verdict at started_at + duration is final
  int baseline_nodes = 4;                // at most this many baseline hosts
  std::int64_t lag_ms = 2500;            // second t is judged at (t + 1) s + lag
  int poll_ms = 250;                     // StartThread's period
  std::int64_t discovery_window_s = 60;  // hosts "present" = series in this window
  // Whether series that arrived by remote_write may choose and feed canaries
  // (a daemon fed by a Prometheus agent). Off: only the daemon's own
  // targets do (CanaryHooks::trusted_instances). The daemon refuses it
  // without auth, so that only a write token's holder can send them.
  bool trust_remote_write = false;
  // Where the history window is read from when the store lacks it (canary/history.h).
  HistoryPrometheusOptions history_prometheus;
};

// What a release annotation asks for (docs/contracts.md §5).
struct CanaryRequest {
  std::string release_id;
  double started_at = 0;                 // Unix seconds
  std::vector<std::string> targets;      // hostnames, or
  std::vector<model::Matcher> selector;  // label matchers selecting the canary's series
  std::string previous;                  // the release being replaced ("" if unknown)
};

struct CanaryView {
  std::string id;
  std::string release_id;
  vocab::CanaryState state = vocab::CanaryState::kRunning;
  double started_at = 0;
  std::optional<double> ended_at;
  std::vector<std::string> canary_hosts;
  std::vector<std::string> baseline_hosts;
  std::optional<std::int64_t> last_tick;  // the newest second judged
  analysis::Report report;                // the judge's latest
};

struct CanaryHooks {
  // Fast scraping for the hosts while a canary (key) runs; may be null.
  std::function<void(const std::string& key, const std::vector<std::string>& hosts)> set_fast;
  std::function<void(const std::string& key)> clear_fast;
  // Called once when a canary fails, on the manager's thread; may be null.
  std::function<void(const CanaryView& canary)> on_fail;
  // Called once per node when the judge first names a node-scoped cause on
  // it (a node's own fault, docs/contracts.md §6) while the canary goes on; on the
  // manager's thread; may be null.
  std::function<void(const CanaryView& canary, const std::string& node)> on_node_fault;
  // Called once when a canary ends (passed, failed, inconclusive, aborted),
  // after its state is recorded, on the caller's thread (the manager's, or
  // Stop's); may be null.
  std::function<void(const CanaryView& canary)> on_end;
  std::function<void(std::string_view)> log;
  // The `instance` values of the targets the daemon scrapes itself
  // (configured and discovered) and of its NVML source. When set, only
  // series carrying one of them choose a canary's hosts (selector,
  // baseline, named targets) and feed its judge: telemetry that arrived by
  // remote_write, or from anywhere else, never does (issue 22; a fake GPU
  // labelled with a healthy node's hostname must not make it "faulty").
  // Null: every series counts (tests, recordings).
  std::function<std::vector<std::string>()> trusted_instances;
};

class CanaryManager {
 public:
  CanaryManager(store::Store& store, store::MetaDb& meta, const Clock& clock, CanaryOptions options,
                CanaryHooks hooks);
  ~CanaryManager();
  CanaryManager(const CanaryManager&) = delete;
  CanaryManager& operator=(const CanaryManager&) = delete;

  // Starts the canary of a release (its id is the release id). Canary hosts:
  // the targets, or the hosts of the series the selector matches in the last
  // discovery_window_s. Baseline: other hosts present, with the canary GPUs'
  // modelName, sorted, at most baseline_nodes. Errors: kInvalidArgument when
  // neither targets nor a selector is given or no canary host is found;
  // kFailedPrecondition for a release that started more than duration_s
  // ago (not judged live: `correlate` answers after the fact);
  // kAlreadyExists for a release with a canary; MetaDb's errors.
  Result<std::string> Start(const CanaryRequest& request);

  // After a restart: resumes the canaries MetaDb has as running (their
  // windows replayed from the store), and restores the ended ones as they
  // ended (state, hosts, last report) so Get and List still show them; the
  // fail handler is not called for those. Errors: MetaDb's; a running
  // canary that cannot be resumed is logged and aborted.
  Status Resume();

  // Ends a running canary (promotion or rollback decided elsewhere): state
  // "passed" when the judge has already passed it, else "aborted". Errors:
  // kNotFound, kFailedPrecondition when it has ended.
  Status Stop(std::string_view id, std::string_view reason);

  std::optional<CanaryView> Get(std::string_view id) const;
  std::vector<CanaryView> List() const;  // newest first

  // Feeds every running canary the seconds that are ready now. StartThread
  // calls it every poll_ms; tests call it directly.
  void Poll();
  void StartThread();
  void StopThread();

 private:
  struct Canary;
  Status Persist(Canary& c, bool with_verdict);
  Status RestoreEnded(const store::CanaryRecord& record);
  void Step(Canary& c, std::int64_t now_ms);
  void NotifyNodeFaults(Canary& c);
  void ReleaseJudging(Canary& c);
  void NotifyEnd(const Canary& c);
  Result<std::unique_ptr<Canary>> Build(const std::string& id, const std::string& release_id,
                                        double started_at, std::vector<std::string> canary_hosts,
                                        std::vector<std::string> baseline_hosts);
  // `instance=~"<trusted instances>"` when hooks_.trusted_instances is set
  // and knows at least one; nullopt otherwise (every series counts).
  std::optional<model::Matcher> TrustedMatcher() const;
  std::vector<std::string> HostsOf(std::vector<model::Matcher> matchers, std::int64_t now_ms) const;
  std::vector<std::string> PickBaseline(const std::vector<std::string>& canary,
                                        std::int64_t now_ms) const;
  void Log(const std::string& line) const;

  store::Store& store_;
  store::MetaDb& meta_;
  const Clock& clock_;
  CanaryOptions options_;
  CanaryHooks hooks_;

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Canary>, std::less<>> canaries_ GUARDED_BY(mu_);
  Mutex poll_mu_;  // one Poll at a time

  Mutex thread_mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(thread_mu_) = false;
  std::thread thread_;
};

}  // namespace gpucanary::canary
