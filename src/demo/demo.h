#pragma once
// `gpucanary demo` (docs/demo.md): the canary service end to end on one
// machine, nothing to install. A simulated fleet (sim::LiveSim) and the
// daemon (daemon::Daemon) run in this process on loopback; the demo plays
// the CD pipeline: it deploys a healthy release to one node through the
// simulator's control API, announces it to the daemon (POST
// /api/v1/releases), follows the live canary until the judge passes it and
// promotes it; then it does the same with a faulty release, and shows the
// halt, the cause in words, the circuit breaker's actions (traffic back to
// the stable release, node isolation, the diagnostic bundle), the HTML
// report and the dashboard URL. Everything goes through the same HTTP APIs a
// real pipeline uses.
//
//   demo::Options options;
//   options.scenario = "power-brake";
//   auto result = demo::Run(options, std::cout);
//   result->as_expected   // the verdicts, causes and actions the scenario promises
//
// Not thread-safe; one demo per process (it owns the loopback ports it binds).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "vocab/vocab.h"

namespace gpucanary::demo {

// What a scenario expects of the faulty release's verdict.
enum class ExpectedVerdict : std::uint8_t {
  kFail,
  kNotFail,  // pass or inconclusive
};

// One failure the demo can show (--scenario).
struct Scenario {
  std::string name;         // "power-brake"
  std::string change;       // what the faulty release changed, in words
  std::string sim_release;  // the faulty release's simulator profile (YAML flow map body)
  std::string quantization;
  // A node's own fault, injected on a baseline node while the canary runs:
  // the control API's POST /faults body ("" for a release fault).
  std::string node_fault;
  ExpectedVerdict expect_verdict = ExpectedVerdict::kFail;
  vocab::CauseKind expect_cause{};
  vocab::Scope expect_scope{};  // release or node
};

const std::vector<Scenario>& Scenarios();
const Scenario* FindScenario(std::string_view name);

struct Options {
  std::string scenario = "power-brake";
  // Where the serve config, data, bundles and report go; "" makes a new
  // folder under the system's temp folder.
  std::filesystem::path dir;
  bool healthy_first = true;  // roll out (and promote) a healthy release first
  bool exit_after_verdict = false;
  std::uint16_t port = 0;  // the daemon's port on 127.0.0.1 (0: any free port)
  // Set (by a signal handler) to stop early or to end the dashboard wait.
  const std::atomic<bool>* interrupted = nullptr;
};

struct ActionSeen {
  std::string name;
  std::string kind;
  bool ok = false;
  std::string detail;
  std::string incident;  // "fail" or "node:<host>"
};

// The vocabulary's words the daemon wrote, as enums: unset where the field
// was missing (the daemon writes no other words).
struct CauseSeen {
  std::optional<vocab::CauseKind> kind;
  std::optional<vocab::Scope> scope;
  std::vector<std::string> nodes;
  std::string summary;
  double since = 0;  // Unix seconds
};

struct CanarySeen {
  std::string release;
  std::optional<vocab::CanaryState> state;  // the canary's when the demo moved on
  std::optional<vocab::Verdict> verdict;    // the judge's
  double started_at = 0;
  std::optional<double> decided_at;
  std::vector<CauseSeen> causes;
  std::vector<ActionSeen> actions;
};

struct Outcome {
  std::filesystem::path dir;
  std::string dashboard_url;
  std::optional<CanarySeen> healthy;
  CanarySeen faulty;
  // The simulated fleet after the actions: each release's traffic weight
  // and the nodes cordoned.
  std::vector<std::pair<std::string, double>> traffic_weights;
  std::vector<std::string> cordoned;
  std::filesystem::path report;  // the HTML report of the diagnostic bundle ("" if none)
  bool as_expected = false;
  std::vector<std::string> problems;  // why not, when not
};

// Runs the demo, writing its progress to `out`. Errors: the ports, the
// folder, or a step that could not be done (each naming it); a verdict
// other than the expected one is not an error (Outcome::as_expected).
gpucanary::Result<Outcome> Run(const Options& options, std::ostream& out);

// The outcome as JSON (the --summary file).
std::string OutcomeToJson(const Outcome& outcome);

}  // namespace gpucanary::demo
