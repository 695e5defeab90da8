// Offline segmentation: PELT (Killick, Fearnhead & Eckley 2012, "Optimal
// detection of changepoints with a linear computational cost", JASA 107) on
// a piecewise-linear Gaussian cost.
//
// The model, and why (the figures are in docs/analysis-method.md,
// "Change points"; scored on TCPD with `tcpd_score`):
//  - Each segment is a straight line plus noise: a change is a jump in level
//    and/or slope. Many real series trend (populations, GDP, a GPU warming
//    up); a piecewise-constant model cuts a trend into a staircase of false
//    changes, and annotators mark changes of slope as changes.
//  - The noise scale sigma0 is estimated once, under the no-change model: the
//    spread of the residuals around one least-squares line through the whole
//    series (their RMS, winsorised at 3 robust sigmas so one glitch cannot
//    hide every change). Scales estimated from first differences (the usual
//    "noise level") are far too small on smooth or random-walk-like series
//    and cut them into dozens of pieces; sigma0 asks instead that a change
//    be large against the series' own variation, which is what a person
//    looking at the plot calls a change.
//  - Cost of a segment = its residual sum of squares around its own
//    least-squares line / sigma0^2 (-2 log-likelihood with sigma0 fixed);
//    penalty per change = penalty_scale * ln(n). A change adds three
//    parameters (location, level, slope), so penalty_scale = 3 is BIC.
//  - The minimum segment length keeps a slope estimable and a short burst
//    from being carved out as a regime.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "analysis/cpd/cpd.h"

namespace gpucanary::analysis::cpd {
namespace {

// BIC for a change of level and slope; see the comment at the top. On the
// 31 univariate TCPD series every value in [2, 5] scores mean F1 >= 0.767.
constexpr double kDefaultPenaltyScale = 3.0;
// Residuals beyond this many robust sigmas are clipped when estimating
// sigma0 (a Gaussian sample loses < 1% of its RMS).
constexpr double kWinsorSigmas = 3.0;
// 1 / Phi^-1(3/4): makes the MAD a consistent estimate of a Gaussian sigma.
constexpr double kMadToSigma = 1.482602218505602;

// The finite samples and where they came from.
struct Present {
  std::vector<double> values;
  std::vector<std::size_t> index;  // index[k]: position of values[k] in the input
};

Present CollectPresent(std::span<const double> values) {
  Present p;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) {
      p.values.push_back(values[i]);
      p.index.push_back(i);
    }
  }
  return p;
}

double Median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// Residuals of the least-squares line through (k, y[k]), k = 0..n-1.
// Two passes (means first) so that a large offset (a population of 1e8)
// does not cancel the residuals away.
std::vector<double> LineResiduals(std::span<const double> y) {
  const double n = static_cast<double>(y.size());
  const double t_mean = (n - 1) / 2;
  double y_mean = 0;
  for (double v : y) y_mean += v;
  y_mean /= n;
  double sxx = 0;
  double sxy = 0;
  for (std::size_t k = 0; k < y.size(); ++k) {
    const double dt = static_cast<double>(k) - t_mean;
    sxx += dt * dt;
    sxy += dt * (y[k] - y_mean);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  std::vector<double> r(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) {
    r[k] = (y[k] - y_mean) - slope * (static_cast<double>(k) - t_mean);
  }
  return r;
}

double Rms(std::span<const double> v) {
  double sum_sq = 0;
  for (double x : v) sum_sq += x * x;
  return std::sqrt(sum_sq / static_cast<double>(v.size()));
}

// sigma0: RMS of the residuals winsorised at kWinsorSigmas robust sigmas.
// The plain RMS when the MAD is 0 up to rounding: more than half the
// residuals are equal (noiseless steps), and clipping would leave nothing.
double NullScale(std::span<const double> residuals) {
  const double rms = Rms(residuals);
  std::vector<double> abs_dev;
  abs_dev.reserve(residuals.size());
  const double med = Median(std::vector<double>(residuals.begin(), residuals.end()));
  for (double r : residuals) abs_dev.push_back(std::fabs(r - med));
  const double clip = kWinsorSigmas * kMadToSigma * Median(abs_dev);
  if (clip <= 1e-9 * rms) return rms;
  std::vector<double> clipped(residuals.begin(), residuals.end());
  for (double& r : clipped) r = std::clamp(r, -clip, clip);
  return Rms(clipped);
}

// The series in units of sigma0, detrended by the global line (which changes
// no segment's residuals but keeps every sum small). Empty when the
// series is exactly a line: there is nothing to segment.
std::vector<double> Standardize(std::span<const double> y) {
  // Scaling by the largest magnitude first keeps sums of squares finite
  // whatever the unit (the method is scale-invariant).
  double max_abs = 0;
  for (double v : y) max_abs = std::max(max_abs, std::fabs(v));
  if (max_abs == 0) return {};
  std::vector<double> scaled(y.begin(), y.end());
  for (double& v : scaled) v /= max_abs;
  std::vector<double> r = LineResiduals(scaled);
  const double sigma0 = NullScale(r);
  // A residual RMS at rounding level means "a line": no change to find.
  if (!(sigma0 > 1e-12)) return {};
  for (double& v : r) v /= sigma0;
  return r;
}

// O(1) residual sum of squares of the least-squares line on [a, b), from
// prefix sums. Time is the present-sample index (a gap of missing samples
// is not elapsed time, as cpd.h's conventions say detection runs on the
// present samples), so the moments of t have closed forms and only sums
// involving y need prefix sums.
class LinearCost {
 public:
  explicit LinearCost(std::span<const double> y)
      : sum_y_(y.size() + 1, 0), sum_yy_(y.size() + 1, 0), sum_ty_(y.size() + 1, 0) {
    for (std::size_t k = 0; k < y.size(); ++k) {
      sum_y_[k + 1] = sum_y_[k] + y[k];
      sum_yy_[k + 1] = sum_yy_[k] + y[k] * y[k];
      sum_ty_[k + 1] = sum_ty_[k] + static_cast<double>(k) * y[k];
    }
  }

  // REQUIRES: a < b <= n.
  double operator()(std::size_t a, std::size_t b) const {
    const double len = static_cast<double>(b - a);
    const double sy = sum_y_[b] - sum_y_[a];
    double rss = (sum_yy_[b] - sum_yy_[a]) - sy * sy / len;
    // Centred moments of t = a..b-1: sum (t - t_mean)^2 = len (len^2 - 1) / 12.
    const double sxx = len * (len * len - 1) / 12;
    if (sxx > 0) {
      const double sum_rel_ty = (sum_ty_[b] - sum_ty_[a]) - static_cast<double>(a) * sy;
      const double sxy = sum_rel_ty - (len - 1) / 2 * sy;
      rss -= sxy * sxy / sxx;
    }
    return std::max(rss, 0.0);  // rounding can take an exact fit below 0
  }

 private:
  std::vector<double> sum_y_;
  std::vector<double> sum_yy_;
  std::vector<double> sum_ty_;
};

// O(1) residual sum of squares around the mean of [a, b), from prefix sums
// (the piecewise-constant model, SegmentOptions::Model::kLevel).
class LevelCost {
 public:
  explicit LevelCost(std::span<const double> y)
      : sum_y_(y.size() + 1, 0), sum_yy_(y.size() + 1, 0) {
    for (std::size_t k = 0; k < y.size(); ++k) {
      sum_y_[k + 1] = sum_y_[k] + y[k];
      sum_yy_[k + 1] = sum_yy_[k] + y[k] * y[k];
    }
  }

  // REQUIRES: a < b <= n.
  double operator()(std::size_t a, std::size_t b) const {
    const double len = static_cast<double>(b - a);
    const double sy = sum_y_[b] - sum_y_[a];
    return std::max((sum_yy_[b] - sum_yy_[a]) - sy * sy / len, 0.0);
  }

 private:
  std::vector<double> sum_y_;
  std::vector<double> sum_yy_;
};

// The series in units of its sample-to-sample noise: the MAD of the first
// differences / sqrt(2) (a level shift moves one difference, not the
// median), or their RMS / sqrt(2) when more than half the differences are
// zero (quantised telemetry: whole degrees, link widths). Empty when the
// series is constant.
std::vector<double> StandardizeLocal(std::span<const double> y) {
  double max_abs = 0;
  for (double v : y) max_abs = std::max(max_abs, std::fabs(v));
  if (max_abs == 0) return {};
  std::vector<double> scaled(y.begin(), y.end());
  double mean = 0;
  for (double& v : scaled) {
    v /= max_abs;
    mean += v;
  }
  mean /= static_cast<double>(scaled.size());
  std::vector<double> diffs;
  diffs.reserve(scaled.size());
  for (std::size_t k = 1; k < scaled.size(); ++k)
    diffs.push_back(std::fabs(scaled[k] - scaled[k - 1]));
  if (diffs.empty()) return {};
  double sigma = kMadToSigma * Median(diffs) / std::sqrt(2.0);
  if (!(sigma > 1e-12)) sigma = Rms(diffs) / std::sqrt(2.0);
  if (!(sigma > 1e-12)) return {};
  for (double& v : scaled) v = (v - mean) / sigma;
  return scaled;
}

// A possible start of the last segment, and the first time it may be
// dropped (see the pruning comment in Pelt).
struct Candidate {
  std::size_t tau = 0;
  std::size_t expires = std::numeric_limits<std::size_t>::max();
};

// Minimises sum of segment costs + beta per change over segmentations of
// [0, n) into segments of >= min_len samples. Returns the starts of
// segments 2, 3, ... (present-sample indices).
// REQUIRES: n >= 2 * min_len, min_len >= 1.
template <typename Cost>
std::vector<std::size_t> Pelt(const Cost& cost, std::size_t n, double beta, std::size_t min_len) {
  // best[t]: least penalised cost of [0, t); last[t]: start of its last
  // segment. best[0] = -beta so that a lone segment pays no penalty.
  std::vector<double> best = {-beta};
  best.resize(n + 1, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> last(n + 1, 0);
  std::vector<Candidate> candidates;
  std::vector<double> totals;
  for (std::size_t t = min_len; t <= n; ++t) {
    const std::size_t fresh = t - min_len;
    if (fresh == 0 || fresh >= min_len) candidates.push_back({fresh});
    std::erase_if(candidates, [t](const Candidate& c) { return c.expires <= t; });
    totals.resize(candidates.size());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const std::size_t tau = candidates[i].tau;
      totals[i] = best[tau] + cost(tau, t);
      if (totals[i] + beta < best[t]) {
        best[t] = totals[i] + beta;
        last[t] = tau;
      }
    }
    // PELT's pruning: the cost only drops when a segment is split, so a tau
    // with best[tau] + cost(tau, t) > best[t] can never beat t as the last
    // change of any s >= t + min_len. It is kept until then because for s
    // closer to t, t is not yet an allowed change point. The slack keeps
    // rounding from pruning a tie.
    const double bound = best[t] + 1e-9 * (1 + std::fabs(best[t]));
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (totals[i] > bound) {
        candidates[i].expires = std::min(candidates[i].expires, t + min_len);
      }
    }
  }
  std::vector<std::size_t> changes;
  for (std::size_t t = n; last[t] > 0; t = last[t]) changes.push_back(last[t]);
  std::reverse(changes.begin(), changes.end());
  return changes;
}

}  // namespace

std::vector<std::size_t> Segment(std::span<const double> values, const SegmentOptions& options) {
  const Present present = CollectPresent(values);
  const std::size_t min_len = std::max<std::size_t>(options.min_segment, 1);
  const std::size_t n = present.values.size();
  if (n / 2 < min_len) return {};  // not 2 * min_len: it could overflow
  const bool level = options.model == SegmentOptions::Model::kLevel;
  const std::vector<double> y =
      level ? StandardizeLocal(present.values) : Standardize(present.values);
  if (y.empty()) return {};
  const double scale = options.penalty_scale > 0 ? options.penalty_scale : kDefaultPenaltyScale;
  const double beta = scale * std::log(static_cast<double>(n));
  std::vector<std::size_t> changes =
      level ? Pelt(LevelCost(y), n, beta, min_len) : Pelt(LinearCost(y), n, beta, min_len);
  for (std::size_t& c : changes) c = present.index[c];
  return changes;
}

}  // namespace gpucanary::analysis::cpd
