#include "eval/field/field_physics.h"

#include <algorithm>
#include <cmath>

namespace gpucanary::eval::field {

// H100 SXM5 80GB: reference §5 (1980 MHz boost, 345 MHz idle, 2619 MHz HBM3,
// 700 W default limit, 200 W minimum, Gen5 x16, T.Limit ≈ 87 °C, slowdown
// T.Limit −2 °C ≈ 89 °C). Idle power with a model loaded: 110-120 W
// (gpu-traces b1, h100x8 sample 114 W). Voltage range: the H100 PCIe V/F table
// (675 mV at 345 MHz, 850 mV at its 1755 MHz top), extended to 1980 MHz
// (estimate). Dynamic and HBM power: set so that decode-heavy serving draws
// 400-600 W (reference §5: 400-700 W under sustained load) and training-like
// tensor work with random data (SM 0.88, tensor 0.58, switching ×1.4)
// reaches 700 W and is capped, as gpu-traces t3 is (690 W, SW power cap on
// every steady sample).
const Sku& H100Sxm() {
  static const Sku sku{.model_name = "NVIDIA H100 80GB HBM3",
                       .f_max_mhz = 1980,
                       .f_idle_mhz = 345,
                       .mem_clock_mhz = 2619,
                       .power_limit_w = 700,
                       .power_min_w = 200,
                       .idle_power_w = 112,
                       .v_min = 0.675,
                       .v_max = 0.89,
                       .dyn_power_w = 560,
                       .hbm_power_w = 80,
                       .sw_thermal_c = 87,
                       .hw_slowdown_c = 89,
                       .pcie_gen = 5,
                       .pcie_width = 16,
                       .fb_total_mib = 81559,
                       .fb_reserved_mib = 328,
                       .sms = 132};
  return sku;
}

// H200 SXM 141GB: reference §5 (same clocks and limits as H100 SXM, HBM3e at
// 3201 MHz, 143771 MiB, 700 MiB reserved, idle ≈ 75 W without a model).
const Sku& H200Sxm() {
  static const Sku sku{.model_name = "NVIDIA H200",
                       .f_max_mhz = 1980,
                       .f_idle_mhz = 345,
                       .mem_clock_mhz = 3201,
                       .power_limit_w = 700,
                       .power_min_w = 200,
                       .idle_power_w = 120,
                       .v_min = 0.675,
                       .v_max = 0.89,
                       .dyn_power_w = 550,
                       .hbm_power_w = 105,
                       .sw_thermal_c = 87,
                       .hw_slowdown_c = 89,
                       .pcie_gen = 5,
                       .pcie_width = 16,
                       .fb_total_mib = 143771,
                       .fb_reserved_mib = 700,
                       .sms = 132};
  return sku;
}

// H100 PCIe 80GB: reference §5 (1755 MHz, HBM2e 1593 MHz, 350 W) and the
// yqg9651 traces (1755 MHz top of the V/F table at 850 mV; FP8 GEMMs pinned
// at the 350 W limit at 1300 and 1020 MHz). Thresholds as the A100 PCIe
// capture of reference §5 (max operating 85 °C, slowdown 89 °C).
const Sku& H100Pcie() {
  static const Sku sku{.model_name = "NVIDIA H100 PCIe",
                       .f_max_mhz = 1755,
                       .f_idle_mhz = 345,
                       .mem_clock_mhz = 1593,
                       .power_limit_w = 350,
                       .power_min_w = 200,
                       .idle_power_w = 62,
                       .v_min = 0.675,
                       .v_max = 0.85,
                       .dyn_power_w = 270,
                       .hbm_power_w = 40,
                       .sw_thermal_c = 85,
                       .hw_slowdown_c = 89,
                       .pcie_gen = 5,
                       .pcie_width = 16,
                       .fb_total_mib = 81559,
                       .fb_reserved_mib = 328,
                       .sms = 114};
  return sku;
}

namespace {

double Voltage(const Sku& sku, double f_mhz) {
  const double x =
      std::clamp((f_mhz - sku.f_idle_mhz) / (sku.f_max_mhz - sku.f_idle_mhz), 0.0, 1.0);
  return sku.v_min + (sku.v_max - sku.v_min) * x;
}

double Limit(const Sku& sku, const Environment& env) {
  return env.enforced_limit_w > 0 ? env.enforced_limit_w : sku.power_limit_w;
}

}  // namespace

// CMOS power: P_dyn ∝ C·a·f·V², P_static ∝ leakage, which grows with die
// temperature (a few tenths of a percent per °C); HBM power follows DRAM
// activity and not the SM clock (the HBM clock is constant, reference §2.2).
double BoardPower(const Sku& sku, const Board& board, const Activity& activity, double f_mhz,
                  double temp_c) {
  const double v = Voltage(sku, f_mhz) / sku.v_max;
  const double a = 0.45 * activity.sm + 0.75 * activity.tensor * activity.toggle;
  const double dynamic = sku.dyn_power_w * board.dyn_scale * a * (f_mhz / sku.f_max_mhz) * v * v;
  const double leak = sku.idle_power_w * board.leak_scale * (1.0 + 0.006 * (temp_c - 35.0));
  return leak + sku.hbm_power_w * activity.dram + dynamic;
}

void ChooseClock(const Sku& sku, const Board& board, const Activity& activity,
                 const Environment& env, double dither, GpuState& state) {
  const double limit = Limit(sku, env);
  const double step = sku.f_step_mhz;
  std::uint32_t reasons = 0;
  double f = sku.f_idle_mhz;
  if (activity.duty < 0.02) {
    reasons = kReasonIdle;
  } else {
    // The power controller: the highest clock whose power stays under the
    // enforced limit, with a little headroom (it regulates the average).
    double f_power = sku.f_max_mhz;
    while (f_power > sku.f_idle_mhz &&
           board.sensor_gain * BoardPower(sku, board, activity, f_power, state.temp_c) >
               0.985 * limit) {
      f_power -= step;
    }
    const double f_thermal = state.thermal_cap_mhz > 0 ? state.thermal_cap_mhz : sku.f_max_mhz;
    f = std::min({sku.f_max_mhz, f_power, f_thermal});
    if (f_power < sku.f_max_mhz && f_power <= f_thermal) {
      reasons |= kReasonSwPowerCap;
      // It hunts between neighbouring table entries around the limit.
      f = std::clamp(f + step * std::round(dither), sku.f_idle_mhz, sku.f_max_mhz);
    }
    if (f_thermal < sku.f_max_mhz && f_thermal <= f_power) reasons |= kReasonSwThermal;
    if (env.hw_factor < 1.0) {
      f = std::max(sku.f_idle_mhz / 4, std::floor(f * env.hw_factor / step) * step);
      reasons |= env.hw_bits;
    }
    if (state.temp_c >=
        sku.hw_slowdown_c + env.sw_thermal_offset) {  // HW thermal slowdown: clock halved
      f = std::floor(f * 0.5 / step) * step;
      reasons |= kReasonHwSlowdown | kReasonHwThermal;
    }
  }
  state.clock_mhz = f;
  state.power_w = BoardPower(sku, board, activity, f, state.temp_c);
  state.reasons = reasons;
}

void AdvanceThermal(const Sku& sku, const Board& board, const Activity& activity,
                    const Environment& env, GpuState& state) {
  const double r_th = board.r_th * env.r_th_scale;
  const double target = env.inlet_c + r_th * state.power_w;
  state.temp_c += (1.0 - std::exp(-1.0 / board.tau_s)) * (target - state.temp_c);
  // SW thermal slowdown: above the max operating temperature the driver
  // lowers the clock ceiling toward the clock whose steady temperature sits
  // just under it, a few steps a second down and one step a second up; it
  // lets go once the GPU is cool with the ceiling at f_max.
  const double limit = sku.sw_thermal_c + env.sw_thermal_offset;
  const bool engaged = state.thermal_cap_mhz > 0;
  if (!engaged && state.temp_c <= limit) return;
  double f_eq = sku.f_max_mhz;
  while (f_eq > sku.f_idle_mhz &&
         env.inlet_c + r_th * BoardPower(sku, board, activity, f_eq, limit) > limit - 0.3) {
    f_eq -= sku.f_step_mhz;
  }
  const double cap = engaged ? state.thermal_cap_mhz : std::max(state.clock_mhz, sku.f_idle_mhz);
  double next = cap;
  if (state.temp_c > limit) {
    next = std::max(f_eq, cap - 4 * sku.f_step_mhz);
    if (next >= cap) next = cap - sku.f_step_mhz;  // above the limit: never up
  } else if (f_eq > cap) {
    next = std::min(f_eq, cap + sku.f_step_mhz);
  }
  next = std::max(next, sku.f_idle_mhz);
  state.thermal_cap_mhz = next >= sku.f_max_mhz && state.temp_c < limit - 1 ? 0 : next;
}

}  // namespace gpucanary::eval::field
