#pragma once
// Scenario files: the YAML that says which fleet the simulator runs, which
// releases exist, how much traffic arrives and what happens when
// (docs/simulator.md, "Scenario files (YAML)"):
//
//   seed: 42
//   duration: 600s
//   fleet:
//     - {nodes: "node-[1-8]", gpu: h100-sxm, driver: "580.105.08"}
//   releases:
//     stable: {profile: baseline}
//     fp8-kernel: {profile: baseline, power_spikiness: 2.5}   # trips the power brake
//   traffic: {rps: 400, diurnal: {amplitude: 0.2, period: 1h}, bursts: {rate: 1/5m}}
//   events:
//     - {at: 0s,  deploy: stable, nodes: all}
//     - {at: 60s, deploy: fp8-kernel, nodes: [node-4]}
//     - {at: 90s, fault: power_brake, nodes: [node-4], gpus: "0-3"}
//
// Parsing is pure: no exceptions escape, every error is a kParseError whose
// message reads "FILE:LINE:COLUMN: field: what was wrong" (1-based line and
// column), e.g. "s.yaml:7:18: events[1].deploy: unknown release 'fp8'".
// Defaults: seed 1; fleet `driver` 580.105.08, `gpus` (per node) 8; no
// traffic means rps 0. Fault `params:` per kind: thermal {cooling_factor},
// power_cap {limit_w}, pcie_downtrain {width, gen}, pcie_errors
// {replays_per_s}, memory_thrash / low_occupancy {factor}, xid_errors {xid,
// per_s}, ecc_errors {sbe_per_s, dbe_per_s}; power_brake and hw_slowdown none.
// A fault event's `scope:` is `node` (default: a hardware fault) or `release`
// (the effect of the release running there, for effects no kernel profile
// models; the truth records it so). The first event may not precede 0 s,
// none may come after `duration`.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/gpu_model.h"
#include "sim/gpu_profile.h"
#include "sim/server_kind.h"
#include "vocab/vocab.h"

namespace gpucanary::sim {

// One entry of `fleet:`: nodes that share a GPU SKU and a driver.
struct NodeGroup {
  std::vector<std::string> hostnames;   // "node-[1-8]" expanded, or the list as written
  const GpuProfile* profile = nullptr;  // never null after a successful parse; static storage
  std::string driver;                   // DCGM_FI_DRIVER_VERSION
  int gpus_per_node = 8;                // `gpus:`, 1..64
  // `server:` vllm (current vLLM, the default), vllm_legacy, sglang, tgi,
  // triton_trtllm, or none (no service metrics: a DCGM-only node that still
  // runs its workload). server_kind.h; what each serves: docs/simulator.md.
  ServerKind server = vocab::Server::kVllm;
  // `hostname_label:` Hostname (dcgm-exporter up to 4.8.1, the default) or
  // hostname (4.8.2 on).
  bool lowercase_hostname = false;
};

// One entry of `releases:`. Workload fields given in YAML (dynamic_power_w,
// sm_active, tensor_active, dram_active, occupancy, memory_bound,
// pcie_rx_bytes_s, pcie_tx_bytes_s, fb_used_mib) override the kernel
// profile's defaults; `load` is set by traffic, never by a release.
struct ReleaseSpec {
  std::string name;
  std::string profile = "baseline";  // kernel profile the workload starts from
  Workload workload;
  double power_spikiness = 1;   // multiplies dynamic power; > ~2 trips the power brake
  double dram_thrash = 1;       // > 1: more DRAM traffic per unit of work
  double occupancy_factor = 1;  // < 1: occupancy collapsed
  double slowdown = 1;          // pure software regression: work per token x this
  int xid = 0;                  // > 0: the release makes this XID recur
  double xid_per_s = 0;
  int pcie_gen = 0;    // > 0: the release's driver trains the link at this generation...
  int pcie_width = 0;  // ...and width (0: the GPU's maximum)
};

// `traffic:`. Absent: no load (rps 0).
struct TrafficSpec {
  double rps = 0;                   // mean requests/s over the whole fleet
  double diurnal_amplitude = 0;     // `diurnal.amplitude`, relative, 0..1
  double diurnal_period_s = 86400;  // `diurnal.period`
  double burst_rate_per_s = 0;      // `bursts.rate`, e.g. 1/5m
};

// The fault kinds of docs/simulator.md, "The model". Spelled in YAML as the
// snake_case names FaultKindName returns.
enum class FaultKind : std::uint8_t {
  kThermal,
  kPowerBrake,
  kPowerCap,
  kHwSlowdown,
  kPcieDowntrain,
  kPcieErrors,
  kMemoryThrash,
  kLowOccupancy,
  kXidErrors,
  kEccErrors,
};

// "thermal", "power_brake", ... ; FaultKindFromName returns false for an
// unknown name. FaultParamNames lists the `params:` keys a kind accepts.
std::string_view FaultKindName(FaultKind kind);
bool FaultKindFromName(std::string_view name, FaultKind* kind);
// The cause kind a fault shows as (docs/contracts.md §6): thermal is
// thermal_throttle, the others their namesakes.
vocab::CauseKind CauseKindOf(FaultKind kind);
std::span<const std::string_view> FaultParamNames(FaultKind kind);

// One entry of `events:`; exactly one of deploy / fault / clear_fault /
// traffic / cordon / rps per event:
//   {at: 60s, deploy: REL, nodes: [..] | all}
//   {at: 90s, fault: KIND, nodes: .., gpus: "0-3" | all, params: {NAME: NUMBER},
//    scope: node | release}
//   {at: 200s, clear_fault: KIND, nodes: .., gpus: ..}
//   {at: 120s, traffic: {REL: WEIGHT, ...}}   (or `traffic: even`: equal per node)
//   {at: 300s, cordon: node-4 | [node-4, node-5]}
//   {at: 200s, rps: 480}   (the fleet's mean request rate from then on: a load shift)
struct ScenarioEvent {
  enum Kind : std::uint8_t { kDeploy, kFault, kClearFault, kTraffic, kCordon, kRps };

  double at_s = 0;
  Kind kind = kDeploy;
  std::string release;             // kDeploy
  std::vector<std::string> nodes;  // hostnames; "all" (or a pattern) is expanded at parse time
  std::string gpus = "all";        // kFault / kClearFault: "all", "0-3", "0,2,5-7"
  FaultKind fault = FaultKind::kThermal;     // kFault / kClearFault
  std::map<std::string, double> params;      // kFault: kind-specific numbers
  std::map<std::string, double> weights;     // kTraffic: release -> share; empty: even per node
  vocab::Scope scope = vocab::Scope::kNode;  // kFault: node or release
  double rps = 0;                            // kRps: the new mean fleet rate, requests/s
};

struct Scenario {
  std::uint64_t seed = 1;
  double duration_s = 0;
  std::vector<NodeGroup> fleet;
  std::map<std::string, ReleaseSpec> releases;
  TrafficSpec traffic;
  std::vector<ScenarioEvent> events;  // in time order (non-decreasing at_s)
  std::string file;                   // the file name errors were reported against
};

// Parses and validates a scenario. `file_name` only labels error messages and
// Scenario::file. Returns kParseError "FILE:LINE:COL: field: reason" for
// malformed YAML and for every schema violation (the first one found).
// Thread-safe.
Result<Scenario> ParseScenario(std::string_view yaml_text, std::string_view file_name);

// Reads `path` and parses it. kNotFound / kIoError when it cannot be read.
Result<Scenario> LoadScenario(const std::string& path);

// Expands a GPU selector ("all", "3", "0-3", "0,2,5-7") to sorted, unique
// indices in 0..gpus_per_node-1; an error message (no position) otherwise.
Result<std::vector<int>> ExpandGpuSelector(std::string_view selector, int gpus_per_node);

}  // namespace gpucanary::sim
