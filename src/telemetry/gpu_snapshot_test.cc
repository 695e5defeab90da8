#include "telemetry/gpu_snapshot.h"

#include <gtest/gtest.h>

#include <cmath>

#include "expfmt/reader.h"

namespace gpucanary::telemetry {
namespace {

TEST(GpuSnapshotTest, GroupsRealScrapeByGpu) {
  GpuSnapshot snap;
  auto r = expfmt::ReadFile(
      std::string(GPUCANARY_SHARED_DIR) + "/data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt",
      expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view, model::MetricType) { snap.Add(s); });
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(snap.gpus().size(), 8u);
  const auto& [key, g0] = *snap.gpus().begin();
  EXPECT_EQ(key.Id(), "gpu-node-1/0");
  EXPECT_EQ(g0.uuid, "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005");
  EXPECT_EQ(g0.pod, "dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5");
  EXPECT_EQ(g0.Get("DCGM_FI_DEV_GPU_TEMP"), 30.0);
  EXPECT_FALSE(g0.Get("DCGM_FI_DEV_SM_CLOCK").has_value());  // not in this capture
}

TEST(GpuSnapshotTest, HostLabelCaseAndOrdering) {
  expfmt::SampleView a;
  a.name = "m";
  a.labels = {{"gpu", "10"}, {"hostname", "n2"}};
  expfmt::SampleView b;
  b.name = "m";
  b.labels = {{"gpu", "2"}, {"Hostname", "n2"}};
  GpuSnapshot snap;
  snap.Add(a);
  snap.Add(b);
  ASSERT_EQ(snap.gpus().size(), 2u);
  EXPECT_EQ(snap.gpus().begin()->first.Id(), "n2/2");  // numeric order, both label spellings
}

TEST(GpuSnapshotTest, RecordingStatisticsAndThrottleShare) {
  GpuSnapshot snap;
  expfmt::SampleView s;
  s.labels = {{"gpu", "0"}, {"Hostname", "node-4"}};
  const double clocks[] = {1980, 1980, 1050, 1050};
  const double masks[] = {0, 0, 136, 136};  // 0x88: HW slowdown + power brake
  for (int t = 0; t < 4; ++t) {
    s.timestamp_ms = 1000 * (t + 1);
    s.name = "DCGM_FI_DEV_SM_CLOCK";
    s.value = clocks[t];
    snap.Add(s);
    s.name = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS";
    s.value = masks[t];
    snap.Add(s);
  }
  s.name = "DCGM_FI_PROF_DRAM_ACTIVE";
  s.value = std::nan("");
  snap.Add(s);
  const GpuState& g = snap.gpus().begin()->second;
  const MetricStats* clock = g.Stats("DCGM_FI_DEV_SM_CLOCK");
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ(clock->min, 1050);
  EXPECT_EQ(clock->max, 1980);
  EXPECT_DOUBLE_EQ(clock->mean(), 1515);
  EXPECT_EQ(g.Get("DCGM_FI_DEV_SM_CLOCK"), 1050.0);
  EXPECT_EQ(g.ThrottleShare(0x80), 0.5);
  EXPECT_EQ(g.ThrottleShare(0x04), 0.0);
  EXPECT_EQ(g.first_timestamp_ms, 1000);
  EXPECT_EQ(g.last_timestamp_ms, 4000);
  // A NaN is reported as such, not averaged, and not "no data".
  EXPECT_EQ(g.Stats("DCGM_FI_PROF_DRAM_ACTIVE")->nan, 1u);
  EXPECT_EQ(g.Stats("DCGM_FI_PROF_DRAM_ACTIVE")->count, 0u);
  EXPECT_FALSE(g.Get("DCGM_FI_DEV_POWER_USAGE").has_value());
}

}  // namespace
}  // namespace gpucanary::telemetry
