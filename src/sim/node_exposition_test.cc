// The model and the renderer together: what a Prometheus scrape of a simulated
// node shows, read back through gpucanary's own parser.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "dcgm/exposition.h"
#include "expfmt/reader.h"
#include "sim/gpu_model.h"

namespace gpucanary::sim {
namespace {

struct Seen {
  double clock = 0;
  double reasons = -1;
};

// One node of 8 H100s serving a release; GPUs 0-3 under an external power
// brake. Returns per GPU index what the scrape says after `seconds`.
std::map<std::string, Seen> ScrapeNodeWithBrake(int seconds) {
  const GpuProfile& h100 = *FindGpuProfile("h100-sxm");
  std::vector<GpuModel> gpus;
  std::vector<dcgm::GpuIdentity> ids;
  for (int i = 0; i < 8; ++i) {
    gpus.emplace_back(h100, 100 + static_cast<std::uint64_t>(i));
    dcgm::GpuIdentity id;
    id.index = i;
    id.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i);
    id.pci_bus_id = "00000000:5" + std::to_string(i) + ":00.0";
    id.model_name = std::string(h100.model_name);
    id.hostname = "node-4";
    id.driver_version = "580.105.08";
    ids.push_back(id);
  }
  Workload w;
  w.load = 0.85;
  w.dynamic_power_w = 450;
  Faults brake;
  brake.power_brake = true;
  for (int step = 0; step < seconds * 10; ++step) {
    for (int i = 0; i < 8; ++i) gpus[static_cast<std::size_t>(i)].Step(w, i < 4 ? brake : Faults{});
  }
  std::vector<dcgm::Readings> readings;
  for (const GpuModel& g : gpus) readings.push_back(g.Read());
  std::string text;
  dcgm::RenderDcgmExposition(ids, readings, dcgm::DcgmRenderOptions{}, text);

  std::map<std::string, Seen> seen;
  const expfmt::ReadReport report =
      expfmt::ReadBuffer(text, expfmt::Format::kPrometheusText, "node-4", expfmt::ReadOptions{},
                         [&](const expfmt::SampleView& s, std::string_view, model::MetricType) {
                           const std::string gpu(*s.Label("gpu"));
                           EXPECT_EQ(*s.Label("Hostname"), "node-4");
                           if (s.name == "DCGM_FI_DEV_SM_CLOCK") seen[gpu].clock = s.value;
                           if (s.name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
                             seen[gpu].reasons = s.value;
                         });
  EXPECT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]);
  EXPECT_EQ(report.stats.duplicate_samples, 0u);
  return seen;
}

TEST(NodeExpositionTest, PowerBrakeSignatureOnTheFaultedGpusOnly) {
  const auto seen = ScrapeNodeWithBrake(30);
  ASSERT_EQ(seen.size(), 8u);
  for (const auto& [gpu, s] : seen) {
    if (gpu < "4") {
      EXPECT_EQ(s.clock, 1050) << gpu;
      EXPECT_EQ(static_cast<int>(s.reasons) & 0x88, 0x88) << gpu;
    } else {
      EXPECT_EQ(s.clock, 1980) << gpu;
      EXPECT_EQ(s.reasons, 0) << gpu;
    }
  }
}

}  // namespace
}  // namespace gpucanary::sim
