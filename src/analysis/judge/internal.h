#pragma once
// Internals of the judge engine shared by judge.cc (the incremental engine)
// and diagnose.cc (signatures, scope and sentences). Not a public API.

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
#include "analysis/rules/rules.h"
#include "analysis/stats/blocks.h"
#include "analysis/stats/confidence_sequence.h"
#include "analysis/stats/count_test.h"

namespace gpucanary::analysis::internal {

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
};

inline constexpr std::string_view kTokensMetric = "vllm:generation_tokens_total";
inline constexpr std::string_view kTpotFamily = "vllm:time_per_output_token_seconds";

// What a measure compares, per tick and unit.
enum class MeasureKind : std::uint8_t {
  kGpuGauge,   // a GPU field's value
  kGpuRate,    // a GPU counter's increase per second
  kGpuCount,   // a GPU counter of rare events: count test per GPU-second
  kNodeCount,  // a node (service) counter of events, e.g. errors: count test per token
  kNodeRate,   // a node counter's increase per second, per GPU of the node
  kNodeMean,   // a node histogram's mean: increase of _sum / increase of _count
  kNodeTail,   // a node histogram's 99th percentile per block (from its buckets)
  kDramEff,    // tokens (else tensor activity) per unit of DRAM activity
};

inline bool IsNodeLevel(MeasureKind k) {
  return k == MeasureKind::kNodeRate || k == MeasureKind::kNodeMean ||
         k == MeasureKind::kNodeTail || k == MeasureKind::kDramEff || k == MeasureKind::kNodeCount;
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
  MetricPolicy::Better better = MetricPolicy::Better::kHigher;
  double margin = 0;
  double alpha_whole = 0;  // error rate of the whole-canary comparison
  double alpha_unit = 0;   // error rate of each per-unit comparison (before the unit split)
  // Resolved from the catalog as names appear (-1: not seen yet).
  int gpu_slot = -1;       // kGpuGauge/kGpuRate/kGpuCount: slot index in GpuState values
  int node_slot = -1;      // kNodeRate: node slot; kNodeMean: the _sum slot
  int node_slot2 = -1;     // kNodeMean: the _count slot
  std::string family;      // kNodeTail: histogram family name
  int family_metric = -1;  // kNodeTail: catalog index of the family
};

// One CS comparison: a unit (the whole canary, a canary GPU or node) against
// the pooled matched baseline, block by block.
struct Comparison {
  stats::BlockAccumulator blocks;
  stats::ConfidenceSequence cs;
  double alpha = 0;
  double lo = -kInf;  // running intersection of the log-ratio CS
  double hi = kInf;
  stats::Decision decision = stats::Decision::kUndecided;
  std::optional<std::int64_t> decided_at;
  double canary_sum = 0;  // sums of block means, for point estimates
  double baseline_sum = 0;
  std::int64_t blocks_used = 0;
  // History (before the unit's release): mean log ratio of block means.
  stats::BlockAccumulator history;
  double history_sum = 0;
  std::int64_t history_blocks = 0;

  Comparison(std::int64_t block_s, double min_fraction, std::int64_t origin, double rho,
             double alpha_, std::int64_t history_origin)
      : blocks(block_s, min_fraction, origin),
        cs(rho, stats::CsScale::kStandardized),
        alpha(alpha_),
        history(block_s, min_fraction, history_origin) {}

  double change() const {  // point estimate, relative
    if (blocks_used == 0 || !(baseline_sum > 0)) return kNaN;
    return canary_sum / baseline_sum - 1.0;
  }
  double history_change() const {
    return history_blocks == 0 ? kNaN
                               : std::expm1(history_sum / static_cast<double>(history_blocks));
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

// A hard rule's hit on one GPU.
struct RuleHit {
  int gpu = 0;
  std::string kind;  // cause kind
  std::string rule;  // "throttle", "pcie_link", "xid", "ecc_dbe"
  std::int64_t onset = 0;
  std::int64_t fired = 0;
  bool critical = false;
  bool history = false;  // before the GPU's release: a node fault
  std::string detail;    // "reasons 0x88", "x8 Gen4 (max x16 Gen5)", "XID 79"
  std::uint64_t bits = 0;
};

}  // namespace gpucanary::analysis::internal

namespace gpucanary::analysis::internal {

// Something the judge found: a rule hit or a metric worse than its margin,
// with the mechanism it points to and its scope.
struct MetricFinding {
  std::string kind;
  std::string scope;       // "release" or "node"
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

}  // namespace gpucanary::analysis::internal
