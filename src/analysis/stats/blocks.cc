#include "analysis/stats/blocks.h"

#include <cmath>
#include <limits>

#include "core/status.h"

namespace gpucanary::analysis::stats {

BlockAccumulator::BlockAccumulator(std::int64_t block_s, double min_fraction, std::int64_t origin)
    : block_s_(block_s), min_fraction_(min_fraction), origin_(origin) {
  GC_CHECK(block_s >= 1, "BlockAccumulator: block_s must be >= 1");
  GC_CHECK(min_fraction > 0.0 && min_fraction <= 1.0,
           "BlockAccumulator: min_fraction outside (0, 1]");
}

void BlockAccumulator::AddValue(Arm& arm, std::int64_t tick, std::optional<double> value) {
  if (!value.has_value() || !std::isfinite(*value)) return;
  arm.sum += *value;
  ++arm.values;
  if (arm.last_tick != tick) {
    ++arm.seconds;
    arm.last_tick = tick;
  }
}

std::optional<Block> BlockAccumulator::Close() {
  if (current_index_ < 0) return std::nullopt;
  // Both arms need data in min_fraction of the block's seconds, counted
  // against block_s (not against the ticks seen) so a gap is missing data.
  const double need = min_fraction_ * static_cast<double>(block_s_);
  std::optional<Block> out;
  if (static_cast<double>(canary_.seconds) >= need &&
      static_cast<double>(baseline_.seconds) >= need) {
    Block block;
    block.index = current_index_;
    block.start_tick = origin_ + current_index_ * block_s_;
    block.canary_mean = canary_.sum / static_cast<double>(canary_.values);
    block.baseline_mean = baseline_.sum / static_cast<double>(baseline_.values);
    block.canary_seconds = canary_.seconds;
    block.baseline_seconds = baseline_.seconds;
    block.canary_values = canary_.values;
    block.baseline_values = baseline_.values;
    out = block;
  } else {
    ++skipped_;
  }
  current_index_ = -1;
  canary_ = Arm{};
  baseline_ = Arm{};
  return out;
}

std::optional<Block> BlockAccumulator::Add(std::int64_t tick, std::optional<double> canary,
                                           std::optional<double> baseline) {
  GC_CHECK(tick >= origin_, "BlockAccumulator::Add: tick before origin");
  GC_CHECK(tick >= last_tick_, "BlockAccumulator::Add: ticks must not go back");
  last_tick_ = tick;
  const std::int64_t index = (tick - origin_) / block_s_;
  std::optional<Block> done;
  if (index != current_index_) done = Close();
  current_index_ = index;
  AddValue(canary_, tick, canary);
  AddValue(baseline_, tick, baseline);
  return done;
}

std::optional<Block> BlockAccumulator::Flush() { return Close(); }

double Lag1Autocorrelation(std::span<const double> x) {
  if (x.size() < 3) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double num = 0.0;
  double den = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean;
    den += d * d;
    if (i + 1 < x.size()) num += d * (x[i + 1] - mean);
  }
  if (den == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return num / den;
}

double EffectiveSampleSize(std::int64_t n, double r1) {
  GC_CHECK(r1 > -1.0 && r1 < 1.0, "EffectiveSampleSize: r1 outside (-1, 1)");
  return static_cast<double>(n) * (1.0 - r1) / (1.0 + r1);
}

}  // namespace gpucanary::analysis::stats
