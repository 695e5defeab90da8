#include "nvml/library.h"

#include <dlfcn.h>

#include <initializer_list>
#include <utility>

namespace gpucanary::nvml {
namespace {

// The first of `names` the library defines, or null.
void* FindSymbol(void* handle, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* sym = dlsym(handle, name)) return sym;
  }
  return nullptr;
}

template <typename Fn>
void Resolve(void* handle, Fn& out, std::initializer_list<const char*> names,
             std::vector<std::string>& missing) {
  void* sym = FindSymbol(handle, names);
  // POSIX guarantees that a dlsym result converts to a function pointer.
  out = reinterpret_cast<Fn>(sym);
  if (sym == nullptr) missing.emplace_back(*names.begin());
}

// The entry points gpucanary can run without; the first name of each that
// resolves under none of its names goes to `m`.
void ResolveOptional(void* h, Api& a, std::vector<std::string>& m) {
  Resolve(h, a.system_get_driver_version, {"nvmlSystemGetDriverVersion"}, m);
  Resolve(h, a.device_get_name, {"nvmlDeviceGetName"}, m);
  Resolve(h, a.device_get_uuid, {"nvmlDeviceGetUUID"}, m);
  Resolve(h, a.device_get_pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, m);
  Resolve(h, a.device_get_clock_info, {"nvmlDeviceGetClockInfo"}, m);
  Resolve(h, a.device_get_clocks_event_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
          m);
  Resolve(h, a.device_get_power_usage, {"nvmlDeviceGetPowerUsage"}, m);
  Resolve(h, a.device_get_total_energy, {"nvmlDeviceGetTotalEnergyConsumption"}, m);
  Resolve(h, a.device_get_power_limit, {"nvmlDeviceGetPowerManagementLimit"}, m);
  Resolve(h, a.device_get_enforced_power_limit, {"nvmlDeviceGetEnforcedPowerLimit"}, m);
  Resolve(h, a.device_get_temperature_v, {"nvmlDeviceGetTemperatureV"}, m);
  Resolve(h, a.device_get_temperature, {"nvmlDeviceGetTemperature"}, m);
  Resolve(h, a.device_get_field_values, {"nvmlDeviceGetFieldValues"}, m);
  Resolve(h, a.device_get_curr_pcie_link_generation, {"nvmlDeviceGetCurrPcieLinkGeneration"}, m);
  Resolve(h, a.device_get_curr_pcie_link_width, {"nvmlDeviceGetCurrPcieLinkWidth"}, m);
  Resolve(h, a.device_get_max_pcie_link_generation, {"nvmlDeviceGetMaxPcieLinkGeneration"}, m);
  Resolve(h, a.device_get_max_pcie_link_width, {"nvmlDeviceGetMaxPcieLinkWidth"}, m);
  Resolve(h, a.device_get_pcie_replay_counter, {"nvmlDeviceGetPcieReplayCounter"}, m);
  Resolve(h, a.device_get_pcie_throughput, {"nvmlDeviceGetPcieThroughput"}, m);
  Resolve(h, a.device_get_utilization_rates, {"nvmlDeviceGetUtilizationRates"}, m);
  Resolve(h, a.device_get_memory_info_v2, {"nvmlDeviceGetMemoryInfo_v2"}, m);
  Resolve(h, a.device_get_memory_info, {"nvmlDeviceGetMemoryInfo"}, m);
  Resolve(h, a.device_get_total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"}, m);
  Resolve(h, a.device_get_remapped_rows, {"nvmlDeviceGetRemappedRows"}, m);
  Resolve(h, a.event_set_create, {"nvmlEventSetCreate"}, m);
  Resolve(h, a.device_register_events, {"nvmlDeviceRegisterEvents"}, m);
  Resolve(h, a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, m);
  Resolve(h, a.event_set_free, {"nvmlEventSetFree"}, m);
  Resolve(h, a.gpm_query_device_support, {"nvmlGpmQueryDeviceSupport"}, m);
  Resolve(h, a.gpm_sample_alloc, {"nvmlGpmSampleAlloc"}, m);
  Resolve(h, a.gpm_sample_free, {"nvmlGpmSampleFree"}, m);
  Resolve(h, a.gpm_sample_get, {"nvmlGpmSampleGet"}, m);
  Resolve(h, a.gpm_metrics_get, {"nvmlGpmMetricsGet"}, m);
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Open(const std::string& path) {
  std::unique_ptr<Library> lib(new Library());
  lib->path_ = path;
  // dlerror's text is per thread in glibc; Open runs once, at start-up.
  dlerror();  // NOLINT(concurrency-mt-unsafe): clears a stale error
  lib->handle_ = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* why = dlerror();  // NOLINT(concurrency-mt-unsafe): see above
    return Error(StatusCode::kNotFound,
                 "NVML is not available: cannot load " + path + " (" +
                     (why != nullptr ? why : "unknown reason") +
                     "); it comes with the NVIDIA driver: install the driver, or name the "
                     "library with --nvml-library / nvml.library");
  }
  Api& a = lib->api_;
  std::vector<std::string> required_missing;
  Resolve(lib->handle_, a.init, {"nvmlInit_v2", "nvmlInit"}, required_missing);
  Resolve(lib->handle_, a.shutdown, {"nvmlShutdown"}, required_missing);
  Resolve(lib->handle_, a.error_string, {"nvmlErrorString"}, required_missing);
  Resolve(lib->handle_, a.device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
          required_missing);
  Resolve(lib->handle_, a.device_get_handle_by_index,
          {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, required_missing);
  if (!required_missing.empty()) {
    std::string names;
    for (const std::string& n : required_missing) names += (names.empty() ? "" : ", ") + n;
    return Error(StatusCode::kFailedPrecondition,
                 path + " is not a usable NVML library: it lacks " + names);
  }

  ResolveOptional(lib->handle_, a, lib->missing_);

  const nvmlReturn_t rc = a.init();
  if (rc != NVML_SUCCESS) {
    return Error(
        StatusCode::kUnavailable,
        "NVML in " + path + " did not start: nvmlInit: " + lib->ErrorText(rc) +
            (rc == NVML_ERROR_DRIVER_NOT_LOADED ? "; the NVIDIA kernel driver is not loaded"
             : rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH
                 ? "; the library and the kernel module are different versions "
                   "(reboot or reload the driver after an upgrade)"
                 : ""));
  }
  lib->initialised_ = true;
  return lib;
}

Library::~Library() {
  if (initialised_) api_.shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

std::string Library::ErrorText(nvmlReturn_t code) const {
  const char* text = api_.error_string != nullptr ? api_.error_string(code) : nullptr;
  std::string out = text != nullptr ? text : "NVML error";
  out += " (" + std::to_string(code) + ")";
  return out;
}

}  // namespace gpucanary::nvml
