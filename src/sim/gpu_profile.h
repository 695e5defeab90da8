#pragma once
// Hardware profiles of the GPUs the simulator models: the constants of the
// physical model per SKU. Figures from shared/reference/dcgm-telemetry.md §5
// (nvidia-smi captures, DCGM diag SKU files, vendor specs) and the traces in
// shared/data/gpu-traces (see docs/simulator.md).

#include <span>
#include <string_view>

namespace gpucanary::sim {

struct GpuProfile {
  std::string_view key;               // scenario name: "h100-sxm", "h200", "a100-sxm", "h100-pcie"
  std::string_view model_name;        // NVML name dcgm-exporter prints as modelName
  double max_sm_clock_mhz;            // boost clock with no limiter active
  double idle_sm_clock_mhz;           // clock when nothing runs (GPU idle reason)
  double mem_clock_mhz;               // HBM clock: constant, does not drop at idle on these SKUs
  double brake_sm_clock_mhz;          // clock held while an external power brake is asserted
  double power_limit_w;               // default enforced power limit
  double idle_power_w;                // board power with nothing running (measured with no process)
  double static_power_w;              // power at load before the dynamic part (leakage, HBM, fans)
  double slowdown_temp_c;             // SW thermal slowdown threshold
  double hw_slowdown_temp_c;          // HW thermal slowdown (clock halved) threshold
  double thermal_resistance_c_per_w;  // steady-state die temperature rise per watt
  double thermal_time_constant_s;     // first-order lag of die temperature
  double ambient_c;                   // inlet temperature with healthy cooling
  int pcie_max_gen;
  int pcie_max_width;
  double fb_total_mib;
  double fb_reserved_mib;
};

// All profiles; Find returns nullptr for an unknown key.
std::span<const GpuProfile> AllGpuProfiles();
const GpuProfile* FindGpuProfile(std::string_view key);

}  // namespace gpucanary::sim
