#pragma once
// Carrying out one configured action for one incident (docs/actions.md):
// the HTTP ones (webhook, argo_rollouts_abort, traffic_shift, isolate_node
// by URL) with timeouts and retries, command hooks, the Flagger gate and the
// diagnostic bundle. The Runner calls these in order on its worker thread;
// they are usable alone (tests, a CLI).

#include <cstdint>
#include <string>

#include "actions/action_config.h"
#include "actions/bundle.h"
#include "actions/flagger_gate.h"
#include "actions/incident.h"
#include "core/clock.h"
#include "core/status.h"

namespace gpucanary::actions {

// What one action did, for the daemon to record (it persists them).
struct ActionOutcome {
  std::string name;                // ActionConfig::name
  std::string kind;                // ActionKindName
  std::int64_t started_at_ms = 0;  // Unix ms
  std::int64_t duration_ms = 0;
  bool ok = false;
  bool skipped = false;  // the `when` filter did not match (ok is true then)
  // One line: "POST http://h/x: HTTP 200", "... HTTP 503 (after 4 attempts)",
  // "exit 0", "node-4: exit 0; node-5: exit 1", the error, or why it was
  // skipped ("skipped: no release-scoped cause").
  std::string detail;
  int attempts = 0;  // HTTP requests sent or processes run
  // Bounded program output (command hooks) or response body (HTTP), for
  // the record; "" when none.
  std::string output;
};

// What actions need besides their configuration. Pointers are not owned and
// must outlive the call.
struct ActionContext {
  // Required: outcome times, and the waits between HTTP retries (SleepUntilMs:
  // with a ManualClock someone must advance it).
  Clock* clock = nullptr;
  FlaggerGate* flagger_gate = nullptr;  // required by flagger_rollback
  TelemetryWriter telemetry;            // for diagnostic_bundle; may be empty (bundle.h)
};

// Whether `action`'s `when` filter selects `incident`; `why` (may be null)
// gets the reason when it does not.
bool Selects(const ActionConfig& action, const Incident& incident, std::string* why);

// Runs `action` for `incident` (the filter is not checked here) and says
// what happened. Never throws; failures are outcomes with ok false.
ActionOutcome ExecuteAction(const ActionConfig& action, const Incident& incident,
                            const ActionContext& context);

// "{node}", "{release}", "{service}", "{canary}", "{verdict}" in `text`
// replaced; other text kept.
std::string ExpandTemplate(const std::string& text, const Incident& incident,
                           const std::string& node);

// Whether `value` may replace a placeholder in a command's argument or a
// Kubernetes name: 1 to 253 characters of [A-Za-z0-9._:@+=-], not starting
// with '-' (an option to the program) or '.'. Host names, node names,
// release ids and verdicts are; "$(...)", "`...`", "; rm", "a b",
// "--kubeconfig=x" and "../x" are not.
bool SafePlaceholderValue(std::string_view value);

// ExpandTemplate, refusing (kInvalidArgument, naming the placeholder and
// the value) a substitution whose value is not SafePlaceholderValue: what a
// release annotation or a host label holds never becomes an option or shell
// syntax in a command (issue 22).
Result<std::string> ExpandChecked(const std::string& text, const Incident& incident,
                                  const std::string& node);

}  // namespace gpucanary::actions
