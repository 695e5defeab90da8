#pragma once
// Per-token latency at equal load (docs/analysis-method.md, "Per-token
// latency at equal load"). A decode step of an LLM server costs a fixed part
// (the weights streamed once per step) plus a part per sequence in the batch
// (its KV cache read), so the latency between tokens rises with the running
// batch: a canary that carries more requests per GPU than its baseline is
// slower per token with no fault of the release's, and a baseline whose
// nodes' loads differ is noisy for the same reason.
//
// The fit learns the baseline's latency as a function of its load,
// L(x), x = requests running per GPU on a node, from the baseline's
// node-seconds: loads fall in bins 25 % wide, and L(x) is the weighted local
// line through the node-seconds of x's bin and its two neighbours (each
// node-second weighted by the tokens it timed; the slope from the local
// points where they show one, else from all of the baseline's). A
// node-second's latency sum is divided by L(x)/L̄, L̄ the baseline's pooled
// latency: both arms are read at the baseline's load, and the comparison
// keeps its ratio-of-sums form. Local, not one line: the curve bends (a
// baseline with drained nodes spans loads where one line misses by more than
// a margin), and a load no baseline node ran at is not compared at all
// (Factor is nullopt there) rather than extrapolated.
//
// Tokens/s per GPU are read the same way (y: a node-second's tokens per GPU,
// weighted by its GPUs): below saturation a node generates what it is
// offered, so a canary given less traffic than its baseline generates fewer
// tokens at the same speed per step.
//
// A release whose steps are slower shifts its whole curve, and the shift
// survives the normalisation (a slower step also grows the batch, by
// Little's law; reading both arms on the baseline's curve takes out the
// load, not the slowdown).
//
// Not thread-safe; one per judged measure.

#include <cstdint>
#include <map>
#include <optional>

namespace gpucanary::analysis::judge_internal {

class LoadFit {
 public:
  // Baseline node-seconds before the fit is used, and near a load before
  // that load is compared.
  static constexpr std::int64_t kMinSeconds = 30;
  // Relative width of a load bin.
  static constexpr double kBinWidth = 1.25;
  // Loads under this many requests per GPU share the lowest bin.
  static constexpr double kMinLoad = 0.5;
  // The loads' coefficient of variation (weighted) below which no slope is
  // read, and the slope's t statistic (naive, no autocorrelation: set
  // high) needed to use it.
  static constexpr double kMinSpread = 0.03;
  static constexpr double kMinT = 4.0;

  // One baseline node-second: latency sum `sum` over `count` tokens (or
  // `sum` tokens over `count` GPUs), at `load` requests running per GPU.
  void AddBaseline(double sum, double count, double load);
  // One canary node-second in its judged phase: compared (a baseline near
  // its load) or not.
  void AddCanary(double count, double load, bool compared);

  // A baseline node-second with its load was seen: the measure is read at
  // equal load from now on (no factor yet: no data).
  bool seen() const { return all_.n > 0; }
  bool active() const { return all_.n >= kMinSeconds && all_.w > 0; }
  // L(load) / L̄: the factor a node-second's latency sum is divided by;
  // nullopt while no baseline ran near `load` (or the fit is not active).
  std::optional<double> Factor(double load) const;
  double reference() const;  // the baseline's mean load (NaN: none)
  std::optional<double> canary_load() const;
  std::int64_t seconds() const { return all_.n; }
  std::int64_t canary_seconds() const { return canary_n_; }
  std::int64_t canary_compared() const { return canary_compared_; }
  // The baseline's line over all its loads (for the report): the measure's
  // rise per request per GPU (s per token, or tokens/s per GPU); nullopt
  // without a slope. mean(): the baseline's pooled value.
  std::optional<double> slope() const;
  double mean() const { return all_.w > 0 ? all_.sy / all_.w : 0; }

 private:
  struct Sums {
    double w = 0, wx = 0, wxx = 0, sy = 0, sxy = 0, syy = 0;
    std::int64_t n = 0;
    void Add(double sum, double count, double load);
    void Merge(const Sums& o);
    // The weighted least-squares slope, if the loads spread and the slope
    // stands clear of its noise.
    std::optional<double> Slope() const;
  };
  static int BinOf(double load);

  Sums all_;
  std::map<int, Sums> bins_;
  double canary_w_ = 0, canary_wx_ = 0;
  std::int64_t canary_n_ = 0, canary_compared_ = 0;
};

}  // namespace gpucanary::analysis::judge_internal
