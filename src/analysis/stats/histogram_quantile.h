#pragma once
// Quantiles of Prometheus-style histograms: cumulative counts per upper
// bound `le`, the last bound +Inf. Pure functions, thread-safe.

#include <map>
#include <optional>

namespace gpucanary::analysis::stats {

// The q-quantile (0 <= q <= 1) of the observations counted in `buckets`
// (upper bound -> cumulative count, +Inf last), interpolated linearly within
// the bucket as Prometheus's histogram_quantile does; a quantile that falls
// in the +Inf bucket is the largest finite bound. nullopt when there is no
// +Inf bucket or no observation.
std::optional<double> BucketQuantile(const std::map<double, double>& buckets, double q);

}  // namespace gpucanary::analysis::stats
