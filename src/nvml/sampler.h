#pragma once
// Samples a Collector on a fixed schedule and keeps the result as the text a
// dcgm-exporter would serve (dcgm/exposition.h) plus gpucanary's own
// gpucanary_nvml_* health series. `gpucanary exporter` serves the latest
// text on /metrics; `gpucanary serve` hands every sample to its store
// through the scrape ingester (docs/nvml.md).
//
// Schedule: samples at k·interval of the Unix epoch (the Clock's), so the
// samples of one series are exactly `interval` apart. A sample that runs
// past its slot skips the slots it missed.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/status.h"
#include "dcgm/exposition.h"
#include "nvml/collector.h"

namespace gpucanary::nvml {

// Appends to `out` the dcgm-exporter text of `snapshot` and the
// gpucanary_nvml_* families: gpu_lost and xid_events_total / errors_total
// per GPU, sample_duration_seconds for the host.
void RenderSnapshot(const Snapshot& snapshot, const dcgm::DcgmRenderOptions& options,
                    double sample_seconds, std::string& out);

class Sampler {
 public:
  struct Options {
    std::int64_t interval_ms = 1000;  // >= kGpmMinIntervalMs
    dcgm::DcgmRenderOptions render;
    // Called on the sampling thread after each sample, with its text.
    std::function<void(const Snapshot& snapshot, std::string_view text, double duration_s)>
        on_sample;
  };

  // `collector` and `clock` must outlive the sampler.
  Sampler(Collector& collector, Clock& clock, Options options);
  ~Sampler();  // Stop()
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Takes the first sample now (so Latest is never empty after Start), then
  // starts the thread. Errors: kInvalidArgument for an interval under 100 ms.
  Status Start();
  void Stop();  // idempotent

  // The text of the last sample.
  std::string Latest() const;
  std::uint64_t samples() const { return samples_.load(); }

 private:
  void SampleAt(std::int64_t now_ms);
  void Loop(std::int64_t next);

  Collector& collector_;
  Clock& clock_;
  Options options_;
  Snapshot snapshot_;  // sampling thread only
  std::string text_;   // sampling thread only

  mutable Mutex mu_;
  CondVar stop_cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::string latest_ GUARDED_BY(mu_);
  std::atomic<std::uint64_t> samples_{0};
  std::thread thread_;
};

}  // namespace gpucanary::nvml
