#pragma once
// The physical model of one GPU, stepped in fixed increments of simulated time
// (docs/simulator.md, "The model"). Deterministic: the same profile, seed and
// inputs give the same readings, bit for bit.
//
// Per step: the work demanded (Workload) and the faults in force set the SM
// clock through the limiters that really set it (power brake, HW slowdown,
// thermal slowdown, power cap); power follows activity and clock; die
// temperature follows power with a thermal lag; noise is AR(1), as in real
// traces. Thread-compatible.

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>

#include "dcgm/readings.h"
#include "sim/gpu_profile.h"

namespace gpucanary::sim {

// What the running release asks of the GPU at this moment.
struct Workload {
  double load = 0;               // fraction of time kernels run, 0..1
  double dynamic_power_w = 500;  // extra power at full load and max clock (kernel switching)
  double sm_active = 0.85;       // SM activity at full load
  double tensor_active = 0.35;   // tensor pipe activity at full load
  double dram_active = 0.55;     // DRAM activity at full load
  double occupancy = 0.25;       // resident warps / max at full load
  double memory_bound = 0.6;     // share of the work limited by DRAM, not SM clock (0..1)
  double pcie_rx_bytes_s = 4e8;  // host-to-device traffic at full load
  double pcie_tx_bytes_s = 1e8;
  double fb_used_mib = 60000;  // weights + KV cache
};

// Hardware conditions in force (node faults, or what a release triggers).
struct Faults {
  bool power_brake = false;       // external brake asserted: 0x88, clock at the brake floor
  bool hw_slowdown = false;       // 0x8 alone: clock halved
  double cooling_factor = 1;      // thermal resistance multiplier (> 1: failing fan/inlet)
  double power_limit_w = 0;       // > 0: a lowered enforced limit (power cap fault)
  int pcie_width = 0;             // > 0: link trained at this width (x8 down-training)
  int pcie_gen = 0;               // > 0: link trained at this generation
  double pcie_replays_per_s = 0;  // replay counter growth (signal integrity)
  double dram_thrash = 1;         // > 1: more DRAM traffic per unit of work
  double occupancy_factor = 1;    // < 1: occupancy collapsed
  int xid = 0;                    // > 0: this XID recurs
  double xid_per_s = 0;
  double sbe_per_s = 0;  // correctable ECC errors
  double dbe_per_s = 0;  // uncorrectable ECC errors
};

class GpuModel {
 public:
  static constexpr double kStepSeconds = 0.1;

  GpuModel(const GpuProfile& profile, std::uint64_t seed);

  // Advances the state by one step of kStepSeconds.
  void Step(const Workload& work, const Faults& faults);

  // What dcgm-exporter would print now.
  dcgm::Readings Read() const;

  // Useful work per second relative to an unconstrained GPU at full speed
  // (1.0): follows the SM clock for the compute-bound share and DRAM
  // efficiency and the PCIe link for the rest.
  double throughput() const { return throughput_; }
  double sm_clock_mhz() const { return clock_mhz_; }
  double power_w() const { return power_w_; }
  double temp_c() const { return temp_c_; }
  std::uint64_t clock_event_reasons() const { return reasons_; }

 private:
  // AR(1) noise: x' = phi x + sqrt(1 - phi^2) sigma e, stationary sd sigma.
  struct Ar1 {
    double phi;
    double sigma;
    double x = 0;
    double Next(std::mt19937_64& rng);
  };

  double DynamicPowerAt(double clock_mhz, double activity, double dynamic_w) const;
  double ClockForPower(double budget_w, double activity, double dynamic_w) const;

  // The parts of Step, in the order Step runs them; each reads what the
  // ones before it set this step (the order, and the order of the draws
  // from rng_, are part of the model's output).
  // The SM clock and reasons of an idle GPU (board signals aside, the idle clock).
  void SetIdleClock(const Faults& faults);
  // The SM clock of a busy GPU at activity `a` through the limiters that set
  // it: power brake, HW slowdown, thermal slowdown, then the power cap.
  void SetBusyClock(double a, const Workload& work, const Faults& faults);
  // Power from activity and clock, its 1 s average and the energy counter.
  void StepPower(double a, const Workload& work);
  // Die temperature towards its steady state for this power (thermal lag).
  void StepTemperature(const Faults& faults);
  // PCIe link training, replay and ECC counters, recurring XIDs.
  void StepLinkAndErrors(const Faults& faults);
  // Useful work per second (throughput()).
  void StepThroughput(const Workload& work, const Faults& faults);

  const GpuProfile& profile_;
  std::mt19937_64 rng_;
  Ar1 load_noise_;
  Ar1 slow_load_noise_;
  Ar1 power_noise_;
  Ar1 capped_power_noise_;
  Ar1 dram_noise_;

  double clock_mhz_;
  double power_w_;
  double power_avg_w_;                     // 1 s average, what Hopper reports as POWER_USAGE
  std::array<double, 10> power_window_{};  // the last second of power, one slot per step
  double power_window_sum_ = 0;
  std::size_t power_window_pos_ = 0;
  double temp_c_;
  double energy_mj_ = 0;
  double replays_ = 0;
  double power_offset_w_ = 0;  // this board's static offset from the profile
  double temp_offset_c_ = 0;
  double sbe_ = 0;
  double dbe_ = 0;
  int last_xid_ = 0;
  double xid_credit_ = 0;
  std::uint64_t reasons_ = 1;
  bool idle_ = true;  // no kernels ran this step (the idle bit may be replaced by a board signal)
  double limit_w_;
  double activity_ = 0;
  double throughput_ = 0;
  int link_gen_;
  int link_width_;
  Workload last_work_;
  Faults last_faults_;
};

}  // namespace gpucanary::sim
