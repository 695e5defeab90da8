#pragma once
// Groups dcgm-exporter samples by GPU: the latest value of every metric per GPU,
// with the GPU's identity labels. A GPU is "<hostname>/<gpu index>" (DESIGN.md
// §3), with the host taken from `Hostname` (dcgm-exporter <= 4.5.3-4.8.2) or
// `hostname` (later), and "-" when a scrape carries neither (`-n` exporters).
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

struct GpuState {
  std::string uuid;
  std::string model;
  std::string pci_bus_id;
  std::string pod;  // "namespace/pod" when Kubernetes attributes are present
  std::map<std::string, double, std::less<>> latest;  // metric name -> latest value
  std::int64_t last_timestamp_ms = expfmt::kNoTimestamp;
  std::uint64_t samples = 0;

  std::optional<double> Get(std::string_view metric) const;
};

// Returns the host of a sample: `hostname`, else `Hostname`, else "-".
std::string_view HostOf(const expfmt::SampleView& sample);

class GpuSnapshot {
 public:
  void Add(const expfmt::SampleView& sample);
  const std::map<GpuKey, GpuState>& gpus() const { return gpus_; }

 private:
  std::map<GpuKey, GpuState> gpus_;
};

}  // namespace gpucanary::telemetry
