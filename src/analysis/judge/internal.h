#pragma once
// Internals of the judge engine shared by its rooms (docs/analysis-method.md,
// "Code layout"): the DCGM fields it always reads, what a measure compares,
// the timeline every room reads, and the record of a finding. Not a public
// API: the judge's own files and its benchmark include it.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "analysis/policy/policy.h"
#include "analysis/stats/confidence_sequence.h"
#include "vocab/service_measures.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis::judge_internal {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// DCGM fields the engine reads on every GPU, whatever the policy says: the
// rules' inputs and the signatures' evidence.
enum GpuSlot : int {
  kClock,
  kSmActive,
  kOccupancy,
  kTensor,
  kDram,
  kPower,
  kPowerLimit,
  kTemp,
  kReasons,
  kWidth,
  kMaxWidth,
  kGen,
  kMaxGen,
  kXid,
  kDbe,
  kSbe,
  kReplay,
  kPcieRx,
  kUtil,
  kFixedGpuSlots,
};
inline constexpr std::array<std::string_view, kFixedGpuSlots> kGpuSlotNames = {
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_PCIE_LINK_WIDTH",
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
    "DCGM_FI_DEV_PCIE_LINK_GEN",
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
    "DCGM_FI_DEV_GPU_UTIL",
};

// The service measures every judge reads, whatever the policy says: the
// generated tokens (node slot 0: the restart, tokens per DRAM activity,
// service events per token) and the per-token latency (a diagnostic).
inline constexpr std::string_view kTokensMeasure = "generated_tokens";
inline constexpr std::string_view kPerTokenMeasure = "per_token_latency";

// What a measure compares, per tick and unit.
enum class MeasureKind : std::uint8_t {
  kGpuGauge,   // a GPU field's value
  kGpuRate,    // a GPU counter's increase per second
  kGpuCount,   // a GPU counter of rare events: count test per GPU-second
  kNodeCount,  // a node (service) counter of events, e.g. errors: count test per token
  kNodeRate,   // a node counter's increase per second, per GPU of the node
  kNodeGauge,  // a node gauge's value (queue depth, KV-cache usage): the node's, not per GPU
  kNodeMean,   // a node histogram's mean: increase of _sum / increase of _count
  kNodeTail,   // a node histogram's 99th percentile per block (from its buckets)
  kDramEff,    // tokens (else tensor activity) per unit of DRAM activity
  kGpuWork,    // work per joule: tensor activity x SM clock / power, per GPU
};

inline bool IsNodeLevel(MeasureKind k) {
  return k == MeasureKind::kNodeRate || k == MeasureKind::kNodeGauge ||
         k == MeasureKind::kNodeMean || k == MeasureKind::kNodeTail || k == MeasureKind::kDramEff ||
         k == MeasureKind::kNodeCount;
}
inline bool IsCountKind(MeasureKind k) {
  return k == MeasureKind::kGpuCount || k == MeasureKind::kNodeCount;
}

struct Measure {
  std::string name;  // as reported
  MeasureKind kind = MeasureKind::kGpuGauge;
  int policy_index = -1;  // index into Policy::metrics; -1: a diagnostic or a rule
  bool decides = false;   // its decision counts (policy metrics, the DRAM efficiency rule)
  bool critical = false;  // must pass for the verdict to be pass
  // A `without_service` entry (or the metric one repeats): must pass instead
  // of the critical ones when no service metric was seen.
  bool without_service = false;
  // Only in `without_service`: decides only while no service metric was seen.
  bool only_without_service = false;
  // The policy entry's kind (metrics or without_service); unset for a rule
  // or a diagnostic (reported as a derived "ratio").
  std::optional<MetricPolicy::Kind> policy_kind;
  MetricPolicy::Better better = MetricPolicy::Better::kHigher;
  double margin = 0;
  double alpha_whole = 0;  // error rate of the whole-canary comparison
  double alpha_unit = 0;   // error rate of each per-unit comparison (before the unit split)
  // Resolved from the catalog as names appear (-1: not seen yet).
  int gpu_slot = -1;    // kGpuGauge/kGpuRate/kGpuCount: slot index in the fleet's GPU values
  int node_slot = -1;   // kNodeRate/kNodeGauge: node slot; kNodeMean: the _sum slot
  int node_slot2 = -1;  // kNodeMean: the _count slot
  // per_token_latency (kNodeMean), generated_tokens (kNodeRate) and
  // tokens_per_dram_active (kDramEff): the node slot of the running batch,
  // read to compare them at equal load (LoadFit); -1: compared as read.
  int load_slot = -1;
  // kNodeTail: the histogram families (one per server for a measure) and
  // the catalog indices of those seen so far.
  std::vector<std::string> families;
  std::vector<double> family_scales;  // per family: its bounds times this are seconds
  std::vector<int> family_metrics;
  std::vector<int> family_of_metric;  // per family_metrics entry: its index in families
};

// Whether `change` (relative, NaN: unknown) is worse than `margin` in the
// harmful direction.
inline bool Worse(MetricPolicy::Better better, double change, double margin) {
  if (std::isnan(change)) return false;
  return better == MetricPolicy::Better::kHigher ? change < -margin : change > margin;
}

// The decision an interval of the relative change supports.
inline stats::Decision Decide(MetricPolicy::Better better, stats::Bounds rel, double margin) {
  return better == MetricPolicy::Better::kHigher ? stats::DecideDrop(rel, margin)
                                                 : stats::DecideRise(rel, margin);
}

// The judge's clock, in the data's Unix seconds: where the release starts,
// the ticks seen so far, and where the judged blocks begin. Every room reads
// it; the facade advances it.
struct Timeline {
  std::optional<std::int64_t> release_start;  // JudgeOptions::release_start_s
  std::int64_t warmup_s = 0;                  // the policy's warm-up, whole seconds
  std::optional<std::int64_t> first_tick;
  std::optional<std::int64_t> last_tick;

  // Where the judged blocks are aligned: release start + warm-up, else the
  // first tick.
  std::int64_t BlockOrigin() const {
    return release_start ? *release_start + warmup_s : first_tick.value_or(0);
  }
  // A tick of the canary's own history (before --release-start).
  bool BeforeRelease(std::int64_t t) const { return release_start && t < *release_start; }
};

// Where a finding stands: a scope (vocab::Scope's release or node), or not
// yet known. The three states in between never leave the judge: a report
// shows them as node (ReportedScope), and the end of the data settles them.
enum class FindingScope : std::uint8_t {
  kRelease,
  kNode,
  kPending,     // a minority of the node's GPUs show it: its siblings decide
  kSwitching,   // the node's switch to the release is not known yet
  kFleet,       // seen on the baseline too: a fleet-wide event, not the release
  kFleetWatch,  // a throttle the rest of the baseline may follow (heat, facility cap)
};

// The scope a report gives a finding.
inline vocab::Scope ReportedScope(FindingScope scope) {
  if (scope == FindingScope::kFleet) return vocab::Scope::kFleet;
  return scope == FindingScope::kRelease ? vocab::Scope::kRelease : vocab::Scope::kNode;
}

// Something the judge found: a rule hit or a metric worse than its margin,
// with the mechanism it points to and its scope.
struct MetricFinding {
  vocab::CauseKind kind{};
  FindingScope scope = FindingScope::kNode;
  std::string origin;      // "rule:throttle", "metric:NAME", "count:NAME"
  std::vector<int> units;  // GPU indices (unit_is_gpu) or node indices
  bool unit_is_gpu = true;
  std::int64_t since = 0;
  std::int64_t decided_at = 0;
  bool critical = false;
  bool history = false;  // present before the release
  bool failing = false;  // set by the verdict
  std::string detail;
  std::uint64_t bits = 0;
  int measure = -1;      // the measure that failed (metric findings)
  int measure_unit = 0;  // its unit (0: whole canary)
};

}  // namespace gpucanary::analysis::judge_internal
