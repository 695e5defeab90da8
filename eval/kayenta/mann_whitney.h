#pragma once
// The two-sample Mann-Whitney / Wilcoxon rank-sum test with the confidence
// interval and estimate Kayenta's NetflixACAJudge classifies on
// (kayenta-mannwhitney/.../mannwhitney/MannWhitney.scala, itself "derived from
// the R Wilcoxon Test implementation (asymptotic, two-sample confidence
// interval logic)", i.e. R's wilcox.test(x, y, conf.int = TRUE, exact = FALSE,
// correct = TRUE)). Used as the baseline method gpucanary is compared against
// (docs/analysis-method.md, "Against a Kayenta-style judge"). Pure functions, thread-safe.
//
// With n = |x| (experiment, the canary), m = |y| (control, the baseline), N = n m:
//   U      = #{(i, j): x_i > y_j} + 1/2 #{(i, j): x_i = y_j}    (scipy's U1)
//   sigma  = sqrt(n m / 12 * ((n + m + 1) - sum_t (t^3 - t) / ((n + m)(n + m - 1))))
//            over the tie groups t of the pooled sample (average ranks);
//   W(mu)  = (U(mu) - N/2 - sign(U(mu) - N/2) / 2) / sigma(mu),  U(mu), sigma(mu)
//            those of x - mu against y ("wdiff" in R, "wilcoxonDiff" in Kayenta).
// p-value: 2 Phi(-|W(0)|). Confidence interval for the shift x - y at level
// 1 - alpha: [root of W(mu) = z, root of W(mu) = -z], z = Phi^-1(1 - alpha/2),
// where, as in R and Kayenta, a root is first checked at the end points:
// W(min x - max y) - q <= 0 returns min x - max y, W(max x - min y) - q >= 0
// returns max x - min y.
//
// How the roots are found (the one place this is not a literal port). W is a
// step function of mu that jumps only at pairwise differences x_i - y_j; R's
// uniroot (tol 1e-4) and Kayenta's Brent solver converge to the difference at
// which it crosses the quantile, within their tolerance. We return that
// difference exactly: between differences W depends on mu only through U (the
// tie groups are those within each sample), so the crossing is the k-th
// smallest difference for a k found by bisection on U, and the k-th smallest is
// selected without forming the N differences (O((n + m) log) time, O(n + m)
// memory). If W equals the quantile exactly on a whole interval, its midpoint.
// The value of W *at* a difference (where x - mu ties y) is used only for the
// two end points, as R does; an iterate of R's uniroot that lands exactly on an
// interior difference can stop there when the extra tie flips W's sign (seen
// with heavily tied, integer data) - we ignore such one-point blips.
//
// Estimate: the Hodges-Lehmann estimator, the median of the N pairwise
// differences (mean of the two middle ones for even N). R's uniroot of the
// uncorrected W(mu) = 0 lands on it (odd N) or anywhere between the two middle
// differences (even N); Kayenta solves its *continuity-corrected* W(mu) = 0,
// which is zero on a range that contains the median, and its Brent solver
// returns an arbitrary point of that range. Kayenta's classifier uses only
// |estimate| (as the tolerance band), see kayenta.h.

#include <cstddef>
#include <span>

#include "core/status.h"

namespace gpucanary::eval::kayenta {

struct MannWhitneyResult {
  double u = 0;         // U of the experiment sample x against y (see above)
  double z = 0;         // W(0): tie- and continuity-corrected normal score
  double p_value = 1;   // two-sided, 2 Phi(-|z|)
  double ci_lower = 0;  // confidence interval for the shift x - y
  double ci_upper = 0;
  double estimate = 0;  // Hodges-Lehmann: median of x_i - y_j
};

// Largest n + m accepted: keeps U, rank sums and the tie term sum (t^3 - t)
// exact in doubles. Kayenta's inputs are time buckets (n = window / step,
// typically 30-600); a day of 1 s ticks per side still fits.
inline constexpr std::size_t kMaxObservations = std::size_t{1} << 17;

// Tests x (experiment) against y (control) at confidence level conf_level
// (Kayenta's judge uses 0.98).
// Returns kInvalidArgument if either sample is empty, a value is not finite,
// conf_level is outside (0, 1), or every observation is tied at a point where
// W is needed (R: "cannot compute confidence interval when all observations
// are tied"; e.g. both samples constant - Kayenta adds noise before the test);
// kOutOfRange if n + m > kMaxObservations.
Result<MannWhitneyResult> MannWhitney(std::span<const double> x, std::span<const double> y,
                                      double conf_level);

}  // namespace gpucanary::eval::kayenta
