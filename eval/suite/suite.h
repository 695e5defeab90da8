#pragma once
// The judge's labelled scenario suite (scenarios/suite/README.md): simulator
// scenarios with the verdict and causes a correct judge gives, read from
// scenarios/suite/labels.yaml, and turned into the canary and baseline
// recordings `gpucanary judge` takes.
//
//   Result<std::vector<SuiteCase>> cases = LoadSuite("scenarios/suite/labels.yaml");
//   Result<CaseFiles> files = GenerateCase((*cases)[0], "/tmp/aa-01", /*gzip=*/false);
//   // gpucanary judge --baseline files->baseline --canary files->canary
//   //                 --release-start files->release_start_unix_s
//
// labels.yaml:
//
//   cases:
//     - file: release-power-brake-1.yaml   # relative to labels.yaml
//       category: release                 # aa | release | node | regression
//       release: next                     # deployed on canary_nodes at release_start
//       canary_nodes: [node-2, node-5]
//       release_start: 60                 # seconds (or "60s") from the scenario start
//       verdict: fail                     # pass | fail | not_fail
//       causes:                           # docs/contracts.md §6 kinds and scopes
//         - {kind: power_brake, scope: release}
//         - {kind: thermal_throttle, scope: node, node: node-5, gpus: [node-5/6]}
//       onset_s: 70                       # optional: when the fault begins
//       tags: [bursts]                    # optional
//       description: "one line"
//
// Every error is a kParseError "FILE:LINE:COLUMN: field: what" naming the
// labels file (or, for a scenario that does not parse, the labels entry and
// then the scenario's own position). Unknown and duplicate keys are errors.
// A case must be consistent with its scenario and its category:
//   - the scenario deploys `release` on exactly `canary_nodes` at
//     `release_start`; nodes named anywhere are in its fleet, GPUs on them;
//   - aa: verdict pass, no causes; release: verdict fail and a release-scoped
//     cause; regression: verdict fail and software_regression (release);
//     node: verdict not_fail or pass, only node-scoped causes, each naming
//     its node.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/offline.h"
#include "sim/scenario.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::suite {

enum class Category : std::uint8_t { kAa, kRelease, kNode, kRegression };
enum class Verdict : std::uint8_t { kPass, kFail, kNotFail };

// "aa", "release", "node", "regression"; "pass", "fail", "not_fail".
std::string_view CategoryName(Category category);
std::string_view VerdictName(Verdict verdict);

// The names of the cause kinds (vocab/vocab.h), in its order.
std::span<const std::string_view> CauseKinds();

struct ExpectedCause {
  vocab::CauseKind kind{};
  vocab::Scope scope{};           // release or node
  std::string node;               // hostname; empty when the label names none
  std::vector<std::string> gpus;  // "node-5/6"; empty when the label names none
};

struct SuiteCase {
  std::string name;  // the file name without ".yaml", e.g. "aa-01"
  std::string file;  // as written in labels.yaml
  std::string path;  // resolved against the labels file's directory
  Category category = Category::kAa;
  std::string release;
  std::vector<std::string> canary_nodes;
  double release_start_s = 0;  // from the scenario start
  Verdict verdict = Verdict::kPass;
  std::vector<ExpectedCause> causes;
  std::optional<double> onset_s;  // from the scenario start; unset: no fault
  std::vector<std::string> tags;
  std::string description;
  sim::Scenario scenario;  // `path`, parsed
};

// Reads labels.yaml and every scenario it names, and checks them (above).
// Errors: kNotFound / kIoError when the labels file cannot be read;
// kParseError, positioned, for anything wrong in it. Thread-safe.
Result<std::vector<SuiteCase>> LoadSuite(const std::string& labels_path);

// The same from text; `labels_path` names it in errors and its directory
// resolves the scenario files.
Result<std::vector<SuiteCase>> ParseSuite(std::string_view yaml_text,
                                          const std::string& labels_path);

// What GenerateCase wrote, and when the release started.
struct CaseFiles {
  std::string canary;               // OUT_DIR/canary.om[.gz]: the canary nodes
  std::string baseline;             // OUT_DIR/baseline.om[.gz]: every other node
  std::string truth;                // OUT_DIR/truth.jsonl (docs/simulator.md, "Ground truth")
  std::string releases;             // OUT_DIR/releases.jsonl
  double release_start_unix_s = 0;  // engine start + release_start: `--release-start`
  sim::OfflineStats stats;
};

// Runs the case's scenario offline, in process, for its whole duration
// (sim::RunScenarioOffline, as `gpucanary sim --offline OUT_DIR
// --canary-nodes ...` does), writing OUT_DIR (created if missing). `gzip`
// writes .om.gz. Errors: kIoError for files that cannot be written.
// Deterministic: the same case gives byte-identical files.
Result<CaseFiles> GenerateCase(const SuiteCase& c, const std::string& out_dir, bool gzip);

}  // namespace gpucanary::eval::suite
