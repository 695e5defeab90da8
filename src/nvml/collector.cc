#include "nvml/collector.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include "core/mutex.h"
#include "dcgm/xid.h"
#include "nvml/collector_internal.h"

namespace gpucanary::nvml {
namespace {

std::string FromBuffer(const char* buf, std::size_t size) {
  return std::string(buf, strnlen(buf, size));
}

}  // namespace

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
      const MutexLock lock(gpu->mu);  // not shared yet; the lock keeps the analysis whole
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
        const MutexLock lock(gpu->mu);
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
    const MutexLock lock(gpu->mu);  // the event thread has not started yet
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
      const MutexLock lock(gpu->mu);
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

std::size_t Collector::gpu_count() const { return gpus_.size(); }

std::vector<GpuStatus> Collector::Status() const {
  std::vector<GpuStatus> out;
  out.reserve(gpus_.size());
  for (const std::unique_ptr<Gpu>& g : gpus_) {
    const MutexLock lock(g->mu);
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
