#include "sim/offline.h"

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "sim/dcgm_render.h"

namespace gpucanary::sim {
namespace {

// The label values of one GPU, owned, so the writer's label views stay valid.
struct GpuLabels {
  std::string gpu;
  std::string device;
  const GpuIdentity* id;
  std::array<recording::Label, 7> labels;
};

}  // namespace

Result<OfflineStats> WriteRecording(Fleet& fleet, const Fleet::Driver& driver,
                                    const OfflineOptions& options,
                                    recording::RecordingWriter& writer) {
  for (std::size_t f = 0; f < kSimFieldCount; ++f) {
    const DcgmFamilyInfo& info = DcgmFamily(static_cast<SimField>(f));
    GC_RETURN_IF_ERROR(writer.DeclareFamily(
        info.name,
        info.type == "counter" ? recording::MetricKind::kCounter : recording::MetricKind::kGauge,
        info.help));
  }
  std::vector<GpuLabels> labels;
  labels.reserve(fleet.gpu_count());
  for (const SimNode& node : fleet.nodes()) {
    for (const SimGpu& g : node.gpus) {
      labels.push_back(
          GpuLabels{std::to_string(g.id.index), "nvidia" + std::to_string(g.id.index), &g.id, {}});
    }
  }
  for (GpuLabels& l : labels) {  // views into strings that no longer move
    l.labels = {recording::Label{"gpu", l.gpu},
                recording::Label{"UUID", l.id->uuid},
                recording::Label{"pci_bus_id", l.id->pci_bus_id},
                recording::Label{"device", l.device},
                recording::Label{"modelName", l.id->model_name},
                recording::Label{"Hostname", l.id->hostname},
                recording::Label{"DCGM_FI_DRIVER_VERSION", l.id->driver_version}};
  }

  const auto steps_per_scrape =
      static_cast<std::uint64_t>(std::llround(options.scrape_interval_s / GpuModel::kStepSeconds));
  const auto total_steps =
      static_cast<std::uint64_t>(std::llround(options.duration_s / GpuModel::kStepSeconds));
  if (steps_per_scrape == 0) {
    return Error(StatusCode::kInvalidArgument, "scrape interval below the model step (100 ms)");
  }
  fleet.set_now_ms(options.start_ms);
  OfflineStats stats;
  for (std::uint64_t step = 1; step <= total_steps; ++step) {
    fleet.Step(driver);
    ++stats.steps;
    if (step % steps_per_scrape != 0) continue;
    ++stats.scrapes;
    std::size_t k = 0;
    for (const SimNode& node : fleet.nodes()) {
      for (const SimGpu& g : node.gpus) {
        const Readings r = g.model.Read();
        const GpuLabels& l = labels[k++];
        for (std::size_t f = 0; f < kSimFieldCount; ++f) {
          const std::optional<double>& v = r.values[f];
          if (!v) continue;
          const DcgmFamilyInfo& info = DcgmFamily(static_cast<SimField>(f));
          const double value = info.is_double ? *v : std::round(*v);
          GC_RETURN_IF_ERROR(writer.Append(info.name, l.labels, value, fleet.now_ms()));
          ++stats.samples;
        }
      }
    }
  }
  return stats;
}

}  // namespace gpucanary::sim
