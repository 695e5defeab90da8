#pragma once
// Recording layouts for tests and benchmarks (docs/recorded-telemetry.md,
// "Layouts"): the same samples as a recording's text, reordered series by
// series, as a strict OpenMetrics writer or an export from Prometheus lays
// them out.
//
//   std::string grouped = SeriesGroupedText(Slurp("fleet.om"));
//
// Series-grouped: every family once, its metadata (# HELP, # TYPE, # UNIT, as
// first written) first, then each of its series in the order the series first
// appear, each series' samples in file order. A histogram's or summary's
// series is its label set without `le` / `quantile`: the lines of one point
// (buckets, _count, _sum) stay together, as OpenMetrics requires; families in order of first
// appearance; "# EOF" last when the input had it. A sample belongs to the
// family its name (less _total, _bucket, _count, _sum, ...) names when there
// is metadata for one, else to the family whose metadata came last. Other
// comments are dropped. The text is held in memory: for test-sized inputs.
//
// Thread-safe (no state).

#include <string>
#include <string_view>

namespace gpucanary::analysis {

std::string SeriesGroupedText(std::string_view text);

}  // namespace gpucanary::analysis
