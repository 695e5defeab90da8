// Port of Apache Otava's change point detection (Apache License 2.0,
// https://github.com/apache/otava): `otava/analysis.py` and
// `otava/change_point_divisive/{calculator,detector,base}.py`. The
// algorithm and its sources are described in otava.h. Function names below
// name the Otava function each one ports.
#include "analysis/cpd/otava.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <utility>

#include "core/status.h"

namespace gpucanary::analysis::cpd {
namespace {

// A half-open slice [start, stop) of the series being analysed.
struct Interval {
  std::size_t start = 0;
  std::size_t stop = 0;
  std::size_t size() const { return stop - start; }
};

// BaseStats / TTestStats: the two sides of a change point and their t-test.
struct Stats {
  double pvalue = 1.0;
  double mean_1 = 0;
  double mean_2 = 0;

  // BaseStats.change_magnitude: the larger of the forward and backward
  // relative changes, a zero mean counting as no change.
  double Magnitude() const {
    const double forward = mean_1 == 0 ? 0.0 : mean_2 / mean_1 - 1.0;
    const double backward = mean_2 == 0 ? 0.0 : mean_1 / mean_2 - 1.0;
    return std::max(std::abs(forward), std::abs(backward));
  }
};

struct ChangePoint {
  std::size_t index = 0;  // first sample of the new regime
  Stats stats;
};

// NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src,
// pairwise_sum), which np.mean and np.std use on contiguous float64 arrays.
// Reproduced so that means and deviations match Otava's to the last bit: a
// p-value or magnitude tie in the merge step is decided by them.
double PairwiseSum(const double* a, std::size_t n) {
  constexpr std::size_t kBlock = 128;  // PW_BLOCKSIZE
  if (n < 8) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= kBlock) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  std::size_t half = n / 2;
  half -= half % 8;
  return PairwiseSum(a, half) + PairwiseSum(a + half, n - half);
}

double Mean(std::span<const double> x) {
  return PairwiseSum(x.data(), x.size()) / static_cast<double>(x.size());
}

// np.std with ddof = 0, as NumPy computes it (_methods._var).
double PopulationStd(std::span<const double> x) {
  const double mean = Mean(x);
  std::vector<double> squares(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean;
    squares[i] = d * d;
  }
  return std::sqrt(PairwiseSum(squares.data(), squares.size()) / static_cast<double>(x.size()));
}

// TTestSignificanceTester.compare: SciPy's ttest_ind_from_stats (pooled
// variance, two-sided) fed with the POPULATION deviations, as Otava does.
// Fewer than 3 samples in all: no evidence, p = 1.
Stats Compare(std::span<const double> left, std::span<const double> right) {
  Stats stats;
  stats.mean_1 = Mean(left);
  stats.mean_2 = Mean(right);
  if (left.size() + right.size() <= 2) return stats;
  const double std_1 = left.size() >= 2 ? PopulationStd(left) : 0.0;
  const double std_2 = right.size() >= 2 ? PopulationStd(right) : 0.0;
  const auto n1 = static_cast<double>(left.size());
  const auto n2 = static_cast<double>(right.size());
  // scipy.stats._stats_py._equal_var_ttest_denom.
  const double df = n1 + n2 - 2.0;
  const double pooled = ((n1 - 1) * (std_1 * std_1) + (n2 - 1) * (std_2 * std_2)) / df;
  const double denom = std::sqrt(pooled * (1.0 / n1 + 1.0 / n2));
  // 0/0 (two equal constant sides) is NaN, which no threshold accepts, as in
  // SciPy; d/0 is infinite: p = 0.
  const double t = (stats.mean_1 - stats.mean_2) / denom;
  stats.pvalue = StudentTTwoSidedPValue(t, df);
  return stats;
}

// SignificanceTester.get_intervals: the slices between sorted change points.
std::vector<Interval> Intervals(const std::vector<std::size_t>& indices, std::size_t n) {
  std::vector<Interval> intervals;
  intervals.reserve(indices.size() + 1);
  std::size_t start = 0;
  for (std::size_t index : indices) {
    if (index != start) intervals.push_back({start, index});
    start = index;
  }
  if (start != n) intervals.push_back({start, n});
  return intervals;
}

// SignificanceTester.get_sides: a point at an interval's end is tested
// between that interval and the next (merge step); a point inside an
// interval splits it (split step).
std::pair<Interval, Interval> Sides(std::size_t index, const std::vector<Interval>& intervals) {
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const Interval& interval = intervals[i];
    if (interval.stop == index) {
      GC_CHECK(i + 1 < intervals.size(), "change point at the series' end");
      return {interval, intervals[i + 1]};
    }
    if (interval.start < index && index < interval.stop) {
      return {{interval.start, index}, {index, interval.stop}};
    }
  }
  GC_CHECK(false, "change point outside every interval");
  return {};
}

Stats TestPoint(std::size_t index, std::span<const double> series,
                const std::vector<Interval>& intervals) {
  const auto [left, right] = Sides(index, intervals);
  return Compare(series.subspan(left.start, left.size()),
                 series.subspan(right.start, right.size()));
}

// CandidateChangePoint: the split tau of an interval and its Q-hat.
struct Candidate {
  std::size_t index = 0;
  double qhat = 0;
};

// PairDistanceCalculator: the E-divisive energy statistic
//   Q(X, Y) = 2/(m+n) sum|X_i - Y_j| - 2m/((m+n)(n-1)) sum_{i<k}|X_i - X_k|
//                                    - 2n/((m+n)(m-1)) sum_{j<k}|Y_j - Y_k|
// for X = x[start, tau), Y = x[tau, kappa), maximised over (tau, kappa).
// Computed from the same cumulative sums, in the same order and with the
// same coefficients as Otava's vectorised NumPy code, so that equal Q values
// stay equal and the first maximum (row-major, as np.argmax) is the same.
// Otava holds n x n matrices; here a window costs O(n) memory and an
// interval of m samples O(m), so a large --window-len cannot exhaust memory
// (the time stays O(m^2) per interval, as Otava's).
class QHatCalculator {
 public:
  explicit QHatCalculator(std::span<const double> x);
  // get_candidate_change_point. REQUIRES: interval.size() >= 2.
  Candidate Best(Interval interval) const;

 private:
  double D(std::size_t r, std::size_t c) const { return std::abs(x_[r] - x_[c]); }
  // Otava's V(start, tau) for tau = s + k + 1, in its rounding: the sum
  // from row 0 minus the rows before s.
  std::vector<double> WithinXSums(std::size_t s, std::size_t m) const;

  std::span<const double> x_;
  std::vector<double> v_;  // V[c] = sum_{r <= c} D(r, c + 1), summed from r = 0
};

QHatCalculator::QHatCalculator(std::span<const double> x) : x_(x) {
  if (x.size() < 2) return;
  v_.assign(x.size() - 1, 0.0);
  for (std::size_t c = 0; c + 1 < x.size(); ++c) {
    for (std::size_t r = 0; r <= c; ++r) v_[c] += D(r, c + 1);
  }
}

std::vector<double> QHatCalculator::WithinXSums(std::size_t s, std::size_t m) const {
  // cum_v[i]: the within-X distances of X = x[s, s + i + 2).
  std::vector<double> cum_v(m);
  double running = 0.0;
  for (std::size_t k = 0; k < m; ++k) {
    double before_start = 0.0;
    for (std::size_t r = 0; r < s; ++r) before_start += D(r, s + k + 1);
    running += v_[s + k] - before_start;
    cum_v[k] = running;
  }
  return cum_v;
}

Candidate QHatCalculator::Best(Interval interval) const {
  // Row i of Otava's matrices is tau = s + i + 1, column j is kappa = s + j + 2;
  // only i <= j is a split (the rest is 0 in Otava's matrix and never wins:
  // Q(s+1, s+2) = |x_s - x_{s+1}| >= 0 comes first in row-major order).
  const std::size_t s = interval.start;
  const std::size_t m = interval.size() - 1;
  const std::vector<double> cum_v = WithinXSums(s, m);
  // Column by column: h[a] = Otava's H[s+a][s+j] = sum_{c=s+a..s+j} D(s+a, c+1),
  // each row's running sum extended by one column; tail[i] = sum_{a > i} h[a],
  // accumulated from the bottom up as NumPy's flipud-cumsum-flipud.
  std::vector<double> h(m, 0.0);
  std::vector<double> tail(m, 0.0);
  Candidate best{s + 1, -std::numeric_limits<double>::infinity()};
  std::size_t best_i = 0;
  for (std::size_t j = 0; j < m; ++j) {
    for (std::size_t a = 0; a <= j; ++a) h[a] += D(s + a, s + j + 1);
    double up = 0.0;
    for (std::size_t a = j; a >= 1; --a) tail[a - 1] = up += h[a];
    const auto kappa_s = static_cast<double>(j + 2);  // m + n
    double cum_h = 0.0;
    for (std::size_t i = 0; i <= j; ++i) {
      cum_h += h[i];
      const double within_x = i == 0 ? 0.0 : cum_v[i - 1];
      const double a = 2 / kappa_s * (cum_h - within_x);
      const double b = i == 0 ? 0.0
                              : static_cast<double>(2 * (j - i + 1)) /
                                    static_cast<double>((j + 2) * i) * within_x;
      const double c = j == i ? 0.0
                              : static_cast<double>(2 * (i + 1)) /
                                    static_cast<double>((j + 2) * (j - i)) * tail[i];
      const double q = a - b - c;
      // The first maximum in row-major order wins, as np.argmax: a tie goes
      // to the smaller row i (columns are visited in order).
      if (q > best.qhat || (q == best.qhat && i < best_i)) {
        best = {s + i + 1, q};
        best_i = i;
      }
    }
  }
  return best;
}

void InsertSorted(std::vector<std::size_t>& indices, std::size_t index) {
  indices.insert(std::upper_bound(indices.begin(), indices.end(), index), index);
}

// ChangePointDetector.get_change_points on one window: E-divisive
// bisection, one split per round (the interval with the highest Q-hat),
// until the best candidate fails the t-test. Indices are window-relative.
std::vector<std::size_t> DetectInWindow(std::span<const double> window, double max_pvalue) {
  const QHatCalculator calculator(window);
  std::vector<std::size_t> found;
  while (true) {
    const std::vector<Interval> intervals = Intervals(found, window.size());
    bool any = false;
    Candidate best;
    for (const Interval& interval : intervals) {
      if (interval.size() < 2) continue;
      const Candidate candidate = calculator.Best(interval);
      if (!any || candidate.qhat > best.qhat) best = candidate;  // first max, as Python's max()
      any = true;
    }
    if (!any) break;
    if (!(TestPoint(best.index, window, intervals).pvalue <= max_pvalue)) break;
    InsertSorted(found, best.index);
  }
  return found;
}

// analysis.split: the weak change points of the whole series, each tested
// between its neighbours.
std::vector<ChangePoint> Split(std::span<const double> series, std::size_t window_len,
                               double max_pvalue) {
  const std::size_t n = series.size();
  const std::size_t step = window_len / 2;
  std::vector<std::size_t> indices;
  std::size_t start = 0;
  while (start < n) {
    const std::size_t end = std::min(start + window_len, n);
    const std::vector<std::size_t> found =
        DetectInWindow(series.subspan(start, end - start), max_pvalue);
    const std::size_t last = found.empty() ? 0 : found.back() + start;
    for (std::size_t index : found) {
      if (std::find(indices.begin(), indices.end(), index + start) == indices.end()) {
        indices.push_back(index + start);
      }
    }
    start = std::max(last, start + step);
  }
  std::sort(indices.begin(), indices.end());
  const std::vector<Interval> intervals = Intervals(indices, n);
  std::vector<ChangePoint> points;
  points.reserve(indices.size());
  for (std::size_t index : indices) points.push_back({index, TestPoint(index, series, intervals)});
  return points;
}

std::vector<std::size_t> IndicesOf(const std::vector<ChangePoint>& points) {
  std::vector<std::size_t> indices;
  indices.reserve(points.size());
  for (const ChangePoint& point : points) indices.push_back(point.index);
  return indices;
}

// Index of the first point whose key is largest (Python's max with a key:
// replaced only by a strictly greater key, so NaN never replaces and a
// leading NaN is never replaced).
template <typename Key>
std::size_t FirstMax(const std::vector<ChangePoint>& points, Key key) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (key(points[i]) > key(points[best])) best = i;
  }
  return best;
}

// analysis.merge: drop the weakest point until all pass both criteria.
void Merge(std::vector<ChangePoint>& points, std::span<const double> series, double max_pvalue,
           double min_magnitude) {
  const auto pvalue = [](const ChangePoint& p) { return p.stats.pvalue; };
  const auto smallness = [](const ChangePoint& p) { return -p.stats.Magnitude(); };
  while (!points.empty()) {
    std::size_t weakest = FirstMax(points, pvalue);
    if (points[weakest].stats.pvalue < max_pvalue) {
      // Python's min(): the first smallest magnitude, i.e. the first largest
      // negated magnitude (negation is exact).
      weakest = FirstMax(points, smallness);
      if (points[weakest].stats.Magnitude() > min_magnitude) return;
    }
    points.erase(points.begin() + static_cast<std::ptrdiff_t>(weakest));
    // Removing a point changes the sides of both its neighbours. Otava
    // re-tests the points now at `weakest` and `weakest + 1`: the right
    // neighbour and the one after it, not the left neighbour, whose stale
    // statistics stay until it is removed or re-tested. Kept as is: the port
    // must choose the same points.
    const std::vector<Interval> intervals = Intervals(IndicesOf(points), series.size());
    for (std::size_t k = weakest; k < std::min(weakest + 2, points.size()); ++k) {
      points[k].stats = TestPoint(points[k].index, series, intervals);
    }
  }
}

// compute_change_points: the first ("weak") pass accepts more.
double FirstPassPValue(double max_pvalue) {
  if (max_pvalue < 0.05) return max_pvalue * 10;
  if (max_pvalue < 0.5) return max_pvalue * 2;
  return max_pvalue;
}

}  // namespace

double StudentTTwoSidedPValue(double t, double df) {
  if (std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  const boost::math::students_t_distribution<double> dist(df);
  return 2 * boost::math::cdf(dist, -std::abs(t));
}

std::vector<std::size_t> OtavaChangePoints(std::span<const double> values,
                                           const OtavaOptions& options) {
  GC_CHECK(options.window_len >= 2, "OtavaOptions::window_len must be at least 2");
  std::vector<double> present;
  std::vector<std::size_t> original;  // present sample k is values[original[k]]
  present.reserve(values.size());
  original.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    present.push_back(values[i]);
    original.push_back(i);
  }
  std::vector<ChangePoint> points =
      Split(present, options.window_len, FirstPassPValue(options.max_pvalue));
  Merge(points, present, options.max_pvalue, options.min_magnitude);
  std::vector<std::size_t> result;
  result.reserve(points.size());
  for (const ChangePoint& point : points) result.push_back(original[point.index]);
  return result;
}

}  // namespace gpucanary::analysis::cpd
