#include "actions/runner.h"

#include <utility>

#include "core/mutex.h"

namespace gpucanary::actions {

Runner::Runner(RunnerOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) own_clock_ = std::make_unique<RealClock>();
  clock_ = options_.clock != nullptr ? options_.clock : own_clock_.get();
  worker_ = std::thread([this] { Work(); });
}

Runner::~Runner() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  changed_.NotifyAll();
  worker_.join();
}

RunTicket Runner::Run(Incident incident, TelemetryWriter telemetry) {
  return Finish(std::move(incident), std::move(telemetry), {});
}

RunTicket Runner::Finish(Incident incident, TelemetryWriter telemetry, std::set<std::string> done) {
  const std::string id = incident.Key();
  std::size_t queued = 0;
  {
    MutexLock lock(mu_);
    if (!seen_.insert(id).second) {
      const bool finished = done_.count(id) != 0;
      return {false, "canary " + id + ": actions already " +
                         (finished ? std::string("run") : std::string("queued or run")) +
                         "; not running them again"};
    }
    for (const ActionConfig& action : options_.actions) {
      queued += done.contains(action.name) ? 0u : 1u;
    }
    queue_.push_back({std::move(incident), std::move(telemetry), std::move(done)});
  }
  changed_.NotifyAll();
  return {true, "canary " + id + ": " + std::to_string(queued) + " actions queued"};
}

void Runner::Seed(const std::vector<std::string>& keys) {
  MutexLock lock(mu_);
  seen_.insert(keys.begin(), keys.end());
}

std::vector<ActionOutcome> Runner::Wait(const std::string& key) {
  MutexLock lock(mu_);
  // A canary that was never queued here (unknown, or only Seed()ed) has
  // nothing to wait for.
  const auto queued = [&]() REQUIRES(mu_) {
    if (busy_ && running_ == key) return true;
    for (const Job& j : queue_) {
      if (j.incident.Key() == key) return true;
    }
    return false;
  };
  changed_.Wait(mu_, [&]() REQUIRES(mu_) { return done_.count(key) != 0 || !queued(); });
  auto it = done_.find(key);
  return it == done_.end() ? std::vector<ActionOutcome>{} : it->second;
}

std::optional<std::vector<ActionOutcome>> Runner::Outcomes(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = done_.find(key);
  if (it == done_.end()) return std::nullopt;
  return it->second;
}

void Runner::WaitIdle() {
  MutexLock lock(mu_);
  changed_.Wait(mu_, [&]() REQUIRES(mu_) { return queue_.empty() && !busy_; });
}

void Runner::Work() {
  for (;;) {
    Job job;
    {
      MutexLock lock(mu_);
      changed_.Wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      // Stopping still drains the queue: a failed canary's actions are the
      // point of the circuit breaker.
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      running_ = job.incident.Key();
    }
    const ActionContext context{clock_, options_.flagger_gate, job.telemetry};
    std::vector<ActionOutcome> outcomes;
    for (const ActionConfig& action : options_.actions) {
      if (job.done.contains(action.name)) continue;
      ActionOutcome o;
      std::string why;
      if (Selects(action, job.incident, &why)) {
        o = ExecuteAction(action, job.incident, context);
      } else {
        o.name = action.name;
        o.kind = std::string(ActionKindName(action.kind));
        o.started_at_ms = clock_->NowMs();
        o.ok = true;
        o.skipped = true;
        o.detail = "skipped: " + why;
      }
      if (options_.on_outcome) options_.on_outcome(job.incident, o);
      outcomes.push_back(std::move(o));
    }
    if (options_.on_done) options_.on_done(job.incident, outcomes);
    {
      MutexLock lock(mu_);
      done_[job.incident.Key()] = std::move(outcomes);
      busy_ = false;
      running_.clear();
    }
    changed_.NotifyAll();
  }
}

}  // namespace gpucanary::actions
