#pragma once
// Runs the labelled scenario suite (scenarios/suite) through the judge and,
// for comparison, through a Kayenta-style judge fed the same ticks
// (docs/judge-accuracy.md). Each case: the simulator writes the canary and
// baseline recordings, the replay reads them back as if live, both judges
// decide, and the outcome is scored against the labels.

#include <optional>
#include <string>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "core/status.h"
#include "eval/suite/suite.h"

namespace gpucanary::eval::evaluate {

struct CaseOutcome {
  std::string name;
  suite::Category category = suite::Category::kAa;
  suite::Verdict expected = suite::Verdict::kPass;
  std::vector<std::string> expected_causes;  // "kind/scope[@node]"

  analysis::Verdict verdict = analysis::Verdict::kInconclusive;
  // decided_at minus the fault's onset (or the release start when the case
  // has no onset); unset when undecided.
  std::optional<double> delay_s;
  // decided_at minus the failing cause's `since` (for throttles: the first
  // throttled second, which a heating GPU reaches well after the onset).
  std::optional<double> since_delay_s;
  std::vector<std::string> causes;  // "kind/scope[@nodes]" as found (failing first)
  bool verdict_ok = false;          // fail when fail is expected; not fail otherwise
  bool causes_ok = false;           // every expected cause found with its scope (and node)
  // Summaries that contradict their own evidence (suite::SummaryContradictions).
  std::vector<std::string> contradictions;

  // The Kayenta-style judge on the same ticks (fixed-horizon Mann-Whitney
  // every interval, fail fast on a marginal score).
  analysis::Verdict kayenta_verdict = analysis::Verdict::kInconclusive;
  std::optional<double> kayenta_delay_s;
  bool kayenta_ok = false;
  double seconds = 0;  // wall time of the case (simulation included)
  // Lag-1 autocorrelation of the canary/baseline log ratio of the policy's
  // first metric, per 1 s tick and per block of 5 and 10 s (NaN if too short):
  // how independent the judge's blocks are.
  double autocorrelation_1s = 0, autocorrelation_5s = 0, autocorrelation_10s = 0;
};

struct EvaluateOptions {
  analysis::Policy policy = analysis::DefaultPolicy();
  std::string work_dir;            // recordings are written under it, one folder per case
  double kayenta_interval_s = 60;  // Argo Rollouts' usual analysis interval
  // Judge the GPU telemetry alone: every node (service) series is dropped
  // from the ticks, as on a fleet whose inference servers are not scraped
  // (docs/analysis-method.md, "Without service metrics").
  bool without_service = false;
};

Result<CaseOutcome> EvaluateCase(const suite::SuiteCase& c, const EvaluateOptions& options);

// A markdown report: the confusion matrix, cause accuracy, detection delays,
// the A/A false-fail rate, and both judges side by side.
std::string Markdown(const std::vector<CaseOutcome>& outcomes);

}  // namespace gpucanary::eval::evaluate
