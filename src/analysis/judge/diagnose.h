#pragma once
// Diagnosis (docs/analysis-method.md, "Diagnosis"): which mechanism a
// failing metric points to, from the signature of the other metrics, and the
// sentence an SRE reads for each cause.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/judge/judge.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis {

// Above this a GPU is near its slowdown temperature (H100: 87-90 C on the
// die; DCGM_FI_DEV_SLOWDOWN_TEMP where exported): a clock held down there
// without reasons may be thermal.
inline constexpr double kSlowdownTempC = 85;

// Relative changes (canary vs baseline, NaN: unknown) of the signature
// metrics over the judged blocks of the whole canary.
struct Signature {
  double sm_clock = 0;
  double sm_active = 0;
  double occupancy = 0;
  double tensor = 0;
  double dram = 0;
  double power = 0;
  double tokens_per_dram = 0;
  // SW power cap (0x4) seen on the canary and not the baseline; without
  // reasons, the canary's clock held down at no less power than the
  // baseline's, steadily (HardRules::CanaryPowerPinned).
  bool power_capped = false;
  // Absolute values of the canary (busy seconds), for causes whose telemetry
  // reports no throttle reason (nvidia-smi logs, exporters without field 112).
  double power_w = 0;             // mean board power; NaN: unknown
  double power_limit_w = 0;       // the enforced limit, else the model's board limit; NaN: unknown
  bool limit_from_model = false;  // power_limit_w is the model's default, not a reading
  double temp_c = 0;              // mean GPU temperature; NaN: unknown
  double temp_baseline_c = 0;     // the baseline's; NaN: unknown
  bool reasons_reported = false;  // the canary GPUs export the throttle reasons field
  // The power sits at the limit: the power cap is what holds the clock.
  bool PowerAtLimit() const { return power_w >= 0.95 * power_limit_w; }
};

// The default board power limit of a GPU model from its NVML name ("NVIDIA
// H100 PCIe" -> 350 W), for telemetry without the enforced limit; nullopt
// for a model not in the table.
std::optional<double> DefaultPowerLimitW(std::string_view model_name);

// The cause a failing metric points to. `metric` is its name; `gpu_metric`
// whether it is a DCGM field (else a service metric).
vocab::CauseKind ClassifyMetricFailure(std::string_view metric, bool gpu_metric,
                                       const Signature& signature);

// The cause a DRAM-efficiency failure (useful work per unit of DRAM
// activity down) points to: memory thrash only when DRAM activity rose
// faster than the work it feeds; less work on unchanged or lower DRAM
// activity is named from the rest of the signature (a clock cause, low
// occupancy, else software).
vocab::CauseKind ClassifyDramEfficiencyFailure(const Signature& signature);

// "node-4/0-7", "node-2/0-3, node-5/0-3", "3 GPUs on node-6" ...: a short
// description of a set of GPU keys ("host/index"), sorted.
std::string DescribeGpus(const std::vector<std::string>& gpus);

// The cause's one-sentence summary from its kind, scope, GPUs, evidence and
// detail (reason bits, link, XID code), and how long it held.
std::string SummarizeCause(const Cause& cause, std::string_view detail, double seconds);

}  // namespace gpucanary::analysis
