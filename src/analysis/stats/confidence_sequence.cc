#include "analysis/stats/confidence_sequence.h"

#include <cmath>
#include <limits>

#include "analysis/stats/normal.h"
#include "core/status.h"

namespace gpucanary::analysis::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool ValidAlpha(double alpha) { return alpha > 0.0 && alpha < 1.0; }

}  // namespace

double RhoForTarget(double n_star, double alpha, double sigma) {
  GC_CHECK(n_star > 0.0 && ValidAlpha(alpha) && sigma > 0.0, "RhoForTarget: bad arguments");
  // rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / n*  (Howard et al. 2021;
  // Waudby-Smith et al. 2021 for the asymptotic CS).
  const double two_log = -2.0 * std::log(alpha);
  return std::sqrt((two_log + std::log(two_log + 1.0)) / n_star) / sigma;
}

double CsHalfWidth(std::int64_t n, double variance, double rho, double alpha, CsScale scale) {
  GC_CHECK(rho > 0.0 && ValidAlpha(alpha) && variance >= 0.0, "CsHalfWidth: bad arguments");
  if (n < 2) return kInf;
  const auto t = static_cast<double>(n);
  const double rho2 = rho * rho;
  if (scale == CsScale::kPaper) {
    // Theorem 2.2: sqrt( 2 (t s^2 rho^2 + 1) / (t^2 rho^2) * log( sqrt(t s^2 rho^2 + 1) / alpha )
    // ).
    const double v = t * variance * rho2 + 1.0;
    return std::sqrt(2.0 * v / (t * t * rho2) * (0.5 * std::log(v) - std::log(alpha)));
  }
  // Standardised: s * the unit-variance boundary (std_conjmix_margin).
  const double v = t * rho2 + 1.0;
  return std::sqrt(variance) *
         std::sqrt(2.0 * v / (t * t * rho2) * (0.5 * std::log(v) - std::log(alpha)));
}

ConfidenceSequence::ConfidenceSequence(double rho, CsScale scale) : rho_(rho), scale_(scale) {
  GC_CHECK(rho > 0.0 && std::isfinite(rho), "ConfidenceSequence: rho must be > 0");
}

void ConfidenceSequence::Add(double x) {
  GC_CHECK(std::isfinite(x), "ConfidenceSequence::Add: non-finite observation");
  // Welford's update: numerically stable where sum / sum-of-squares cancels.
  ++n_;
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
}

double ConfidenceSequence::variance() const {
  return n_ < 2 ? 0.0 : m2_ / static_cast<double>(n_ - 1);
}

Bounds ConfidenceSequence::Interval(double alpha) const {
  const double half = CsHalfWidth(n_, variance(), rho_, alpha, scale_);
  if (std::isinf(half)) return {-kInf, kInf};
  return {mean_ - half, mean_ + half};
}

Bounds ConfidenceSequence::FixedHorizonInterval(double alpha) const {
  GC_CHECK(ValidAlpha(alpha), "FixedHorizonInterval: alpha outside (0, 1)");
  if (n_ < 2) return {-kInf, kInf};
  const double half =
      NormalQuantile(1.0 - alpha / 2.0) * std::sqrt(variance() / static_cast<double>(n_));
  return {mean_ - half, mean_ + half};
}

std::optional<double> LogRatio(double canary, double baseline) {
  if (!(canary > 0.0) || !(baseline > 0.0) || std::isinf(canary) || std::isinf(baseline)) {
    return std::nullopt;
  }
  return std::log(canary) - std::log(baseline);  // no overflow for extreme ratios
}

Bounds RelativeChange(Bounds log_ratio) {
  return {std::expm1(log_ratio.lo), std::expm1(log_ratio.hi)};
}

double DetectableEffect(Bounds interval) { return (interval.hi - interval.lo) / 2.0; }

Decision DecideDrop(Bounds relative, double margin) {
  GC_CHECK(margin >= 0.0, "DecideDrop: negative margin");
  if (relative.hi < -margin) return Decision::kWorse;
  if (relative.lo > -margin) return Decision::kNotWorse;
  return Decision::kUndecided;
}

Decision DecideRise(Bounds relative, double margin) {
  GC_CHECK(margin >= 0.0, "DecideRise: negative margin");
  if (relative.lo > margin) return Decision::kWorse;
  if (relative.hi < margin) return Decision::kNotWorse;
  return Decision::kUndecided;
}

}  // namespace gpucanary::analysis::stats
