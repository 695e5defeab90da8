#include "sim/gpu_model.h"

#include <algorithm>
#include <cmath>

namespace gpucanary::sim {
namespace {

// Dynamic power scales as f * V^2 and, in the DVFS range, V rises with f:
// P_dyn ~ f^kAlpha. With 2.5 the H100 PCIe power-cap points of docs/
// simulator.md (same GEMM, 1620 / 1305 / 1020 MHz at ~350 W) need dynamic
// powers of 340 / 600 / 1120 W at the 1755 MHz boost clock, the spread of
// switching activity between all-zero, random and worst-case inputs.
constexpr double kAlpha = 2.5;
constexpr double kClockStepMhz = 15;       // NVIDIA clocks move in 15 MHz steps
constexpr double kIdleLoad = 0.02;         // below this, the GPU is idle (reason 0x1)
constexpr double kPcieShare = 0.05;        // share of work limited by the host link
constexpr double kBrakeIdleClockMhz = 86;  // brake asserted on an idle GPU (docs/simulator.md)

// Reason bits (NVML clock-event reasons; src/dcgm/throttle.h names them).
constexpr std::uint64_t kIdle = 0x1;
constexpr std::uint64_t kSwPowerCap = 0x4;
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermal = 0x20;
constexpr std::uint64_t kHwThermal = 0x40;
constexpr std::uint64_t kHwPowerBrake = 0x80;

// PCIe payload bandwidth per lane, bytes/s, by generation (1-based).
double LaneBytesPerSecond(int gen) {
  static constexpr double kByGen[] = {0.25e9, 0.5e9, 0.985e9, 1.969e9, 3.938e9, 7.877e9};
  return kByGen[std::clamp(gen, 1, 6) - 1];
}

}  // namespace

double GpuModel::Ar1::Next(std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  x = phi * x + std::sqrt(1 - phi * phi) * sigma * normal(rng);
  return x;
}

GpuModel::GpuModel(const GpuProfile& profile, std::uint64_t seed)
    : profile_(profile),
      rng_(seed),
      // Noise levels from the 10 Hz traces (docs/simulator.md). Activity has a
      // fast part and a slow, wandering part: one AR(1) cannot give both the
      // measured lag-1 autocorrelation at 100 ms (0.6-0.75) and at 1 s
      // (0.3-0.4). Power pinned at the cap varies by ~3 W with little memory.
      load_noise_{0.5, 0.04},
      slow_load_noise_{0.99, 0.04},
      power_noise_{0.6, 0.04},
      capped_power_noise_{0.5, 3.0},
      dram_noise_{0.5, 0.08},
      clock_mhz_(profile.idle_sm_clock_mhz),
      power_w_(profile.idle_power_w),
      power_avg_w_(profile.idle_power_w),
      temp_c_(profile.ambient_c + profile.thermal_resistance_c_per_w * profile.idle_power_w),
      limit_w_(profile.power_limit_w),
      link_gen_(profile.pcie_max_gen),
      link_width_(profile.pcie_max_width) {
  // Board-to-board spread and history, as in real nodes (leptonai-gpud
  // dumps: idle H100s of one node within about +-3 W and +-2 C of each
  // other, 43-120 PCIe replays since the last reset on healthy links).
  std::uniform_real_distribution<double> spread(-1.0, 1.0);
  power_offset_w_ = 3.0 * spread(rng_);
  temp_offset_c_ = 2.0 * spread(rng_);
  replays_ = std::floor(75.0 + 75.0 * spread(rng_));
  temp_c_ += temp_offset_c_;
  power_window_.fill(profile.idle_power_w);
  power_window_sum_ = profile.idle_power_w * static_cast<double>(power_window_.size());
}

double GpuModel::DynamicPowerAt(double clock_mhz, double activity, double dynamic_w) const {
  return activity * dynamic_w * std::pow(clock_mhz / profile_.max_sm_clock_mhz, kAlpha);
}

double GpuModel::ClockForPower(double budget_w, double activity, double dynamic_w) const {
  const double demand = activity * dynamic_w;
  if (demand <= 0) return profile_.max_sm_clock_mhz;
  const double ratio = std::max(budget_w, 0.0) / demand;
  return profile_.max_sm_clock_mhz * std::pow(ratio, 1.0 / kAlpha);
}

void GpuModel::Step(const Workload& work, const Faults& faults) {
  last_work_ = work;
  last_faults_ = faults;
  const double wander = load_noise_.Next(rng_) + slow_load_noise_.Next(rng_);
  const double a = std::clamp(work.load * (1 + wander), 0.0, 1.0);
  activity_ = a;
  dram_noise_.Next(rng_);
  limit_w_ = faults.power_limit_w > 0 ? std::min(faults.power_limit_w, profile_.power_limit_w)
                                      : profile_.power_limit_w;
  idle_ = a < kIdleLoad;
  if (idle_) {
    SetIdleClock(faults);
  } else {
    SetBusyClock(a, work, faults);
  }
  StepPower(a, work);
  StepTemperature(faults);
  StepLinkAndErrors(faults);
  StepThroughput(work, faults);
}

void GpuModel::SetIdleClock(const Faults& faults) {
  double target = profile_.idle_sm_clock_mhz;
  std::uint64_t reasons = kIdle;
  // A board signal holds whatever the load. nvidia-smi dumps of 8 idle
  // H100s under an asserted brake (leptonai-gpud, driver 535.161.08) show
  // 0x88 without the idle bit and the SM clock at 86 MHz, below the idle
  // clock; HW slowdown alone is taken to replace the idle bit the same way.
  if (faults.power_brake) {
    target = kBrakeIdleClockMhz;
    reasons = kHwPowerBrake | kHwSlowdown;
  } else if (faults.hw_slowdown) {
    reasons = kHwSlowdown;
  }
  clock_mhz_ = target;
  reasons_ = reasons;
}

void GpuModel::SetBusyClock(double a, const Workload& work, const Faults& faults) {
  const double fmax = profile_.max_sm_clock_mhz;
  std::uint64_t reasons = 0;
  double target = fmax;
  if (faults.power_brake) {
    target = std::min(target, profile_.brake_sm_clock_mhz);
    reasons |= kHwPowerBrake | kHwSlowdown;
  }
  if (faults.hw_slowdown) {
    target = std::min(target, fmax / 2);
    reasons |= kHwSlowdown;
  }
  if (temp_c_ >= profile_.hw_slowdown_temp_c) {
    target = std::min(target, fmax / 2);
    reasons |= kHwThermal | kHwSlowdown;
  } else if (temp_c_ >= profile_.slowdown_temp_c) {
    // SW thermal slowdown trims the clock harder the further past the threshold.
    const double over = temp_c_ - profile_.slowdown_temp_c + 1;
    target = std::min(target, fmax * std::max(0.6, 1 - 0.05 * over));
    reasons |= kSwThermal;
  }
  const double budget = limit_w_ - profile_.static_power_w;
  if (profile_.static_power_w + DynamicPowerAt(target, a, work.dynamic_power_w) > limit_w_) {
    const double capped = ClockForPower(budget, a, work.dynamic_power_w);
    if (capped < target) {
      target = capped;
      reasons |= kSwPowerCap;
    }
  }
  clock_mhz_ =
      std::max(profile_.idle_sm_clock_mhz, std::floor(target / kClockStepMhz) * kClockStepMhz);
  reasons_ = reasons;
}

void GpuModel::StepPower(double a, const Workload& work) {
  double p;
  if (idle_) {
    p = profile_.idle_power_w * (1 + 0.3 * power_noise_.Next(rng_));
  } else if (reasons_ & kSwPowerCap) {
    // The power controller holds the board just under the limit.
    p = limit_w_ * 0.99 + capped_power_noise_.Next(rng_);
  } else {
    p = (profile_.static_power_w + DynamicPowerAt(clock_mhz_, a, work.dynamic_power_w)) *
        (1 + power_noise_.Next(rng_));
  }
  if ((reasons_ & kSwPowerCap) == 0) p += power_offset_w_;  // the cap regulator hides it
  power_w_ = std::max(p, profile_.idle_power_w * 0.8);
  // Hopper's POWER_USAGE is the average over the last second: a box window,
  // so consecutive 1 s scrapes share no samples.
  power_window_sum_ += power_w_ - power_window_[power_window_pos_];
  power_window_[power_window_pos_] = power_w_;
  power_window_pos_ = (power_window_pos_ + 1) % power_window_.size();
  power_avg_w_ = power_window_sum_ / static_cast<double>(power_window_.size());
  energy_mj_ += power_w_ * kStepSeconds * 1000.0;
}

void GpuModel::StepTemperature(const Faults& faults) {
  const double r = profile_.thermal_resistance_c_per_w * std::max(faults.cooling_factor, 0.1);
  const double steady = profile_.ambient_c + temp_offset_c_ + r * power_w_;
  temp_c_ += (steady - temp_c_) * kStepSeconds / profile_.thermal_time_constant_s;
}

void GpuModel::StepLinkAndErrors(const Faults& faults) {
  link_gen_ = faults.pcie_gen > 0 ? std::min(faults.pcie_gen, profile_.pcie_max_gen)
                                  : profile_.pcie_max_gen;
  link_width_ = faults.pcie_width > 0 ? std::min(faults.pcie_width, profile_.pcie_max_width)
                                      : profile_.pcie_max_width;
  replays_ += faults.pcie_replays_per_s * kStepSeconds;
  sbe_ += faults.sbe_per_s * kStepSeconds;
  dbe_ += faults.dbe_per_s * kStepSeconds;
  if (faults.xid > 0) {
    xid_credit_ += faults.xid_per_s * kStepSeconds;
    if (xid_credit_ >= 1) {
      last_xid_ = faults.xid;
      xid_credit_ -= std::floor(xid_credit_);
    }
  }
}

// Roofline mix: time per unit of work is the sum of its compute-bound part
// (scales with the clock), memory-bound part (scales with DRAM efficiency)
// and host-link part (scales with link bandwidth).
void GpuModel::StepThroughput(const Workload& work, const Faults& faults) {
  if (idle_) {
    throughput_ = 0;
    return;
  }
  const double fmax = profile_.max_sm_clock_mhz;
  const double mem = std::clamp(work.memory_bound, 0.0, 1.0) * (1 - kPcieShare);
  const double compute = (1 - kPcieShare) - mem;
  const double link = (LaneBytesPerSecond(link_gen_) * link_width_) /
                      (LaneBytesPerSecond(profile_.pcie_max_gen) * profile_.pcie_max_width);
  const double time =
      compute / (clock_mhz_ / fmax) + mem * std::max(faults.dram_thrash, 1.0) + kPcieShare / link;
  const double occupancy_penalty = 0.5 + 0.5 * std::clamp(faults.occupancy_factor, 0.0, 1.0);
  throughput_ = occupancy_penalty / time;
}

dcgm::Readings GpuModel::Read() const {
  dcgm::Readings out;
  const Workload& w = last_work_;
  const Faults& f = last_faults_;
  const double a = activity_;
  const bool busy = !idle_;
  out.Set(dcgm::ExporterField::kSmClock, clock_mhz_);
  out.Set(dcgm::ExporterField::kMemClock, profile_.mem_clock_mhz);
  out.Set(dcgm::ExporterField::kClockEventReasons, static_cast<double>(reasons_));
  out.Set(dcgm::ExporterField::kMemoryTemp, std::round(temp_c_ + 9));
  out.Set(dcgm::ExporterField::kGpuTemp, std::round(temp_c_));
  out.Set(dcgm::ExporterField::kPowerUsage, power_avg_w_);
  out.Set(dcgm::ExporterField::kTotalEnergy, std::floor(energy_mj_));
  out.Set(dcgm::ExporterField::kPowerMgmtLimit, profile_.power_limit_w);
  out.Set(dcgm::ExporterField::kEnforcedPowerLimit, limit_w_);
  out.Set(dcgm::ExporterField::kPcieReplayCounter, std::floor(replays_));
  out.Set(dcgm::ExporterField::kGpuUtil, busy ? std::min(100.0, std::round(160 * a)) : 0);
  const double dram =
      busy ? std::clamp(a * w.dram_active * std::max(f.dram_thrash, 1.0) * (1 + dram_noise_.x), 0.0,
                        0.95)
           : 0.00001;
  out.Set(dcgm::ExporterField::kMemCopyUtil, std::round(100 * dram));
  if (last_xid_ > 0) out.Set(dcgm::ExporterField::kXidErrors, last_xid_);
  out.Set(dcgm::ExporterField::kPcieMaxLinkGen, profile_.pcie_max_gen);
  out.Set(dcgm::ExporterField::kPcieMaxLinkWidth, profile_.pcie_max_width);
  out.Set(dcgm::ExporterField::kPcieLinkGen, link_gen_);
  out.Set(dcgm::ExporterField::kPcieLinkWidth, link_width_);
  const double used = std::min(w.fb_used_mib, profile_.fb_total_mib - profile_.fb_reserved_mib);
  out.Set(dcgm::ExporterField::kFbFree, profile_.fb_total_mib - profile_.fb_reserved_mib - used);
  out.Set(dcgm::ExporterField::kFbUsed, used);
  out.Set(dcgm::ExporterField::kFbReserved, profile_.fb_reserved_mib);
  out.Set(dcgm::ExporterField::kEccSbeVolTotal, std::floor(sbe_));
  out.Set(dcgm::ExporterField::kEccDbeVolTotal, std::floor(dbe_));
  out.Set(dcgm::ExporterField::kUncorrectableRemappedRows, 0);
  out.Set(dcgm::ExporterField::kCorrectableRemappedRows, 0);
  out.Set(dcgm::ExporterField::kRowRemapFailure, 0);
  const double occupancy = busy ? w.occupancy * std::clamp(f.occupancy_factor, 0.0, 1.0) : 0;
  out.Set(dcgm::ExporterField::kGrEngineActive, busy ? a : 0);
  out.Set(dcgm::ExporterField::kSmActive, busy ? a * w.sm_active : 0);
  out.Set(dcgm::ExporterField::kSmOccupancy, occupancy);
  out.Set(dcgm::ExporterField::kTensorActive,
          busy ? a * w.tensor_active / std::max(f.dram_thrash, 1.0) : 0);
  out.Set(dcgm::ExporterField::kDramActive, dram);
  const double link_bytes = LaneBytesPerSecond(link_gen_) * link_width_;
  out.Set(dcgm::ExporterField::kPcieRxBytes,
          std::round(std::min(a * w.pcie_rx_bytes_s, link_bytes)));
  out.Set(dcgm::ExporterField::kPcieTxBytes,
          std::round(std::min(a * w.pcie_tx_bytes_s, link_bytes)));
  return out;
}

}  // namespace gpucanary::sim
