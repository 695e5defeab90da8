#pragma once
// A C++ port of Apache Otava's change point detection (the successor of
// Hunter: M. Fleming et al., "Hunter: Using Change Point Detection to Hunt for
// Performance Regressions", ICPE 2023, https://doi.org/10.1145/3578244.3583719).
// Port of `otava/analysis.py` (compute_change_points, split, merge) and
// `otava/change_point_divisive/` (the E-divisive Q-hat calculator, the
// detector loop, the t-test tester) of https://github.com/apache/otava,
// Apache License 2.0; the TigerBeetle regression data and Otava's expected
// indices are in ../shared/data/otava-tigerbeetle/.
//
// The algorithm, in Otava's words "split" then "merge":
//  1. Split: slide a window of `window_len` samples over the series (step
//     window_len / 2, restarting at the last change found). In each window
//     run E-divisive means (Matteson & James 2014): find the split that
//     maximises the energy statistic Q-hat over every sub-interval, keep it
//     while a two-sided Student t-test of the two sides has p <= the
//     first-pass p-value, and split again. The first pass is relaxed: 10x
//     max_pvalue (2x when max_pvalue >= 0.05, none from 0.5 up). The union
//     of all windows' points are the "weak" change points; each is then
//     re-tested between its neighbours on the whole series.
//  2. Merge: while some point has p >= max_pvalue, or the smallest relative
//     change max(|m2/m1 - 1|, |m1/m2 - 1|) is <= min_magnitude, remove the
//     weakest (highest p first, else smallest magnitude) and re-test its two
//     neighbours.
// Statistics follow NumPy/SciPy to the last bit where it matters for ties:
// NumPy's pairwise summation for means and (population) standard deviations,
// SciPy's `ttest_ind_from_stats` pooled-variance t with those deviations.
//
// Conventions (cpd.h): indices are the first sample of the new regime, NaN and
// +-Inf are missing samples (dropped; indices mapped back). Otava itself
// forward-fills missing values instead; on series without gaps the two agree.
//
// Cost: O(n * window_len * (k + 1)) time, k the change points found per
// window (each split re-scans the window's intervals at O(window_len^2)),
// and O(n) memory. Measured (Release, 2-core VM): 0.2 ms for 365 samples,
// 0.5 ms for 1,000 (bench/cpd_bench.cc). Thread-safe (no shared state).

#include <cstddef>
#include <span>
#include <vector>

namespace gpucanary::analysis::cpd {

// Otava's library defaults (compute_change_points).
struct OtavaOptions {
  // Samples per split window. REQUIRES: >= 2.
  std::size_t window_len = 50;
  // Significance a final change point must reach (two-sided t-test, p < this).
  double max_pvalue = 0.001;
  // Smallest relative change of the means a final change point must exceed.
  double min_magnitude = 0.0;
};

// Change points of `values` by Otava's algorithm; see the conventions above.
std::vector<std::size_t> OtavaChangePoints(std::span<const double> values,
                                           const OtavaOptions& options = {});

// The two-sided p-value of Student's t statistic `t` with `df` > 0 degrees of
// freedom (SciPy's 2 * t.sf(|t|, df)): 0 for an infinite t, NaN for NaN.
double StudentTTwoSidedPValue(double t, double df);

}  // namespace gpucanary::analysis::cpd
