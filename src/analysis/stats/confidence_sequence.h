#pragma once
// Asymptotic confidence sequences (CS) for the mean of a stream, and the
// helpers the judge needs around them: log ratios, relative change, decisions
// against a practical margin. docs/analysis-method.md, "Statistical
// comparisons", steps 2-4.
//
// The CS is the Gaussian-mixture asymptotic CS of
//   I. Waudby-Smith, D. Arbour, R. Sinha, E. H. Kennedy, A. Ramdas,
//   "Time-uniform central limit theory and asymptotic confidence sequences",
//   arXiv:2103.06476 (2021), Theorem 2.2:
//
//   mean_n +- sqrt( 2 (n s^2 rho^2 + 1) / (n^2 rho^2) * log( sqrt(n s^2 rho^2 + 1) / alpha ) )
//
// with s^2 the sample variance after n observations and rho > 0 a constant
// fixed before the data. With probability >= 1 - alpha (asymptotically: the
// guarantee rests on a strong Gaussian approximation of the partial sums, as
// the CLT does for a fixed-n interval) the interval contains the true mean at
// every n at once, so it may be looked at after every observation.
//
// Uncertainty, stated: we reproduce the boundary from the paper as we
// remember it; it coincides with the normal-mixture boundary of Howard,
// Ramdas, McAuliffe, Sekhon (2021) at intrinsic time V = n s^2, and the
// golden vectors check our arithmetic, not our memory of the paper. The
// authors' R code (package "asymptoticCS", std_conjmix_margin) standardises
// instead: s * sqrt( 2 (n rho^2 + 1) / (n^2 rho^2) * log( sqrt(n rho^2 + 1) / alpha ) ),
// which is the formula above with rho replaced by rho / s. We offer both
// (Scale below); the difference matters in practice: see RhoForTarget.

#include <cstdint>
#include <optional>

namespace gpucanary::analysis::stats {

// A closed interval [lo, hi]; lo may be -inf and hi +inf ("nothing known yet").
struct Bounds {
  double lo = 0.0;
  double hi = 0.0;
};

// Which form of the boundary (see the file comment).
enum class CsScale : std::uint8_t {
  // The paper's Theorem 2.2: s^2 inside the mixture. rho must be chosen on the
  // data's scale (RhoForTarget's sigma).
  kPaper,
  // The authors' software: s times the unit-variance boundary. Scale-free: the
  // same rho works for data of any variance.
  kStandardized,
};

// The rho that makes the unit-variance boundary tightest near n_star
// observations, by the closed-form approximation given with the normal-mixture
// boundary in Howard et al. 2021 and used to tune the asymptotic CS for a time
// t* in Waudby-Smith et al. 2021 (the authors' best_rho2_approx computes it
// through an asymptotic Lambert W expansion and keeps O(alpha^2) terms that we
// drop; they change rho^2 by < 0.1% at alpha <= 0.05):
//
//   rho^2 = ( -2 log alpha + log(-2 log alpha + 1) ) / n_star
//
// (the exact optimiser uses the Lambert W_{-1} function; the approximation
// is within a few percent of it for alpha <= 0.1).
//
// With CsScale::kPaper the boundary depends on n s^2 rho^2, so for data of
// standard deviation sigma the boundary is tightest near n_star / sigma^2,
// not n_star. Pass the expected sigma (fixed in advance: from history or an
// A/A recording, never from the data being judged) to get rho / sigma, which
// puts the optimum back at n_star. With kStandardized use sigma = 1.
// REQUIRES: n_star > 0, 0 < alpha < 1, sigma > 0.
double RhoForTarget(double n_star, double alpha, double sigma = 1.0);

// The CS half-width for n observations of sample variance `variance`;
// +inf for n < 2. REQUIRES: rho > 0, 0 < alpha < 1, variance >= 0.
double CsHalfWidth(std::int64_t n, double variance, double rho, double alpha, CsScale scale);

// Running mean and variance (Welford) of a stream, with its anytime-valid and
// its fixed-horizon intervals. O(1) time and memory per observation.
// Thread-compatible (a const object may be read from several threads).
class ConfidenceSequence {
 public:
  // REQUIRES: rho > 0 (see RhoForTarget).
  explicit ConfidenceSequence(double rho, CsScale scale = CsScale::kPaper);

  // Adds one observation. A NaN or infinite x is a caller bug (GC_CHECK):
  // the judge filters non-finite log ratios before they get here.
  void Add(double x);

  std::int64_t n() const { return n_; }
  // The running mean; 0 before the first observation.
  double mean() const { return mean_; }
  // The sample variance (divisor n - 1); 0 for n < 2.
  double variance() const;
  double rho() const { return rho_; }

  // The (1 - alpha) CS at the current n: valid simultaneously over all n.
  // (-inf, +inf) for n < 2. REQUIRES: 0 < alpha < 1.
  Bounds Interval(double alpha) const;

  // The classical fixed-n interval mean +- z_{1-alpha/2} s / sqrt(n): valid at
  // ONE n chosen in advance, not when looked at every n (it is here to show
  // how often that fails). (-inf, +inf) for n < 2. REQUIRES: 0 < alpha < 1.
  Bounds FixedHorizonInterval(double alpha) const;

 private:
  double rho_;
  CsScale scale_;
  std::int64_t n_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared deviations from the running mean
};

// d = log(canary / baseline) for one block; nullopt unless both are > 0 and
// finite (a ratio of a metric that can be zero or negative is meaningless:
// compare differences instead).
std::optional<double> LogRatio(double canary, double baseline);

// A log-ratio interval as a relative change: [e^lo - 1, e^hi - 1]
// (-inf maps to -1, +inf stays +inf).
Bounds RelativeChange(Bounds log_ratio);

// The interval's half-width: after the data, the smallest effect the interval
// could have told apart from 0 ("detectable effect" of an inconclusive metric).
// +inf for an unbounded interval.
double DetectableEffect(Bounds interval);

enum class Decision : std::uint8_t { kUndecided, kWorse, kNotWorse };

// "May not drop more than margin" (throughput; margin 0.03 = 3%), on a
// relative-change interval: kWorse when hi < -margin (the whole interval is a
// larger drop), kNotWorse when lo > -margin, else kUndecided.
// REQUIRES: margin >= 0.
Decision DecideDrop(Bounds relative, double margin);

// "May not rise more than margin" (latency): kWorse when lo > margin,
// kNotWorse when hi < margin, else kUndecided. REQUIRES: margin >= 0.
Decision DecideRise(Bounds relative, double margin);

}  // namespace gpucanary::analysis::stats
