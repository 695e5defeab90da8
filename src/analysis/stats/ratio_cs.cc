#include "analysis/stats/ratio_cs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"

namespace gpucanary::analysis::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMaxRho1 = 0.98;  // the lag-1 autocorrelation bound, at most

}  // namespace

RatioCs::RatioCs(double rho) : rho_(rho) { GC_CHECK(rho > 0.0, "RatioCs: rho must be > 0"); }

void RatioCs::Add(double canary_num, double canary_den, double baseline_num, double baseline_den) {
  const Obs u = {canary_num, canary_den, baseline_num, baseline_den};
  for (const double v : u) {
    if (!std::isfinite(v)) return;
  }
  if (!(canary_den > 0) || !(baseline_den > 0)) return;
  const auto slot = static_cast<std::size_t>(n_ % (kMaxLag + 1));
  ring_[slot] = u;
  ++n_;
  for (std::size_t i = 0; i < kStreams; ++i) sums_[i] += u[i];
  const int lags = static_cast<int>(std::min<std::int64_t>(kMaxLag, n_ - 1));
  for (int k = 0; k <= lags; ++k) {
    const Obs& prev = ring_[static_cast<std::size_t>((n_ - 1 - k) % (kMaxLag + 1))];
    std::array<double, kStreams* kStreams>& row = lag_[static_cast<std::size_t>(k)];
    for (std::size_t i = 0; i < kStreams; ++i) {
      for (std::size_t j = 0; j < kStreams; ++j) row[i * kStreams + j] += u[i] * prev[j];
    }
  }
}

double RatioCs::canary_ratio() const { return n_ == 0 ? kNaN : sums_[0] / sums_[1]; }
double RatioCs::baseline_ratio() const { return n_ == 0 ? kNaN : sums_[2] / sums_[3]; }

std::optional<double> RatioCs::LogRatio() const {
  const double c = canary_ratio();
  const double b = baseline_ratio();
  if (!(c > 0) || !(b > 0) || !std::isfinite(c) || !std::isfinite(b)) return std::nullopt;
  return std::log(c / b);
}

RatioCs::Obs RatioCs::Weights() const {
  const double nn = static_cast<double>(n_);
  // d theta / d mean of each stream.
  return {nn / sums_[0], -nn / sums_[1], -nn / sums_[2], nn / sums_[3]};
}

double RatioCs::Gamma(int k, const Obs& w) const {
  const std::array<double, kStreams* kStreams>& row = lag_[static_cast<std::size_t>(k)];
  double g = 0;
  for (std::size_t i = 0; i < kStreams; ++i) {
    for (std::size_t j = 0; j < kStreams; ++j) g += w[i] * w[j] * row[i * kStreams + j];
  }
  return g / static_cast<double>(n_);
}

int RatioCs::Bandwidth() const {
  if (n_ < 2) return 0;
  const double root = std::ceil(2 * std::sqrt(static_cast<double>(n_)));
  return static_cast<int>(
      std::min<double>(root, static_cast<double>(std::min<std::int64_t>(kMaxLag, n_ - 1))));
}

double RatioCs::LongRunVariance() const {
  if (n_ < 2 || !LogRatio()) return kNaN;
  const Obs w = Weights();
  const int l = Bandwidth();
  double v = Gamma(0, w);
  for (int k = 1; k <= l; ++k) v += 2 * (1 - static_cast<double>(k) / (l + 1)) * Gamma(k, w);
  return v;
}

double RatioCs::AutocorrelationBound() const {
  if (n_ < 2 || !LogRatio()) return kNaN;
  const Obs w = Weights();
  const double g0 = Gamma(0, w);
  if (!(g0 > 0)) return 0;
  const double nn = static_cast<double>(n_);
  const double r = std::clamp(Gamma(1, w) / g0, -kMaxRho1, kMaxRho1);
  // Kendall's bias of the lag-1 estimate, then two standard errors up.
  const double ucb = r + (1 + 3 * r) / nn + 2 * std::sqrt((1 - r * r) / nn);
  return std::clamp(ucb, 0.0, kMaxRho1);
}

double RatioCs::IntervalVariance() const {
  if (n_ < 2 || !LogRatio()) return kNaN;
  const double g0 = Gamma(0, Weights());
  const double nn = static_cast<double>(n_);
  const double bartlett = LongRunVariance() * nn / std::max(1.0, nn - Bandwidth());
  const double r = AutocorrelationBound();
  const double ar1 = g0 * (1 + r) / (1 - r);
  return std::max({bartlett, ar1, g0, 0.0});
}

Bounds RatioCs::Interval(double alpha) const {
  const std::optional<double> theta = LogRatio();
  if (n_ < 2 || !theta) return {-kInf, kInf};
  const double h = CsHalfWidth(n_, IntervalVariance(), rho_, alpha, CsScale::kStandardized);
  return {*theta - h, *theta + h};
}

}  // namespace gpucanary::analysis::stats
