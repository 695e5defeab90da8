#pragma once
// The judge's Report (judge.h) from its rooms' state: the metrics' results
// (policy order, whole canary), the causes (findings grouped by kind and
// scope, node faults per node, with their evidence and one sentence each),
// the verdict with its score, and the notes on what could not be compared.
// A snapshot: it changes nothing, so it can be built after any tick.
//
// Internal to the judge.

#include <cstdint>
#include <vector>

#include "analysis/judge/fleet.h"
#include "analysis/judge/internal.h"
#include "analysis/judge/judge.h"
#include "analysis/judge/measures.h"
#include "analysis/judge/rules.h"
#include "analysis/judge/verdict.h"
#include "analysis/policy/policy.h"

namespace gpucanary::analysis::judge_internal {

// What a report is made of; every reference must outlive the call.
struct ReportSources {
  const Policy& policy;
  const Timeline& time;
  const Fleet& fleet;
  const Measures& measures;
  const HardRules& rules;
  const VerdictTracker& verdict;
  const std::vector<MetricFinding>& findings;
  std::int64_t ignored_ticks = 0;  // ticks out of time order
};

Report BuildReport(const ReportSources& sources);

}  // namespace gpucanary::analysis::judge_internal
