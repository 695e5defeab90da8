#include "analysis/stats/histogram_quantile.h"

#include <cmath>

namespace gpucanary::analysis::stats {

std::optional<double> BucketQuantile(const std::map<double, double>& buckets, double q) {
  if (buckets.empty() || !std::isinf(buckets.rbegin()->first)) return std::nullopt;
  const double total = buckets.rbegin()->second;
  if (!(total > 0)) return std::nullopt;
  const double rank = q * total;
  double prev_le = 0;
  double prev_count = 0;
  for (const auto& [le, count] : buckets) {
    if (count >= rank) {
      if (std::isinf(le)) return prev_le;
      if (count <= prev_count) return le;
      return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count);
    }
    prev_le = std::isinf(le) ? prev_le : le;
    prev_count = count;
  }
  return prev_le;
}

}  // namespace gpucanary::analysis::stats
