#pragma once
// Test helper for the judge's tests on hand-built ticks: the catalog of a
// small fleet, two canary nodes ("canary-0", "canary-1") and two baseline
// nodes ("base-2", "base-3"), each with `gpus_per_node` GPUs of `model`
// (GPU indices in node order, "<host>/<index>").

#include <string>
#include <vector>

#include "analysis/replay/replay.h"

namespace gpucanary::analysis::judge_testing {

inline void AddTwoByTwoNodes(int gpus_per_node, const std::string& model,
                             std::vector<GpuInfo>& gpus, std::vector<NodeInfo>& nodes) {
  for (int n = 0; n < 4; ++n) {
    NodeInfo node;
    node.host = n < 2 ? "canary-" + std::to_string(n) : "base-" + std::to_string(n);
    node.role = n < 2 ? Role::kCanary : Role::kBaseline;
    for (int g = 0; g < gpus_per_node; ++g) {
      GpuInfo gpu;
      gpu.host = node.host;
      gpu.gpu = std::to_string(g);
      gpu.key = gpu.host + "/" + gpu.gpu;
      gpu.role = node.role;
      gpu.node = static_cast<int>(nodes.size());
      gpu.model_name = model;
      node.gpus.push_back(static_cast<int>(gpus.size()));
      gpus.push_back(gpu);
    }
    nodes.push_back(node);
  }
}

}  // namespace gpucanary::analysis::judge_testing
