#pragma once
// Checks a cause's one-sentence summary against the numbers it quotes
// (issue 18: "the summary sentence is generated from the same numbers it
// quotes; a test checks that no sentence contradicts its metric's
// direction"). Used by the labelled suites' tests on every cause they get.

#include <string>
#include <vector>

#include "analysis/judge/judge.h"

namespace gpucanary::eval::suite {

// Every "<metric> up|down N%", "<metric> +N%|-N%" and "<metric> unchanged"
// in the summary against that metric's evidence (change = canary / baseline
// - 1, the sign and the rounded percentage, within 1 point; "unchanged" under
// 2%), and "DRAM busier" against DRAM activity. Returns one line per
// contradiction (empty: consistent). Metrics the summary names without
// evidence are not checked.
std::vector<std::string> SummaryContradictions(const analysis::Cause& cause);

}  // namespace gpucanary::eval::suite
