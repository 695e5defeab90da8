#pragma once
// The fleet suite's cases (eval/fleet/README.md): a fleet of 12-24 nodes
// serving a model for 40-70 minutes while a release log of 3-5 releases is
// rolled out the way teams roll out (staged, partial, rolled back,
// overlapping), with the effects a release can have on the GPUs it runs on,
// fleet-wide confounders, nodes' own faults and telemetry gaps. Each case
// carries what happened (the plan the generator runs); the labels — true
// events with their onsets and measured magnitudes — come from the
// simulation (fleet_generator.h).
//
//   std::vector<FleetCase> cases = MakeFleetSuite(/*seed=*/1);
//   // cases[i].name == "guilty-slower-01", cases[i].releases[2].effect.kind == ...
//
// MakeFleetSuite is deterministic in the seed; it never reads anything of
// the correlator. Thread-compatible.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/field/field_case.h"
#include "eval/field/field_physics.h"
#include "eval/field/field_service.h"

namespace gpucanary::eval::fleet {

enum class FleetClass : std::uint8_t {
  kHealthy,          // 3-5 healthy releases, staged/partial/rolled back/overlapping
  kGuiltySlower,     // one release slower per token (software), among healthy ones
  kGuiltyPower,      // one release draws more power per unit of work: the cap holds the clock
  kGuiltyThrash,     // one release moves more DRAM bytes for the same work
  kGuiltyOccupancy,  // one release's kernels keep fewer warps resident
  kGuiltyXid,        // one release faults (Xid 13/31) and its server crash-loops
  kOverlap,          // the guilty release and another land on the same nodes minutes apart
  kStaged,           // the guilty release rolls out 1 node, 25 %, all
  kRollback,         // the guilty release is rolled back (the previous one re-deployed)
  kHeat,             // fleet-wide heat event during a healthy rollout
  kFacilityCap,      // facility power cap on every GPU during a healthy rollout
  kLoadShift,        // fleet-wide traffic change during a healthy rollout
  kNodeFault,        // a node's own fault right after a healthy deploy on it
  kGuiltyAndNode,    // a guilty release and a node fault elsewhere
  kBaselineRestart,  // a server restart with no release, during a healthy rollout
  kMissing,          // telemetry variants: no field 112, no profiling, vLLM 0.10, gaps...
  kSensitivity,      // a release 2 % or 5 % slower per token on >= 16 GPUs
};

std::string_view ClassName(FleetClass c);  // "healthy", "guilty-slower", ...

// What was released (the release log's vocabulary, contracts §5).
enum class ReleaseType : std::uint8_t { kModel, kKernel, kQuantization, kFramework, kDriver };
std::string_view ReleaseTypeName(ReleaseType t);  // "model", "kernel", ...

enum class EffectKind : std::uint8_t {
  kNone,
  kSlower,        // step time × sw_factor (software: kernels, scheduler)
  kPowerHungry,   // more switching energy per unit of work: the power cap holds the clock
  kMemoryThrash,  // DRAM activity × dram_scale for the same work; the memory-bound part slower
  kLowOccupancy,  // SM occupancy × occupancy_scale; steps a little slower
  kXidCrashloop,  // Xid `xid` on one GPU of each node, the server down xid_down_s every
                  // xid_period_s
};
std::string_view EffectName(EffectKind k);

struct Effect {
  EffectKind kind = EffectKind::kNone;
  double sw_factor = 1;  // decode and prefill time multiplier
  double toggle = 1, tensor_scale = 1;
  double dram_scale = 1;
  double occupancy_scale = 1;
  int xid = 0;
  double xid_period_s = 120, xid_down_s = 25, xid_first_s = 60;  // first crash after serving
};

// The release reaches one node: its server restarts (restart_s > 0: that
// long without a server, model loaded over PCIe, counters from 0, new pod
// names) or pre-warmed pods swap in (restart_s == 0).
struct Deploy {
  int node = 0;
  double at_s = 0;  // from the case's start
  double restart_s = 0;
};

struct Release {
  std::string id;
  std::string previous;  // id of what it replaces on its nodes
  ReleaseType type = ReleaseType::kFramework;
  std::string version, model, checkpoint, quantization, cuda_version, framework_version, driver;
  double started_at_s = 0;      // announced start (first deploy)
  std::vector<Deploy> deploys;  // in time order
  std::vector<int> announced;   // targets in the annotation (may be more than reached)
  Effect effect;
  int rollback_of = -1;  // index of the release this one undoes (it restores `previous`)
  std::string rollout;   // "staged", "partial", "all", "rollback", "canary" (for the report)
};

// A node's own fault.
enum class NodeFaultKind : std::uint8_t {
  kNone,
  kAirflow,     // R_th × airflow_rth over 30 s: SW thermal slowdown
  kPcieDown,    // one GPU's link retrains at x8/x4 at a restart (replays, slow loads)
  kHwSlowdown,  // one GPU in HW slowdown (0x8) or power brake (0x88) for minutes
  kXid79,       // one GPU falls off the bus: its series vanish, the node stops serving
  kEcc,         // Xid 48 + 63 on one GPU: remapped row, the server restarts (RESTART_APP)
};
std::string_view NodeFaultName(NodeFaultKind k);

struct NodeFault {
  NodeFaultKind kind = NodeFaultKind::kNone;
  int node = 0;
  int gpu = 0;
  double start_s = 0;
  double length_s = 1e9;
  double airflow_rth = 1;
  int pcie_width = 8, pcie_gen = 5;
  double hw_factor = 0.5;
  std::uint32_t hw_bits = field::kReasonHwSlowdown;
};

// A server restart with no release (OOM, liveness probe, node maintenance).
struct Restart {
  int node = 0;
  double at_s = 0;
  double length_s = 20;
};

struct FleetCase {
  std::string name;
  FleetClass cls = FleetClass::kHealthy;
  std::uint64_t seed = 0;
  std::string description;

  // Fleet.
  const field::Sku* sku = &field::H100Sxm();
  int nodes = 12;
  int gpus_per_node = 8;
  std::vector<std::string> hosts;
  field::ModelProfile model;
  double duration_s = 2400;
  int scrape_s = 5;  // Prometheus-like scrape interval of every target
  std::string driver = "570.172.08";
  std::string service = "chat-api";

  // Load (offered requests/s per engine and its variation), as field_case.h.
  double rps = 1;
  double fleet_sigma = 0.04, fleet_phi = 0.99;
  double node_sigma = 0.05, node_phi = 0.9;
  double trend = 0;        // relative change over the case
  double diurnal_amp = 0;  // sinusoidal, period diurnal_period_s
  double diurnal_period_s = 86400;
  double diurnal_phase = 0;
  double burst_rate = 1.0 / 300, burst_size = 0.2, burst_len_s = 10;
  bool least_outstanding = false;
  double ramp_s = 15;  // a restarted server gets its traffic back over this
  std::vector<double> node_load;

  // Environment.
  double inlet_c = 25;
  std::vector<double> node_inlet;
  double r_th = 0.06;
  double sw_thermal_offset = 0;

  // Fleet-wide confounders (start < 0: none).
  double heat_start_s = -1, heat_ramp_s = 120, heat_inlet_c = 0, heat_rth = 1, heat_len_s = 1e9;
  double cap_start_s = -1, cap_limit_w = 0;
  bool cap_in_band = false;
  double shift_start_s = -1, shift_ramp_s = 30, shift_factor = 1;

  std::vector<Release> releases;
  std::vector<NodeFault> faults;
  std::vector<Restart> restarts;
  field::Exposition expo;
  std::vector<int> dcgm46_nodes;  // nodes whose exporter uses DCGM 4.6 names (expo.dcgm46_names 2)
  std::vector<int> lower_host_nodes;  // nodes labelled "hostname" (expo.host_label 2)
};

// The suite: about 24 cases, classes in fixed proportions, every parameter
// drawn from `seed`.
std::vector<FleetCase> MakeFleetSuite(std::uint64_t seed);

// A small case of `cls` for tests: 4-6 nodes of 4 GPUs, `duration_s` long.
FleetCase MakeSmallCase(FleetClass cls, std::uint64_t seed, double duration_s);

// Mean board power of one GPU at `rps` per engine and full clock (the
// calibration the case builder uses for thermal and power events).
double SteadyPower(const FleetCase& c, double rps, double toggle, double tensor_scale);

}  // namespace gpucanary::eval::fleet
