#pragma once
// The judge's measures (docs/analysis-method.md, "Statistical comparisons
// (anytime-valid)"): the policy metrics, the DRAM efficiency rule and the
// diagnostics, each compared every tick on the whole canary and on each
// canary GPU (or node, for service metrics) against the pooled matched
// baseline: block means (or block p99s, tail.cc) under an anytime-valid
// confidence sequence, or a count test for rare events (count_tests.cc). The
// canary's history (before its release) is kept beside, to tell a unit that
// was already like that.
//
// Cost: O(units) per measure and tick; O(1) per closed block. Nothing is
// kept per tick.
//
// Thread-compatible. Internal to the judge.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/judge/fleet.h"
#include "analysis/judge/internal.h"
#include "analysis/judge/judge.h"
#include "analysis/judge/load_fit.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"
#include "analysis/stats/blocks.h"
#include "analysis/stats/confidence_sequence.h"
#include "analysis/stats/count_test.h"
#include "analysis/stats/ratio_cs.h"

namespace gpucanary::analysis::judge_internal {

// One CS comparison: a unit (the whole canary, a canary GPU or node) against
// the pooled matched baseline. Continuous measures are compared every second
// as a ratio of sums (stats::RatioCs); p99 measures block by block (the log
// ratio of block p99s under a ConfidenceSequence).
struct Comparison {
  bool per_second = true;
  stats::RatioCs ratio;            // per_second
  stats::BlockAccumulator blocks;  // p99: blocks of block_s
  stats::ConfidenceSequence cs;
  double alpha = 0;
  double lo = -kInf;  // running intersection of the log-ratio CS
  double hi = kInf;
  // The same CS at the policy's pass_alpha (the whole canary only), what a
  // pass is decided on; its running intersection.
  double pass_lo = -kInf;
  double pass_hi = kInf;
  stats::Decision decision = stats::Decision::kUndecided;
  std::optional<std::int64_t> decided_at;
  double canary_sum = 0;  // p99: sums of block values, for point estimates
  double baseline_sum = 0;
  std::int64_t blocks_used = 0;
  // History (before the unit's release). Per second: the arms' sums; p99:
  // the mean log ratio of block values.
  stats::BlockAccumulator history;
  double history_sum = 0;
  std::int64_t history_blocks = 0;  // p99 blocks, or seconds
  double history_cn = 0, history_cd = 0, history_bn = 0, history_bd = 0;

  Comparison(bool per_second_, std::int64_t block_s, double min_fraction, std::int64_t origin,
             double rho, double alpha_, std::int64_t history_origin)
      : per_second(per_second_),
        ratio(rho),
        blocks(block_s, min_fraction, origin),
        cs(rho, stats::CsScale::kStandardized),
        alpha(alpha_),
        history(block_s, min_fraction, history_origin) {}

  // Seconds (or p99 blocks) compared.
  std::int64_t observations() const { return per_second ? ratio.n() : blocks_used; }
  // The arms' values over the judged period (NaN: none).
  double canary_mean() const {
    if (per_second) return ratio.canary_ratio();
    return blocks_used == 0 ? kNaN : canary_sum / static_cast<double>(blocks_used);
  }
  double baseline_mean() const {
    if (per_second) return ratio.baseline_ratio();
    return blocks_used == 0 ? kNaN : baseline_sum / static_cast<double>(blocks_used);
  }
  double change() const {  // point estimate, relative
    if (per_second) {
      const std::optional<double> lr = ratio.LogRatio();
      return lr ? std::expm1(*lr) : kNaN;
    }
    if (blocks_used == 0 || !(baseline_sum > 0)) return kNaN;
    return canary_sum / baseline_sum - 1.0;
  }
  double history_change() const {
    if (history_blocks == 0) return kNaN;
    if (per_second) {
      if (!(history_cn > 0) || !(history_bn > 0) || !(history_cd > 0) || !(history_bd > 0)) {
        return kNaN;
      }
      return (history_cn / history_cd) / (history_bn / history_bd) - 1;
    }
    return std::expm1(history_sum / static_cast<double>(history_blocks));
  }
  // The log-ratio CS at error rate a at this look (not intersected).
  stats::Bounds IntervalAt(double a) const {
    if (per_second) return ratio.Interval(a);
    return cs.Interval(a);
  }
};

// One count test: canary events against baseline events, given the
// canary's share of the exposure.
struct CountComparison {
  stats::CountTest test;
  double alpha = 0;
  bool rejected = false;
  std::optional<std::int64_t> decided_at;
  double canary_exposure = 0;  // GPU-seconds, or tokens for service events
  double baseline_exposure = 0;
  std::int64_t ticks = 0;  // ticks with canary exposure
  // History: events and exposure before the unit's release.
  double history_canary = 0, history_baseline = 0, history_canary_exposure = 0,
         history_baseline_exposure = 0;
  // Canary rate over baseline rate: +inf when only the canary has events,
  // 1 when neither has (no evidence of a difference), NaN without exposure.
  double rate_ratio() const {
    const double a = static_cast<double>(test.canary_events());
    const double b = static_cast<double>(test.baseline_events());
    if (canary_exposure <= 0 || baseline_exposure <= 0) return kNaN;
    if (b <= 0) return a > 0 ? kInf : 1.0;
    return (a / canary_exposure) / (b / baseline_exposure);
  }
};

class Measures {
 public:
  // Called when a deciding measure is shown worse than its margin on a unit
  // (0: the whole canary) at tick `t`.
  using WorseSink = std::function<void(std::size_t measure, int unit, std::int64_t t)>;

  // Builds the measures of `policy` and asks `fleet` for the slots they
  // read. `policy`, `time` and `fleet` must outlive the measures; `on_worse`
  // may change the fleet (exclude units) while the measures run.
  Measures(const Policy& policy, const Timeline& time, Fleet& fleet, WorseSink on_worse);

  // Resolves the p99 measures' histogram families among the catalog's new
  // metrics.
  void SyncFamilies(const std::vector<MetricInfo>& metrics);
  // One tick of every measure: the value of each canary unit (GPU or node)
  // and of the pools (whole canary in its judged phase, whole canary in its
  // history, matched baseline), then the block comparisons or count tests.
  void Run(std::int64_t t, const Tick& tick);
  // The release started: closes the history's last blocks.
  void CloseHistory();
  // End of the data: closes every open block.
  void Flush();
  // Judge::SetTap: called from Run for every policy metric and judged tick.
  void SetTap(Judge::Tap tap) { tap_ = std::move(tap); }

  // Policy metrics (policy order), then the DRAM efficiency rule, then the
  // diagnostics.
  const std::vector<Measure>& list() const { return measures_; }
  // Per measure, unit 0 = whole canary, unit k+1 = canary GPU or node k.
  const std::map<int, Comparison>& comparisons(std::size_t m) const { return comparisons_[m]; }
  const std::map<int, CountComparison>& counts(std::size_t m) const { return counts_[m]; }
  // The whole canary's comparison (count test) of measure m; null if none yet.
  const Comparison* Whole(std::size_t m) const;
  const CountComparison* WholeCount(std::size_t m) const;
  // The load fit of measure m (inactive unless m is a per-token latency read
  // at equal load).
  const LoadFit& load_fit(std::size_t m) const { return load_fits_[m]; }
  // A p99 measure's judged blocks of the whole canary, and those left out
  // because the canary completed more requests per GPU than the baseline
  // (tails include queueing: docs/analysis-method.md, step 6).
  struct TailLoad {
    std::int64_t blocks = 0;
    std::int64_t skipped = 0;
    double ratio_sum = 0;  // of the skipped blocks' canary/baseline request rates
  };
  const TailLoad& tail_load(std::size_t m) const { return tail_load_[m]; }

 private:
  // A block of histogram observations (bucket bound -> cumulative increase)
  // per arm, for the p99 comparison.
  // Observations are kept per histogram family (index into
  // Measure::families), with bounds in seconds: servers bucket differently.
  using FamilyBuckets = std::map<int, std::map<double, double>>;
  struct TailBlock {
    std::int64_t index = -1;
    FamilyBuckets canary, baseline;
    std::int64_t canary_seconds = 0, baseline_seconds = 0;
    double canary_gpu_seconds = 0, baseline_gpu_seconds = 0;  // the arms' GPUs, summed per tick
  };
  // A canary unit's value this tick, for the per-unit comparisons.
  struct NodeRatio {
    double num = 0;
    double den = 0;
  };
  struct ScratchUnit {
    int unit;
    std::optional<NodeRatio> value;
    Phase phase;
  };
  struct UnitCount {
    int unit;
    double events;
    double exposure;
    Phase phase;
  };
  // A count measure's events and exposure this tick: whole canary judged and
  // in its history, the baseline, and each canary unit.
  struct TickCounts {
    double c_ev = 0, c_ex = 0, h_ev = 0, h_ex = 0, b_ev = 0, b_ex = 0;
    std::vector<UnitCount> units;
    void Reset() {
      c_ev = c_ex = h_ev = h_ex = b_ev = b_ex = 0;
      units.clear();
    }
  };
  struct NodeBuckets {
    int node;
    int family;    // index into Measure::families
    double scale;  // the family's bounds times this are seconds
    std::span<const Bucket> buckets;
  };
  // A p99 measure's histograms this tick: the baseline's buckets pooled, the
  // canary's per node.
  struct TailTick {
    FamilyBuckets base;
    bool base_any = false;
    std::vector<int> base_nodes;  // whose buckets are in `base`
    double base_gpus = 0;         // theirs
    std::vector<NodeBuckets> canary;
  };
  struct RatioPool;
  struct TickPools;

  void Build(Fleet& fleet);
  void AddDiagnostic(std::string_view name, MeasureKind kind, int slot, int slot2 = -1,
                     int load_slot = -1);

  void RunContinuous(std::size_t m, std::int64_t t);
  TickPools PoolGpus(const Measure& ms, std::int64_t t);
  TickPools PoolNodes(std::size_t m, std::int64_t t);
  // Feeds the baseline's node-seconds of this tick to measure m's load fit.
  void FitLoad(std::size_t m);
  // Node `node`'s requests running per GPU this tick (nullopt: unknown).
  std::optional<double> LoadOf(const Measure& ms, int node) const;
  std::optional<NodeRatio> NodeRatioOf(const Measure& ms, int node) const;
  std::optional<NodeRatio> DramEfficiencyOf(int node) const;
  std::optional<NodeRatio> WorkPerJouleOf(int gpu) const;
  void FeedSeconds(std::size_t m, int unit, std::int64_t t, std::optional<NodeRatio> judged,
                   std::optional<NodeRatio> history, std::optional<NodeRatio> baseline);
  void OnSecond(std::size_t m, int unit, std::int64_t t);
  // Intersects the comparison's interval with `b` and decides against the margin.
  void TakeDecision(std::size_t m, int unit, Comparison& cmp, std::int64_t at);

  void RunCount(std::size_t m, std::int64_t t);
  void CountNodes(const Measure& ms, std::int64_t t);
  void CountGpus(const Measure& ms, std::int64_t t);
  void AddCount(Role role, bool excluded, Phase ph, int unit, double ev, double ex);
  void FeedCount(std::size_t m, int unit, double ev, double ex, bool history);
  void TestCounts(std::size_t m, std::int64_t t);

  void RunTail(std::size_t m, std::int64_t t, const Tick& tick);
  void GatherTail(const Measure& ms, const Tick& tick, TailTick& arms) const;
  void FeedTail(std::size_t m, int unit, bool history, std::int64_t index,
                const std::vector<const NodeBuckets*>& canary, const TailTick& arms);
  void CloseTail(std::size_t m, int unit, bool history, TailBlock& tb);

  void OnComparisonBlock(std::size_t m, int unit, const stats::Block& block, bool history);
  Comparison& ComparisonFor(std::size_t m, int unit);
  CountComparison& CountFor(std::size_t m, int unit);
  double UnitAlpha(std::size_t m) const;

  const Policy& policy_;
  const Timeline& time_;
  const Fleet& fleet_;
  WorseSink on_worse_;
  Judge::Tap tap_;

  std::vector<Measure> measures_;
  std::size_t metrics_synced_ = 0;
  std::vector<std::map<int, Comparison>> comparisons_;
  std::vector<LoadFit> load_fits_;  // per measure
  // std::map nodes are stable: a dense index by unit avoids a tree lookup
  // per unit, measure and tick.
  std::vector<std::vector<Comparison*>> comparison_index_;
  std::vector<std::vector<CountComparison*>> count_index_;
  std::vector<std::map<int, CountComparison>> counts_;
  // kNodeTail: per measure, per (unit, history) the open block's buckets.
  std::vector<std::map<std::pair<int, bool>, TailBlock>> tail_blocks_;
  std::vector<TailLoad> tail_load_;
  std::vector<ScratchUnit> scratch_units_;
  TickCounts tick_counts_;
};

}  // namespace gpucanary::analysis::judge_internal
