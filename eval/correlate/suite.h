#pragma once
// The correlation's labelled simulator suite (scenarios/correlate/README.md):
// fleets where 3-5 releases overlap and one or none of them is bad, each
// with the release a correct `gpucanary correlate` blames (or none), read
// from scenarios/correlate/labels.yaml, simulated, correlated and scored.
//
//   Result<std::vector<CorrelateCase>> cases =
//   LoadCorrelateSuite("scenarios/correlate/labels.yaml"); Result<CaseOutcome> outcome =
//   RunCorrelateCase((*cases)[0], "/tmp/work", {});
//
// Thread-compatible; cases are independent (run them in parallel if wanted).

#include <optional>
#include <string>
#include <vector>

#include "analysis/correlate/correlate.h"
#include "core/status.h"
#include "vocab/vocab.h"

namespace gpucanary::eval::correlate {

struct CorrelateCase {
  std::string name;                      // file name without ".yaml"
  std::string path;                      // the scenario, resolved against labels.yaml's folder
  std::string category;                  // "guilty", "none" or "mixed"
  std::string guilty;                    // the bad release; empty for "none"
  std::optional<vocab::CauseKind> kind;  // its cause kind; unset for "none"
  std::vector<std::string> releases;
  std::vector<std::string> confounders;
  std::string description;
};

// Errors: kNotFound / kIoError for the file; kParseError "FILE:LINE:COL: ..."
// for bad YAML, an unknown key, a missing field, an unknown category or an
// unknown cause kind (one not in vocab/vocab.h).
Result<std::vector<CorrelateCase>> LoadCorrelateSuite(const std::string& labels_path);

struct SuiteRunOptions {
  // Seconds between recorded scrapes (a Prometheus-like 5 s keeps the suite
  // fast; 1 s is what a canary scraper stores).
  double scrape_interval_s = 5;
  analysis::correlate::CorrelateOptions correlate;
};

struct CaseOutcome {
  std::string top;  // the best-scoring suspect over all regressions; "" if none named
  double top_score = 0;
  std::vector<std::string> named;  // every release named a suspect anywhere
  bool correct = false;  // guilty/mixed: top == guilty and nothing else named; none: nothing named
  bool top1 = false;     // guilty/mixed: top == guilty
  // The cause kind of the regression the top suspect explains; unset when
  // none is named.
  std::optional<vocab::CauseKind> top_kind;
  int regressions = 0;
  double simulate_s = 0;
  double correlate_s = 0;
  analysis::correlate::CorrelateReport report;
};

// Simulates `c` offline into `work_dir` (created; its files are overwritten),
// correlates its telemetry with its release log and scores the answer.
Result<CaseOutcome> RunCorrelateCase(const CorrelateCase& c, const std::string& work_dir,
                                     const SuiteRunOptions& options);

}  // namespace gpucanary::eval::correlate
