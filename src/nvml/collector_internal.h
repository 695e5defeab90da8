#pragma once
// What the two halves of nvml::Collector share, and nothing else should use:
// collector.cc (start, the Xid event thread, status) and collector_read.cc
// (one Sample's reads of one GPU). Thread safety as collector.h says; the
// comments on Gpu's members say which thread owns what.

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "dcgm/readings.h"
#include "nvml/collector.h"
#include "nvml/nvml_abi.h"

namespace gpucanary::nvml {

// The NVML queries of one sample. A GPU that answers one of them with
// NOT_SUPPORTED is not asked it again.
enum Query : std::size_t {
  kQSmClock,
  kQMemClock,
  kQClockEvents,
  kQMemoryTemp,
  kQGpuTemp,
  kQPower,
  kQEnergy,
  kQPowerLimit,
  kQEnforcedLimit,
  kQPcieReplay,
  kQPcieTx,
  kQPcieRx,
  kQUtilization,
  kQPcieGen,
  kQPcieWidth,
  kQPcieMaxGen,
  kQPcieMaxWidth,
  kQMemory,
  kQEccSbe,
  kQEccDbe,
  kQRemappedRows,
  kQGpm,
  kQueryCount,
};

inline constexpr std::array<const char*, kQueryCount> kQueryNames = {
    "nvmlDeviceGetClockInfo(SM)",
    "nvmlDeviceGetClockInfo(MEM)",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetFieldValues(MEMORY_TEMP)",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetPcieThroughput(TX)",
    "nvmlDeviceGetPcieThroughput(RX)",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetTotalEccErrors(CORRECTED)",
    "nvmlDeviceGetTotalEccErrors(UNCORRECTED)",
    "nvmlDeviceGetRemappedRows",
    "nvmlGpmSampleGet",
};

// The GPM metrics read, and the DCGM field each becomes. Utilizations are
// percent in GPM and ratios in DCGM; PCIe rates MiB/s in GPM, bytes/s in DCGM.
struct GpmMetric {
  unsigned id;
  dcgm::ExporterField field;
  double scale;
};
inline constexpr std::array<GpmMetric, 7> kGpmMetrics = {{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, dcgm::ExporterField::kGrEngineActive, 0.01},
    {NVML_GPM_METRIC_SM_UTIL, dcgm::ExporterField::kSmActive, 0.01},
    {NVML_GPM_METRIC_SM_OCCUPANCY, dcgm::ExporterField::kSmOccupancy, 0.01},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, dcgm::ExporterField::kTensorActive, 0.01},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, dcgm::ExporterField::kDramActive, 0.01},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, dcgm::ExporterField::kPcieTxBytes, 1024.0 * 1024.0},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, dcgm::ExporterField::kPcieRxBytes, 1024.0 * 1024.0},
}};

// NOT_SUPPORTED, no permission, or an entry point the driver lacks: the field
// does not exist on this GPU for us.
inline bool IsUnsupported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION ||
         rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

struct Collector::Gpu {
  int index = 0;
  nvmlDevice_t handle = nullptr;
  dcgm::GpuIdentity id;
  // Sampling thread only.
  std::bitset<kQueryCount> unsupported;
  std::bitset<kQueryCount> error_logged;
  bool temperature_v = true;  // nvmlDeviceGetTemperatureV until it is refused
  std::array<nvmlGpmSample_t, 2> gpm_samples{};
  int gpm_last = 0;  // which of gpm_samples holds the last sample
  bool gpm_have_sample = false;
  std::int64_t gpm_sample_ms = 0;
  std::array<std::optional<double>, kGpmMetrics.size()> gpm_values{};  // the last window
  // Shared with the event thread (Xids) and with Collector::Status's callers.
  // Each GPU has its own lock: no operation needs two GPUs' state at once.
  mutable Mutex mu;
  bool gpm GUARDED_BY(mu) = false;
  bool lost GUARDED_BY(mu) = false;
  std::string lost_reason GUARDED_BY(mu);
  std::optional<double> last_xid GUARDED_BY(mu);
  std::uint64_t xids GUARDED_BY(mu) = 0;
  std::uint64_t errors GUARDED_BY(mu) = 0;
  bool xid_events GUARDED_BY(mu) = false;
};

}  // namespace gpucanary::nvml
