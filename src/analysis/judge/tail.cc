// Measures' p99 comparisons (measures.h): each block's 99th percentile per
// arm, from the bucket increases pooled over the block's seconds and the
// arm's nodes, compared as a log ratio under the same confidence sequence as
// the means. Block quantiles are robust to the clustering of slow requests (a
// queue spike makes many requests slow at once), which a per-request count
// test is not.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "analysis/judge/measures.h"
#include "analysis/stats/histogram_quantile.h"

namespace gpucanary::analysis::judge_internal {
namespace {

constexpr double kMinTailObservationsPerBlock = 20;
// A tail block is compared only where the canary completed at most this
// much more than the baseline's requests per GPU: end-to-end latency and
// time to first token include queueing, and a node handed more requests
// than another queues more at the same speed. (A slower release completes
// fewer, not more: it is still compared.) On the field suite (seed 1) a
// healthy canary's bursts pass 20% in 1-4 of about 40 blocks (1.2-1.3x);
// the load-mismatch cases, at 1.4-1.6x, in 26-87% of them.
constexpr double kTailLoadTolerance = 0.20;

// A node's GPUs, counting a node without a GPU count as one.
double GpusOf(const NodeState& n) { return n.gpu_count > 0 ? n.gpu_count : 1; }

// A bound in seconds (+Inf stays +Inf).
double Seconds(double le, double scale) { return std::isinf(le) ? le : le * scale; }

// The cumulative count of `buckets` at `bound`, interpolated linearly within
// a bucket as histogram_quantile interpolates (the first bucket starts at 0);
// at or beyond the last finite bound, the count there (+Inf: the total).
double CumulativeAt(const std::map<double, double>& buckets, double bound) {
  if (buckets.empty()) return 0;
  if (std::isinf(bound)) return buckets.rbegin()->second;
  const auto upper = buckets.lower_bound(bound);
  if (upper != buckets.end() && upper->first == bound) return upper->second;
  const double lo_le = upper == buckets.begin() ? 0 : std::prev(upper)->first;
  const double lo_count = upper == buckets.begin() ? 0 : std::prev(upper)->second;
  if (upper == buckets.end() || std::isinf(upper->first)) return lo_count;
  if (!(upper->first > lo_le)) return upper->second;
  return lo_count + (upper->second - lo_count) * (bound - lo_le) / (upper->first - lo_le);
}

// One arm's histograms as one: a single family as it is; several (nodes on
// servers that bucket differently) summed at the union of their bounds, each
// interpolated within its own buckets.
std::map<double, double> MergeFamilies(const std::map<int, std::map<double, double>>& per_family) {
  if (per_family.size() == 1) return per_family.begin()->second;
  std::map<double, double> out;
  for (const auto& [family, buckets] : per_family) {
    for (const auto& [le, count] : buckets) out.emplace(le, 0.0);
  }
  for (auto& [le, count] : out) {
    for (const auto& [family, buckets] : per_family) count += CumulativeAt(buckets, le);
  }
  return out;
}

}  // namespace

// The family's node histograms this tick, complete (every bucket's increase
// known) and not excluded: the baseline's pooled, the canary's per node.
void Measures::GatherTail(const Measure& ms, const Tick& tick, TailTick& arms) const {
  for (const HistogramPoint& h : tick.histograms) {
    if (h.gpu >= 0) continue;
    const auto it = std::find(ms.family_metrics.begin(), ms.family_metrics.end(), h.metric);
    if (it == ms.family_metrics.end()) continue;
    const int family =
        ms.family_of_metric[static_cast<std::size_t>(it - ms.family_metrics.begin())];
    const double scale = ms.family_scales[static_cast<std::size_t>(family)];
    const NodeState& n = fleet_.nodes()[static_cast<std::size_t>(h.node)];
    const std::span<const Bucket> buckets = tick.BucketsOf(h);
    if (buckets.empty() || n.excluded) continue;
    bool complete = true;
    for (const Bucket& b : buckets) complete &= b.increase.has_value();
    if (!complete) continue;
    if (n.role == Role::kBaseline) {
      std::map<double, double>& base = arms.base[family];
      for (const Bucket& b : buckets) base[Seconds(b.le, scale)] += *b.increase;
      arms.base_any = true;
      if (std::find(arms.base_nodes.begin(), arms.base_nodes.end(), h.node) ==
          arms.base_nodes.end()) {
        arms.base_nodes.push_back(h.node);
        arms.base_gpus += GpusOf(n);
      }
    } else {
      arms.canary.push_back({h.node, family, scale, buckets});
    }
  }
}

void Measures::RunTail(std::size_t m, std::int64_t t, const Tick& tick) {
  const Measure& ms = measures_[m];
  if (ms.family_metrics.empty()) return;
  TailTick arms;
  GatherTail(ms, tick, arms);
  const bool before_release = time_.BeforeRelease(t);
  if (!before_release && t < time_.BlockOrigin()) return;
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  const std::int64_t origin = before_release ? time_.first_tick.value_or(t) : time_.BlockOrigin();
  const std::int64_t index = (t - origin) / block_s;
  // The canary nodes in the phase this tick feeds (history or judged).
  std::vector<const NodeBuckets*> all;
  std::map<int, std::vector<const NodeBuckets*>> per_node;
  for (const NodeBuckets& nb : arms.canary) {
    const Phase ph = fleet_.PhaseOf(nb.node, t);
    if (before_release ? ph != Phase::kHistory : ph != Phase::kJudged) continue;
    all.push_back(&nb);
    per_node[nb.node + 1].push_back(&nb);
  }
  FeedTail(m, 0, before_release, index, all, arms);
  if (!ms.decides) return;
  const std::vector<NodeState>& nodes = fleet_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].role != Role::kCanary) continue;
    const int unit = static_cast<int>(i) + 1;
    auto it = per_node.find(unit);
    FeedTail(m, unit, before_release, index,
             it == per_node.end() ? std::vector<const NodeBuckets*>{} : it->second, arms);
  }
}

// Adds this tick's buckets to the unit's open block, closing the previous
// block when this tick starts a new one.
void Measures::FeedTail(std::size_t m, int unit, bool history, std::int64_t index,
                        const std::vector<const NodeBuckets*>& canary, const TailTick& arms) {
  TailBlock& tb = tail_blocks_[m][{unit, history}];
  if (tb.index != index) {
    if (tb.index >= 0) CloseTail(m, unit, history, tb);
    tb = TailBlock{};
    tb.index = index;
  }
  if (!canary.empty()) {
    std::vector<int> counted;  // nodes whose GPUs are counted this tick
    for (const NodeBuckets* nb : canary) {
      std::map<double, double>& into = tb.canary[nb->family];
      for (const Bucket& b : nb->buckets) into[Seconds(b.le, nb->scale)] += *b.increase;
      if (std::find(counted.begin(), counted.end(), nb->node) == counted.end()) {
        counted.push_back(nb->node);
        tb.canary_gpu_seconds += GpusOf(fleet_.nodes()[static_cast<std::size_t>(nb->node)]);
      }
    }
    ++tb.canary_seconds;
  }
  if (arms.base_any) {
    for (const auto& [family, buckets] : arms.base) {
      std::map<double, double>& into = tb.baseline[family];
      for (const auto& [le, c] : buckets) into[le] += c;
    }
    ++tb.baseline_seconds;
    tb.baseline_gpu_seconds += arms.base_gpus;
  }
}

// A block counts when both arms had data in enough of its seconds and enough
// observations for a 99th percentile.
void Measures::CloseTail(std::size_t m, int unit, bool history, TailBlock& tb) {
  const double need = policy_.min_block_fraction * policy_.block_s;
  if (static_cast<double>(tb.canary_seconds) < need ||
      static_cast<double>(tb.baseline_seconds) < need) {
    return;
  }
  const std::map<double, double> canary = MergeFamilies(tb.canary);
  const std::map<double, double> baseline = MergeFamilies(tb.baseline);
  const auto total = [](const std::map<double, double>& b) {
    return b.empty() ? 0.0 : b.rbegin()->second;
  };
  if (total(canary) < kMinTailObservationsPerBlock ||
      total(baseline) < kMinTailObservationsPerBlock) {
    return;
  }
  // Requests completed per GPU-second, each arm: a canary handed more
  // than the baseline queues more at the same speed (not compared).
  const double load_ratio =
      (total(canary) / tb.canary_gpu_seconds) / (total(baseline) / tb.baseline_gpu_seconds);
  if (!history && unit == 0) ++tail_load_[m].blocks;
  if (load_ratio > 1 + kTailLoadTolerance) {
    if (!history && unit == 0) {
      ++tail_load_[m].skipped;
      tail_load_[m].ratio_sum += load_ratio;
    }
    return;
  }
  const std::optional<double> qc = stats::BucketQuantile(canary, 0.99);
  const std::optional<double> qb = stats::BucketQuantile(baseline, 0.99);
  if (!qc || !qb) return;
  const auto block_s = static_cast<std::int64_t>(policy_.block_s);
  stats::Block block;
  block.index = tb.index;
  block.start_tick =
      (history ? time_.first_tick.value_or(0) : time_.BlockOrigin()) + tb.index * block_s;
  block.canary_mean = *qc;
  block.baseline_mean = *qb;
  ComparisonFor(m, unit);
  OnComparisonBlock(m, unit, block, history);
}

}  // namespace gpucanary::analysis::judge_internal
