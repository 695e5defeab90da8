#include "nvml/collector.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "dcgm/xid.h"

namespace gpucanary::nvml {
namespace {

using dcgm::ExporterField;

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

constexpr std::array<const char*, kQueryCount> kQueryNames = {
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
  ExporterField field;
  double scale;
};
constexpr std::array<GpmMetric, 7> kGpmMetrics = {{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, ExporterField::kGrEngineActive, 0.01},
    {NVML_GPM_METRIC_SM_UTIL, ExporterField::kSmActive, 0.01},
    {NVML_GPM_METRIC_SM_OCCUPANCY, ExporterField::kSmOccupancy, 0.01},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, ExporterField::kTensorActive, 0.01},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, ExporterField::kDramActive, 0.01},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, ExporterField::kPcieTxBytes, 1024.0 * 1024.0},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, ExporterField::kPcieRxBytes, 1024.0 * 1024.0},
}};

constexpr double kMib = 1024.0 * 1024.0;

// NOT_SUPPORTED, no permission, or an entry point the driver lacks: the field
// does not exist on this GPU for us.
bool IsUnsupported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION ||
         rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string FromBuffer(const char* buf, std::size_t size) {
  return std::string(buf, strnlen(buf, size));
}

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

struct Collector::Gpu {
  int index = 0;
  nvmlDevice_t handle = nullptr;
  dcgm::GpuIdentity id;
  // Sampling thread only.
  std::bitset<kQueryCount> unsupported;
  std::bitset<kQueryCount> error_logged;
  bool temperature_v = true;  // nvmlDeviceGetTemperatureV until it is refused
  bool gpm = false;
  std::array<nvmlGpmSample_t, 2> gpm_samples{};
  int gpm_last = 0;  // which of gpm_samples holds the last sample
  bool gpm_have_sample = false;
  std::int64_t gpm_sample_ms = 0;
  std::array<std::optional<double>, kGpmMetrics.size()> gpm_values{};  // the last window
  // Shared with the event thread: guarded by Collector::mu_.
  bool lost = false;
  std::string lost_reason;
  std::optional<double> last_xid;
  std::uint64_t xids = 0;
  std::uint64_t errors = 0;
  bool xid_events = false;
};

Collector::Collector(const Library& library, CollectorOptions options)
    : lib_(library), api_(library.api()), options_(std::move(options)) {}

void Collector::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

Result<std::unique_ptr<Collector>> Collector::Start(const Library& library,
                                                    CollectorOptions options) {
  std::unique_ptr<Collector> c(new Collector(library, std::move(options)));
  const Api& api = c->api_;
  unsigned count = 0;
  if (const nvmlReturn_t rc = api.device_get_count(&count); rc != NVML_SUCCESS) {
    return Error(StatusCode::kUnavailable,
                 "NVML cannot count the GPUs: nvmlDeviceGetCount: " + library.ErrorText(rc));
  }
  c->driver_version_ = c->options_.driver_version;
  if (c->driver_version_.empty() && api.system_get_driver_version != nullptr) {
    std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> buf{};
    if (api.system_get_driver_version(buf.data(), static_cast<unsigned>(buf.size())) ==
        NVML_SUCCESS) {
      c->driver_version_ = FromBuffer(buf.data(), buf.size());
    }
  }
  for (unsigned i = 0; i < count; ++i) {
    auto gpu = std::make_unique<Gpu>();
    gpu->index = static_cast<int>(i);
    gpu->id.index = gpu->index;
    gpu->id.hostname = c->options_.hostname;
    gpu->id.driver_version = c->driver_version_;
    const nvmlReturn_t rc = api.device_get_handle_by_index(i, &gpu->handle);
    if (rc != NVML_SUCCESS) {
      gpu->lost = true;
      gpu->lost_reason = "nvmlDeviceGetHandleByIndex: " + library.ErrorText(rc);
      c->Log("GPU " + std::to_string(i) + " cannot be read: " + gpu->lost_reason);
      c->gpus_.push_back(std::move(gpu));
      continue;
    }
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> buf{};
    if (api.device_get_name != nullptr &&
        api.device_get_name(gpu->handle, buf.data(), static_cast<unsigned>(buf.size())) ==
            NVML_SUCCESS) {
      gpu->id.model_name = FromBuffer(buf.data(), buf.size());
    }
    buf.fill('\0');
    if (api.device_get_uuid != nullptr &&
        api.device_get_uuid(gpu->handle, buf.data(), static_cast<unsigned>(buf.size())) ==
            NVML_SUCCESS) {
      gpu->id.uuid = FromBuffer(buf.data(), buf.size());
    }
    nvmlPciInfo_t pci{};
    if (api.device_get_pci_info != nullptr &&
        api.device_get_pci_info(gpu->handle, &pci) == NVML_SUCCESS) {
      gpu->id.pci_bus_id = FromBuffer(pci.busId, sizeof(pci.busId));
    }
    if (c->options_.gpm && api.gpm_query_device_support != nullptr &&
        api.gpm_sample_alloc != nullptr && api.gpm_sample_get != nullptr &&
        api.gpm_metrics_get != nullptr && api.gpm_sample_free != nullptr) {
      nvmlGpmSupport_t support{};
      support.version = NVML_GPM_SUPPORT_VERSION;
      if (api.gpm_query_device_support(gpu->handle, &support) == NVML_SUCCESS &&
          support.isSupportedDevice != 0 &&
          api.gpm_sample_alloc(&gpu->gpm_samples[0]) == NVML_SUCCESS &&
          api.gpm_sample_alloc(&gpu->gpm_samples[1]) == NVML_SUCCESS) {
        gpu->gpm = true;
      }
    }
    c->gpus_.push_back(std::move(gpu));
  }
  c->StartEvents();
  return c;
}

Collector::~Collector() {
  stop_.store(true);
  if (event_thread_.joinable()) event_thread_.join();
  if (event_set_ != nullptr && api_.event_set_free != nullptr) api_.event_set_free(event_set_);
  for (const std::unique_ptr<Gpu>& gpu : gpus_) {
    for (nvmlGpmSample_t s : gpu->gpm_samples) {
      if (s != nullptr) api_.gpm_sample_free(s);
    }
  }
}

void Collector::StartEvents() {
  if (!options_.xid_events || api_.event_set_create == nullptr ||
      api_.device_register_events == nullptr || api_.event_set_wait == nullptr ||
      api_.event_set_free == nullptr) {
    return;
  }
  if (const nvmlReturn_t rc = api_.event_set_create(&event_set_); rc != NVML_SUCCESS) {
    Log("Xid events are not available: nvmlEventSetCreate: " + lib_.ErrorText(rc));
    event_set_ = nullptr;
    return;
  }
  bool any = false;
  for (const std::unique_ptr<Gpu>& gpu : gpus_) {
    if (gpu->lost) continue;
    const nvmlReturn_t rc =
        api_.device_register_events(gpu->handle, nvmlEventTypeXidCriticalError, event_set_);
    if (rc == NVML_SUCCESS) {
      gpu->xid_events = true;
      any = true;
    } else if (!IsUnsupported(rc)) {
      Log("GPU " + std::to_string(gpu->index) +
          ": no Xid events: nvmlDeviceRegisterEvents: " + lib_.ErrorText(rc));
    }
  }
  if (any) event_thread_ = std::thread([this] { EventLoop(); });
}

void Collector::EventLoop() {
  bool error_logged = false;
  while (!stop_.load()) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc =
        api_.event_set_wait(event_set_, &data, static_cast<unsigned>(options_.event_wait_ms));
    if (rc == NVML_ERROR_TIMEOUT) continue;
    if (rc != NVML_SUCCESS) {
      // An interrupted or failing wait: do not spin on it.
      if (!error_logged) Log("nvmlEventSetWait: " + lib_.ErrorText(rc));
      error_logged = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.event_wait_ms));
      continue;
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    Gpu* gpu = nullptr;
    for (const std::unique_ptr<Gpu>& g : gpus_) {
      if (g->handle == data.device) gpu = g.get();
    }
    if (gpu == nullptr) continue;
    {
      const std::lock_guard lock(mu_);
      gpu->last_xid = static_cast<double>(data.eventData);
      ++gpu->xids;
    }
    const dcgm::XidInfo* info = dcgm::FindXid(static_cast<std::uint32_t>(data.eventData));
    Log("GPU " + std::to_string(gpu->index) + " (" + gpu->id.uuid + "): Xid " +
        std::to_string(data.eventData) +
        (info != nullptr ? " (" + std::string(info->err_msg) + ")" : std::string()));
  }
}

void Collector::Sample(std::int64_t now_ms, Snapshot& out) {
  out.time_ms = now_ms;
  out.gpus.resize(gpus_.size());
  out.readings.resize(gpus_.size());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    Gpu& gpu = *gpus_[i];
    out.gpus[i] = gpu.id;
    out.readings[i] = dcgm::Readings{};
    ReadGpu(gpu, now_ms, out.readings[i]);
  }
  out.status = Status();
}

void Collector::ReadGpu(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r) {
  bool lost = false;
  {
    const std::lock_guard lock(mu_);
    lost = gpu.lost;
  }
  // What one call said: true with a value to keep, false otherwise (the
  // field stays absent). Marks the query unsupported or the GPU lost.
  const auto check = [&](Query q, nvmlReturn_t rc) {
    if (rc == NVML_SUCCESS) return true;
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      const std::lock_guard lock(mu_);
      if (!gpu.lost) {
        gpu.lost = true;
        gpu.lost_reason = std::string(kQueryNames[q]) + ": " + lib_.ErrorText(rc);
        Log("GPU " + std::to_string(gpu.index) + " (" + gpu.id.uuid +
            ") is lost: " + gpu.lost_reason + "; its other GPUs are still read");
      }
      lost = true;
      return false;
    }
    if (IsUnsupported(rc)) {
      gpu.unsupported.set(q);
      return false;
    }
    {
      const std::lock_guard lock(mu_);
      ++gpu.errors;
    }
    if (!gpu.error_logged.test(q)) {
      gpu.error_logged.set(q);
      Log("GPU " + std::to_string(gpu.index) + ": " + kQueryNames[q] + ": " + lib_.ErrorText(rc));
    }
    return false;
  };
  // Runs query q unless this GPU does not support it or is lost; `call`
  // returns the nvmlReturn_t and `use` stores the value.
  const auto run = [&](Query q, bool available, auto&& call, auto&& use) {
    if (lost || gpu.unsupported.test(q)) return;
    if (!available) {
      gpu.unsupported.set(q);
      return;
    }
    if (check(q, call())) use();
  };
  nvmlDevice_t h = gpu.handle;
  const Api& a = api_;
  unsigned u = 0;
  unsigned long long ull = 0;  // NOLINT(google-runtime-int): NVML's type

  run(
      kQSmClock, a.device_get_clock_info != nullptr,
      [&] { return a.device_get_clock_info(h, NVML_CLOCK_SM, &u); },
      [&] { r.Set(ExporterField::kSmClock, u); });
  run(
      kQMemClock, a.device_get_clock_info != nullptr,
      [&] { return a.device_get_clock_info(h, NVML_CLOCK_MEM, &u); },
      [&] { r.Set(ExporterField::kMemClock, u); });
  run(
      kQClockEvents, a.device_get_clocks_event_reasons != nullptr,
      [&] { return a.device_get_clocks_event_reasons(h, &ull); },
      [&] { r.Set(ExporterField::kClockEventReasons, static_cast<double>(ull)); });
  nvmlFieldValue_t field{};
  run(
      kQMemoryTemp, a.device_get_field_values != nullptr,
      [&] {
        field = nvmlFieldValue_t{};
        field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
        const nvmlReturn_t rc = a.device_get_field_values(h, 1, &field);
        return rc != NVML_SUCCESS ? rc : field.nvmlReturn;
      },
      [&] {
        if (const std::optional<double> v = FieldValue(field)) {
          r.Set(ExporterField::kMemoryTemp, *v);
        }
      });
  run(
      kQGpuTemp, a.device_get_temperature_v != nullptr || a.device_get_temperature != nullptr,
      [&] {
        if (gpu.temperature_v && a.device_get_temperature_v != nullptr) {
          nvmlTemperature_t t{};
          t.version = nvmlTemperature_v1;
          t.sensorType = NVML_TEMPERATURE_GPU;
          const nvmlReturn_t rc = a.device_get_temperature_v(h, &t);
          if (rc == NVML_SUCCESS) {
            u = static_cast<unsigned>(std::max(t.temperature, 0));
            return rc;
          }
          // A driver with the entry point but another struct version: use
          // the older call from now on.
          if (!(IsUnsupported(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) ||
              a.device_get_temperature == nullptr) {
            return rc;
          }
          gpu.temperature_v = false;
        }
        return a.device_get_temperature(h, NVML_TEMPERATURE_GPU, &u);
      },
      [&] { r.Set(ExporterField::kGpuTemp, u); });
  run(
      kQPower, a.device_get_power_usage != nullptr, [&] { return a.device_get_power_usage(h, &u); },
      [&] { r.Set(ExporterField::kPowerUsage, u / 1000.0); });
  run(
      kQEnergy, a.device_get_total_energy != nullptr,
      [&] { return a.device_get_total_energy(h, &ull); },
      [&] { r.Set(ExporterField::kTotalEnergy, static_cast<double>(ull)); });
  run(
      kQPowerLimit, a.device_get_power_limit != nullptr,
      [&] { return a.device_get_power_limit(h, &u); },
      [&] { r.Set(ExporterField::kPowerMgmtLimit, u / 1000.0); });
  run(
      kQEnforcedLimit, a.device_get_enforced_power_limit != nullptr,
      [&] { return a.device_get_enforced_power_limit(h, &u); },
      [&] { r.Set(ExporterField::kEnforcedPowerLimit, u / 1000.0); });
  run(
      kQPcieReplay, a.device_get_pcie_replay_counter != nullptr,
      [&] { return a.device_get_pcie_replay_counter(h, &u); },
      [&] { r.Set(ExporterField::kPcieReplayCounter, u); });
  nvmlUtilization_t util{};
  run(
      kQUtilization, a.device_get_utilization_rates != nullptr,
      [&] { return a.device_get_utilization_rates(h, &util); },
      [&] {
        r.Set(ExporterField::kGpuUtil, util.gpu);
        r.Set(ExporterField::kMemCopyUtil, util.memory);
      });
  run(
      kQPcieMaxGen, a.device_get_max_pcie_link_generation != nullptr,
      [&] { return a.device_get_max_pcie_link_generation(h, &u); },
      [&] { r.Set(ExporterField::kPcieMaxLinkGen, u); });
  run(
      kQPcieMaxWidth, a.device_get_max_pcie_link_width != nullptr,
      [&] { return a.device_get_max_pcie_link_width(h, &u); },
      [&] { r.Set(ExporterField::kPcieMaxLinkWidth, u); });
  run(
      kQPcieGen, a.device_get_curr_pcie_link_generation != nullptr,
      [&] { return a.device_get_curr_pcie_link_generation(h, &u); },
      [&] { r.Set(ExporterField::kPcieLinkGen, u); });
  run(
      kQPcieWidth, a.device_get_curr_pcie_link_width != nullptr,
      [&] { return a.device_get_curr_pcie_link_width(h, &u); },
      [&] { r.Set(ExporterField::kPcieLinkWidth, u); });
  // Framebuffer in MiB, split as DCGM does: free + used + reserved = total,
  // where NVML's v2 `used` includes `reserved`.
  run(
      kQMemory, a.device_get_memory_info_v2 != nullptr || a.device_get_memory_info != nullptr,
      [&] {
        if (a.device_get_memory_info_v2 != nullptr) {
          nvmlMemory_v2_t m{};
          m.version = nvmlMemory_v2;
          const nvmlReturn_t rc = a.device_get_memory_info_v2(h, &m);
          if (rc == NVML_SUCCESS) {
            const unsigned long long used =  // NOLINT(google-runtime-int)
                m.used >= m.reserved ? m.used - m.reserved : 0;
            r.Set(ExporterField::kFbFree, std::floor(static_cast<double>(m.free) / kMib));
            r.Set(ExporterField::kFbUsed, std::floor(static_cast<double>(used) / kMib));
            r.Set(ExporterField::kFbReserved, std::floor(static_cast<double>(m.reserved) / kMib));
          }
          if (rc == NVML_SUCCESS || a.device_get_memory_info == nullptr ||
              !(IsUnsupported(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
            return rc;
          }
        }
        nvmlMemory_t m{};
        const nvmlReturn_t rc = a.device_get_memory_info(h, &m);
        if (rc == NVML_SUCCESS) {
          r.Set(ExporterField::kFbFree, std::floor(static_cast<double>(m.free) / kMib));
          r.Set(ExporterField::kFbUsed, std::floor(static_cast<double>(m.used) / kMib));
        }
        return rc;
      },
      [] {});
  run(
      kQEccSbe, a.device_get_total_ecc_errors != nullptr,
      [&] {
        return a.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                                             &ull);
      },
      [&] { r.Set(ExporterField::kEccSbeVolTotal, static_cast<double>(ull)); });
  run(
      kQEccDbe, a.device_get_total_ecc_errors != nullptr,
      [&] {
        return a.device_get_total_ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_VOLATILE_ECC, &ull);
      },
      [&] { r.Set(ExporterField::kEccDbeVolTotal, static_cast<double>(ull)); });
  unsigned corrected = 0;
  unsigned uncorrected = 0;
  unsigned pending = 0;
  unsigned failure = 0;
  run(
      kQRemappedRows, a.device_get_remapped_rows != nullptr,
      [&] { return a.device_get_remapped_rows(h, &corrected, &uncorrected, &pending, &failure); },
      [&] {
        r.Set(ExporterField::kCorrectableRemappedRows, corrected);
        r.Set(ExporterField::kUncorrectableRemappedRows, uncorrected);
        r.Set(ExporterField::kRowRemapFailure, failure);
      });
  if (!lost) ReadGpm(gpu, now_ms, r);
  // PCIe traffic: GPM's rates where GPM runs, else NVML's 20 ms throughput
  // sample in KB/s.
  if (!lost && !r.Get(ExporterField::kPcieTxBytes)) {
    run(
        kQPcieTx, a.device_get_pcie_throughput != nullptr,
        [&] { return a.device_get_pcie_throughput(h, NVML_PCIE_UTIL_TX_BYTES, &u); },
        [&] { r.Set(ExporterField::kPcieTxBytes, u * 1024.0); });
    run(
        kQPcieRx, a.device_get_pcie_throughput != nullptr,
        [&] { return a.device_get_pcie_throughput(h, NVML_PCIE_UTIL_RX_BYTES, &u); },
        [&] { r.Set(ExporterField::kPcieRxBytes, u * 1024.0); });
  }

  const std::lock_guard lock(mu_);
  if (lost) r = dcgm::Readings{};  // a lost GPU keeps only its last Xid
  if (gpu.last_xid) r.Set(ExporterField::kXidErrors, *gpu.last_xid);
}

void Collector::ReadGpm(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r) {
  if (!gpu.gpm) return;
  const auto apply = [&] {
    for (std::size_t i = 0; i < kGpmMetrics.size(); ++i) {
      if (gpu.gpm_values[i]) r.Set(kGpmMetrics[i].field, *gpu.gpm_values[i]);
    }
  };
  // Less than NVML's minimum since the last GPM sample: the last window again.
  if (gpu.gpm_have_sample && now_ms - gpu.gpm_sample_ms < kGpmMinIntervalMs) {
    apply();
    return;
  }
  const int next = gpu.gpm_have_sample ? 1 - gpu.gpm_last : gpu.gpm_last;
  const nvmlReturn_t rc =
      api_.gpm_sample_get(gpu.handle, gpu.gpm_samples[static_cast<std::size_t>(next)]);
  if (rc != NVML_SUCCESS) {
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      const std::lock_guard lock(mu_);
      if (!gpu.lost) {
        gpu.lost = true;
        gpu.lost_reason = "nvmlGpmSampleGet: " + lib_.ErrorText(rc);
        Log("GPU " + std::to_string(gpu.index) + " is lost: " + gpu.lost_reason);
      }
    } else if (IsUnsupported(rc)) {
      const std::lock_guard lock(mu_);
      gpu.gpm = false;
    } else {
      const std::lock_guard lock(mu_);
      ++gpu.errors;
    }
    gpu.gpm_values = {};
    return;
  }
  if (!gpu.gpm_have_sample) {  // the first sample opens the first window
    gpu.gpm_have_sample = true;
    gpu.gpm_last = next;
    gpu.gpm_sample_ms = now_ms;
    return;
  }
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
    const std::lock_guard lock(mu_);
    ++gpu.errors;
    if (!gpu.error_logged.test(kQGpm)) {
      gpu.error_logged.set(kQGpm);
      Log("GPU " + std::to_string(gpu.index) + ": nvmlGpmMetricsGet: " + lib_.ErrorText(get_rc));
    }
    return;
  }
  for (std::size_t i = 0; i < kGpmMetrics.size(); ++i) {
    const nvmlGpmMetric_t& m = g.metrics[i];
    if (m.nvmlReturn != NVML_SUCCESS || !std::isfinite(m.value)) continue;
    double v = m.value * kGpmMetrics[i].scale;
    if (kGpmMetrics[i].scale < 1) v = std::clamp(v, 0.0, 1.0);  // a ratio, as DCGM reports it
    gpu.gpm_values[i] = v;
  }
  apply();
}

std::size_t Collector::gpu_count() const { return gpus_.size(); }

std::vector<GpuStatus> Collector::Status() const {
  std::vector<GpuStatus> out;
  out.reserve(gpus_.size());
  const std::lock_guard lock(mu_);
  for (const std::unique_ptr<Gpu>& g : gpus_) {
    GpuStatus s;
    s.index = g->index;
    s.uuid = g->id.uuid;
    s.lost = g->lost;
    s.lost_reason = g->lost_reason;
    s.gpm = g->gpm;
    s.xid_events = g->xid_events;
    s.xids = g->xids;
    s.errors = g->errors;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpucanary::nvml
