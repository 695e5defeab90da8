// Collector's reads of one GPU in one Sample (collector.h): the NVML queries
// in a fixed order, each field converted to dcgm-exporter's unit, and the GPM
// window.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "nvml/collector.h"
#include "nvml/collector_internal.h"

namespace gpucanary::nvml {
namespace {

using dcgm::ExporterField;

constexpr double kMib = 1024.0 * 1024.0;

// A field value of nvmlDeviceGetFieldValues as a double, by its value type.
std::optional<double> FieldValue(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return static_cast<double>(v.value.uiVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(v.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(v.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(v.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return static_cast<double>(v.value.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return static_cast<double>(v.value.usVal);
    default:
      return std::nullopt;
  }
}

}  // namespace

// One GPU's part of one Sample: runs its queries in a fixed order, skips
// those the GPU does not support and, once it is found lost, the rest, and
// fills `r`. Each Read* step is one group of fields; the order of the NVML
// calls is the order of the steps in Read.
class Collector::GpuReader {
 public:
  GpuReader(Collector& collector, Gpu& gpu, dcgm::Readings& r)
      : c_(collector), a_(collector.api_), gpu_(gpu), h_(gpu.handle), r_(r) {}

  void Read(std::int64_t now_ms);

 private:
  bool Check(Query q, nvmlReturn_t rc);
  template <typename Call, typename Use>
  void Run(Query q, bool available, Call&& call, Use&& use);

  void ReadClocks();
  void ReadTemperatures();
  nvmlReturn_t GpuTemperature(unsigned& celsius);
  void ReadPowerAndEnergy();
  void ReadPcieReplays();
  void ReadUtilization();
  void ReadPcieLink();
  void ReadMemory();
  nvmlReturn_t FramebufferMib();
  void ReadEccAndRemappedRows();
  void ReadPcieTraffic();

  Collector& c_;
  const Api& a_;
  Gpu& gpu_;
  const nvmlDevice_t h_;
  dcgm::Readings& r_;
  bool lost_ = false;  // the GPU is lost: no more queries this sample
};

void Collector::ReadGpu(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r) {
  GpuReader(*this, gpu, r).Read(now_ms);
}

void Collector::GpuReader::Read(std::int64_t now_ms) {
  {
    const MutexLock lock(gpu_.mu);
    lost_ = gpu_.lost;
  }
  ReadClocks();
  ReadTemperatures();
  ReadPowerAndEnergy();
  ReadPcieReplays();
  ReadUtilization();
  ReadPcieLink();
  ReadMemory();
  ReadEccAndRemappedRows();
  if (!lost_) c_.ReadGpm(gpu_, now_ms, r_);
  // PCIe traffic: GPM's rates where GPM runs, else NVML's 20 ms throughput
  // sample in KB/s.
  if (!lost_ && !r_.Get(ExporterField::kPcieTxBytes)) ReadPcieTraffic();

  const MutexLock lock(gpu_.mu);
  if (lost_) r_ = dcgm::Readings{};  // a lost GPU keeps only its last Xid
  if (gpu_.last_xid) r_.Set(ExporterField::kXidErrors, *gpu_.last_xid);
}

// What one call said: true with a value to keep, false otherwise (the field
// stays absent). Marks the query unsupported or the GPU lost.
bool Collector::GpuReader::Check(Query q, nvmlReturn_t rc) {
  if (rc == NVML_SUCCESS) return true;
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    const MutexLock lock(gpu_.mu);
    if (!gpu_.lost) {
      gpu_.lost = true;
      gpu_.lost_reason = std::string(kQueryNames[q]) + ": " + c_.lib_.ErrorText(rc);
      c_.Log("GPU " + std::to_string(gpu_.index) + " (" + gpu_.id.uuid +
             ") is lost: " + gpu_.lost_reason + "; its other GPUs are still read");
    }
    lost_ = true;
    return false;
  }
  if (IsUnsupported(rc)) {
    gpu_.unsupported.set(q);
    return false;
  }
  {
    const MutexLock lock(gpu_.mu);
    ++gpu_.errors;
  }
  if (!gpu_.error_logged.test(q)) {
    gpu_.error_logged.set(q);
    c_.Log("GPU " + std::to_string(gpu_.index) + ": " + kQueryNames[q] + ": " +
           c_.lib_.ErrorText(rc));
  }
  return false;
}

// Runs query q unless this GPU does not support it or is lost; `call`
// returns the nvmlReturn_t and `use` stores the value. `available`: the
// driver has the entry point.
template <typename Call, typename Use>
void Collector::GpuReader::Run(Query q, bool available, Call&& call, Use&& use) {
  if (lost_ || gpu_.unsupported.test(q)) return;
  if (!available) {
    gpu_.unsupported.set(q);
    return;
  }
  if (Check(q, call())) use();
}

// SM and memory clocks (MHz) and the clock event (throttle) reasons.
void Collector::GpuReader::ReadClocks() {
  unsigned u = 0;
  unsigned long long ull = 0;  // NOLINT(google-runtime-int): NVML's type
  Run(
      kQSmClock, a_.device_get_clock_info != nullptr,
      [&] { return a_.device_get_clock_info(h_, NVML_CLOCK_SM, &u); },
      [&] { r_.Set(ExporterField::kSmClock, u); });
  Run(
      kQMemClock, a_.device_get_clock_info != nullptr,
      [&] { return a_.device_get_clock_info(h_, NVML_CLOCK_MEM, &u); },
      [&] { r_.Set(ExporterField::kMemClock, u); });
  Run(
      kQClockEvents, a_.device_get_clocks_event_reasons != nullptr,
      [&] { return a_.device_get_clocks_event_reasons(h_, &ull); },
      [&] { r_.Set(ExporterField::kClockEventReasons, static_cast<double>(ull)); });
}

// Memory (HBM) and GPU temperatures, in °C.
void Collector::GpuReader::ReadTemperatures() {
  nvmlFieldValue_t field{};
  Run(
      kQMemoryTemp, a_.device_get_field_values != nullptr,
      [&] {
        field = nvmlFieldValue_t{};
        field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
        const nvmlReturn_t rc = a_.device_get_field_values(h_, 1, &field);
        return rc != NVML_SUCCESS ? rc : field.nvmlReturn;
      },
      [&] {
        if (const std::optional<double> v = FieldValue(field)) {
          r_.Set(ExporterField::kMemoryTemp, *v);
        }
      });
  unsigned celsius = 0;
  Run(
      kQGpuTemp, a_.device_get_temperature_v != nullptr || a_.device_get_temperature != nullptr,
      [&] { return GpuTemperature(celsius); }, [&] { r_.Set(ExporterField::kGpuTemp, celsius); });
}

// nvmlDeviceGetTemperatureV where the driver takes it, else the older call.
nvmlReturn_t Collector::GpuReader::GpuTemperature(unsigned& celsius) {
  if (gpu_.temperature_v && a_.device_get_temperature_v != nullptr) {
    nvmlTemperature_t t{};
    t.version = nvmlTemperature_v1;
    t.sensorType = NVML_TEMPERATURE_GPU;
    const nvmlReturn_t rc = a_.device_get_temperature_v(h_, &t);
    if (rc == NVML_SUCCESS) {
      celsius = static_cast<unsigned>(std::max(t.temperature, 0));
      return rc;
    }
    // A driver with the entry point but another struct version: use the
    // older call from now on.
    if (!(IsUnsupported(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) ||
        a_.device_get_temperature == nullptr) {
      return rc;
    }
    gpu_.temperature_v = false;
  }
  return a_.device_get_temperature(h_, NVML_TEMPERATURE_GPU, &celsius);
}

// Power draw and limits (W, from mW) and the energy counter (mJ).
void Collector::GpuReader::ReadPowerAndEnergy() {
  unsigned u = 0;
  unsigned long long ull = 0;  // NOLINT(google-runtime-int): NVML's type
  Run(
      kQPower, a_.device_get_power_usage != nullptr,
      [&] { return a_.device_get_power_usage(h_, &u); },
      [&] { r_.Set(ExporterField::kPowerUsage, u / 1000.0); });
  Run(
      kQEnergy, a_.device_get_total_energy != nullptr,
      [&] { return a_.device_get_total_energy(h_, &ull); },
      [&] { r_.Set(ExporterField::kTotalEnergy, static_cast<double>(ull)); });
  Run(
      kQPowerLimit, a_.device_get_power_limit != nullptr,
      [&] { return a_.device_get_power_limit(h_, &u); },
      [&] { r_.Set(ExporterField::kPowerMgmtLimit, u / 1000.0); });
  Run(
      kQEnforcedLimit, a_.device_get_enforced_power_limit != nullptr,
      [&] { return a_.device_get_enforced_power_limit(h_, &u); },
      [&] { r_.Set(ExporterField::kEnforcedPowerLimit, u / 1000.0); });
}

// The PCIe replay counter.
void Collector::GpuReader::ReadPcieReplays() {
  unsigned u = 0;
  Run(
      kQPcieReplay, a_.device_get_pcie_replay_counter != nullptr,
      [&] { return a_.device_get_pcie_replay_counter(h_, &u); },
      [&] { r_.Set(ExporterField::kPcieReplayCounter, u); });
}

// GPU and memory-copy utilization (percent, as dcgm-exporter prints them).
void Collector::GpuReader::ReadUtilization() {
  nvmlUtilization_t util{};
  Run(
      kQUtilization, a_.device_get_utilization_rates != nullptr,
      [&] { return a_.device_get_utilization_rates(h_, &util); },
      [&] {
        r_.Set(ExporterField::kGpuUtil, util.gpu);
        r_.Set(ExporterField::kMemCopyUtil, util.memory);
      });
}

// The PCIe link: maximum and current generation and width.
void Collector::GpuReader::ReadPcieLink() {
  unsigned u = 0;
  Run(
      kQPcieMaxGen, a_.device_get_max_pcie_link_generation != nullptr,
      [&] { return a_.device_get_max_pcie_link_generation(h_, &u); },
      [&] { r_.Set(ExporterField::kPcieMaxLinkGen, u); });
  Run(
      kQPcieMaxWidth, a_.device_get_max_pcie_link_width != nullptr,
      [&] { return a_.device_get_max_pcie_link_width(h_, &u); },
      [&] { r_.Set(ExporterField::kPcieMaxLinkWidth, u); });
  Run(
      kQPcieGen, a_.device_get_curr_pcie_link_generation != nullptr,
      [&] { return a_.device_get_curr_pcie_link_generation(h_, &u); },
      [&] { r_.Set(ExporterField::kPcieLinkGen, u); });
  Run(
      kQPcieWidth, a_.device_get_curr_pcie_link_width != nullptr,
      [&] { return a_.device_get_curr_pcie_link_width(h_, &u); },
      [&] { r_.Set(ExporterField::kPcieLinkWidth, u); });
}

// Framebuffer in MiB, split as DCGM does: free + used + reserved = total,
// where NVML's v2 `used` includes `reserved`.
void Collector::GpuReader::ReadMemory() {
  Run(
      kQMemory, a_.device_get_memory_info_v2 != nullptr || a_.device_get_memory_info != nullptr,
      [&] { return FramebufferMib(); }, [] {});
}

// Sets the framebuffer fields itself (v2 has reserved, v1 not); returns what
// the call that answered said.
nvmlReturn_t Collector::GpuReader::FramebufferMib() {
  if (a_.device_get_memory_info_v2 != nullptr) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    const nvmlReturn_t rc = a_.device_get_memory_info_v2(h_, &m);
    if (rc == NVML_SUCCESS) {
      const unsigned long long used =  // NOLINT(google-runtime-int)
          m.used >= m.reserved ? m.used - m.reserved : 0;
      r_.Set(ExporterField::kFbFree, std::floor(static_cast<double>(m.free) / kMib));
      r_.Set(ExporterField::kFbUsed, std::floor(static_cast<double>(used) / kMib));
      r_.Set(ExporterField::kFbReserved, std::floor(static_cast<double>(m.reserved) / kMib));
    }
    if (rc == NVML_SUCCESS || a_.device_get_memory_info == nullptr ||
        !(IsUnsupported(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
      return rc;
    }
  }
  nvmlMemory_t m{};
  const nvmlReturn_t rc = a_.device_get_memory_info(h_, &m);
  if (rc == NVML_SUCCESS) {
    r_.Set(ExporterField::kFbFree, std::floor(static_cast<double>(m.free) / kMib));
    r_.Set(ExporterField::kFbUsed, std::floor(static_cast<double>(m.used) / kMib));
  }
  return rc;
}

// Volatile ECC error totals and the row remapper's counts.
void Collector::GpuReader::ReadEccAndRemappedRows() {
  unsigned long long ull = 0;  // NOLINT(google-runtime-int): NVML's type
  Run(
      kQEccSbe, a_.device_get_total_ecc_errors != nullptr,
      [&] {
        return a_.device_get_total_ecc_errors(h_, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                              NVML_VOLATILE_ECC, &ull);
      },
      [&] { r_.Set(ExporterField::kEccSbeVolTotal, static_cast<double>(ull)); });
  Run(
      kQEccDbe, a_.device_get_total_ecc_errors != nullptr,
      [&] {
        return a_.device_get_total_ecc_errors(h_, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                              NVML_VOLATILE_ECC, &ull);
      },
      [&] { r_.Set(ExporterField::kEccDbeVolTotal, static_cast<double>(ull)); });
  unsigned corrected = 0;
  unsigned uncorrected = 0;
  unsigned pending = 0;
  unsigned failure = 0;
  Run(
      kQRemappedRows, a_.device_get_remapped_rows != nullptr,
      [&] { return a_.device_get_remapped_rows(h_, &corrected, &uncorrected, &pending, &failure); },
      [&] {
        r_.Set(ExporterField::kCorrectableRemappedRows, corrected);
        r_.Set(ExporterField::kUncorrectableRemappedRows, uncorrected);
        r_.Set(ExporterField::kRowRemapFailure, failure);
      });
}

// PCIe TX and RX from NVML's throughput sample (KB/s, to bytes/s).
void Collector::GpuReader::ReadPcieTraffic() {
  unsigned u = 0;
  Run(
      kQPcieTx, a_.device_get_pcie_throughput != nullptr,
      [&] { return a_.device_get_pcie_throughput(h_, NVML_PCIE_UTIL_TX_BYTES, &u); },
      [&] { r_.Set(ExporterField::kPcieTxBytes, u * 1024.0); });
  Run(
      kQPcieRx, a_.device_get_pcie_throughput != nullptr,
      [&] { return a_.device_get_pcie_throughput(h_, NVML_PCIE_UTIL_RX_BYTES, &u); },
      [&] { r_.Set(ExporterField::kPcieRxBytes, u * 1024.0); });
}

void Collector::ReadGpm(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r) {
  {
    const MutexLock lock(gpu.mu);
    if (!gpu.gpm) return;
  }
  // Less than NVML's minimum since the last GPM sample: the last window again.
  if (gpu.gpm_have_sample && now_ms - gpu.gpm_sample_ms < kGpmMinIntervalMs) {
    ApplyGpm(gpu, r);
    return;
  }
  const int next = gpu.gpm_have_sample ? 1 - gpu.gpm_last : gpu.gpm_last;
  const nvmlReturn_t rc =
      api_.gpm_sample_get(gpu.handle, gpu.gpm_samples[static_cast<std::size_t>(next)]);
  if (rc != NVML_SUCCESS) {
    GpmSampleFailed(gpu, rc);
    return;
  }
  if (!gpu.gpm_have_sample) {  // the first sample opens the first window
    gpu.gpm_have_sample = true;
    gpu.gpm_last = next;
    gpu.gpm_sample_ms = now_ms;
    return;
  }
  if (GetGpmMetrics(gpu, next, now_ms)) ApplyGpm(gpu, r);
}

// The last window's GPM values into `r`.
void Collector::ApplyGpm(const Gpu& gpu, dcgm::Readings& r) {
  for (std::size_t i = 0; i < kGpmMetrics.size(); ++i) {
    if (gpu.gpm_values[i]) r.Set(kGpmMetrics[i].field, *gpu.gpm_values[i]);
  }
}

// nvmlGpmSampleGet failed: the GPU is lost, has no GPM after all, or the
// call failed; the window's values are gone either way.
void Collector::GpmSampleFailed(Gpu& gpu, nvmlReturn_t rc) {
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    const MutexLock lock(gpu.mu);
    if (!gpu.lost) {
      gpu.lost = true;
      gpu.lost_reason = "nvmlGpmSampleGet: " + lib_.ErrorText(rc);
      Log("GPU " + std::to_string(gpu.index) + " is lost: " + gpu.lost_reason);
    }
  } else if (IsUnsupported(rc)) {
    const MutexLock lock(gpu.mu);
    gpu.gpm = false;
  } else {
    const MutexLock lock(gpu.mu);
    ++gpu.errors;
  }
  gpu.gpm_values = {};
}

// Closes the window from the last sample to gpm_samples[next] (taken at
// `now_ms`) and computes its metrics into gpu.gpm_values; false when
// nvmlGpmMetricsGet fails (the values are then gone).
bool Collector::GetGpmMetrics(Gpu& gpu, int next, std::int64_t now_ms) {
  if (!gpm_get_) gpm_get_ = std::make_unique<nvmlGpmMetricsGet_t>();
  nvmlGpmMetricsGet_t& g = *gpm_get_;
  std::memset(&g, 0, sizeof(g));
  g.version = NVML_GPM_METRICS_GET_VERSION;
  g.numMetrics = static_cast<unsigned>(kGpmMetrics.size());
  g.sample1 = gpu.gpm_samples[static_cast<std::size_t>(gpu.gpm_last)];
  g.sample2 = gpu.gpm_samples[static_cast<std::size_t>(next)];
  for (std::size_t i = 0; i < kGpmMetrics.size(); ++i) g.metrics[i].metricId = kGpmMetrics[i].id;
  const nvmlReturn_t get_rc = api_.gpm_metrics_get(&g);
  gpu.gpm_last = next;
  gpu.gpm_sample_ms = now_ms;
  gpu.gpm_values = {};
  if (get_rc != NVML_SUCCESS) {
    const MutexLock lock(gpu.mu);
    ++gpu.errors;
    if (!gpu.error_logged.test(kQGpm)) {
      gpu.error_logged.set(kQGpm);
      Log("GPU " + std::to_string(gpu.index) + ": nvmlGpmMetricsGet: " + lib_.ErrorText(get_rc));
    }
    return false;
  }
  for (std::size_t i = 0; i < kGpmMetrics.size(); ++i) {
    const nvmlGpmMetric_t& m = g.metrics[i];
    if (m.nvmlReturn != NVML_SUCCESS || !std::isfinite(m.value)) continue;
    double v = m.value * kGpmMetrics[i].scale;
    if (kGpmMetrics[i].scale < 1) v = std::clamp(v, 0.0, 1.0);  // a ratio, as DCGM reports it
    gpu.gpm_values[i] = v;
  }
  return true;
}

}  // namespace gpucanary::nvml
