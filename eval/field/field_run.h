#pragma once
// Judges a generated field case exactly as `gpucanary judge --baseline
// baseline.om --canary canary.om --release-start T` does (the default policy,
// analysis::ReplayRecordings into analysis::Judge, src/cli/judge_command.cc),
// scores the report against the case's labels, and renders the suite's
// markdown report.
//
// Thread-compatible.

#include <optional>
#include <string>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "core/status.h"
#include "eval/field/field_case.h"
#include "eval/field/field_generator.h"

namespace gpucanary::eval::field {

struct FieldOutcome {
  FieldCase c;
  CaseFiles files;
  analysis::Verdict verdict = analysis::Verdict::kInconclusive;
  std::optional<double> decided_at;
  // decided_at minus the onset (fails) or the release start (others).
  std::optional<double> delay_s;
  double score = 0;
  std::vector<std::string> causes;  // "kind/scope[@nodes]", "!" first when failing
  std::vector<std::string> notes;
  std::string first_summary;  // the first failing cause's sentence, or the first cause's
  bool verdict_ok = false;    // pass→pass, not_fail→not fail, fail→fail
  bool cause_ok = false;      // the expected kind and scope (and node) among the causes
  double seconds = 0;         // generation + judging wall time
};

// Judges the recordings of `files` with `policy`.
Result<FieldOutcome> JudgeCase(const FieldCase& c, const CaseFiles& files,
                               const analysis::Policy& policy);

// Writes `dir`/labels.json: the case's labels, parameters that matter for
// reading it, and the `gpucanary judge` command that reproduces its verdict.
Status WriteLabels(const FieldCase& c, const CaseFiles& files, const std::string& dir);

// The report: summary, per-class table, per-case table.
std::string Markdown(const std::vector<FieldOutcome>& outcomes, std::uint64_t seed);

}  // namespace gpucanary::eval::field
