#pragma once
// libnvidia-ml.so.1 opened at run time (dlopen), so that gpucanary builds and
// runs on machines without NVIDIA software and says so plainly when NVML is
// not there (docs/nvml.md).
//
// Entry points are looked up by their real, versioned symbol names
// (nvml.h #defines nvmlInit to nvmlInit_v2 and so on, and dlsym sees only the
// real names). Where a driver may lack the newest version, the older name is
// tried next, as NVIDIA's go-nvml does; an optional entry point that no name
// resolves stays null, and the collector treats it as NOT_SUPPORTED.
//
// Thread-safe after Open: the table is read-only and NVML itself is
// thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "nvml/nvml_abi.h"

namespace gpucanary::nvml {

// The soname the NVIDIA driver installs (libnvidia-ml.so without the .1
// comes only with development packages).
inline constexpr std::string_view kDefaultLibrary = "libnvidia-ml.so.1";

// The entry points; null when the library lacks every name for one.
struct Api {
  // Required: Open fails without them.
  nvmlInit_fn init = nullptr;  // nvmlInit_v2, else nvmlInit
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlDeviceGetCount_fn device_get_count = nullptr;                    // _v2, else v1
  nvmlDeviceGetHandleByIndex_fn device_get_handle_by_index = nullptr;  // _v2, else v1
  // Optional.
  nvmlSystemGetDriverVersion_fn system_get_driver_version = nullptr;
  nvmlDeviceGetString_fn device_get_name = nullptr;
  nvmlDeviceGetString_fn device_get_uuid = nullptr;
  nvmlDeviceGetPciInfo_fn device_get_pci_info = nullptr;  // _v3, else _v2
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, else ...ClocksThrottleReasons.
  nvmlDeviceGetUll_fn device_get_clocks_event_reasons = nullptr;
  nvmlDeviceGetUint_fn device_get_power_usage = nullptr;           // mW
  nvmlDeviceGetUll_fn device_get_total_energy = nullptr;           // mJ
  nvmlDeviceGetUint_fn device_get_power_limit = nullptr;           // mW
  nvmlDeviceGetUint_fn device_get_enforced_power_limit = nullptr;  // mW
  nvmlDeviceGetTemperatureV_fn device_get_temperature_v = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature = nullptr;
  nvmlDeviceGetFieldValues_fn device_get_field_values = nullptr;
  nvmlDeviceGetUint_fn device_get_curr_pcie_link_generation = nullptr;
  nvmlDeviceGetUint_fn device_get_curr_pcie_link_width = nullptr;
  nvmlDeviceGetUint_fn device_get_max_pcie_link_generation = nullptr;
  nvmlDeviceGetUint_fn device_get_max_pcie_link_width = nullptr;
  nvmlDeviceGetUint_fn device_get_pcie_replay_counter = nullptr;
  nvmlDeviceGetPcieThroughput_fn device_get_pcie_throughput = nullptr;  // KB/s
  nvmlDeviceGetUtilizationRates_fn device_get_utilization_rates = nullptr;
  nvmlDeviceGetMemoryInfo_v2_fn device_get_memory_info_v2 = nullptr;
  nvmlDeviceGetMemoryInfo_fn device_get_memory_info = nullptr;
  nvmlDeviceGetTotalEccErrors_fn device_get_total_ecc_errors = nullptr;
  nvmlDeviceGetRemappedRows_fn device_get_remapped_rows = nullptr;
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlDeviceRegisterEvents_fn device_register_events = nullptr;
  nvmlEventSetWait_fn event_set_wait = nullptr;  // _v2, else v1
  nvmlEventSetFree_fn event_set_free = nullptr;
  nvmlGpmQueryDeviceSupport_fn gpm_query_device_support = nullptr;
  nvmlGpmSampleAlloc_fn gpm_sample_alloc = nullptr;
  nvmlGpmSampleFree_fn gpm_sample_free = nullptr;
  nvmlGpmSampleGet_fn gpm_sample_get = nullptr;
  nvmlGpmMetricsGet_fn gpm_metrics_get = nullptr;
};

class Library {
 public:
  // Opens `path` (a file name searched like any dlopen, or a path), resolves
  // the entry points and initialises NVML. Errors:
  //  - kNotFound: the library cannot be loaded ("NVML is not available: ...",
  //    with dlerror's reason and what to do);
  //  - kFailedPrecondition: it lacks a required entry point (not NVML, or a
  //    driver too old);
  //  - kUnavailable: nvmlInit failed (driver not loaded, library and kernel
  //    module versions differ, no permission), with NVML's own words.
  static Result<std::unique_ptr<Library>> Open(
      const std::string& path = std::string(kDefaultLibrary));

  ~Library();  // nvmlShutdown, dlclose
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  const std::string& path() const { return path_; }

  // NVML's text for `code` ("GPU is lost"), with the number: "GPU is lost (15)".
  std::string ErrorText(nvmlReturn_t code) const;

  // The symbols looked up for optional entry points that resolved under no
  // name (for the log: "nvmlGpmSampleGet" on a pre-Hopper driver).
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  Library() = default;

  void* handle_ = nullptr;
  bool initialised_ = false;
  std::string path_;
  Api api_;
  std::vector<std::string> missing_;
};

}  // namespace gpucanary::nvml
