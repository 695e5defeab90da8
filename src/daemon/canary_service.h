#pragma once
// Live canaries inside `gpucanary serve` (docs/canaries.md): a stored release
// that names its canary hosts starts a canary (CanaryManager); fast scraping
// follows it (ScrapeManager::SetFast); on `fail` the circuit breaker runs the
// configured actions once (actions::Runner), each outcome committed to the
// metadata database, with a diagnostic bundle holding the affected hosts'
// telemetry window as a recording; the canary endpoints are served
// (canary::CanaryApi). After a restart, Start resumes the running canaries
// and marks those whose actions already ran so they are not run again.
//
// Thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actions/action_config.h"
#include "actions/flagger_gate.h"
#include "actions/runner.h"
#include "canary/api.h"
#include "canary/manager.h"
#include "core/clock.h"
#include "core/status.h"
#include "net/http_message.h"
#include "releases/release.h"
#include "scrape/scrape_manager.h"
#include "store/meta_db.h"
#include "store/store.h"

namespace gpucanary::daemon {

struct CanaryServiceOptions {
  canary::CanaryOptions canary;
  std::vector<actions::ActionConfig> actions;
  std::function<void(std::string_view)> log;
  // Called once when a canary ends (canary::CanaryHooks::on_end); may be null.
  std::function<void(const canary::CanaryView& canary)> on_end;
  // canary::CanaryHooks::trusted_instances; null: every series counts.
  std::function<std::vector<std::string>()> trusted_instances;
};

class CanaryService {
 public:
  // `scraper` may be null (no fast scraping: remote_write-fed daemons).
  CanaryService(store::Store& store, store::MetaDb& meta, Clock& clock,
                scrape::ScrapeManager* scraper, CanaryServiceOptions options);
  ~CanaryService();
  CanaryService(const CanaryService&) = delete;
  CanaryService& operator=(const CanaryService&) = delete;

  // Resumes running canaries and starts judging. Errors: MetaDb's.
  Status Start();
  void Stop();

  // Called once a release is stored: starts its canary when it names targets
  // or a selector (returns the canary id), nullopt when it names neither.
  // Errors: a selector that does not parse or matches no host
  // (kInvalidArgument), a canary that exists (kAlreadyExists).
  Result<std::optional<std::string>> OnRelease(const releases::Release& release);

  // The canary endpoints (canary/api.h); false for other paths.
  bool Handle(const net::HttpRequest& request, net::HttpResponse& response);

  canary::CanaryManager& manager() { return *manager_; }

  // The canaries started within `window_ms` before now, for Prometheus
  // (docs/http-api.md, "/metrics"): gpucanary_canary_state and
  // gpucanary_canary_verdict (one series per possible value, 1 for the
  // current one), gpucanary_canary_score, gpucanary_canary_decided_timestamp_seconds,
  // gpucanary_canary_cause{kind,scope,node} 1 per cause (and node), and
  // gpucanary_canary_actions{kind,outcome} (ok, failed, skipped).
  void AppendMetrics(std::string& out, std::int64_t window_ms) const;

 private:
  // The incident of a canary's verdict, with its release's annotation.
  actions::Incident FailIncident(const canary::CanaryView& view) const;
  void OnFail(const canary::CanaryView& view);
  void OnNodeFault(const canary::CanaryView& view, const std::string& node);
  Status WriteTelemetry(const canary::CanaryView& view, const std::filesystem::path& dir) const;
  void Log(const std::string& line) const;

  store::Store& store_;
  store::MetaDb& meta_;
  Clock& clock_;
  CanaryServiceOptions options_;
  actions::FlaggerGate gate_;
  std::unique_ptr<actions::Runner> runner_;
  std::unique_ptr<canary::CanaryManager> manager_;
  std::unique_ptr<canary::CanaryApi> api_;
};

}  // namespace gpucanary::daemon
