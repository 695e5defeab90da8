#include "eval/kayenta/mann_whitney.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/stats/normal.h"

namespace gpucanary::eval::kayenta {
namespace {

// Both samples sorted, with what every evaluation of W needs. Not thread-safe
// (ScoreAt reuses a scratch buffer); one per call of MannWhitney.
class RankSumTest {
 public:
  RankSumTest(std::span<const double> x, std::span<const double> y)
      : xs_(x.begin(), x.end()),
        ys_(y.begin(), y.end()),
        n_(static_cast<double>(x.size())),
        m_(static_cast<double>(y.size())),
        pairs_(static_cast<std::uint64_t>(x.size()) * y.size()) {
    std::sort(xs_.begin(), xs_.end());
    std::sort(ys_.begin(), ys_.end());
    within_ties_ = TieTerm(xs_) + TieTerm(ys_);
  }

  struct Score {
    double u;  // U(shift)
    double w;  // W(shift)
  };
  // W(shift) exactly as R's wdiff(d = shift, zq = 0): ranks of c(x - shift, y).
  Result<Score> ScoreAt(double shift);

  // W on an open interval between pairwise differences where U(mu) = u: there
  // x - mu ties no y, so the tie groups are those within each sample.
  double ScoreBetween(std::uint64_t u) const {
    const auto w = Standardize(static_cast<double>(u), within_ties_);
    GC_CHECK(w.has_value(), "x and y are separate tie groups, so sigma > 0");
    return *w;
  }

  // R's root(zq = q): the confidence bound where W(mu) crosses q.
  Result<double> Root(double q);

  // Median of the pairwise differences.
  double HodgesLehmann() const {
    if (pairs_ % 2 == 1) return KthDifference((pairs_ + 1) / 2);
    return 0.5 * (KthDifference(pairs_ / 2) + KthDifference(pairs_ / 2 + 1));
  }

  double MinDifference() const { return xs_.front() - ys_.back(); }
  double MaxDifference() const { return xs_.back() - ys_.front(); }

 private:
  // sum over groups of equal values of t^3 - t, for a sorted sample.
  static double TieTerm(const std::vector<double>& sorted);

  // (dz - sign(dz) / 2) / sigma with dz = U - n m / 2, in R's order of
  // operations; an error when sigma is 0 (every observation tied).
  Result<double> Standardize(double u, double tie_term) const;

  // #{(i, j): x_i - y_j <= t}. The rounded difference is monotone in each
  // argument, so one pass with two pointers: O(n + m).
  std::uint64_t CountAtMost(double t) const;

  // The k-th smallest (1-based) pairwise difference: the smallest double t
  // with CountAtMost(t) >= k, by bisection over the doubles in order (at most
  // 64 counts). Never forms the n m differences.
  double KthDifference(std::uint64_t k) const;

  std::vector<double> xs_;
  std::vector<double> ys_;
  double n_;
  double m_;
  std::uint64_t pairs_;
  double within_ties_ = 0;
  std::vector<std::pair<double, bool>> pooled_;  // scratch for ScoreAt
};

double RankSumTest::TieTerm(const std::vector<double>& sorted) {
  double term = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    const auto t = static_cast<double>(j - i);
    term += t * t * t - t;
    i = j;
  }
  return term;
}

Result<double> RankSumTest::Standardize(double u, double tie_term) const {
  // R, wilcox.test.R: dz <- sum(dr[seq_along(x)]) - n.x * (n.x + 1) / 2 - n.x * n.y / 2
  //   CORRECTION.CI <- sign(dz) * 0.5            (correct = TRUE, "two.sided")
  //   SIGMA.CI <- sqrt((n.x * n.y / 12) * ((n.x + n.y + 1)
  //                    - sum(NTIES.CI^3 - NTIES.CI) / ((n.x + n.y) * (n.x + n.y - 1))))
  const double dz = u - n_ * m_ / 2;
  const double correction = dz > 0 ? 0.5 : (dz < 0 ? -0.5 : 0.0);
  const double sigma =
      std::sqrt((n_ * m_ / 12) * ((n_ + m_ + 1) - tie_term / ((n_ + m_) * (n_ + m_ - 1))));
  if (!(sigma > 0)) {
    return Error(StatusCode::kInvalidArgument,
                 "cannot compute confidence interval when all observations are tied");
  }
  return (dz - correction) / sigma;
}

Result<RankSumTest::Score> RankSumTest::ScoreAt(double shift) {
  pooled_.clear();
  for (const double v : xs_) pooled_.emplace_back(v - shift, true);
  for (const double v : ys_) pooled_.emplace_back(v, false);
  std::sort(pooled_.begin(), pooled_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Average ranks (R's rank(), ties.method = "average"): a tie group at
  // positions i..j-1 shares rank (i + 1 + j) / 2.
  double rank_sum_x = 0;
  double tie_term = 0;
  for (std::size_t i = 0; i < pooled_.size();) {
    std::size_t j = i;
    std::size_t from_x = 0;
    while (j < pooled_.size() && pooled_[j].first == pooled_[i].first) {
      if (pooled_[j].second) ++from_x;
      ++j;
    }
    const auto t = static_cast<double>(j - i);
    rank_sum_x += static_cast<double>(from_x) * 0.5 * static_cast<double>(i + 1 + j);
    tie_term += t * t * t - t;
    i = j;
  }
  const double u = rank_sum_x - n_ * (n_ + 1) / 2;
  const auto w = Standardize(u, tie_term);
  if (!w) return Error(w.error());
  return Score{u, *w};
}

std::uint64_t RankSumTest::CountAtMost(double t) const {
  std::uint64_t count = 0;
  std::size_t p = 0;  // first y_j with x_i - y_j <= t; moves right as x_i grows
  for (const double xi : xs_) {
    while (p < ys_.size() && xi - ys_[p] > t) ++p;
    count += ys_.size() - p;
  }
  return count;
}

// Doubles as unsigned integers in the same order: non-negative values keep
// their bits with the top bit set, negative ones are bit-inverted.
std::uint64_t OrderedKey(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return (bits & kSign) != 0 ? ~bits : bits | kSign;
}

double FromOrderedKey(std::uint64_t key) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return std::bit_cast<double>((key & kSign) != 0 ? key & ~kSign : ~key);
}

double RankSumTest::KthDifference(std::uint64_t k) const {
  std::uint64_t lo = OrderedKey(MinDifference());
  std::uint64_t hi = OrderedKey(MaxDifference());
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (CountAtMost(FromOrderedKey(mid)) >= k) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return FromOrderedKey(lo) + 0.0;  // -0.0 -> +0.0
}

Result<double> RankSumTest::Root(double q) {
  // R: f.lower <- wdiff(mumin, zq); if (f.lower <= 0) return(mumin)
  //    f.upper <- wdiff(mumax, zq); if (f.upper >= 0) return(mumax)
  const double mu_min = MinDifference();
  const double mu_max = MaxDifference();
  const auto f_lower = ScoreAt(mu_min);
  if (!f_lower) return Error(f_lower.error());
  if (f_lower->w - q <= 0) return mu_min;
  const auto f_upper = ScoreAt(mu_max);
  if (!f_upper) return Error(f_upper.error());
  if (f_upper->w - q >= 0) return mu_max;
  // Between differences U(mu) = #{x_i - y_j > mu}, and W is non-decreasing in
  // U. Find u_star, the largest U with W - q <= 0 (-1 if none): the crossing
  // is the first difference e with #{<= e} >= N - u_star.
  std::int64_t lo = -1;
  auto hi = static_cast<std::int64_t>(pairs_);
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (ScoreBetween(static_cast<std::uint64_t>(mid)) - q <= 0) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const std::int64_t k = static_cast<std::int64_t>(pairs_) - lo;
  if (k < 1) return mu_min;
  if (k > static_cast<std::int64_t>(pairs_)) return mu_max;
  const double root = KthDifference(static_cast<std::uint64_t>(k));
  const std::uint64_t at_most = CountAtMost(root);
  if (at_most < pairs_ && ScoreBetween(pairs_ - at_most) - q == 0) {
    // W equals q on the whole open interval after `root`: any point of it is a
    // root (R's uniroot returns one of them); take the midpoint.
    return 0.5 * (root + KthDifference(at_most + 1));
  }
  return root;
}

}  // namespace

Result<MannWhitneyResult> MannWhitney(std::span<const double> x, std::span<const double> y,
                                      double conf_level) {
  if (x.empty() || y.empty()) {
    return Error(StatusCode::kInvalidArgument, "Mann-Whitney test needs data in both samples");
  }
  if (x.size() + y.size() > kMaxObservations) {
    return Error(StatusCode::kOutOfRange,
                 "Mann-Whitney test: " + std::to_string(x.size() + y.size()) +
                     " observations, more than the supported " + std::to_string(kMaxObservations));
  }
  if (!(conf_level > 0 && conf_level < 1)) {
    return Error(StatusCode::kInvalidArgument,
                 "confidence level must be in (0, 1), got " + std::to_string(conf_level));
  }
  const auto finite = [](double v) { return std::isfinite(v); };
  if (!std::all_of(x.begin(), x.end(), finite) || !std::all_of(y.begin(), y.end(), finite)) {
    return Error(StatusCode::kInvalidArgument, "Mann-Whitney test: non-finite value in the data");
  }

  RankSumTest test(x, y);
  MannWhitneyResult result;
  const auto at_zero = test.ScoreAt(0.0);
  if (!at_zero) return Error(at_zero.error());
  result.u = at_zero->u;
  result.z = at_zero->w;
  // R: p <- 2 * min(pnorm(z), pnorm(z, lower.tail = FALSE))
  result.p_value = std::min(1.0, 2 * analysis::stats::NormalCdf(-std::fabs(result.z)));

  // R: alpha <- 1 - conf.level; l <- root(zq = qnorm(alpha/2, lower.tail = FALSE));
  //    u <- root(zq = qnorm(alpha/2))
  const double alpha = 1 - conf_level;
  const double z_low_tail = analysis::stats::NormalQuantile(alpha / 2);
  const auto lower = test.Root(-z_low_tail);
  if (!lower) return Error(lower.error());
  const auto upper = test.Root(z_low_tail);
  if (!upper) return Error(upper.error());
  result.ci_lower = *lower;
  result.ci_upper = *upper;
  result.estimate = test.HodgesLehmann();
  return result;
}

}  // namespace gpucanary::eval::kayenta
