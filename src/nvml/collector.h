#pragma once
// Reads the GPUs of this machine through NVML, in dcgm-exporter's vocabulary
// (docs/nvml.md): every value lands in the DCGM field dcgm-exporter would
// print it as, converted to its unit (W, not mW; ratios 0-1, not percent;
// bytes/s; MiB), so the store, the judge and the dashboard cannot tell the
// two sources apart.
//
//  - A field NVML does not support on a GPU (NOT_SUPPORTED, no permission, an
//    entry point the driver lacks) is absent, never 0, and is not asked for
//    again on that GPU.
//  - A GPU that NVML reports lost (GPU_IS_LOST, e.g. after Xid 79) keeps only
//    its last Xid; its other fields vanish, as dcgm-exporter's series do. The
//    collector goes on with the other GPUs.
//  - GPM (Hopper and newer: SM occupancy, SM active, tensor active, DRAM
//    bandwidth, PCIe rates) is a difference of two GPM samples, which NVML
//    needs at least 100 ms apart: a Sample less than 100 ms after the last GPM
//    sample of a GPU reports that last window's values again instead of
//    taking a new one.
//  - Xids arrive through NVML's event API on a thread of their own and set
//    DCGM_FI_DEV_XID_ERRORS (the last Xid of the GPU, absent until the first).
//
// Thread-safe: Sample is called by one thread at a time; Status from any.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"
#include "dcgm/readings.h"
#include "nvml/library.h"

namespace gpucanary::nvml {

// NVML's minimum time between the two GPM samples of one metric window.
inline constexpr std::int64_t kGpmMinIntervalMs = 100;

struct CollectorOptions {
  std::string hostname;        // the Hostname label of every series
  std::string driver_version;  // "" = NVML's nvmlSystemGetDriverVersion
  bool gpm = true;             // GPM metrics where the GPU supports them
  bool xid_events = true;      // the Xid event thread
  // How long the event thread blocks in nvmlEventSetWait before it looks
  // whether it should stop.
  int event_wait_ms = 200;
  // What the collector has to say (a GPU lost, an unexpected NVML error);
  // called from the sampling or the event thread.
  std::function<void(std::string_view)> log;
};

// One GPU as the collector sees it now.
struct GpuStatus {
  int index = 0;
  std::string uuid;
  bool lost = false;
  std::string lost_reason;   // what said so, e.g. "nvmlDeviceGetClockInfo: GPU is lost (15)"
  bool gpm = false;          // GPM metrics are being read
  bool xid_events = false;   // registered for Xid events
  std::uint64_t xids = 0;    // Xid events received
  std::uint64_t errors = 0;  // NVML calls that failed other than NOT_SUPPORTED / lost
};

// Every GPU at one instant: identities and readings in NVML index order.
struct Snapshot {
  std::int64_t time_ms = 0;
  std::vector<dcgm::GpuIdentity> gpus;
  std::vector<dcgm::Readings> readings;
  std::vector<GpuStatus> status;
};

class Collector {
 public:
  // Enumerates the GPUs and their identity, checks GPM support, and starts
  // the Xid thread. A GPU that is already lost is listed as lost. `library`
  // must outlive the collector. Errors: kUnavailable when NVML cannot count
  // the GPUs.
  static Result<std::unique_ptr<Collector>> Start(const Library& library, CollectorOptions options);
  ~Collector();  // stops the Xid thread; frees the GPM samples and the event set
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Reads every GPU; `now_ms` is the wall-clock time the snapshot carries and
  // the time GPM windows are measured with. Reuses `out`'s storage.
  void Sample(std::int64_t now_ms, Snapshot& out);

  std::size_t gpu_count() const;
  std::vector<GpuStatus> Status() const;
  const std::string& driver_version() const { return driver_version_; }

 private:
  struct Gpu;
  class GpuReader;  // one GPU's queries of one Sample (collector_read.cc)
  Collector(const Library& library, CollectorOptions options);
  void ReadGpu(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r);
  void ReadGpm(Gpu& gpu, std::int64_t now_ms, dcgm::Readings& r);
  static void ApplyGpm(const Gpu& gpu, dcgm::Readings& r);
  void GpmSampleFailed(Gpu& gpu, nvmlReturn_t rc);
  bool GetGpmMetrics(Gpu& gpu, int next, std::int64_t now_ms);
  void StartEvents();
  void EventLoop();
  void Log(const std::string& line) const;

  const Library& lib_;
  const Api& api_;
  CollectorOptions options_;
  std::string driver_version_;
  std::vector<std::unique_ptr<Gpu>> gpus_;

  nvmlEventSet_t event_set_ = nullptr;
  // The GPM query (13 KB): allocated once, used by the sampling thread only.
  std::unique_ptr<nvmlGpmMetricsGet_t> gpm_get_;
  std::atomic<bool> stop_{false};
  std::thread event_thread_;
};

}  // namespace gpucanary::nvml
