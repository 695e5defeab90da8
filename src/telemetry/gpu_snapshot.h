#pragma once
// Groups dcgm-exporter samples by GPU: per GPU and metric the latest value and
// statistics over everything read (a scrape, or a whole recording), plus the
// distribution of the throttle bitmask, with the GPU's identity labels. A GPU is "<hostname>/<gpu
// index>" (docs/contracts.md §3), with the host taken from `Hostname` (dcgm-exporter
// <= 4.5.3-4.8.2) or `hostname` (later), and "-" when a scrape carries neither (`-n` exporters).
//
// Series without a `gpu` label (exporter-level or node-level metrics) are kept
// per host under gpu "" so nothing is silently dropped.
//
// Thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "expfmt/types.h"

namespace gpucanary::telemetry {

struct GpuKey {
  std::string host;
  std::string gpu;  // index as printed by the exporter, "" for non-GPU series

  std::string Id() const { return host + "/" + gpu; }
  friend bool operator<(const GpuKey& a, const GpuKey& b) {
    if (a.host != b.host) return a.host < b.host;
    // Numeric order for indices ("2" < "10").
    if (a.gpu.size() != b.gpu.size()) return a.gpu.size() < b.gpu.size();
    return a.gpu < b.gpu;
  }
};

// Every value a metric took on one GPU, summarised. NaN samples are counted
// apart and kept out of min/max/mean.
struct MetricStats {
  double last = 0;
  double min = 0;
  double max = 0;
  double sum = 0;
  std::uint64_t count = 0;  // non-NaN samples
  std::uint64_t nan = 0;

  double mean() const { return count == 0 ? 0 : sum / static_cast<double>(count); }
};

struct GpuState {
  std::string uuid;
  std::string model;
  std::string pci_bus_id;
  std::string pod;  // "namespace/pod" when Kubernetes attributes are present
  std::map<std::string, MetricStats, std::less<>> metrics;
  // Clock-event ("throttle") reason bitmask value -> samples with that value,
  // from DCGM_FI_DEV_CLOCK_THROTTLE_REASONS or its DCGM 4.6 name.
  std::map<std::uint64_t, std::uint64_t> throttle_masks;
  std::int64_t first_timestamp_ms = expfmt::kNoTimestamp;
  std::int64_t last_timestamp_ms = expfmt::kNoTimestamp;
  std::uint64_t samples = 0;

  // The latest value of `metric`, or nullopt when the GPU never reported it.
  std::optional<double> Get(std::string_view metric) const;
  const MetricStats* Stats(std::string_view metric) const;
  // Share of throttle-bitmask samples with any bit of `bits` set (nullopt: none).
  std::optional<double> ThrottleShare(std::uint64_t bits) const;
};

// Returns the host of a sample: `hostname`, else `Hostname`, else "-".
std::string_view HostOf(const expfmt::SampleView& sample);

class GpuSnapshot {
 public:
  // Folds one sample into its GPU (host + `gpu` label). A sample with no
  // `gpu` label (an inference server's metrics, say) belongs to no GPU and
  // is ignored.
  void Add(const expfmt::SampleView& sample);
  const std::map<GpuKey, GpuState>& gpus() const { return gpus_; }

 private:
  std::map<GpuKey, GpuState> gpus_;
};

}  // namespace gpucanary::telemetry
