#pragma once
// The judged fleet (docs/analysis-method.md, "Inputs, time and alignment" and
// "Per GPU and matched"): the canary and baseline GPUs and nodes the catalog
// names, their matching groups (GPU model), when each canary node started
// serving the release, which units are out of the pools (node faults), and
// this tick's values in a dense table of slots (the fields the rules, the
// diagnostics and the policy read).
//
// Cost: Read is O(points in the tick); PoolBaseline O(GPUs x slots). Nothing
// is allocated per tick once the catalog stops growing.
//
// Thread-compatible. Internal to the judge.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/judge/internal.h"
#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "analysis/replay/replay.h"

namespace gpucanary::analysis::judge_internal {

// Sum and count of values, NaN-free.
struct Pool {
  double sum = 0;
  double n = 0;
  void Add(double v) {
    sum += v;
    n += 1;
  }
  std::optional<double> Mean() const {
    if (n <= 0) return std::nullopt;
    return sum / n;
  }
};

struct GpuState {
  bool seen = false;
  Role role = Role::kBaseline;
  int node = -1;
  int group = -1;
  bool excluded = false;  // out of the pools: a node fault
};

struct NodeState {
  bool seen = false;
  Role role = Role::kBaseline;
  std::optional<std::int64_t> since;  // the release serves here from this tick (canary)
  bool had_service_before = false;    // node-level data before the release started
  bool gap_seen = false;              // a tick without service data after the release started
  double last_tokens = kNaN;
  bool excluded = false;
  int gpu_count = 0;
  // The server's restarts: ticks at which its token counter (summed over the
  // node's engines) fell below half its last value (a restarted process
  // counts from 0; a lost scrape leaves a gap, not a fall).
  std::vector<std::int64_t> restarts;
  double restart_last_tokens = kNaN;
};

// Where a canary node stands at a tick: its own history (before the release
// start), between the release start and its switch (the restart), in its
// warm-up, or judged. Asked of canary nodes only (baseline units are always
// compared).
enum class Phase : std::uint8_t { kHistory, kSwitching, kWarmup, kJudged };

class Fleet {
 public:
  // `policy` and `time` must outlive the fleet.
  Fleet(const Policy& policy, const Timeline& time);
  const Timeline& timeline() const { return time_; }

  // A node sample read into a slot, and the factor that converts it into
  // the slot's unit (a service measure's: seconds, tokens, a fraction).
  struct SlotSource {
    std::string name;
    double scale = 1;
  };

  // The slot that keeps the GPU (node) sample `name`, added if new: the
  // fixed GPU slots come first, then what the measures ask for; node slot 0
  // is the generated-token counter of whichever server a node runs (every
  // kGeneratedTokens counter of vocab::ServiceMetrics()). REQUIRES: before
  // the first Sync.
  int GpuSlotFor(const std::string& name);
  int NodeSlotFor(const std::string& name);
  // A node slot filled from any of `sources` (one per inference server),
  // named `key`, added if new. A sample may feed several slots.
  int NodeSlotFor(const std::string& key, std::vector<SlotSource> sources);
  int tokens_slot() const { return tokens_slot_; }
  // Whether any node has shown a service sample (one that fills a node slot:
  // every server's generated tokens among them) in any tick so far.
  bool service_seen() const { return service_seen_; }

  // Takes the catalog's new metrics, nodes and GPUs and clears this tick's
  // values. The catalog's vectors must outlive the judge (they are the
  // replay's).
  void Sync(const Catalog& catalog);
  // This tick's values and which GPUs and nodes have data.
  void Read(const Tick& tick);
  // The matched baseline this tick, per group: each slot's pooled mean and
  // the clock-event reasons a majority of its GPUs hold.
  void PoolBaseline();

  // The canary node's switch to the release (REQUIRES: a release start):
  // true when it switched at `t` from a known point (a restart, or serving
  // on past the grace period), so that what it showed while switching can be
  // told history or release now.
  bool UpdateSwitch(int node, std::int64_t t);
  // Every node's server restarts this tick (NodeState::restarts).
  void TrackRestarts(std::int64_t t);
  // Restarts of node `node`'s server at or after `from`.
  int RestartsSince(int node, std::int64_t from) const;

  Phase PhaseOf(int node, std::int64_t t) const {
    if (!time_.release_start) return Phase::kJudged;
    const NodeState& n = nodes_[static_cast<std::size_t>(node)];
    if (t < *time_.release_start) return Phase::kHistory;
    if (!n.since) return Phase::kSwitching;
    if (static_cast<double>(t - *n.since) < policy_.warmup_s) return Phase::kWarmup;
    return Phase::kJudged;
  }
  // Canary nodes with at least one GPU.
  int CanaryNodeCount() const;

  // Out of the pools. A GPU's fault takes its node's service out too (tensor
  // parallel: one bad GPU slows the node's server); a node's, its GPUs.
  void ExcludeGpuAndItsNode(int gpu);
  void ExcludeGpu(int gpu) { gpus_[static_cast<std::size_t>(gpu)].excluded = true; }
  void ExcludeNodeAndItsGpus(int node);

  const std::vector<GpuState>& gpus() const { return gpus_; }
  const std::vector<NodeState>& nodes() const { return nodes_; }
  // The last catalog synced; nullopt before the first tick.
  const std::optional<Catalog>& catalog() const { return catalog_; }
  const std::map<std::string, int>& groups() const { return groups_; }
  int group_canary(int group) const { return group_canary_[static_cast<std::size_t>(group)]; }
  int group_baseline(int group) const { return group_baseline_[static_cast<std::size_t>(group)]; }
  std::size_t group_count() const { return group_canary_.size(); }
  // What the node switches said ("served without a restart ...").
  const std::vector<std::string>& notes() const { return notes_; }

  // This tick's values (nullopt or NaN: no data).
  std::optional<double> GpuValue(int gpu, int slot) const { return Known(GpuAt(gv_, gpu, slot)); }
  std::optional<double> GpuIncrease(int gpu, int slot) const {
    return Known(GpuAt(gi_, gpu, slot));
  }
  // Whether the GPU is doing work this tick: utilisation at least 50%, else
  // (no utilisation field) SM active at least 0.3; a GPU reporting neither
  // counts as busy (nothing says otherwise).
  bool GpuBusy(int gpu) const {
    if (const std::optional<double> util = GpuValue(gpu, kUtil)) return *util >= 50;
    if (const std::optional<double> sm = GpuValue(gpu, kSmActive)) return *sm >= 0.3;
    return true;
  }
  std::optional<double> NodeValue(int node, int slot) const {
    return Known(NodeAt(nv_, node, slot));
  }
  std::optional<double> NodeIncrease(int node, int slot) const {
    return Known(NodeAt(ni_, node, slot));
  }
  double RawGpuValue(std::size_t gpu, std::size_t slot) const { return gv_[gpu * slots_ + slot]; }
  bool gpu_has_data(std::size_t gpu) const { return gpu_has_data_[gpu]; }
  // The matched baseline this tick (PoolBaseline).
  std::optional<double> BaselineMean(int group, std::size_t slot) const {
    return base_pool_[static_cast<std::size_t>(group) * slots_ + slot].Mean();
  }
  std::uint64_t BaselineMajority(int group) const {
    return group_majority_[static_cast<std::size_t>(group)];
  }
  // Baseline GPUs of the group with clock-event reasons this tick.
  int BaselineWithReasons(int group) const {
    return with_reasons_[static_cast<std::size_t>(group)];
  }

 private:
  static std::optional<double> Known(double v) {
    if (std::isnan(v)) return std::nullopt;
    return v;
  }
  double GpuAt(const std::vector<double>& values, int gpu, int slot) const {
    return values[static_cast<std::size_t>(gpu) * slots_ + static_cast<std::size_t>(slot)];
  }
  double NodeAt(const std::vector<double>& values, int node, int slot) const {
    return values[static_cast<std::size_t>(node) * node_slots_ + static_cast<std::size_t>(slot)];
  }
  void SyncMetrics(const std::vector<MetricInfo>& metrics);
  void SyncNodes(const std::vector<NodeInfo>& nodes);
  void SyncGpus(const std::vector<GpuInfo>& gpus);
  void SetBaselineMajorities();

  const Policy& policy_;
  const Timeline& time_;
  // A copy: the struct is three pointers into the caller's replay, which
  // outlives the judge; the Catalog itself is often a temporary.
  std::optional<Catalog> catalog_;

  std::vector<std::string> gpu_slot_names_;  // fixed slots then policy GPU metrics
  struct NodeSlot {
    std::string key;
    std::vector<SlotSource> sources;
  };
  struct NodeTarget {
    int slot;
    double scale;
  };
  std::vector<NodeSlot> node_slot_names_;  // tokens, then policy node metrics
  std::size_t slots_ = kFixedGpuSlots;
  std::size_t node_slots_ = 1;
  int tokens_slot_ = 0;
  bool service_seen_ = false;
  std::vector<int> metric_gpu_slot_;                       // catalog metric -> GPU slot (-1)
  std::vector<std::vector<NodeTarget>> metric_node_slot_;  // catalog metric -> node slots
  std::size_t metrics_synced_ = 0;

  std::vector<GpuState> gpus_;
  std::vector<NodeState> nodes_;
  std::map<std::string, int> groups_;  // matching key (model name) -> group
  std::vector<int> group_canary_;      // canary GPUs per group
  std::vector<int> group_baseline_;    // baseline GPUs per group
  std::vector<std::string> notes_;

  // Current tick's values (NaN: no data).
  std::vector<double> gv_, gi_, nv_, ni_;
  std::vector<bool> gpu_has_data_;
  std::vector<bool> node_has_data_;
  std::vector<std::uint64_t> group_majority_;         // baseline majority reasons per group
  std::vector<int> with_reasons_;                     // baseline GPUs with reasons per group
  std::vector<std::array<int, 64>> reasons_holding_;  // per group: GPUs holding each bit
  std::vector<Pool> base_pool_;                       // per group x GPU slot
};

}  // namespace gpucanary::analysis::judge_internal
