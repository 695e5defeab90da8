#include "analysis/judge/load_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpucanary::analysis::judge_internal {

void LoadFit::Sums::Add(double sum, double count, double load) {
  // y = sum/count, weight = count: the sums of the weighted normal equations.
  w += count;
  wx += count * load;
  wxx += count * load * load;
  sy += sum;
  sxy += sum * load;
  syy += sum * sum / count;
  ++n;
}

void LoadFit::Sums::Merge(const Sums& o) {
  w += o.w;
  wx += o.wx;
  wxx += o.wxx;
  sy += o.sy;
  sxy += o.sxy;
  syy += o.syy;
  n += o.n;
}

std::optional<double> LoadFit::Sums::Slope() const {
  if (n < 3 || !(w > 0)) return std::nullopt;
  const double mx = wx / w;
  const double my = sy / w;
  const double sxx = wxx - w * mx * mx;  // weighted squared deviations of the loads
  if (!(mx > 0) || !(sxx > 0) || std::sqrt(sxx / w) < kMinSpread * mx) return std::nullopt;
  const double b = (sxy - w * mx * my) / sxx;
  const double a = my - b * mx;
  if (!(b > 0)) return std::nullopt;
  // Weighted residual sum of squares from the normal equations; the
  // slope's variance is sigma^2 / sxx with sigma^2 = rss / (n - 2).
  const double rss = syy - a * sy - b * sxy;
  const double sigma2 = std::max(rss, 0.0) / static_cast<double>(n - 2);
  const double se = std::sqrt(sigma2 / sxx);
  if (se > 0 && b / se < kMinT) return std::nullopt;
  return b;
}

int LoadFit::BinOf(double load) {
  return static_cast<int>(std::floor(std::log(std::max(load, kMinLoad)) / std::log(kBinWidth)));
}

void LoadFit::AddBaseline(double sum, double count, double load) {
  if (!(count > 0) || !std::isfinite(sum) || !std::isfinite(load) || load < 0) return;
  all_.Add(sum, count, load);
  bins_[BinOf(load)].Add(sum, count, load);
}

void LoadFit::AddCanary(double count, double load, bool compared) {
  if (!(count > 0) || !std::isfinite(load) || load < 0) return;
  canary_w_ += count;
  canary_wx_ += count * load;
  ++canary_n_;
  canary_compared_ += compared ? 1 : 0;
}

std::optional<double> LoadFit::Factor(double load) const {
  if (!active() || !std::isfinite(load) || load < 0) return std::nullopt;
  const int k = BinOf(load);
  Sums local;
  for (auto it = bins_.lower_bound(k - 1); it != bins_.end() && it->first <= k + 1; ++it) {
    local.Merge(it->second);
  }
  if (local.n < kMinSeconds || !(local.w > 0)) return std::nullopt;
  const double mx = local.wx / local.w;
  const double my = local.sy / local.w;
  std::optional<double> b = local.Slope();
  if (!b) b = all_.Slope();
  const double at = my + b.value_or(0.0) * (load - mx);
  const double mean = all_.sy / all_.w;
  if (!(at > 0) || !(mean > 0)) return std::nullopt;
  return at / mean;
}

double LoadFit::reference() const {
  return all_.w > 0 ? all_.wx / all_.w : std::numeric_limits<double>::quiet_NaN();
}

std::optional<double> LoadFit::canary_load() const {
  if (!(canary_w_ > 0)) return std::nullopt;
  return canary_wx_ / canary_w_;
}

std::optional<double> LoadFit::slope() const { return all_.Slope(); }

}  // namespace gpucanary::analysis::judge_internal
