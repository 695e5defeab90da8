#pragma once
// An anytime-valid confidence sequence for the log ratio of two arms' pooled
// means, observed once a second, with a variance that accounts for the
// autocorrelation of 1 s telemetry (docs/analysis-method.md, "Statistical
// comparisons (anytime-valid)").
//
// Each second brings, per arm, a numerator and a denominator: the sum of the
// GPUs' values and the number of GPUs (a gauge), tokens and GPUs (a rate),
// histogram _sum and _count increases (a mean), tokens and DRAM activity
// (an efficiency). The estimate is the log ratio of the two ratios of sums
//
//   theta = log( (sum cn / sum cd) / (sum bn / sum bd) )
//
// over every second seen: busy seconds weigh more than quiet ones, and a
// second of near-zero activity cannot swing it (a mean of per-second log
// ratios can: on bursty DRAM activity two halves of one node gave +27% and
// -21%; this estimator +-2%). Its variance is the delta method's: theta_hat -
// theta ~ mean of the influence z_t = cn_t/CN - cd_t/CD - bn_t/BN + bd_t/BD
// (CN = mean of cn, ...). The coefficients are the current means, so the lag
// products of the four streams are kept (16 per lag, lags 0..kMaxLag) and
// z's autocovariances recomputed exactly at every look.
//
// 1 s telemetry is autocorrelated (lag-1 0.3-0.9), and a few seconds of it
// hold little information about its own variance: a Newey-West (Bartlett)
// estimate alone, looked at every second from the 10th, excluded the true
// value in 28% (lag-1 0.5) to 79% (0.95) of runs at a nominal 5%
// (ratio_cs_test). So the variance the interval uses is the largest of
//  - the Bartlett long-run variance at bandwidth L = ceil(2 sqrt(n)) (up to
//    kMaxLag), inflated by n / (n - L) for few seconds;
//  - the AR(1) long-run variance g0 (1 + r) / (1 - r) at an upper bound r of
//    the lag-1 autocorrelation: the estimate plus Kendall's bias (1 + 3 r)/n
//    plus two standard errors sqrt((1 - r^2)/n), at most 0.98. Early, when
//    the autocorrelation is unknown, this assumes much of it; it fades to
//    the estimate as seconds accumulate;
//  - the lag-0 variance g0.
// Measured at a nominal 5% looked at every second from the 10th to the
// 600th: 0.3% of runs excluded the truth at lag-1 0, 2.7% at 0.5, 10% at
// 0.8, 23% at 0.95 (the coverage is only asymptotic; at 0.95 ten seconds are
// less than one independent sample). The judge's decisions are against a
// margin, at a per-comparison alpha near 1e-3, and checked on A/A runs
// (docs/judge-accuracy.md).
//
// The interval is the standardised asymptotic CS of confidence_sequence.h
// with s^2 = that variance.
//
// O(kMaxLag) time per second; about 5 KB per instance. Thread-compatible.

#include <array>
#include <cstdint>
#include <optional>

#include "analysis/stats/confidence_sequence.h"

namespace gpucanary::analysis::stats {

class RatioCs {
 public:
  static constexpr int kMaxLag = 32;

  // REQUIRES: rho > 0 (RhoForTarget with the target in seconds).
  explicit RatioCs(double rho);

  // One second of both arms. Seconds where either denominator is not > 0,
  // or any value is not finite, are not observations (no data).
  void Add(double canary_num, double canary_den, double baseline_num, double baseline_den);

  std::int64_t n() const { return n_; }
  double canary_ratio() const;    // sum cn / sum cd; NaN before the first second
  double baseline_ratio() const;  // sum bn / sum bd
  // log(canary_ratio / baseline_ratio); nullopt unless both are > 0.
  std::optional<double> LogRatio() const;
  // The Bartlett long-run variance of the influence at bandwidth Bandwidth()
  // (before the small-sample inflation); NaN for n < 2 or without a log ratio.
  double LongRunVariance() const;
  int Bandwidth() const;  // ceil(2 sqrt(n)), at most kMaxLag and n - 1; 0 for n < 2
  // The upper bound r of the lag-1 autocorrelation (file comment); NaN as above.
  double AutocorrelationBound() const;
  // The variance the interval uses (file comment); NaN as above.
  double IntervalVariance() const;
  // The (1 - alpha) confidence sequence for the log ratio at this n;
  // (-inf, +inf) for n < 2 or without a log ratio. REQUIRES: 0 < alpha < 1.
  Bounds Interval(double alpha) const;

 private:
  static constexpr std::size_t kStreams = 4;  // cn, cd, bn, bd
  using Obs = std::array<double, kStreams>;
  // Autocovariance of z at lag k, from the lag products and the weights.
  double Gamma(int k, const Obs& w) const;
  Obs Weights() const;

  double rho_;
  std::int64_t n_ = 0;
  Obs sums_{};
  // lag_[k][i * 4 + j] = sum over t of u_i(t) * u_j(t - k).
  std::array<std::array<double, kStreams * kStreams>, kMaxLag + 1> lag_{};
  std::array<Obs, kMaxLag + 1> ring_{};  // the last kMaxLag + 1 seconds
};

}  // namespace gpucanary::analysis::stats
