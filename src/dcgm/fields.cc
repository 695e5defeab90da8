#include "dcgm/fields.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <iterator>

namespace gpucanary::dcgm {
namespace {

using C = FieldCategory;
using K = ValueKind;
using T = DcgmType;
using U = Unit;

constexpr FieldInfo Dcgm(FieldId id, std::string_view name, std::string_view dcgm46_name, T type,
                         U unit, K kind, C category, std::string_view meaning) {
  return {.id = id,
          .name = name,
          .dcgm46_name = dcgm46_name,
          .origin = FieldOrigin::kDcgmField,
          .type = type,
          .unit = unit,
          .kind = kind,
          .category = category,
          .meaning = meaning};
}

constexpr FieldInfo Exporter(std::string_view name, U unit, K kind, C category,
                             std::string_view meaning) {
  return {.id = kNoFieldId,
          .name = name,
          .dcgm46_name = "",
          .origin = FieldOrigin::kExporterMetric,
          .type = T::kInt64,
          .unit = unit,
          .kind = kind,
          .category = category,
          .meaning = meaning};
}

// The catalog. Ids, names and DCGM types are from dcgm_fields.h / the DCGM 4.6
// Python bindings; units and meanings follow the field comments there and
// shared/reference/dcgm-telemetry.md section 2 (the meanings are ours).
// Invariants, checked at compile time below: exporter metrics first, then DCGM
// ids strictly ascending; no name appears twice among all legacy and 4.6 names.
constexpr FieldInfo kFields[] = {
    // --- Made by dcgm-exporter (internal/pkg/collector), no DCGM id. Their
    // windowed counts are typed `counter` in the exposition but go down when the
    // window slides, so they are gauges here.
    Exporter("DCGM_EXP_CLOCK_EVENTS_COUNT", U::kCount, K::kGauge, C::kClocks,
             "samples of field 112 with a given clock_event bit set inside the last window "
             "(labels clock_event, window_size_in_ms)"),
    Exporter("DCGM_EXP_GPU_HEALTH_STATUS", U::kNone, K::kEnum, C::kErrors,
             "DCGM health-check result (dcgmHealthResult) per health_watch"),
    Exporter("DCGM_EXP_P2P_STATUS", U::kNone, K::kEnum, C::kNvlink,
             "peer-to-peer NVLink status between GPUs"),
    Exporter("DCGM_EXP_XID_ERRORS_COUNT", U::kCount, K::kGauge, C::kErrors,
             "samples of field 230 equal to a given XID inside the last window "
             "(labels xid, window_size_in_ms)"),

    // --- Identity (mostly strings that dcgm-exporter turns into labels).
    Dcgm(1, "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION", T::kString, U::kNone,
         K::kLabel, C::kIdentity, "NVIDIA driver version, e.g. 580.105.08"),
    Dcgm(2, "DCGM_FI_NVML_VERSION", "DCGM_FI_SYSTEM_NVML_VERSION", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "version of the NVML library DCGM uses"),
    Dcgm(3, "DCGM_FI_PROCESS_NAME", "DCGM_FI_SYSTEM_PROCESS_NAME", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "process hosting DCGM (nv-hostengine or the embedding process)"),
    Dcgm(4, "DCGM_FI_DEV_COUNT", "DCGM_FI_SYSTEM_GPU_QUANTITY", T::kInt64, U::kCount, K::kGauge,
         C::kIdentity, "number of GPUs on the node"),
    Dcgm(5, "DCGM_FI_CUDA_DRIVER_VERSION", "", T::kInt64, U::kNone, K::kLabel, C::kIdentity,
         "CUDA driver version as an integer (12010 = CUDA 12.1)"),
    Dcgm(50, "DCGM_FI_DEV_NAME", "DCGM_FI_DEV_GPU_NAME", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "GPU product name, e.g. NVIDIA H100 80GB HBM3"),
    Dcgm(51, "DCGM_FI_DEV_BRAND", "DCGM_FI_DEV_GPU_BRAND", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "GPU brand"),
    Dcgm(53, "DCGM_FI_DEV_SERIAL", "DCGM_FI_DEV_BOARD_SERIAL", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "board serial number"),
    Dcgm(54, "DCGM_FI_DEV_UUID", "DCGM_FI_DEV_GPU_UUID", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "GPU UUID (GPU-...), the stable key of a GPU"),
    Dcgm(55, "DCGM_FI_DEV_MINOR_NUMBER", "DCGM_FI_DEV_GPU_MINOR_NUMBER", T::kInt64, U::kNone,
         K::kLabel, C::kIdentity, "device node minor number (/dev/nvidiaN)"),
    Dcgm(56, "DCGM_FI_DEV_OEM_INFOROM_VER", "DCGM_FI_DEV_INFOROM_OEM_VERSION", T::kString, U::kNone,
         K::kLabel, C::kIdentity, "OEM InfoROM version"),
    Dcgm(57, "DCGM_FI_DEV_PCI_BUSID", "DCGM_FI_DEV_PCI_BUS_ID", T::kString, U::kNone, K::kLabel,
         C::kIdentity, "PCI bus id, e.g. 00000000:53:00.0"),
    Dcgm(63, "DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY", "DCGM_FI_CUDA_GPU_COMPUTE_CAPABILITY",
         T::kInt64, U::kNone, K::kEnum, C::kIdentity,
         "CUDA compute capability, major and minor packed into one integer"),
    Dcgm(80, "DCGM_FI_DEV_ECC_INFOROM_VER", "DCGM_FI_DEV_INFOROM_ECC_VERSION", T::kString, U::kNone,
         K::kLabel, C::kIdentity, "ECC InfoROM object version"),
    Dcgm(81, "DCGM_FI_DEV_POWER_INFOROM_VER", "DCGM_FI_DEV_INFOROM_POWER_VERSION", T::kString,
         U::kNone, K::kLabel, C::kIdentity, "power-management InfoROM object version"),
    Dcgm(82, "DCGM_FI_DEV_INFOROM_IMAGE_VER", "DCGM_FI_DEV_INFOROM_IMAGE_VERSION", T::kString,
         U::kNone, K::kLabel, C::kIdentity, "InfoROM image version"),
    Dcgm(85, "DCGM_FI_DEV_VBIOS_VERSION", "", T::kString, U::kNone, K::kLabel, C::kIdentity,
         "VBIOS version"),

    // --- Clocks (section 2.2 "Clocks").
    Dcgm(100, "DCGM_FI_DEV_SM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "current SM clock"),
    Dcgm(101, "DCGM_FI_DEV_MEM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "current memory clock; HBM parts keep it constant even when idle"),
    Dcgm(102, "DCGM_FI_DEV_VIDEO_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "current video encoder/decoder clock"),
    Dcgm(110, "DCGM_FI_DEV_APP_SM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "application SM clock target"),
    Dcgm(111, "DCGM_FI_DEV_APP_MEM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "application memory clock target"),
    Dcgm(112, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", T::kInt64,
         U::kBitmask, K::kBitmask, C::kClocks,
         "why clocks are below maximum right now: NVML clock-event reason bits (0x4 power cap, 0x8 "
         "HW slowdown, 0x20/0x40 thermal, 0x80 power brake)"),
    Dcgm(113, "DCGM_FI_DEV_MAX_SM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "maximum supported SM clock"),
    Dcgm(114, "DCGM_FI_DEV_MAX_MEM_CLOCK", "", T::kInt64, U::kMegahertz, K::kGauge, C::kClocks,
         "maximum supported memory clock"),

    // --- Temperatures (section 2.5) and power (section 2.4), in id order.
    Dcgm(140, "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", T::kInt64, U::kCelsius,
         K::kGauge, C::kThermal,
         "memory (HBM) temperature; 0 or absent on some SKUs and in vGPU guests"),
    Dcgm(150, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", T::kInt64, U::kCelsius,
         K::kGauge, C::kThermal, "GPU die temperature"),
    Dcgm(151, "DCGM_FI_DEV_MEM_MAX_OP_TEMP", "DCGM_FI_DEV_MEMORY_MAX_OP_TEMP_CELSIUS", T::kInt64,
         U::kCelsius, K::kGauge, C::kThermal,
         "memory maximum operating temperature; SW thermal slowdown above it"),
    Dcgm(152, "DCGM_FI_DEV_GPU_MAX_OP_TEMP", "DCGM_FI_DEV_GPU_MAX_OP_TEMP_CELSIUS", T::kInt64,
         U::kCelsius, K::kGauge, C::kThermal,
         "GPU maximum operating temperature; SW thermal slowdown above it"),
    Dcgm(153, "DCGM_FI_DEV_GPU_TEMP_LIMIT", "DCGM_FI_DEV_GPU_TEMP_MARGIN_CELSIUS", T::kInt64,
         U::kCelsius, K::kGauge, C::kThermal,
         "thermal headroom (T.Limit margin): degrees left before the nearest slowdown threshold"),
    Dcgm(
        155, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", T::kDouble, U::kWatts,
        K::kGauge, C::kPower,
        "board power draw; a 1 s average on Ampere (except GA100) and newer, instantaneous before"),
    Dcgm(156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "", T::kInt64, U::kMillijoules, K::kCounter,
         C::kPower, "energy used since the driver was last loaded"),
    Dcgm(157, "DCGM_FI_DEV_POWER_USAGE_INSTANT", "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS", T::kDouble,
         U::kWatts, K::kGauge, C::kPower, "instantaneous board power draw"),
    Dcgm(158, "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", T::kInt64,
         U::kCelsius, K::kGauge, C::kThermal, "temperature at which HW slowdown engages"),
    Dcgm(159, "DCGM_FI_DEV_SHUTDOWN_TEMP", "DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS", T::kInt64,
         U::kCelsius, K::kGauge, C::kThermal, "temperature at which the GPU shuts down"),
    Dcgm(160, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS",
         T::kDouble, U::kWatts, K::kGauge, C::kPower, "power limit requested for the board"),
    Dcgm(161, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS",
         T::kDouble, U::kWatts, K::kGauge, C::kPower, "lowest power limit that can be set"),
    Dcgm(162, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS",
         T::kDouble, U::kWatts, K::kGauge, C::kPower, "highest power limit that can be set"),
    Dcgm(163, "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS",
         T::kDouble, U::kWatts, K::kGauge, C::kPower, "default power limit of the board"),
    Dcgm(164, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS",
         T::kDouble, U::kWatts, K::kGauge, C::kPower,
         "power limit actually enforced after every limiter, including out-of-band ones"),
    Dcgm(190, "DCGM_FI_DEV_PSTATE", "DCGM_FI_DEV_GPU_PSTATE", T::kInt64, U::kNone, K::kEnum,
         C::kClocks, "performance state P0-P15; 0 is the fastest"),
    Dcgm(191, "DCGM_FI_DEV_FAN_SPEED", "", T::kInt64, U::kPercent, K::kGauge, C::kThermal,
         "fan speed (0 or absent on passively cooled data-center boards)"),

    // --- PCIe and NVML utilization (sections 2.2, 2.6).
    Dcgm(200, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "", T::kInt64, U::kKilobytesPerSecond, K::kGauge,
         C::kPcie, "deprecated: PCIe TX throughput from a 20 ms NVML sample; use field 1009"),
    Dcgm(201, "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "", T::kInt64, U::kKilobytesPerSecond, K::kGauge,
         C::kPcie, "deprecated: PCIe RX throughput from a 20 ms NVML sample; use field 1010"),
    Dcgm(202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", T::kInt64,
         U::kCount, K::kCounter, C::kPcie, "PCIe link replays (retries) since reset"),
    Dcgm(203, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", T::kInt64, U::kPercent,
         K::kGauge, C::kSmOccupancy,
         "share of the sample period in which any kernel ran; saturates at 100, not SM activity"),
    Dcgm(204, "DCGM_FI_DEV_MEM_COPY_UTIL", "", T::kInt64, U::kPercent, K::kGauge, C::kMemoryDram,
         "share of the sample period in which device memory was read or written"),
    Dcgm(206, "DCGM_FI_DEV_ENC_UTIL", "", T::kInt64, U::kPercent, K::kGauge, C::kSmOccupancy,
         "video encoder (NVENC) utilization"),
    Dcgm(207, "DCGM_FI_DEV_DEC_UTIL", "", T::kInt64, U::kPercent, K::kGauge, C::kSmOccupancy,
         "video decoder (NVDEC) utilization"),

    // --- Errors: XID (section 2.7).
    Dcgm(230, "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", T::kInt64, U::kNone, K::kEnum,
         C::kErrors,
         "code of the most recent XID; holds the last value forever, a repeat is invisible"),

    // --- PCIe link state and throttle-duration counters (sections 2.3, 2.6).
    Dcgm(235, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "", T::kInt64, U::kNone, K::kGauge, C::kPcie,
         "highest PCIe generation the link supports"),
    Dcgm(236, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "", T::kInt64, U::kLanes, K::kGauge, C::kPcie,
         "widest PCIe link the device supports"),
    Dcgm(237, "DCGM_FI_DEV_PCIE_LINK_GEN", "", T::kInt64, U::kNone, K::kGauge, C::kPcie,
         "current PCIe generation; below max when idle is normal power saving"),
    Dcgm(238, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "", T::kInt64, U::kLanes, K::kGauge, C::kPcie,
         "current PCIe link width; a drop under load (x16 to x8) is a link problem"),
    // The violation counters' header comments say usec; NVML reports them in ns
    // and dcgm-exporter's help text says ns since PR #589.
    Dcgm(240, "DCGM_FI_DEV_POWER_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent throttled by the power limit"),
    Dcgm(241, "DCGM_FI_DEV_THERMAL_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent throttled by thermal limits"),
    Dcgm(242, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent held down by a sync-boost group"),
    Dcgm(243, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent held down by a board limit"),
    Dcgm(244, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent at lower clocks because utilization was low"),
    Dcgm(245, "DCGM_FI_DEV_RELIABILITY_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent held down by reliability limits"),
    Dcgm(246, "DCGM_FI_DEV_TOTAL_APP_CLOCKS_VIOLATION", "", T::kInt64, U::kNanoseconds, K::kCounter,
         C::kClocks, "time spent below the application clocks"),
    Dcgm(247, "DCGM_FI_DEV_TOTAL_BASE_CLOCKS_VIOLATION", "", T::kInt64, U::kNanoseconds,
         K::kCounter, C::kClocks, "time spent below the base clocks"),

    // --- Framebuffer (section 2.7). DCGM's header says MB, the exporter help MiB.
    Dcgm(250, "DCGM_FI_DEV_FB_TOTAL", "", T::kInt64, U::kMebibytes, K::kGauge, C::kMemoryDram,
         "total framebuffer memory"),
    Dcgm(251, "DCGM_FI_DEV_FB_FREE", "", T::kInt64, U::kMebibytes, K::kGauge, C::kMemoryDram,
         "free framebuffer memory"),
    Dcgm(252, "DCGM_FI_DEV_FB_USED", "", T::kInt64, U::kMebibytes, K::kGauge, C::kMemoryDram,
         "used framebuffer memory"),
    Dcgm(253, "DCGM_FI_DEV_FB_RESERVED", "", T::kInt64, U::kMebibytes, K::kGauge, C::kMemoryDram,
         "framebuffer memory reserved by the driver"),
    Dcgm(254, "DCGM_FI_DEV_FB_USED_PERCENT", "DCGM_FI_DEV_FB_USED_RATIO", T::kDouble, U::kRatio,
         K::kGauge, C::kMemoryDram, "used / (total - reserved) framebuffer, 0..1"),

    // --- ECC, page retirement, row remapping (section 2.7).
    Dcgm(300, "DCGM_FI_DEV_ECC_CURRENT", "DCGM_FI_DEV_ECC_MODE", T::kInt64, U::kNone, K::kEnum,
         C::kErrors, "ECC mode now in effect (1 = on)"),
    Dcgm(301, "DCGM_FI_DEV_ECC_PENDING", "", T::kInt64, U::kNone, K::kEnum, C::kErrors,
         "ECC mode that takes effect after the next reset"),
    Dcgm(310, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "", T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "single-bit (corrected) ECC errors since the driver loaded"),
    Dcgm(311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "", T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "double-bit (uncorrected) ECC errors since the driver loaded"),
    Dcgm(312, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "", T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "single-bit ECC errors over the board's lifetime"),
    Dcgm(313, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "", T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "double-bit ECC errors over the board's lifetime"),
    Dcgm(390, "DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL", T::kInt64, U::kCount,
         K::kCounter, C::kErrors,
         "pages retired for single-bit errors (pre-Ampere page retirement)"),
    Dcgm(391, "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL", T::kInt64, U::kCount,
         K::kCounter, C::kErrors,
         "pages retired for double-bit errors (pre-Ampere page retirement)"),
    Dcgm(392, "DCGM_FI_DEV_RETIRED_PENDING", "DCGM_FI_DEV_PAGE_RETIRED_PENDING", T::kInt64,
         U::kCount, K::kGauge, C::kErrors, "pages waiting to be retired at the next reset"),
    Dcgm(393, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
         "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "DRAM rows remapped after uncorrectable errors (Ampere and newer)"),
    Dcgm(394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL",
         T::kInt64, U::kCount, K::kCounter, C::kErrors,
         "DRAM rows remapped after correctable errors (Ampere and newer)"),
    Dcgm(395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED", T::kInt64, U::kNone,
         K::kEnum, C::kErrors, "1 once a row remap has failed: the GPU needs service"),
    Dcgm(396, "DCGM_FI_DEV_ROW_REMAP_PENDING", "", T::kInt64, U::kNone, K::kEnum, C::kErrors,
         "1 while a row remap waits for a GPU reset to take effect"),

    // --- NVLink (section 2.8): error totals, per-link and total bandwidth.
    Dcgm(409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
         "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL", T::kInt64, U::kCount, K::kCounter, C::kNvlink,
         "NVLink flow-control CRC errors, all links"),
    Dcgm(419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
         "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL", T::kInt64, U::kCount, K::kCounter, C::kNvlink,
         "NVLink data CRC errors, all links"),
    Dcgm(429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
         "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL", T::kInt64, U::kCount, K::kCounter, C::kNvlink,
         "NVLink replays (retries), all links"),
    Dcgm(439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
         "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL", T::kInt64, U::kCount, K::kCounter, C::kNvlink,
         "NVLink link recoveries, all links"),
    Dcgm(440, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L0", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 0"),
    Dcgm(441, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L1", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L1", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 1"),
    Dcgm(442, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L2", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L2", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 2"),
    Dcgm(443, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L3", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L3", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 3"),
    Dcgm(444, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L4", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L4", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 4"),
    Dcgm(445, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L5", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L5", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 5"),
    Dcgm(446, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L12", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L12", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 12"),
    Dcgm(447, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L13", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L13", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 13"),
    Dcgm(448, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L14", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L14", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 14"),
    // DCGM metadata gives 449 the unit BW_MBPS while dcgm-exporter types it
    // `counter` (and prints 0 when idle); we treat it as a throughput level.
    Dcgm(449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL",
         T::kInt64, U::kMegabytesPerSecond, K::kGauge, C::kNvlink,
         "NVLink bandwidth summed over all links (exporter TYPE says counter)"),
    Dcgm(475, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L6", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L6", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 6"),
    Dcgm(476, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L7", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L7", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 7"),
    Dcgm(477, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L8", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L8", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 8"),
    Dcgm(478, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L9", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L9", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 9"),
    Dcgm(479, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L10", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L10", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 10"),
    Dcgm(480, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L11", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L11", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 11"),
    Dcgm(494, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L15", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L15", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 15"),
    Dcgm(495, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L16", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L16", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 16"),
    Dcgm(496, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L17", "DCGM_FI_DEV_NVLINK_THROUGHPUT_L17", T::kInt64,
         U::kMegabytesPerSecond, K::kGauge, C::kNvlink, "NVLink bandwidth of link 17"),
    Dcgm(526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "", T::kInt64, U::kNone, K::kEnum, C::kIdentity,
         "vGPU license status of the instance"),

    // --- Profiling (DCP) fields (section 2.2). Ratios are 0..1; on Hopper and
    // newer they come from NVML GPM and cannot be sampled faster than 100 ms.
    Dcgm(1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "share of time a graphics/compute context is bound and its pipe is busy"),
    Dcgm(1002, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", T::kDouble, U::kRatio,
         K::kGauge, C::kSmOccupancy,
         "share of cycles an SM has at least one warp assigned, averaged over all SMs"),
    Dcgm(1003, "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "resident warps as a share of the maximum an SM can hold"),
    Dcgm(1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy, "share of cycles any tensor pipe is active"),
    Dcgm(1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", T::kDouble, U::kRatio,
         K::kGauge, C::kMemoryDram,
         "share of cycles the device-memory interface moves data; about 0.8 is the practical peak"),
    Dcgm(1006, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy, "share of cycles the FP64 pipe is active"),
    Dcgm(1007, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy, "share of cycles the FP32 pipe is active"),
    Dcgm(1008, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "share of cycles the FP16 pipe is active (tensor HMMA not included)"),
    Dcgm(1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge, C::kPcie,
         "PCIe bytes per second sent by the GPU (device to host), headers included"),
    Dcgm(1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge, C::kPcie,
         "PCIe bytes per second received by the GPU (host to device), headers included"),
    Dcgm(1011, "DCGM_FI_PROF_NVLINK_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent, all links, headers included"),
    Dcgm(1012, "DCGM_FI_PROF_NVLINK_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received, all links, headers included"),
    Dcgm(1013, "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "DCGM_FI_PROF_IMMA_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "share of cycles the integer (IMMA) tensor pipe is active"),
    Dcgm(1014, "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "DCGM_FI_PROF_HMMA_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "share of cycles the half-precision (HMMA) tensor pipe is active"),
    Dcgm(1015, "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "DCGM_FI_PROF_DFMA_UTIL_RATIO", T::kDouble,
         U::kRatio, K::kGauge, C::kSmOccupancy,
         "share of cycles the FP64 (DFMA) tensor pipe is active"),
    Dcgm(1016, "DCGM_FI_PROF_PIPE_INT_ACTIVE", "DCGM_FI_PROF_INT_UTIL_RATIO", T::kDouble, U::kRatio,
         K::kGauge, C::kSmOccupancy, "share of cycles the integer pipe is active"),
    Dcgm(1040, "DCGM_FI_PROF_NVLINK_L0_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 0, headers included"),
    Dcgm(1041, "DCGM_FI_PROF_NVLINK_L0_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 0, headers included"),
    Dcgm(1042, "DCGM_FI_PROF_NVLINK_L1_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 1, headers included"),
    Dcgm(1043, "DCGM_FI_PROF_NVLINK_L1_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 1, headers included"),
    Dcgm(1044, "DCGM_FI_PROF_NVLINK_L2_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 2, headers included"),
    Dcgm(1045, "DCGM_FI_PROF_NVLINK_L2_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 2, headers included"),
    Dcgm(1046, "DCGM_FI_PROF_NVLINK_L3_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 3, headers included"),
    Dcgm(1047, "DCGM_FI_PROF_NVLINK_L3_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 3, headers included"),
    Dcgm(1048, "DCGM_FI_PROF_NVLINK_L4_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 4, headers included"),
    Dcgm(1049, "DCGM_FI_PROF_NVLINK_L4_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 4, headers included"),
    Dcgm(1050, "DCGM_FI_PROF_NVLINK_L5_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 5, headers included"),
    Dcgm(1051, "DCGM_FI_PROF_NVLINK_L5_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 5, headers included"),
    Dcgm(1052, "DCGM_FI_PROF_NVLINK_L6_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 6, headers included"),
    Dcgm(1053, "DCGM_FI_PROF_NVLINK_L6_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 6, headers included"),
    Dcgm(1054, "DCGM_FI_PROF_NVLINK_L7_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 7, headers included"),
    Dcgm(1055, "DCGM_FI_PROF_NVLINK_L7_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 7, headers included"),
    Dcgm(1056, "DCGM_FI_PROF_NVLINK_L8_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 8, headers included"),
    Dcgm(1057, "DCGM_FI_PROF_NVLINK_L8_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 8, headers included"),
    Dcgm(1058, "DCGM_FI_PROF_NVLINK_L9_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 9, headers included"),
    Dcgm(1059, "DCGM_FI_PROF_NVLINK_L9_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 9, headers included"),
    Dcgm(1060, "DCGM_FI_PROF_NVLINK_L10_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 10, headers included"),
    Dcgm(1061, "DCGM_FI_PROF_NVLINK_L10_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 10, headers included"),
    Dcgm(1062, "DCGM_FI_PROF_NVLINK_L11_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 11, headers included"),
    Dcgm(1063, "DCGM_FI_PROF_NVLINK_L11_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 11, headers included"),
    Dcgm(1064, "DCGM_FI_PROF_NVLINK_L12_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 12, headers included"),
    Dcgm(1065, "DCGM_FI_PROF_NVLINK_L12_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 12, headers included"),
    Dcgm(1066, "DCGM_FI_PROF_NVLINK_L13_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 13, headers included"),
    Dcgm(1067, "DCGM_FI_PROF_NVLINK_L13_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 13, headers included"),
    Dcgm(1068, "DCGM_FI_PROF_NVLINK_L14_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 14, headers included"),
    Dcgm(1069, "DCGM_FI_PROF_NVLINK_L14_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 14, headers included"),
    Dcgm(1070, "DCGM_FI_PROF_NVLINK_L15_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 15, headers included"),
    Dcgm(1071, "DCGM_FI_PROF_NVLINK_L15_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 15, headers included"),
    Dcgm(1072, "DCGM_FI_PROF_NVLINK_L16_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 16, headers included"),
    Dcgm(1073, "DCGM_FI_PROF_NVLINK_L16_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 16, headers included"),
    Dcgm(1074, "DCGM_FI_PROF_NVLINK_L17_TX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second sent on link 17, headers included"),
    Dcgm(1075, "DCGM_FI_PROF_NVLINK_L17_RX_BYTES", "", T::kInt64, U::kBytesPerSecond, K::kGauge,
         C::kNvlink, "NVLink bytes per second received on link 17, headers included"),
    // Cumulative GPM counters (newer DCGM). Deltas divided by the elapsed-cycle
    // delta give exact ratios over any window.
    Dcgm(1084, "DCGM_FI_PROF_SM_CYCLES_ELAPSED_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "SM cycles elapsed"),
    Dcgm(1085, "DCGM_FI_PROF_SM_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "SM cycles with at least one warp assigned"),
    Dcgm(1086, "DCGM_FI_PROF_MMA_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles any tensor (MMA) pipe was active"),
    Dcgm(1087, "DCGM_FI_PROF_DMMA_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the FP64 tensor (DMMA) pipe was active"),
    Dcgm(1088, "DCGM_FI_PROF_HMMA_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the half-precision tensor (HMMA) pipe was active"),
    Dcgm(1089, "DCGM_FI_PROF_IMMA_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the integer tensor (IMMA) pipe was active"),
    Dcgm(1090, "DCGM_FI_PROF_DFMA_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the DFMA tensor pipe was active"),
    Dcgm(1091, "DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL", "", T::kInt64, U::kBytes, K::kCounter, C::kPcie,
         "PCIe bytes sent by the GPU"),
    Dcgm(1092, "DCGM_FI_PROF_PCIE_RX_BYTES_TOTAL", "", T::kInt64, U::kBytes, K::kCounter, C::kPcie,
         "PCIe bytes received by the GPU"),
    Dcgm(1093, "DCGM_FI_PROF_INT_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the integer pipe was active"),
    Dcgm(1094, "DCGM_FI_PROF_FP64_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the FP64 pipe was active"),
    Dcgm(1095, "DCGM_FI_PROF_FP32_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the FP32 pipe was active"),
    Dcgm(1096, "DCGM_FI_PROF_FP16_CYCLES_ACTIVE_TOTAL", "", T::kInt64, U::kCycles, K::kCounter,
         C::kSmOccupancy, "cycles the FP16 pipe was active"),

    // --- Per-reason throttle durations (section 2.3; NVML fields 74, 76, 269-271).
    // delta(ns) / delta(wall ns) is the share of time spent throttled.
    Dcgm(1420, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS", "", T::kInt64, U::kNanoseconds,
         K::kCounter, C::kClocks, "time clocks were lowered to stay under the power limit"),
    // DCGM 4.6's Python bindings spell 1421 ..._SYNC_BOOST_COUNT_NS.
    Dcgm(1421, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST_NS",
         "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST_COUNT_NS", T::kInt64, U::kNanoseconds,
         K::kCounter, C::kClocks, "time clocks were held to the minimum of a sync-boost group"),
    Dcgm(1422, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS", "", T::kInt64,
         U::kNanoseconds, K::kCounter, C::kClocks,
         "time clocks were lowered to keep GPU or memory under max operating temperature"),
    Dcgm(1423, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS", "", T::kInt64,
         U::kNanoseconds, K::kCounter, C::kClocks,
         "time in HW thermal slowdown (clocks cut by half or more)"),
    Dcgm(1424, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS", "", T::kInt64,
         U::kNanoseconds, K::kCounter, C::kClocks,
         "time in HW power-brake slowdown (external brake, e.g. from the power supply)"),

    // --- DCGM 4.6 per-link NVLink entity fields (one id, link in the entity).
    Dcgm(1532, "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK", "", T::kInt64, U::kBytesPerSecond,
         K::kGauge, C::kNvlink, "NVLink bytes sent on one link (DCGM 4.6 link entity)"),
    Dcgm(1533, "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK", "", T::kInt64, U::kBytesPerSecond,
         K::kGauge, C::kNvlink, "NVLink bytes received on one link (DCGM 4.6 link entity)"),
};

constexpr std::size_t kFieldCount = std::size(kFields);

constexpr bool FieldsAreOrdered() {
  std::size_t i = 0;
  while (i < kFieldCount && kFields[i].origin == FieldOrigin::kExporterMetric) {
    if (kFields[i].id != kNoFieldId) return false;
    ++i;
  }
  for (FieldId previous = kNoFieldId; i < kFieldCount; ++i) {
    if (kFields[i].origin != FieldOrigin::kDcgmField || kFields[i].id <= previous) return false;
    previous = kFields[i].id;
  }
  return true;
}
static_assert(FieldsAreOrdered(),
              "kFields: exporter metrics first, then DCGM field ids strictly ascending");

// Every legacy and 4.6 name points at its entry; sorted once, at compile time,
// so a lookup is a binary search with no allocation and no start-up cost.
struct NameEntry {
  std::string_view name;
  std::uint16_t index;  // into kFields
};

constexpr std::size_t CountNames() {
  std::size_t n = 0;
  for (const FieldInfo& f : kFields) n += f.dcgm46_name.empty() ? 1u : 2u;
  return n;
}

constexpr auto kNameIndex = [] {
  std::array<NameEntry, CountNames()> index{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < kFieldCount; ++i) {
    const auto field_index = static_cast<std::uint16_t>(i);
    index[n++] = NameEntry{kFields[i].name, field_index};
    if (!kFields[i].dcgm46_name.empty()) {
      index[n++] = NameEntry{kFields[i].dcgm46_name, field_index};
    }
  }
  std::sort(index.begin(), index.end(),
            [](const NameEntry& a, const NameEntry& b) { return a.name < b.name; });
  return index;
}();

constexpr bool NamesAreUnique() {
  for (std::size_t i = 1; i < kNameIndex.size(); ++i) {
    if (kNameIndex[i - 1].name == kNameIndex[i].name) return false;
  }
  return true;
}
static_assert(NamesAreUnique(), "kFields: a name appears twice among legacy and 4.6 names");
static_assert(kFieldCount < 0xFFFF, "NameEntry::index is 16 bits");

constexpr double kTwoPow63 = 9223372036854775808.0;

}  // namespace

std::span<const FieldInfo> AllFields() { return kFields; }

const FieldInfo* FindFieldById(FieldId id) {
  if (id == kNoFieldId) return nullptr;
  const auto* it = std::lower_bound(std::begin(kFields), std::end(kFields), id,
                                    [](const FieldInfo& f, FieldId wanted) {
                                      // Exporter metrics (id 0) sort before every DCGM id.
                                      return f.id < wanted;
                                    });
  if (it == std::end(kFields) || it->id != id) return nullptr;
  return it;
}

const FieldInfo* FindFieldByName(std::string_view name) {
  const auto* it = std::lower_bound(
      kNameIndex.begin(), kNameIndex.end(), name,
      [](const NameEntry& entry, std::string_view wanted) { return entry.name < wanted; });
  if (it == kNameIndex.end() || it->name != name) return nullptr;
  return &kFields[it->index];
}

std::string_view CanonicalFieldName(std::string_view name) {
  const FieldInfo* field = FindFieldByName(name);
  return field == nullptr ? name : field->name;
}

std::string_view FieldCategoryName(FieldCategory category) {
  switch (category) {
    case FieldCategory::kIdentity:
      return "identity";
    case FieldCategory::kClocks:
      return "clocks";
    case FieldCategory::kPower:
      return "power";
    case FieldCategory::kThermal:
      return "thermal";
    case FieldCategory::kSmOccupancy:
      return "sm_occupancy";
    case FieldCategory::kMemoryDram:
      return "memory_dram";
    case FieldCategory::kPcie:
      return "pcie";
    case FieldCategory::kNvlink:
      return "nvlink";
    case FieldCategory::kErrors:
      return "errors";
  }
  return "unknown";
}

std::string_view ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kGauge:
      return "gauge";
    case ValueKind::kCounter:
      return "counter";
    case ValueKind::kBitmask:
      return "bitmask";
    case ValueKind::kEnum:
      return "enum";
    case ValueKind::kLabel:
      return "label";
  }
  return "unknown";
}

std::string_view UnitSymbol(Unit unit) {
  switch (unit) {
    case Unit::kNone:
      return "";
    case Unit::kMegahertz:
      return "MHz";
    case Unit::kWatts:
      return "W";
    case Unit::kCelsius:
      return "C";
    case Unit::kMillijoules:
      return "mJ";
    case Unit::kRatio:
      return "ratio";
    case Unit::kPercent:
      return "%";
    case Unit::kBytesPerSecond:
      return "B/s";
    case Unit::kKilobytesPerSecond:
      return "KB/s";
    case Unit::kMegabytesPerSecond:
      return "MB/s";
    case Unit::kMebibytes:
      return "MiB";
    case Unit::kBytes:
      return "B";
    case Unit::kCount:
      return "count";
    case Unit::kBitmask:
      return "bitmask";
    case Unit::kNanoseconds:
      return "ns";
    case Unit::kCycles:
      return "cycles";
    case Unit::kLanes:
      return "lanes";
  }
  return "unknown";
}

std::string_view DcgmTypeName(DcgmType type) {
  switch (type) {
    case DcgmType::kInt64:
      return "int64";
    case DcgmType::kDouble:
      return "double";
    case DcgmType::kString:
      return "string";
  }
  return "unknown";
}

bool IsBlankSentinel(double value) {
  if (std::isnan(value)) return false;
  // Every int64 at or above DCGM_INT64_BLANK rounds to 2^63 as a double.
  if (value >= kTwoPow63) return true;
  for (std::int64_t offset = 0; offset < 4; ++offset) {
    if (value == static_cast<double>(kInt32Blank + offset)) return true;
    if (value == kFp64Blank + static_cast<double>(offset)) return true;
  }
  return false;
}

bool IsBlankStringSentinel(std::string_view value) {
  return std::find(std::begin(kStringBlanks), std::end(kStringBlanks), value) !=
         std::end(kStringBlanks);
}

std::string_view CanonicalLabelName(std::string_view label) {
  if (label == "Hostname") return "hostname";
  if (label == "uuid") return "UUID";
  if (label == "pod_name") return "pod";
  if (label == "pod_namespace") return "namespace";
  if (label == "container_name") return "container";
  return label;
}

}  // namespace gpucanary::dcgm
