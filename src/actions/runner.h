#pragma once
// The circuit breaker's runner: for each failed canary, the configured
// actions once, in configuration order, on a worker thread of its own, so
// the live canary manager never waits on a slow webhook or command.
//
//   Runner runner({.actions = *ParseActions(node, path), .flagger_gate = &gate,
//                  .on_outcome = [&](const Incident& i, const ActionOutcome& o) { Save(i, o); }});
//   RunTicket t = runner.Run(incident, telemetry_writer);   // returns at once
//   std::vector<ActionOutcome> outcomes = runner.Wait(incident.Key());
//
// Idempotent per incident key (Incident::Key: the canary id, or the canary
// id and a node for a node fault found while it runs): a second Run for a
// key already run (or queued, or Seed()ed from the record of an earlier
// process) does nothing and says so. A failing action does not stop the next ones.
//
// Thread-safe. The destructor finishes the incidents already queued (each
// action is bounded by its timeouts) and joins the worker.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actions/action_config.h"
#include "actions/execute.h"
#include "actions/flagger_gate.h"
#include "actions/incident.h"
#include "core/clock.h"
#include "core/mutex.h"

namespace gpucanary::actions {

struct RunnerOptions {
  std::vector<ActionConfig> actions;
  FlaggerGate* flagger_gate = nullptr;  // not owned; needed by flagger_rollback
  Clock* clock = nullptr;               // not owned; null: the real clock
  // Called on the worker thread after each action (skipped ones included).
  std::function<void(const Incident&, const ActionOutcome&)> on_outcome;
  // Called on the worker thread when an incident's actions are all done.
  std::function<void(const Incident&, const std::vector<ActionOutcome>&)> on_done;
};

struct RunTicket {
  bool started = false;  // false: this canary's actions already ran or are queued
  std::string message;   // "canary c-1: 3 actions queued", "canary c-1: actions already run ..."
};

class Runner {
 public:
  explicit Runner(RunnerOptions options);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Queues `incident`'s actions and returns at once. `telemetry` fills
  // diagnostic bundles (may be empty).
  RunTicket Run(Incident incident, TelemetryWriter telemetry = {});
  // The same, without the actions named in `done` (an earlier process
  // recorded their outcomes before it died): they produce no outcome here.
  RunTicket Finish(Incident incident, TelemetryWriter telemetry, std::set<std::string> done);

  // Marks incident keys whose actions an earlier process already ran (from
  // the daemon's record), so Run skips them.
  void Seed(const std::vector<std::string>& keys);

  // Blocks until the actions of the incident `key` are done and returns
  // their outcomes in order; empty at once when it was never Run (or only
  // Seed()ed).
  std::vector<ActionOutcome> Wait(const std::string& key);
  // The outcomes if done, nullopt if queued, running or unknown.
  std::optional<std::vector<ActionOutcome>> Outcomes(const std::string& key) const;
  // Blocks until every queued incident is done.
  void WaitIdle();

 private:
  struct Job {
    Incident incident;
    TelemetryWriter telemetry;
    std::set<std::string> done;  // action names not to run again
  };
  void Work();

  RunnerOptions options_;
  std::unique_ptr<Clock> own_clock_;
  Clock* clock_;

  mutable Mutex mu_;
  CondVar changed_;
  std::deque<Job> queue_ GUARDED_BY(mu_);
  std::set<std::string> seen_ GUARDED_BY(mu_);
  std::map<std::string, std::vector<ActionOutcome>> done_ GUARDED_BY(mu_);
  bool busy_ GUARDED_BY(mu_) = false;
  std::string running_ GUARDED_BY(mu_);  // the incident key being run while busy_
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread worker_;  // last: started once the rest is built
};

}  // namespace gpucanary::actions
