#pragma once
// The fleet suite's ground truth and release log: the true events of a case
// measured on its simulated fleet (SimTrace), and the two JSON files beside
// the recording (releases.jsonl, docs/contracts.md §5; labels.json).
//
// Internal to eval/fleet (fleet_generator.cc fills the trace). Pure
// functions except the writers; thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/fleet/fleet_case.h"
#include "eval/fleet/fleet_generator.h"

namespace gpucanary::eval::fleet {

// One node in one simulated second (recorded part only).
struct NodeSecond {
  float tokens = 0;     // generated tokens, all engines
  float itl_w = 0;      // Σ ITL·tokens (token-weighted mean ITL = itl_w / tokens)
  float clock_sum = 0;  // Σ SM clock of busy GPUs
  std::uint8_t busy_gpus = 0;
  std::uint8_t thermal_gpus = 0;  // with 0x20 or 0x40
  std::uint8_t capped_gpus = 0;   // with 0x4
  bool up = false;                // the server serves
};

struct SimTrace {
  std::int64_t start_unix_s = 0;
  int seconds = 0;
  std::vector<std::vector<NodeSecond>> nodes;  // [node][second]
  // Per release and node, seconds from the start (-1: never): when its
  // deploy began, when it started serving there, when it stopped (rolled back).
  std::vector<std::vector<double>> deploy_at, active_from, active_to;
};

// The true events of `c` (FleetEvent), magnitudes measured on `trace`.
std::vector<FleetEvent> LabelEvents(const FleetCase& c, const SimTrace& trace);

// releases.jsonl: one annotation per release, in the order of started_at.
Status WriteReleasesJsonl(const FleetCase& c, std::int64_t start_unix_s, const std::string& path);

// labels.json: the case, its releases as deployed and its events.
Status WriteLabelsJson(const FleetCase& c, const FleetFiles& files, const std::string& path);

}  // namespace gpucanary::eval::fleet
