#pragma once
// The judge's hard rules (docs/analysis-method.md, "Hard rules (from the
// field, configurable)" and "Release or node (scope)"): each GPU's rule
// machines (throttle, PCIe link, XID, ECC DBE) fed every tick, their hits
// turned into findings with a scope (the release, a node, or not yet known:
// pending while a minority of a node's GPUs show it, switching while the
// node's switch to the release is not known), and each GPU's evidence window
// (its fields and the pooled baseline's while a rule streak runs and after a
// hit).
//
// Cost: O(GPUs) per tick; scoping a hit is O(hits + GPUs), and hits are rare.
//
// Thread-compatible. Internal to the judge.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/judge/fleet.h"
#include "analysis/judge/internal.h"
#include "analysis/policy/policy.h"
#include "analysis/rules/rules.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::judge_internal {

// A hard rule's hit on one GPU.
struct RuleHit {
  int gpu = 0;
  vocab::CauseKind kind{};
  std::string rule;  // "throttle", "pcie_link", "xid", "ecc_dbe"
  std::int64_t onset = 0;
  std::int64_t fired = 0;
  bool critical = false;
  bool history = false;  // before the GPU's release: a node fault
  std::string detail;    // "reasons 0x88", "x8 Gen4 (max x16 Gen5)", "XID 79"
  std::uint64_t bits = 0;
};

// A GPU's evidence window: sums of its fixed slots and of the pooled
// baseline's at the same ticks, from the start of a rule streak (reset when
// the streak ends before firing) to the end of the data once a rule fired.
struct EvidenceWindow {
  bool open = false;
  std::array<double, kFixedGpuSlots> canary{};
  std::array<double, kFixedGpuSlots> baseline{};
  std::array<double, kFixedGpuSlots> n{};
  std::int64_t start = 0;
  std::int64_t last = 0;
  std::uint64_t bits = 0;       // the GPU's reasons, ORed
  std::uint64_t base_bits = 0;  // the baseline majority's reasons, ORed
};

class HardRules {
 public:
  // `policy`, `fleet` and `findings` must outlive the rules; the rules add
  // their findings to `findings` and set the scope of those still open.
  HardRules(const Policy& policy, Fleet& fleet, std::vector<MetricFinding>& findings);

  // Rule machines for the GPUs the fleet has come to know (indices below
  // `gpus`).
  void Track(std::size_t gpus);
  // One tick: every GPU's rules, then this tick's hits scoped together, then
  // the pending ones again. REQUIRES: Fleet::PoolBaseline for this tick.
  void Run(std::int64_t t);
  void UpdateWindows(std::int64_t t);
  // The node's switch is known (Fleet::UpdateSwitch): its findings while it
  // switched become history or the release's.
  void ResolveSwitching(int node, std::int64_t t);
  // Pending findings become the release's or the node's; `at_end`: the data
  // ended, so every one still open is the node's.
  void ResolvePending(std::int64_t t, bool at_end);

  const EvidenceWindow& window(int gpu) const {
    return gpus_[static_cast<std::size_t>(gpu)].window;
  }
  // The SW power cap (0x4) held on a canary GPU's window and not on its
  // baseline's.
  bool CanaryPowerCapped() const;
  // The SW power cap (reported, or inferred without reasons) held within the
  // last minute on at least two baseline nodes of a model group and on a
  // quarter of them: a facility power cap, as of the last tick run.
  bool FleetPowerCapped() const;
  // Where no limit, model or reasons say it: at least half of the busy
  // canary GPUs draw as much power as the busy baseline's (within
  // kSamePower) with their clock held below the group's top, steadily
  // (within kSteadyPower over their last 10-30 busy seconds) and below
  // the thermal slowdown range. A lower clock at no less power means more
  // power per cycle, held at a ceiling: the power controller's cap. As of
  // the last tick any canary GPU was busy (a canary that finished its work
  // keeps what was seen while it ran).
  bool CanaryPowerPinned() const { return canary_pinned_; }

 private:
  struct GpuRules {
    std::optional<ThrottleRule> throttle;
    std::optional<PcieLinkRule> pcie;
    EccDbeRule dbe;
    int last_xid = -1;  // -1: no XID sample yet
    std::set<vocab::CauseKind> history_kinds;
    bool hit = false;  // a rule fired on it
    EvidenceWindow window;
  };

  void FeedRules(GpuRules& r, int gpu, std::int64_t t);
  // A rule fired on `gpu` (whose machines `r` are): its hit, to pending_hits_.
  void AddThrottleHit(const GpuRules& r, int gpu, std::int64_t t);
  void AddPcieHit(const GpuRules& r, int gpu, std::int64_t t);
  void AddXidHit(int gpu, int code, std::int64_t t);
  void AddEccHit(const GpuRules& r, int gpu, std::int64_t t);
  void OnHit(RuleHit hit, std::int64_t t);
  FindingScope ScopeOfNewHit(RuleHit& hit, std::int64_t t);
  // Records which clock-event reasons each baseline node's GPUs hold (the
  // SW power cap inferred where no reasons are exported).
  void TrackFleetReasons(std::int64_t t);
  // A GPU that exports no reasons, at its power limit (the enforced one,
  // else its model's default) with its clock held below its group's top:
  // the SW power cap, inferred (docs/analysis-method.md).
  bool InferredPowerCap(int gpu) const;
  // The widest link and, on busy GPUs, the highest generation seen per model
  // group: what a link should be where no max-link field is exported.
  void TrackLinks();
  // Whether a hit of `rule` ("throttle", "pcie_link") on a canary GPU after
  // its release halts the canary whatever its siblings and witnesses show
  // (the policy's halt_on_canary).
  bool HaltsOnCanary(std::string_view rule) const;
  // Every harmful reason of a throttle hit held within the last
  // kFleetWindowSeconds on at least two baseline nodes other than the hit's,
  // and on a quarter of the group's baseline nodes: a heat or facility power
  // event, not the release (one bad baseline node is that node's fault).
  bool SeenFleetWide(const RuleHit& hit, std::int64_t t) const;
  FindingScope ScopeForRuleKind(vocab::CauseKind kind, const RuleHit& hit, std::int64_t t) const;
  void AffectedBy(vocab::CauseKind kind, std::int64_t t, std::set<int>* gpus,
                  std::set<int>* nodes) const;
  bool CleanWitnessElsewhere(const RuleHit& hit, const std::set<int>& affected_gpus,
                             std::int64_t t) const;
  RuleHit* HitOf(const MetricFinding& f);
  // Each tick: whether the canary is held at a power ceiling
  // (CanaryPowerPinned), kept from the last tick a canary GPU was busy.
  void TrackCanaryPinned();
  // Thermal reasons on this GPU cannot be a room's heat: its temperature is
  // known and below kRoomHeatMinC.
  bool TooCoolForRoomHeat(int gpu) const;
  // The hit a finding came from (its rule hit where known) with the
  // finding's GPU, kind and bits: what the scoping tests read.
  static RuleHit ProbeOf(const MetricFinding& f, const RuleHit* hit);
  // A canary finding nothing explains: the release's where its rule halts
  // the canary, else as the spread, witness and sibling tests say.
  void ScopeOnTheCanary(MetricFinding& f, const RuleHit& probe, std::int64_t t);
  // Baseline nodes (not `except_node`) of a group's `seen` map that held
  // reason `bit` within its window (five minutes for heat, else one).
  static int NodesHolding(const std::map<std::pair<int, int>, std::int64_t>& seen, int bit,
                          std::int64_t t, int except_node);

  const Policy& policy_;
  Fleet& fleet_;
  std::vector<MetricFinding>& findings_;
  std::vector<GpuRules> gpus_;
  std::vector<RuleHit> hits_;
  std::vector<RuleHit> pending_hits_;         // this tick's, before scoping
  std::vector<RuleHit> tick_hits_;            // this tick's, while scoping
  std::set<vocab::CauseKind> release_kinds_;  // rule kinds proven the release's
  // Per group: (reason bit, baseline node) -> the last tick a GPU of that
  // node held it (TrackFleetReasons); and the group's baseline nodes.
  std::map<int, std::map<std::pair<int, int>, std::int64_t>> baseline_reason_tick_;
  std::map<int, std::set<int>> baseline_nodes_;
  std::map<int, double> group_best_width_, group_best_gen_;
  std::map<int, double> group_top_clock_;  // the highest SM clock seen per group
  // Power over a GPU's last 30 busy seconds (a ring), and the baseline's
  // busy power per group, exponentially weighted over half a minute.
  struct PowerWindow {
    std::array<double, 30> watts{};
    std::int64_t n = 0;  // busy seconds added
    void Add(double w) { watts[static_cast<std::size_t>(n++) % watts.size()] = w; }
    // Mean and standard deviation of the seconds held; n == 0: {0, 0}.
    std::pair<double, double> MeanSd() const;
  };
  struct PowerTrack {
    double mean = 0;
    std::int64_t n = 0;
    void Add(double watts);
  };
  std::vector<PowerWindow> gpu_power_;
  bool canary_pinned_ = false;  // CanaryPowerPinned, set by TrackCanaryPinned
  // Per GPU: its last enforced limit, and the last tick it fell.
  std::vector<std::optional<double>> last_limit_;
  std::vector<std::optional<std::int64_t>> limit_fell_;
  std::map<int, PowerTrack> group_base_power_;
  std::int64_t last_t_ = 0;
  // Per baseline node: its hottest GPU's temperature at each of the last
  // kTempRing ticks (tick, degrees), for heat events seen before the
  // baseline throttles.
  static constexpr std::size_t kTempRing = 64;
  std::map<int, std::array<std::pair<std::int64_t, double>, kTempRing>> baseline_temp_;
  // Baseline nodes of `group` (not `node`) whose GPUs were within
  // kFleetHeatDegrees of `temp` in the last minute.
  int BaselineNodesAsHot(int group, int node, double temp, std::int64_t t) const;
  // Whether the baseline of `group` (not `node`) is warming as a room does:
  // on two nodes and a quarter of them, the hottest GPU kWarmingDegrees
  // warmer now than 15 to 60 s ago.
  bool BaselineWarming(int group, int node, std::int64_t t) const;
  // Whether the rest of the baseline may follow a throttle hit: thermal
  // while the baseline warms, or on a baseline GPU the SW power cap under a
  // limit lowered within the minute.
  bool BaselineMayFollow(const RuleHit& hit, std::int64_t t) const;
  // A throttle hit the rest of the baseline may follow: the room's if the
  // baseline follows within kFleetWatchSeconds, else scoped as any other
  // (the node's on a baseline GPU, the release's on a canary's).
  void ResolveFleetWatch(MetricFinding& f, std::int64_t t, bool at_end);
  // One pass of ResolveSwitching: the node's findings from before its
  // switch (`before_only`), or the others.
  void ResolveSwitchingPass(int node, std::int64_t since, std::int64_t t, bool before_only);
};

}  // namespace gpucanary::analysis::judge_internal
