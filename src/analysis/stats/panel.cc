#include "analysis/stats/panel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace gpucanary::analysis::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Block coordinate descent stops when no parameter moved more than this (in
// y's units), or after kMaxIterations sweeps.
constexpr double kTolerance = 1e-10;
constexpr int kMaxIterations = 2000;
// The lag-1 autocorrelation an AR(1) long-run variance is read at, at most.
constexpr double kMaxRho = 0.99;

// The long-run variance of a series (its n times the variance of its mean)
// by non-overlapping batch means, never below its lag-0 variance:
// autocorrelation is assumed to widen an interval, never to narrow it.
double LongRunVariance(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n < 2) return kInf;
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double gamma0 = ss / static_cast<double>(n - 1);
  const auto m = std::max<std::size_t>(4, static_cast<std::size_t>(std::sqrt(n)));
  const std::size_t k = n / m;
  if (k < 2) return gamma0 * static_cast<double>(m);  // too short to tell: assume the worst
  double bss = 0;
  for (std::size_t i = 0; i < k; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < m; ++j) s += x[i * m + j];
    const double bm = s / static_cast<double>(m);
    bss += (bm - mean) * (bm - mean);
  }
  const double batch = static_cast<double>(m) * bss / static_cast<double>(k - 1);
  // Batch means of a few dozen cells miss part of a strong short-range
  // correlation (AR(1) at 0.8: about a fifth); an AR(1) fit does not, and
  // batch means catch what an AR(1) misses (longer memory). The larger wins.
  double lag1 = 0;
  for (std::size_t i = 1; i < n; ++i) lag1 += (x[i] - mean) * (x[i - 1] - mean);
  const double rho = ss > 0 ? std::clamp(lag1 / ss, 0.0, kMaxRho) : 0;
  const double ar1 = gamma0 * (1 + rho) / (1 - rho);
  return std::max({batch, ar1, gamma0});
}

}  // namespace

Panel::Panel(std::size_t entities, std::size_t buckets, std::size_t effects)
    : entities_(entities),
      buckets_(buckets),
      effects_(effects),
      y_(entities * buckets, kNaN),
      excluded_(entities * buckets, false),
      set_(entities * buckets, 0),
      sets_(1) {}

void Panel::Set(std::size_t entity, std::size_t bucket, double y) {
  if (entity >= entities_ || bucket >= buckets_) return;
  y_[entity * buckets_ + bucket] = y;
}

void Panel::Exclude(std::size_t entity, std::size_t from, std::size_t to) {
  if (entity >= entities_) return;
  for (std::size_t b = from; b < to && b < buckets_; ++b) excluded_[entity * buckets_ + b] = true;
}

void Panel::AddEffect(std::size_t entity, std::size_t effect, std::size_t from, std::size_t to) {
  if (entity >= entities_ || effect >= effects_) return;
  const auto k = static_cast<std::uint32_t>(effect);
  for (std::size_t b = from; b < to && b < buckets_; ++b) {
    std::uint32_t& id = set_[entity * buckets_ + b];
    std::vector<std::uint32_t> next = sets_[id];
    const auto at = std::lower_bound(next.begin(), next.end(), k);
    if (at != next.end() && *at == k) continue;
    next.insert(at, k);
    const auto found = std::find(sets_.begin(), sets_.end(), next);
    if (found != sets_.end()) {
      id = static_cast<std::uint32_t>(found - sets_.begin());
    } else {
      sets_.push_back(std::move(next));
      id = static_cast<std::uint32_t>(sets_.size() - 1);
    }
  }
}

bool Panel::used(std::size_t e, std::size_t b) const {
  const std::size_t i = e * buckets_ + b;
  return !excluded_[i] && std::isfinite(y_[i]);
}

bool Panel::active(std::size_t e, std::size_t b, std::size_t effect) const {
  const std::vector<std::uint32_t>& s = ActiveAt(e, b);
  return std::binary_search(s.begin(), s.end(), static_cast<std::uint32_t>(effect));
}

const std::vector<std::uint32_t>& Panel::ActiveAt(std::size_t e, std::size_t b) const {
  return sets_[set_[e * buckets_ + b]];
}

struct PanelAccess {
  static const std::vector<std::uint32_t>& Sets(const Panel& p) { return p.set_; }
  static const std::vector<std::vector<std::uint32_t>>& Table(const Panel& p) { return p.sets_; }
};

namespace {

// What a fit runs on: values, which cells count, and each cell's active set.
struct Design {
  std::size_t ne = 0;
  std::size_t nb = 0;
  std::size_t effects = 0;
  const std::vector<double>* y = nullptr;
  const std::vector<char>* used = nullptr;
  const std::vector<std::uint32_t>* set = nullptr;
  const std::vector<std::vector<std::uint32_t>>* sets = nullptr;
};

struct Solved {
  std::vector<double> alpha;
  std::vector<double> tau;
  std::vector<double> beta;
  int iterations = 0;
};

double SetSum(const std::vector<std::uint32_t>& set, const std::vector<double>& beta) {
  double s = 0;
  for (std::uint32_t k : set) s += beta[k];
  return s;
}

// The least-squares fit of y = alpha[e] + tau[b] + sum of beta over the
// cell's active set, by block coordinate descent (alpha, tau, then each
// beta in turn).
Solved Solve(const Design& d) {
  const std::vector<double>& y = *d.y;
  const std::vector<char>& used = *d.used;
  const std::vector<std::uint32_t>& set = *d.set;
  const std::vector<std::vector<std::uint32_t>>& sets = *d.sets;
  Solved s;
  s.alpha.assign(d.ne, 0);
  s.tau.assign(d.nb, 0);
  s.beta.assign(d.effects, 0);
  std::vector<std::vector<std::size_t>> sets_with(d.effects);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    for (std::uint32_t k : sets[i]) {
      if (k < d.effects) sets_with[k].push_back(i);
    }
  }
  std::vector<double> sb(sets.size(), 0);
  std::vector<double> acc(d.nb);
  std::vector<double> cnt(d.nb);
  std::vector<double> set_sum(sets.size());
  std::vector<double> set_n(sets.size());
  for (int it = 0; it < kMaxIterations; ++it) {
    double moved = 0;
    for (std::size_t i = 0; i < sets.size(); ++i) sb[i] = SetSum(sets[i], s.beta);
    for (std::size_t e = 0; e < d.ne; ++e) {
      double sum = 0;
      double c = 0;
      for (std::size_t b = 0; b < d.nb; ++b) {
        const std::size_t i = e * d.nb + b;
        if (!used[i]) continue;
        sum += y[i] - s.tau[b] - sb[set[i]];
        c += 1;
      }
      if (c == 0) continue;
      moved = std::max(moved, std::fabs(sum / c - s.alpha[e]));
      s.alpha[e] = sum / c;
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(cnt.begin(), cnt.end(), 0.0);
    for (std::size_t e = 0; e < d.ne; ++e) {
      for (std::size_t b = 0; b < d.nb; ++b) {
        const std::size_t i = e * d.nb + b;
        if (!used[i]) continue;
        acc[b] += y[i] - s.alpha[e] - sb[set[i]];
        cnt[b] += 1;
      }
    }
    for (std::size_t b = 0; b < d.nb; ++b) {
      if (cnt[b] == 0) continue;
      moved = std::max(moved, std::fabs(acc[b] / cnt[b] - s.tau[b]));
      s.tau[b] = acc[b] / cnt[b];
    }
    if (d.effects > 0) {
      std::fill(set_sum.begin(), set_sum.end(), 0.0);
      std::fill(set_n.begin(), set_n.end(), 0.0);
      for (std::size_t e = 0; e < d.ne; ++e) {
        for (std::size_t b = 0; b < d.nb; ++b) {
          const std::size_t i = e * d.nb + b;
          if (!used[i] || set[i] == 0) continue;
          set_sum[set[i]] += y[i] - s.alpha[e] - s.tau[b];
          set_n[set[i]] += 1;
        }
      }
      for (std::size_t k = 0; k < d.effects; ++k) {
        double num = 0;
        double den = 0;
        for (std::size_t si : sets_with[k]) {
          if (set_n[si] == 0) continue;
          num += set_sum[si] - set_n[si] * (SetSum(sets[si], s.beta) - s.beta[k]);
          den += set_n[si];
        }
        if (den == 0) continue;
        moved = std::max(moved, std::fabs(num / den - s.beta[k]));
        s.beta[k] = num / den;
      }
    }
    s.iterations = it + 1;
    if (moved < kTolerance) break;
  }
  return s;
}

// Cholesky of the symmetric p x p matrix `a` (row-major, lower triangle
// used) in place, then the solution of a x = c. A pivot that falls to
// kPinned of its diagonal is a direction the data do not determine (the one
// level alpha and tau share, an entity or effect with no cell, an effect
// the fixed effects explain): that unknown is pinned at 0, which leaves a
// least-squares solution of the consistent normal equations.
std::vector<double> SolvePinned(std::vector<double>& a, std::vector<double> c, std::size_t p) {
  constexpr double kPinned = 1e-9;
  std::vector<char> pinned(p, 0);
  for (std::size_t j = 0; j < p; ++j) {
    double* row_j = &a[j * p];
    const double diag = row_j[j];
    double v = diag;
    for (std::size_t k = 0; k < j; ++k) v -= row_j[k] * row_j[k];
    if (!(diag > 0) || v <= kPinned * diag) {
      pinned[j] = 1;
      for (std::size_t k = 0; k <= j; ++k) row_j[k] = 0;
      for (std::size_t i = j + 1; i < p; ++i) a[i * p + j] = 0;
      continue;
    }
    const double l = std::sqrt(v);
    row_j[j] = l;
    for (std::size_t i = j + 1; i < p; ++i) {
      double* row_i = &a[i * p];
      double w = row_i[j];
      for (std::size_t k = 0; k < j; ++k) w -= row_i[k] * row_j[k];
      row_i[j] = w / l;
    }
  }
  for (std::size_t j = 0; j < p; ++j) {  // L z = c
    if (pinned[j]) {
      c[j] = 0;
      continue;
    }
    double w = c[j];
    for (std::size_t k = 0; k < j; ++k) w -= a[j * p + k] * c[k];
    c[j] = w / a[j * p + j];
  }
  for (std::size_t j = p; j-- > 0;) {  // L' x = z
    if (pinned[j]) {
      c[j] = 0;
      continue;
    }
    double w = c[j];
    for (std::size_t i = j + 1; i < p; ++i) w -= a[i * p + j] * c[i];
    c[j] = w / a[j * p + j];
  }
  return c;
}

// The same least-squares fit as Solve, exactly: tau profiled out (each
// bucket's cells centred on their bucket mean), the normal equations of
// alpha and beta (ne + effects unknowns) summed bucket by bucket, solved by
// SolvePinned, then tau from them. O(buckets x cells per bucket^2 + (ne +
// effects)^3): for a fleet's nodes far cheaper than the sweeps of Solve,
// which converge slowly when entities come and go (hundreds of sweeps).
Solved SolveExact(const Design& d) {
  const std::vector<double>& y = *d.y;
  const std::vector<char>& used = *d.used;
  const std::vector<std::uint32_t>& set = *d.set;
  const std::vector<std::vector<std::uint32_t>>& sets = *d.sets;
  const std::size_t ne = d.ne;
  const std::size_t nk = d.effects;
  const std::size_t p = ne + nk;
  std::vector<double> a(p * p, 0);
  std::vector<double> c(p, 0);
  std::vector<std::size_t> cells;
  std::vector<double> kcount(nk);
  std::vector<double> ksum(nk);
  for (std::size_t b = 0; b < d.nb; ++b) {
    cells.clear();
    double ysum = 0;
    std::fill(kcount.begin(), kcount.end(), 0.0);
    std::fill(ksum.begin(), ksum.end(), 0.0);
    for (std::size_t e = 0; e < ne; ++e) {
      const std::size_t i = e * d.nb + b;
      if (!used[i]) continue;
      cells.push_back(e);
      ysum += y[i];
      for (std::uint32_t k : sets[set[i]]) {
        if (k >= nk) continue;
        kcount[k] += 1;
        ksum[k] += y[i];
      }
    }
    if (cells.empty()) continue;
    const auto n = static_cast<double>(cells.size());
    const double ybar = ysum / n;
    // Sum of x x' over the bucket's cells, less n xbar xbar'.
    for (const std::size_t e : cells) {
      const std::size_t i = e * d.nb + b;
      a[e * p + e] += 1;
      c[e] += y[i] - ybar;
      for (std::uint32_t k : sets[set[i]]) {
        if (k >= nk) continue;
        a[(ne + k) * p + e] += 1;
        for (std::uint32_t l : sets[set[i]]) {
          if (l < nk && l <= k) a[(ne + k) * p + ne + l] += 1;
        }
      }
    }
    const double inv = 1 / n;
    for (std::size_t x = 0; x < cells.size(); ++x) {
      for (std::size_t z = 0; z <= x; ++z) a[cells[x] * p + cells[z]] -= inv;
    }
    for (std::size_t k = 0; k < nk; ++k) {
      if (kcount[k] == 0) continue;
      c[ne + k] += ksum[k] - kcount[k] * ybar;
      for (const std::size_t e : cells) a[(ne + k) * p + e] -= kcount[k] * inv;
      for (std::size_t l = 0; l <= k; ++l) a[(ne + k) * p + ne + l] -= kcount[k] * kcount[l] * inv;
    }
  }
  // Entity rows were summed into the lower triangle only when cells[x] >=
  // cells[z], which holds: cells are in entity order.
  const std::vector<double> x = SolvePinned(a, std::move(c), p);
  Solved s;
  s.alpha.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(ne));
  s.beta.assign(x.begin() + static_cast<std::ptrdiff_t>(ne), x.end());
  s.tau.assign(d.nb, 0);
  std::vector<double> sb(sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) sb[i] = SetSum(sets[i], s.beta);
  for (std::size_t b = 0; b < d.nb; ++b) {
    double sum = 0;
    double n = 0;
    for (std::size_t e = 0; e < ne; ++e) {
      const std::size_t i = e * d.nb + b;
      if (!used[i]) continue;
      sum += y[i] - s.alpha[e] - sb[set[i]];
      n += 1;
    }
    if (n > 0) s.tau[b] = sum / n;
  }
  s.iterations = 1;
  return s;
}

// The exact solve while its normal equations stay small; the sweeps beyond.
constexpr std::size_t kMaxExactEntities = 512;

Solved Fit(const Design& d, PanelSolver solver) {
  const bool exact =
      solver == PanelSolver::kExact || (solver == PanelSolver::kAuto && d.ne <= kMaxExactEntities);
  return exact ? SolveExact(d) : Solve(d);
}

}  // namespace

PanelFit FitPanel(const Panel& panel, PanelSolver solver) {
  const std::size_t ne = panel.entities();
  const std::size_t nb = panel.buckets();
  const std::size_t nk = panel.effects();
  std::vector<double> y(ne * nb, 0);
  std::vector<char> used(ne * nb, 0);
  for (std::size_t e = 0; e < ne; ++e) {
    for (std::size_t b = 0; b < nb; ++b) {
      if (!panel.used(e, b)) continue;
      used[e * nb + b] = 1;
      y[e * nb + b] = panel.y(e, b);
    }
  }
  const std::vector<std::uint32_t>& set = PanelAccess::Sets(panel);
  const std::vector<std::vector<std::uint32_t>>& sets = PanelAccess::Table(panel);
  const Solved main = Fit({ne, nb, nk, &y, &used, &set, &sets}, solver);
  PanelFit fit;
  fit.alpha = main.alpha;
  fit.tau = main.tau;
  fit.iterations = main.iterations;
  fit.residual.assign(ne * nb, kNaN);

  // Residuals: each entity's long-run variance.
  std::vector<double> lrv(ne, kInf);
  std::vector<double> series;
  std::vector<bool> bucket_used(nb, false);
  for (std::size_t e = 0; e < ne; ++e) {
    series.clear();
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t i = e * nb + b;
      if (!used[i]) continue;
      bucket_used[b] = true;
      const double eps = y[i] - main.alpha[e] - main.tau[b] - SetSum(sets[set[i]], main.beta);
      fit.residual[i] = eps;
      fit.rss += eps * eps;
      series.push_back(eps);
    }
    if (series.empty()) fit.alpha[e] = kNaN;
    lrv[e] = LongRunVariance(series);
  }
  // An entity with too few cells to tell its own noise takes the largest of
  // the others' (it weighs little either way).
  double widest = 0;
  for (double v : lrv) {
    if (std::isfinite(v)) widest = std::max(widest, v);
  }
  for (double& v : lrv) {
    if (!std::isfinite(v)) v = widest;
  }
  for (std::size_t b = 0; b < nb; ++b) {
    if (!bucket_used[b]) fit.tau[b] = kNaN;
  }

  fit.effects.resize(nk);
  std::vector<double> d(ne * nb, 0);
  std::vector<std::vector<std::uint32_t>> without(sets.size());
  for (std::size_t k = 0; k < nk; ++k) {
    EffectEstimate& out = fit.effects[k];
    out.se = kInf;
    const auto key = static_cast<std::uint32_t>(k);
    for (std::size_t e = 0; e < ne; ++e) {
      double in_sum = 0;
      double out_sum = 0;
      std::int64_t in_n = 0;
      std::int64_t out_n = 0;
      for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t i = e * nb + b;
        if (!used[i]) continue;
        const std::vector<std::uint32_t>& s = sets[set[i]];
        if (std::binary_search(s.begin(), s.end(), key)) {
          in_sum += fit.residual[i];
          ++in_n;
        } else {
          out_sum += fit.residual[i];
          ++out_n;
        }
      }
      out.cells += in_n;
      if (in_n == 0 || out_n == 0) continue;
      EntityEffect ee;
      ee.entity = e;
      ee.cells = in_n;
      ee.effect =
          main.beta[k] + in_sum / static_cast<double>(in_n) - out_sum / static_cast<double>(out_n);
      ee.weight = static_cast<double>(in_n) * static_cast<double>(out_n) /
                  static_cast<double>(in_n + out_n);
      out.per_entity.push_back(ee);
    }
    if (out.per_entity.empty()) continue;  // unidentified: effect 0, se inf
    // Frisch-Waugh-Lovell: k's indicator fitted by every other term.
    for (std::size_t si = 0; si < sets.size(); ++si) {
      without[si] = sets[si];
      std::erase(without[si], key);
    }
    for (std::size_t i = 0; i < ne * nb; ++i) {
      const std::vector<std::uint32_t>& s = sets[set[i]];
      d[i] = std::binary_search(s.begin(), s.end(), key) ? 1 : 0;
    }
    const Solved aux = Fit({ne, nb, nk, &d, &used, &set, &without}, solver);
    double ss = 0;
    std::vector<double> per_entity_ss(ne, 0);
    for (std::size_t e = 0; e < ne; ++e) {
      for (std::size_t b = 0; b < nb; ++b) {
        const std::size_t i = e * nb + b;
        if (!used[i]) continue;
        const double res = d[i] - aux.alpha[e] - aux.tau[b] - SetSum(without[set[i]], aux.beta);
        per_entity_ss[e] += res * res;
      }
      ss += per_entity_ss[e];
    }
    // The indicator explained by the rest (k switched on everywhere at once,
    // or always with another effect): not identified.
    if (!(ss > 1e-9 * static_cast<double>(out.cells))) continue;
    double var = 0;
    for (std::size_t e = 0; e < ne; ++e) {
      if (per_entity_ss[e] > 0) var += lrv[e] * per_entity_ss[e] / (ss * ss);
    }
    if (!std::isfinite(var)) continue;
    out.identified = true;
    out.effect = main.beta[k];
    out.se = std::sqrt(var);
  }
  return fit;
}

}  // namespace gpucanary::analysis::stats
