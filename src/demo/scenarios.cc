// The demo's scenarios (docs/demo.md, "Scenarios"): what each faulty release
// changes, what the judge must say about it, and the simulated fleet it
// runs on.

#include <string>
#include <string_view>
#include <vector>

#include "demo/demo.h"
#include "demo/demo_internal.h"

namespace gpucanary::demo {

using vocab::CauseKind;
using vocab::Scope;

const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario> scenarios = {
      {"power-brake", "fp8 GEMM kernels whose current spikes trip the node's power brake",
       "power_spikiness: 2.5", "fp8", "", ExpectedVerdict::kFail, CauseKind::kPowerBrake,
       Scope::kRelease},
      {"memory-thrash", "a paged-attention kernel that thrashes HBM (DRAM busy, SMs starved)",
       "dram_thrash: 1.8", "bf16", "", ExpectedVerdict::kFail, CauseKind::kMemoryThrash,
       Scope::kRelease},
      {"low-occupancy", "a compiler change that spills registers: SM occupancy collapses",
       "occupancy_factor: 0.4", "bf16", "", ExpectedVerdict::kFail, CauseKind::kLowOccupancy,
       Scope::kRelease},
      {"xid-flood", "CUDA graphs that fault on the GPU (XID 31, MMU faults)",
       "xid: 31, xid_per_s: 0.2", "bf16", "", ExpectedVerdict::kFail, CauseKind::kXidErrors,
       Scope::kRelease},
      {"software-regression", "a vLLM build 40% slower per token with the hardware unchanged",
       "slowdown: 1.4", "bf16", "", ExpectedVerdict::kFail, CauseKind::kSoftwareRegression,
       Scope::kRelease},
      {"bad-node",
       "nothing harmful; meanwhile baseline node-2's power supply asserts the power brake on "
       "GPUs 0-3",
       "", "bf16", kNodeFault, ExpectedVerdict::kNotFail, CauseKind::kPowerBrake, Scope::kNode},
  };
  return scenarios;
}

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario& s : Scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string SimScenarioYaml(const Scenario& scenario) {
  std::string faulty = "{profile: baseline";
  if (!scenario.sim_release.empty()) faulty += ", " + scenario.sim_release;
  faulty += "}";
  return "# gpucanary demo fleet (docs/demo.md)\n"
         "seed: 2026\n"
         "duration: 24h\n"
         "fleet:\n"
         "  - {nodes: \"node-[1-" +
         std::to_string(kNodes) +
         "]\", gpu: h100-sxm, driver: \"580.105.08\"}\n"
         "releases:\n"
         "  \"" +
         std::string(kStable) +
         "\": {profile: baseline}\n"
         "  \"" +
         std::string(kHealthy) +
         "\": {profile: baseline}\n"
         "  \"" +
         std::string(kFaulty) + "\": " + faulty +
         "\n"
         "traffic: {rps: 200}\n"
         "events:\n"
         "  - {at: 0s, deploy: \"" +
         std::string(kStable) + "\", nodes: all}\n";
}

}  // namespace gpucanary::demo
