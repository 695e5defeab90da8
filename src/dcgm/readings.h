#pragma once
// What one GPU reports at one instant, in dcgm-exporter's terms: the value of
// each DCGM field gpucanary produces itself, or nothing when the field is blank
// or unsupported on that GPU (dcgm-exporter then prints no line at all, never
// 0). Two producers fill Readings: the simulator's GPU model (sim/gpu_model.h)
// and the NVML collector (nvml/collector.h); dcgm/exposition.h turns them into
// exactly what dcgm-exporter serves.

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace gpucanary::dcgm {

// The DCGM fields gpucanary produces (the simulator and the NVML collector), in ascending DCGM
// field id (the order dcgm-exporter prints families in). The numeric id is in kExporterFieldIds.
enum class ExporterField : std::uint8_t {
  kSmClock,             // 100  DCGM_FI_DEV_SM_CLOCK, MHz, int
  kMemClock,            // 101  DCGM_FI_DEV_MEM_CLOCK, MHz, int
  kClockEventReasons,   // 112  DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, bitmask, int
  kMemoryTemp,          // 140  DCGM_FI_DEV_MEMORY_TEMP, C, int
  kGpuTemp,             // 150  DCGM_FI_DEV_GPU_TEMP, C, int
  kPowerUsage,          // 155  DCGM_FI_DEV_POWER_USAGE, W, double
  kTotalEnergy,         // 156  DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ, int counter
  kPowerMgmtLimit,      // 160  DCGM_FI_DEV_POWER_MGMT_LIMIT, W, double
  kEnforcedPowerLimit,  // 164  DCGM_FI_DEV_ENFORCED_POWER_LIMIT, W, double
  kPcieReplayCounter,   // 202  DCGM_FI_DEV_PCIE_REPLAY_COUNTER, int counter
  kGpuUtil,             // 203  DCGM_FI_DEV_GPU_UTIL, %, int
  kMemCopyUtil,         // 204  DCGM_FI_DEV_MEM_COPY_UTIL, %, int
  kXidErrors,           // 230  DCGM_FI_DEV_XID_ERRORS, last XID, int (err_code/err_msg labels)
  kPcieMaxLinkGen,      // 235  DCGM_FI_DEV_PCIE_MAX_LINK_GEN, int
  kPcieMaxLinkWidth,    // 236  DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH, int
  kPcieLinkGen,         // 237  DCGM_FI_DEV_PCIE_LINK_GEN, int
  kPcieLinkWidth,       // 238  DCGM_FI_DEV_PCIE_LINK_WIDTH, int
  kFbFree,              // 251  DCGM_FI_DEV_FB_FREE, MiB, int
  kFbUsed,              // 252  DCGM_FI_DEV_FB_USED, MiB, int
  kFbReserved,          // 253  DCGM_FI_DEV_FB_RESERVED, MiB, int
  kEccSbeVolTotal,      // 310  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, int counter
  kEccDbeVolTotal,      // 311  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, int counter
  kUncorrectableRemappedRows,  // 393 int counter
  kCorrectableRemappedRows,    // 394 int counter
  kRowRemapFailure,            // 395  int
  kGrEngineActive,             // 1001 DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio, double
  kSmActive,                   // 1002 DCGM_FI_PROF_SM_ACTIVE, ratio, double
  kSmOccupancy,                // 1003 DCGM_FI_PROF_SM_OCCUPANCY, ratio, double
  kTensorActive,               // 1004 DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio, double
  kDramActive,                 // 1005 DCGM_FI_PROF_DRAM_ACTIVE, ratio, double
  kPcieTxBytes,                // 1009 DCGM_FI_PROF_PCIE_TX_BYTES, bytes/s, int
  kPcieRxBytes,                // 1010 DCGM_FI_PROF_PCIE_RX_BYTES, bytes/s, int
  kCount,
};

inline constexpr std::size_t kExporterFieldCount = static_cast<std::size_t>(ExporterField::kCount);

// DCGM field ids, indexed by ExporterField (ascending: the exporter's family order).
inline constexpr std::array<std::uint16_t, kExporterFieldCount> kExporterFieldIds = {
    100, 101, 112, 140, 150, 155, 156, 160, 164, 202,  203,  204,  230,  235,  236,  237,
    238, 251, 252, 253, 310, 311, 393, 394, 395, 1001, 1002, 1003, 1004, 1005, 1009, 1010};

// Who a GPU is: the labels dcgm-exporter puts on every series of it.
struct GpuIdentity {
  int index = 0;               // label gpu, and device="nvidia<index>"
  std::string uuid;            // label UUID, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string pci_bus_id;      // "00000000:53:00.0"
  std::string model_name;      // "NVIDIA H100 80GB HBM3"
  std::string hostname;        // label Hostname (or hostname, per exporter version)
  std::string driver_version;  // label DCGM_FI_DRIVER_VERSION
  // Kubernetes attributes, only when a pod holds the GPU (sorted on output).
  std::string container;
  std::string kube_namespace;
  std::string pod;
};

// One GPU's field values at one instant. Unset = blank: no line is printed.
struct Readings {
  std::array<std::optional<double>, kExporterFieldCount> values{};

  void Set(ExporterField f, double v) { values[static_cast<std::size_t>(f)] = v; }
  void Clear(ExporterField f) { values[static_cast<std::size_t>(f)].reset(); }
  const std::optional<double>& Get(ExporterField f) const {
    return values[static_cast<std::size_t>(f)];
  }
};

}  // namespace gpucanary::dcgm
