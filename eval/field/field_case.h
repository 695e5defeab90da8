#pragma once
// The field suite's cases (eval/field/README.md): a scenario family written
// from field reports and physics, with randomised fleets, loads, confounders,
// telemetry gaps and label variants, each labelled with the verdict a correct
// judge gives (pass, not fail, fail) and, where one is expected, the cause
// kinds it may name, their scope and node.
//
//   std::vector<FieldCase> cases = MakeSuite(/*seed=*/1, /*cases=*/56);
//   // cases[i].name == "heat-event-03", cases[i].expect == Expect::kNotFail, ...
//
// MakeSuite is deterministic in (seed, cases). It draws every parameter here;
// the generator (field_generator.h) only runs the physics with them.
//
// Thread-compatible.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "eval/field/field_physics.h"
#include "eval/field/field_random.h"
#include "eval/field/field_service.h"

namespace gpucanary::eval::field {

enum class CaseClass : std::uint8_t {
  kAa,                      // healthy release, realistic noise
  kHeatEvent,               // data-centre heat event, every node (healthy release)
  kFacilityPowerCap,        // facility lowers the enforced power limit fleet-wide
  kLoadShift,               // traffic up or down on every node
  kLoadMismatch,            // canary busier than baseline, or baseline partly drained
  kMissingFields,           // telemetry variants and gaps, healthy release
  kPowerCapRegression,      // release draws more power: clock held down by the cap
  kPowerCapNoReasons,       // the same, on a fleet that exports no field 112
  kSoftwareSlower,          // release slower per token, no hardware mechanism
  kHwSlowdownOneGpu,        // one canary GPU in HW slowdown shortly after the release
  kPcieDowntrain,           // canary GPU link trains to x8 at the restart; no max-link fields
  kCanaryIdle,              // the release stops doing work
  kXidCrashloop,            // the release faults (Xid 13/31) and its engine crash-loops
  kBaselineNodeHot,         // a baseline node loses airflow (healthy release)
  kCanaryNodePreThrottled,  // a canary node throttles before and after the release
};

std::string_view ClassName(CaseClass c);    // "aa", "heat-event", ...
std::string_view ClassSource(CaseClass c);  // where the class comes from (README)
const std::vector<CaseClass>& AllClasses();

enum class Expect : std::uint8_t { kPass, kNotFail, kFail };
std::string_view ExpectName(Expect e);  // "pass", "not_fail", "fail"

// A window with no samples from one node's exporter (or server).
struct Gap {
  int node = 0;
  double start_s = 0;
  double length_s = 0;
};

// How the fleet's telemetry is exposed: which optional fields the exporter's
// counter CSV has, label spellings, scrape losses.
struct Exposition {
  bool throttle_field = true;       // DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (112)
  bool max_link_fields = true;      // DCGM_FI_DEV_PCIE_MAX_LINK_GEN/WIDTH (235/236)
  bool link_fields = true;          // DCGM_FI_DEV_PCIE_LINK_GEN/WIDTH (237/238)
  bool prof_fields = true;          // DCGM_FI_PROF_* (profiling module loaded)
  bool power_limit_fields = true;   // POWER_MGMT_LIMIT / ENFORCED_POWER_LIMIT (160/164)
  bool temp_limit_field = false;    // GPU_TEMP_LIMIT, the T.Limit margin (153)
  bool violation_counters = false;  // POWER_VIOLATION / THERMAL_VIOLATION (240/241)
  // Host label: 0 "Hostname" (exporter ≤ 4.5.3-4.8.2), 1 "hostname" (after
  // PR #655), 2 canary nodes "hostname" and baseline "Hostname" (an exporter
  // upgrade rolled out with the release).
  int host_label = 0;
  bool uuid_lower = false;  // -o/--use-old-namespace: "uuid"
  bool model_name_label = true;
  bool model_name_dashes = false;  // --replace-blanks-in-model-name
  // DCGM 4.6 field names: 0 none, 1 every node, 2 the canary nodes only.
  int dcgm46_names = 0;
  bool pod_labels = true;            // Kubernetes: container/namespace/pod on allocated GPUs
  bool vllm_legacy = false;          // vLLM 0.10 names (time_per_output_token_seconds)
  bool vllm_hostname_label = false;  // relabelling adds hostname; instance is the pod IP
  double miss_prob = 0.003;          // a whole scrape of one target lost
  double prof_miss_prob = 0.002;     // profiling fields blank in one sample
  std::vector<Gap> exporter_gaps;    // dcgm-exporter restarts
  std::vector<Gap> server_restarts;  // vLLM restarts on baseline nodes (counters reset)
};

// A canary GPU in HW slowdown.
struct HwEpisode {
  int node = 0;  // fleet node index
  int gpu = 0;
  double start_s = 0;
  double length_s = 0;
  double factor = 0.5;  // clock multiplier
  std::uint32_t bits = kReasonHwSlowdown;
};

struct FieldCase {
  std::string name;
  CaseClass cls = CaseClass::kAa;
  std::uint64_t seed = 0;

  // Labels.
  Expect expect = Expect::kPass;
  std::vector<std::string> kinds;  // acceptable cause kinds (contracts §6 names)
  std::string scope;               // "release", "node", or "" (none expected)
  std::string node;                // for scope node: the node named
  double onset_s = 0;              // from the start: when the fault begins (fails)
  std::string description;

  // Fleet.
  const Sku* sku = &H100Sxm();
  int nodes = 6;
  int gpus_per_node = 8;
  std::vector<int> canary;  // node indices running the release
  std::vector<std::string> hosts;
  ModelProfile model;
  double duration_s = 480;
  double release_s = 60;
  double restart_s = 20;  // canary serving gap at the release (0: pre-warmed)
  double ramp_s = 15;     // traffic ramp after the restart
  std::string driver = "580.105.08";

  // Load: offered requests/s per engine, and its variation.
  double rps = 1;
  double fleet_sigma = 0.04, fleet_phi = 0.99;  // fleet AR(1), per second
  double node_sigma = 0.05, node_phi = 0.9;     // per-node AR(1)
  double trend = 0;                             // relative change over the case
  double burst_rate = 1.0 / 120, burst_size = 0.3, burst_len_s = 10;
  bool least_outstanding = false;  // load balancer avoids slow nodes
  std::vector<double> node_load;   // per-node share multiplier

  // Environment.
  double inlet_c = 25;
  std::vector<double> node_inlet;  // per-node offset (rack position)
  double r_th = 0.06;              // mean die-to-inlet °C/W
  double sw_thermal_offset = 0;    // this fleet's SKU thresholds ± 1 °C

  // Fleet-wide confounders.
  double heat_start_s = -1, heat_ramp_s = 120, heat_inlet_c = 0, heat_rth = 1;
  double cap_start_s = -1, cap_limit_w = 0;
  bool cap_in_band = false;  // nvidia-smi -pl (POWER_MGMT_LIMIT follows) vs out of band
  double shift_start_s = -1, shift_ramp_s = 30, shift_factor = 1;

  // Release effects on the canary (after its restart).
  double toggle = 1, tensor_scale = 1;               // more power per unit of work
  double sw_factor = 1;                              // slower steps
  std::vector<HwEpisode> hw;                         // HW slowdowns (release or node)
  int pcie_gpu = -1, pcie_width = 16, pcie_gen = 5;  // on the first canary node
  int idle_mode = 0;  // 1 no traffic reaches it, 2 server never ready
  int xid = 0;        // Xid code of the crash loop (0: none)
  double xid_period_s = 90, xid_down_s = 25;

  // Node faults.
  int hot_node = -1;  // a node that loses airflow
  double hot_start_s = 0, hot_rth = 1;

  Exposition expo;
};

// The suite: `cases` cases, classes in fixed proportions (AllClasses order,
// weights in field_case.cc), parameters drawn from `seed`. With `only`, every
// case is of that class (e.g. 1,000 A/A runs).
std::vector<FieldCase> MakeSuite(std::uint64_t seed, int cases,
                                 std::optional<CaseClass> only = std::nullopt);

// The class named `name` ("aa", "heat-event", ...), or nullopt.
std::optional<CaseClass> ParseClass(std::string_view name);

// `i` as two digits ("07").
std::string Two(int i);

// `n` host names in one of three naming schemes (gpu-node-NN, hgx-rNN-uNN
// with `per_rack` nodes a rack, ip-10-4-R-N), drawn from `rng`.
std::vector<std::string> Hostnames(Rng& rng, int n, int per_rack);

// One board's silicon and cooling around the fleet's mean `r_th` (README
// "Board-to-board"): dynamic power ±3 %, leakage ±8 %, R_th ±6 %, tau 25-60 s,
// power sensor ±1 %, HBM 3-9 °C above the die.
Board DrawBoard(Rng& rng, double r_th);

// A served model (Llama-3.1-8B TP1, Llama-3.1-70B TP4/8, Qwen2.5-32B TP2/4),
// its step costs drawn from its size and the SKU's HBM bandwidth and FLOPs
// (README "Server").
ModelProfile DrawModel(Rng& rng, const Sku& sku, int gpus_per_node);

// Offered requests/s per engine for utilisation `u` of its decode capacity.
double RpsFor(const ModelProfile& m, double u);

// The mean board power of one GPU of `c` at its mean load and full clock
// (the calibration the case builder uses for thermal and power events).
double SteadyPower(const FieldCase& c, double rps, double toggle, double tensor_scale);

// The same for model `m` on `sku` at `rps` requests/s per engine.
double SteadyBoardPower(const ModelProfile& m, const Sku& sku, double rps, double toggle,
                        double tensor_scale);

// The switching factor (toggle) that puts `sku`'s power limit at clock
// `f_t` MHz for `m` at `rps` with `tensor_scale` (the power-cap classes).
double ToggleForClock(const ModelProfile& m, const Sku& sku, double rps, double tensor_scale,
                      double f_t);

}  // namespace gpucanary::eval::field
