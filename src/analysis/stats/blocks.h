#pragma once
// Block means: the 1 s samples of the two arms cut into blocks of block_s
// seconds, one pair of means per block (docs/analysis-method.md, "Statistical
// comparisons", step 1), and the autocorrelation helpers that justify the
// block length.

#include <cstdint>
#include <optional>
#include <span>

namespace gpucanary::analysis::stats {

// One finished block: ticks [start_tick, start_tick + block_s).
struct Block {
  std::int64_t index = 0;  // (start_tick - origin) / block_s
  std::int64_t start_tick = 0;
  double canary_mean = 0.0;  // over all canary values in the block (GPUs x seconds)
  double baseline_mean = 0.0;
  std::int64_t canary_seconds = 0;  // distinct ticks with >= 1 canary value
  std::int64_t baseline_seconds = 0;
  std::int64_t canary_values = 0;  // values averaged (several GPUs per tick)
  std::int64_t baseline_values = 0;
};

// Accumulates per-tick values into blocks. Blocks are aligned on `origin`
// (block k holds ticks origin + k block_s ... origin + (k+1) block_s - 1),
// so both arms and every metric share the same block boundaries.
// A block is emitted when a later block's tick arrives (or at Flush) and only
// if each arm has data in at least min_fraction of the block's block_s
// seconds; otherwise it is skipped ("too little data on either side").
// Thread-compatible. O(1) per value.
class BlockAccumulator {
 public:
  // REQUIRES: block_s >= 1, 0 < min_fraction <= 1.
  explicit BlockAccumulator(std::int64_t block_s, double min_fraction = 0.5,
                            std::int64_t origin = 0);

  // Adds the values of one tick (nullopt: no data on that arm). Several calls
  // for the same tick add several values (one per GPU) to the block means and
  // count the second once. Returns the block this tick completed, if any
  // qualified. Non-finite values count as no data.
  // REQUIRES: tick >= origin, and tick >= the previous call's tick
  // (the replay delivers ticks in order; a tick going back is a bug: GC_CHECK).
  std::optional<Block> Add(std::int64_t tick, std::optional<double> canary,
                           std::optional<double> baseline);

  // Ends the current block (end of data): returns it if it qualifies, counting
  // missing seconds at its end as seconds without data. Idempotent.
  std::optional<Block> Flush();

  std::int64_t block_s() const { return block_s_; }
  // Blocks skipped so far for too little data on either side.
  std::int64_t skipped() const { return skipped_; }

 private:
  struct Arm {
    double sum = 0.0;
    std::int64_t values = 0;
    std::int64_t seconds = 0;
    std::int64_t last_tick = -1;  // last tick that had a value on this arm
  };
  static void AddValue(Arm& arm, std::int64_t tick, std::optional<double> value);
  std::optional<Block> Close();

  std::int64_t block_s_;
  double min_fraction_;
  std::int64_t origin_;
  std::int64_t current_index_ = -1;  // -1: no open block
  std::int64_t last_tick_ = -1;
  Arm canary_;
  Arm baseline_;
  std::int64_t skipped_ = 0;
};

// The lag-1 sample autocorrelation r1 = sum_t (x_t - m)(x_{t+1} - m) /
// sum_t (x_t - m)^2 (m the mean of all x). NaN for fewer than 3 values or
// zero variance.
double Lag1Autocorrelation(std::span<const double> x);

// Effective sample size of n values of an AR(1)-like series with lag-1
// autocorrelation r1: n (1 - r1) / (1 + r1) (the variance of the mean of n
// such values is that of n_eff independent ones). REQUIRES: -1 < r1 < 1.
double EffectiveSampleSize(std::int64_t n, double r1);

}  // namespace gpucanary::analysis::stats
