#pragma once
// The NVML collector as a source of `gpucanary serve` (docs/nvml.md,
// docs/configuration.md `nvml:`): this node's GPUs sampled at a fixed
// interval and written to the store through the scrape ingester, exactly
// as if a dcgm-exporter on this node had been scraped: the same series
// names and labels plus the target labels job="nvml" and
// instance="<hostname>", stale markers when a series goes away, and the
// synthetic up / scrape_* series. Everything downstream (judge, canaries,
// dashboard) therefore works unchanged.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "nvml/library.h"
#include "store/appender.h"

namespace gpucanary::nvml {

struct SourceConfig {
  bool enabled = false;
  std::string library = std::string(kDefaultLibrary);
  std::int64_t interval_ms = 1000;  // >= 100 (NVML's GPM minimum)
  std::string hostname;             // "" = $NODE_NAME, else the machine's host name
  bool lowercase_hostname = false;  // label `hostname` instead of `Hostname`
  bool gpm = true;
  bool xid_events = true;
  std::string job = "nvml";
};

class Source {
 public:
  // Opens NVML, enumerates the GPUs and starts sampling. Errors: those of
  // Library::Open (NVML absent, driver not loaded) and Collector::Start.
  static Result<std::unique_ptr<Source>> Start(store::Appendable& store, Clock& clock,
                                               const SourceConfig& config,
                                               const std::function<void(std::string_view)>& log);
  ~Source();  // Stop()
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Stops sampling and marks every series stale. Idempotent.
  void Stop();

  std::size_t gpu_count() const;
  std::uint64_t samples() const;
  const std::string& hostname() const;

 private:
  class Impl;
  explicit Source(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// $NODE_NAME (as Kubernetes manifests set it for dcgm-exporter), else the
// machine's host name.
std::string DefaultHostname();

}  // namespace gpucanary::nvml
