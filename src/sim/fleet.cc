#include "sim/fleet.h"

#include <cstdio>
#include <functional>

#include "dcgm/exposition.h"

namespace gpucanary::sim {
namespace {

constexpr const char* kBusIds[] = {"53", "64", "75", "86", "97", "A8", "B9", "CA"};

// splitmix64: a well-mixed 64-bit value from a counter, for seeds and UUIDs.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

void Fleet::AddNode(const std::string& hostname, const GpuProfile& profile, int gpus,
                    const std::string& driver_version) {
  SimNode node{hostname, &profile, {}};
  const std::uint64_t host_seed = Mix(seed_ ^ std::hash<std::string>{}(hostname));
  for (int i = 0; i < gpus; ++i) {
    const std::uint64_t gpu_seed = Mix(host_seed + static_cast<std::uint64_t>(i));
    const std::uint64_t u = Mix(gpu_seed);
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-%04x-%04x-%012llx",
                  static_cast<unsigned>(u >> 32), static_cast<unsigned>((u >> 16) & 0xffff),
                  static_cast<unsigned>(u & 0xffff),
                  static_cast<unsigned>((gpu_seed >> 48) & 0xffff),
                  static_cast<unsigned long long>(
                      gpu_seed & 0xffffffffffffULL));  // NOLINT(google-runtime-int)
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%s:00.0", kBusIds[i % 8]);
    dcgm::GpuIdentity id;
    id.index = i;
    id.uuid = uuid;
    id.pci_bus_id = bus;
    id.model_name = std::string(profile.model_name);
    id.hostname = hostname;
    id.driver_version = driver_version;
    node.gpus.push_back(SimGpu{std::move(id), GpuModel(profile, gpu_seed)});
  }
  nodes_.push_back(std::move(node));
}

void Fleet::Step(const Driver& driver) {
  for (SimNode& node : nodes_) {
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      work_ = Workload{};
      faults_ = Faults{};
      driver(node, static_cast<int>(i), now_ms_, work_, faults_);
      node.gpus[i].model.Step(work_, faults_);
    }
  }
  now_ms_ += static_cast<std::int64_t>(GpuModel::kStepSeconds * 1000);
}

std::size_t Fleet::gpu_count() const {
  std::size_t n = 0;
  for (const SimNode& node : nodes_) n += node.gpus.size();
  return n;
}

void Fleet::RenderNode(std::size_t index, std::string& out) const {
  const SimNode& node = nodes_.at(index);
  std::vector<dcgm::GpuIdentity> ids;
  std::vector<dcgm::Readings> readings;
  ids.reserve(node.gpus.size());
  readings.reserve(node.gpus.size());
  for (const SimGpu& g : node.gpus) {
    ids.push_back(g.id);
    readings.push_back(g.model.Read());
  }
  dcgm::RenderDcgmExposition(ids, readings, dcgm::DcgmRenderOptions{}, out);
}

}  // namespace gpucanary::sim
