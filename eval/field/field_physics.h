#pragma once
// The field suite's GPU model (eval/field/README.md): one board, one second at
// a time — clock chosen under the power limit, the SW thermal controller and
// HW slowdowns; board power from dynamic (f·V(f)²) and static (leakage grows
// with temperature) parts; die temperature as a first-order lag toward
// inlet + R_th·P. Written from shared/reference/dcgm-telemetry.md (§2.3 the
// clock-event bits, §5 typical H100/H200 values and thresholds) and the real
// traces in shared/data/gpu-traces (the H100 PCIe V/F table, power-capped
// GEMMs, 8×H100 DCGM traces), independently of the project's simulator.
//
// Pure functions and plain structs; no I/O. Thread-compatible.

#include <cstdint>
#include <string_view>

namespace gpucanary::eval::field {

// NVML clock-event reason bits (DCGM field 112), reference §2.3.
inline constexpr std::uint32_t kReasonIdle = 0x1;
inline constexpr std::uint32_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint32_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint32_t kReasonSwThermal = 0x20;
inline constexpr std::uint32_t kReasonHwThermal = 0x40;
inline constexpr std::uint32_t kReasonHwPowerBrake = 0x80;

// One GPU product. Values from reference §5 (and the V/F table of
// gpu-traces/yqg9651-cuda_test for the voltage range).
struct Sku {
  std::string_view model_name;  // the NVML name dcgm-exporter prints as modelName
  double f_max_mhz = 0;         // boost clock, held when nothing limits it
  double f_idle_mhz = 0;
  double f_step_mhz = 15;       // clock table granularity (V/F table: 15 MHz)
  double mem_clock_mhz = 0;     // HBM clock: constant, busy or idle
  double power_limit_w = 0;     // default (= max) power limit
  double power_min_w = 0;       // lowest settable limit
  double idle_power_w = 0;      // model loaded, nothing running
  double v_min = 0, v_max = 0;  // volts at f_idle and f_max
  double dyn_power_w = 0;       // SM dynamic power at f_max, activity 1
  double hbm_power_w = 0;       // memory power at DRAM activity 1
  double sw_thermal_c = 0;      // max operating temperature: SW slowdown above
  double hw_slowdown_c = 0;     // HW thermal slowdown
  int pcie_gen = 5, pcie_width = 16;
  double fb_total_mib = 0, fb_reserved_mib = 0;
  int sms = 0;
};

const Sku& H100Sxm();
const Sku& H200Sxm();
const Sku& H100Pcie();

// Board-to-board variation, drawn once per GPU.
struct Board {
  double dyn_scale = 1;   // silicon: dynamic power per activity (±3-4 %)
  double leak_scale = 1;  // static power (±10 %)
  double r_th = 0.06;     // °C per W, die to inlet
  double tau_s = 40;      // thermal time constant
  double sensor_gain =
      1;  // power sensor calibration (±1 %); the controller regulates what it reads
  double mem_temp_offset = 6;
};

// What the work on the GPU does this second (from the service model).
struct Activity {
  double duty = 0;    // share of the second with a kernel running (0..1)
  double sm = 0;      // DCGM_FI_PROF_SM_ACTIVE
  double tensor = 0;  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  double dram = 0;    // DCGM_FI_PROF_DRAM_ACTIVE
  double toggle = 1;  // switching energy per tensor cycle (data pattern, kernels)
};

// The environment and forced faults this second.
struct Environment {
  double inlet_c = 25;
  double r_th_scale = 1;         // airflow loss (fan failure, blocked inlet)
  double sw_thermal_offset = 0;  // this board's threshold against the SKU's
  double enforced_limit_w = 0;   // DCGM_FI_DEV_ENFORCED_POWER_LIMIT
  // A forced HW slowdown (power brake, fast power trigger): clock factor and
  // its reason bits (0 when none).
  double hw_factor = 1;
  std::uint32_t hw_bits = 0;
};

struct GpuState {
  double temp_c = 30;
  double thermal_cap_mhz = 0;  // SW thermal controller's clock ceiling (0: f_max)
  double clock_mhz = 0;
  double power_w = 0;
  std::uint32_t reasons = 0;
};

// Board power at clock `f` for `activity` and die temperature `temp_c`.
double BoardPower(const Sku& sku, const Board& board, const Activity& activity, double f_mhz,
                  double temp_c);

// The clock the GPU runs at this second and the resulting power and reasons
// (state.clock_mhz, power_w, reasons), without advancing temperature.
// `dither` in [-1, 1] picks a neighbouring clock step while power capped
// (the controller oscillates between table entries).
void ChooseClock(const Sku& sku, const Board& board, const Activity& activity,
                 const Environment& env, double dither, GpuState& state);

// Advances die temperature by one second toward inlet + R_th·P and runs the
// SW thermal controller for the next second (`activity`: this second's work,
// to find the clock whose steady temperature is under the threshold).
void AdvanceThermal(const Sku& sku, const Board& board, const Activity& activity,
                    const Environment& env, GpuState& state);

}  // namespace gpucanary::eval::field
