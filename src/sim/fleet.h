#pragma once
// A fleet of simulated nodes, each with GPUs of one profile, stepped together
// in simulated time. What each GPU runs and suffers at each step comes from
// a caller-supplied Driver (the scenario engine, or a test), so the fleet
// itself knows nothing of releases or traffic. Deterministic for a seed.
// Thread-compatible.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcgm/readings.h"
#include "sim/gpu_model.h"

namespace gpucanary::sim {

struct SimGpu {
  dcgm::GpuIdentity id;
  GpuModel model;
};

struct SimNode {
  std::string hostname;
  const GpuProfile* profile;
  std::vector<SimGpu> gpus;
};

class Fleet {
 public:
  // Decides, for one GPU at one step, the work it runs and the faults in force.
  using Driver = std::function<void(const SimNode& node, int gpu, std::int64_t now_ms,
                                    Workload& work, Faults& faults)>;

  explicit Fleet(std::uint64_t seed) : seed_(seed) {}

  // Adds a node of `gpus` GPUs. Identities are deterministic: UUIDs from the
  // seed and hostname, HGX H100-style PCI bus ids (53, 64, 75, 86, 97, A8, B9, CA).
  void AddNode(const std::string& hostname, const GpuProfile& profile, int gpus,
               const std::string& driver_version);

  // Advances every GPU by one model step (GpuModel::kStepSeconds).
  void Step(const Driver& driver);

  std::int64_t now_ms() const { return now_ms_; }
  void set_now_ms(std::int64_t now_ms) { now_ms_ = now_ms; }
  const std::vector<SimNode>& nodes() const { return nodes_; }
  std::size_t gpu_count() const;

  // The dcgm-exporter /metrics body of node `index` now.
  void RenderNode(std::size_t index, std::string& out) const;

 private:
  std::uint64_t seed_;
  std::int64_t now_ms_ = 0;
  std::vector<SimNode> nodes_;
  Workload work_;  // scratch, reused per GPU
  Faults faults_;
};

}  // namespace gpucanary::sim
