#include "telemetry/gpu_snapshot.h"

#include <gtest/gtest.h>

#include "expfmt/reader.h"

namespace gpucanary::telemetry {
namespace {

TEST(GpuSnapshotTest, GroupsRealScrapeByGpu) {
  GpuSnapshot snap;
  auto r = expfmt::ReadFile(
      std::string(GPUCANARY_SHARED_DIR) + "/data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt",
      expfmt::ReadOptions{},
      [&](const expfmt::SampleView& s, std::string_view, expfmt::MetricType) { snap.Add(s); });
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

}  // namespace
}  // namespace gpucanary::telemetry
