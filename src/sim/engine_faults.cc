// The engine's faults (docs/simulator.md, "The engine"): what a release's
// kernel profile causes, injected node faults, and their ground truth.
// Declared in sim/engine.h.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"

namespace gpucanary::sim {
namespace {

// A release whose di/dt spikes are this large trips the node's power brake
// under load; below it, the extra switching power runs into the power cap.
constexpr double kBrakeSpikiness = 2.0;
constexpr double kBrakeOnLoad = 0.25;   // spikes only come with real load
constexpr double kBrakeOffLoad = 0.10;  // hysteresis: the PSU re-arms when load falls

double Param(const std::map<std::string, double>& params, const char* name, double fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

// The causes a release's kernel profile brings with it (scope release) on
// GPUs of `profile`.
std::vector<vocab::CauseKind> ReleaseCauses(const ReleaseSpec& r, const GpuProfile& profile) {
  using vocab::CauseKind;
  std::vector<CauseKind> out;
  if (r.power_spikiness >= kBrakeSpikiness) {
    out.push_back(CauseKind::kPowerBrake);
  } else if (r.power_spikiness > 1) {
    out.push_back(CauseKind::kPowerCap);
  }
  if (r.dram_thrash > 1) out.push_back(CauseKind::kMemoryThrash);
  if (r.occupancy_factor < 1) out.push_back(CauseKind::kLowOccupancy);
  if (r.xid > 0 && r.xid_per_s > 0) out.push_back(CauseKind::kXidErrors);
  if ((r.pcie_gen > 0 && r.pcie_gen < profile.pcie_max_gen) ||
      (r.pcie_width > 0 && r.pcie_width < profile.pcie_max_width)) {
    out.push_back(CauseKind::kPcieDowntrain);
  }
  if (r.slowdown > 1) out.push_back(CauseKind::kSoftwareRegression);
  return out;
}

// Applies one injected node fault to a GPU's Faults, with the documented
// defaults for parameters the scenario leaves out (docs/simulator.md).
void ApplyNodeFault(FaultKind kind, const std::map<std::string, double>& p,
                    const GpuProfile& profile, Faults& f) {
  switch (kind) {
    case FaultKind::kThermal:
      f.cooling_factor = std::max(f.cooling_factor, Param(p, "cooling_factor", 1.7));
      break;
    case FaultKind::kPowerBrake:
      f.power_brake = true;
      break;
    case FaultKind::kPowerCap: {
      const double limit = Param(p, "limit_w", 0.6 * profile.power_limit_w);
      f.power_limit_w = f.power_limit_w > 0 ? std::min(f.power_limit_w, limit) : limit;
      break;
    }
    case FaultKind::kHwSlowdown:
      f.hw_slowdown = true;
      break;
    case FaultKind::kPcieDowntrain:
      f.pcie_width = static_cast<int>(Param(p, "width", profile.pcie_max_width / 2.0));
      f.pcie_gen = static_cast<int>(Param(p, "gen", profile.pcie_max_gen));
      f.pcie_replays_per_s += 2;  // a marginal link that retrained also replays
      break;
    case FaultKind::kPcieErrors:
      f.pcie_replays_per_s += Param(p, "replays_per_s", 50);
      break;
    case FaultKind::kMemoryThrash:
      f.dram_thrash = std::max(f.dram_thrash, Param(p, "factor", 1.8));
      break;
    case FaultKind::kLowOccupancy:
      f.occupancy_factor = std::min(f.occupancy_factor, Param(p, "factor", 0.4));
      break;
    case FaultKind::kXidErrors:
      f.xid = static_cast<int>(Param(p, "xid", 79));
      f.xid_per_s = Param(p, "per_s", 1);
      break;
    case FaultKind::kEccErrors:
      f.sbe_per_s += Param(p, "sbe_per_s", 1);
      f.dbe_per_s += Param(p, "dbe_per_s", 0);
      break;
  }
}

}  // namespace

void Engine::ComputeFaults() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    const GpuProfile& profile = *fleet_.nodes()[i].profile;
    for (Faults& f : n.gpu_faults) f = Faults{};
    if (n.server) {
      const ReleaseSpec& spec = scenario_.releases.at(n.release);
      if (spec.power_spikiness >= kBrakeSpikiness) {
        if (n.load >= kBrakeOnLoad) n.brake_latched = true;
        if (n.load < kBrakeOffLoad) n.brake_latched = false;
      }
      for (Faults& f : n.gpu_faults) {
        f.power_brake = n.brake_latched;
        f.dram_thrash = spec.dram_thrash;
        f.occupancy_factor = spec.occupancy_factor;
        f.xid = spec.xid;
        f.xid_per_s = spec.xid_per_s;
        f.pcie_gen = spec.pcie_gen;
        f.pcie_width = spec.pcie_width;
      }
    }
    for (const ActiveFault& a : faults_) {
      if (a.node != i) continue;
      for (int g : a.gpus) {
        ApplyNodeFault(a.kind, a.params, profile, n.gpu_faults[static_cast<std::size_t>(g)]);
      }
    }
  }
}

Result<std::vector<int>> Engine::InjectFault(FaultKind kind, const std::vector<std::string>& nodes,
                                             const std::string& gpus,
                                             const std::map<std::string, double>& params,
                                             const std::string& source, vocab::Scope scope) {
  if (scope != vocab::Scope::kNode && scope != vocab::Scope::kRelease) {
    return Error(StatusCode::kInvalidArgument,
                 "scope must be node or release, not '" + std::string(vocab::Name(scope)) + "'");
  }
  Result<std::vector<std::size_t>> targets = ResolveNodes(nodes);
  if (!targets) return Error(targets.error());
  for (const auto& [name, value] : params) {
    std::span<const std::string_view> allowed = FaultParamNames(kind);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return Error(StatusCode::kInvalidArgument, "fault " + std::string(FaultKindName(kind)) +
                                                     " takes no parameter '" + name + "'");
    }
    if (!std::isfinite(value)) {
      return Error(StatusCode::kInvalidArgument, "parameter '" + name + "' is not finite");
    }
  }
  std::vector<std::vector<int>> selected;
  for (std::size_t i : *targets) {
    Result<std::vector<int>> g = SelectGpus(i, gpus);
    if (!g) return Error(g.error());
    selected.push_back(std::move(*g));
  }
  std::vector<int> ids;
  for (std::size_t k = 0; k < targets->size(); ++k) {
    const std::size_t i = (*targets)[k];
    ActiveFault a;
    a.id = next_fault_id_++;
    a.kind = kind;
    a.node = i;
    a.gpus = selected[k];
    a.params = params;
    a.source = source;
    a.since_ms = now_ms();
    TruthRecord r;
    r.type = TruthRecord::kFault;
    r.since_ms = now_ms();
    r.kind = CauseKindOf(kind);
    r.scope = scope;
    r.release = nodes_[i].release;
    r.source = source;
    r.node = fleet_.nodes()[i].hostname;
    r.gpus = a.gpus;
    r.params = params;
    r.fault_id = a.id;
    OpenTruth(std::move(r));
    ids.push_back(a.id);
    faults_.push_back(std::move(a));
  }
  return ids;
}

Result<std::vector<int>> Engine::SelectGpus(std::size_t node, const std::string& gpus) const {
  Result<std::vector<int>> g =
      ExpandGpuSelector(gpus, static_cast<int>(nodes_[node].gpu_faults.size()));
  if (!g) {
    return Error(StatusCode::kInvalidArgument,
                 fleet_.nodes()[node].hostname + ": gpus: " + g.error().message());
  }
  return g;
}

Result<int> Engine::ClearFaults(FaultKind kind, const std::vector<std::string>& nodes,
                                const std::string& gpus) {
  Result<std::vector<std::size_t>> targets = ResolveNodes(nodes);
  if (!targets) return Error(targets.error());
  int cleared = 0;
  for (std::size_t i : *targets) {
    Result<std::vector<int>> g = SelectGpus(i, gpus);
    if (!g) return Error(g.error());
    for (ActiveFault& a : faults_) {
      if (a.node != i || a.kind != kind) continue;
      std::vector<int> keep;
      for (int gpu : a.gpus) {
        if (std::binary_search(g->begin(), g->end(), gpu)) {
          ++cleared;
        } else {
          keep.push_back(gpu);
        }
      }
      if (keep.size() == a.gpus.size()) continue;
      // The interval of the old GPU set ends; what remains starts a new one.
      for (std::size_t t = 0; t < truth_.size(); ++t) {
        if (truth_[t].fault_id == a.id && !truth_[t].until_ms) {
          CloseTruth(t);
          if (!keep.empty()) {
            TruthRecord rest = truth_[t];
            rest.since_ms = now_ms();
            rest.until_ms.reset();
            rest.gpus = keep;
            OpenTruth(std::move(rest));
          }
          break;
        }
      }
      a.gpus = std::move(keep);
    }
  }
  std::erase_if(faults_, [](const ActiveFault& a) { return a.gpus.empty(); });
  return cleared;
}

Status Engine::ClearFault(int fault_id) {
  auto it = std::find_if(faults_.begin(), faults_.end(),
                         [fault_id](const ActiveFault& a) { return a.id == fault_id; });
  if (it == faults_.end()) {
    return Error(StatusCode::kNotFound, "no fault " + std::to_string(fault_id));
  }
  CloseOpenTruth([fault_id](const TruthRecord& r) { return r.fault_id == fault_id; });
  faults_.erase(it);
  return Status::Ok();
}

void Engine::UpdateReleaseTruth(std::size_t node, const std::string& old_release,
                                const std::string& new_release) {
  const std::string& host = fleet_.nodes()[node].hostname;
  if (!old_release.empty()) {
    CloseOpenTruth([&](const TruthRecord& r) {
      return r.type == TruthRecord::kFault && r.source == "release" && r.node == host;
    });
  }
  const ReleaseSpec& spec = scenario_.releases.at(new_release);
  std::vector<int> all(nodes_[node].gpu_faults.size());
  for (std::size_t g = 0; g < all.size(); ++g) all[g] = static_cast<int>(g);
  for (vocab::CauseKind kind : ReleaseCauses(spec, *fleet_.nodes()[node].profile)) {
    TruthRecord r;
    r.type = TruthRecord::kFault;
    r.since_ms = now_ms();
    r.kind = kind;
    r.scope = vocab::Scope::kRelease;
    r.release = new_release;
    r.source = "release";
    r.node = host;
    r.gpus = all;
    OpenTruth(std::move(r));
  }
}

}  // namespace gpucanary::sim
