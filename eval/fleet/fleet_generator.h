#pragma once
// Runs one fleet case (fleet_case.h) through the field suite's GPU and
// server models (eval/field: field_physics, field_service) second by second
// and writes what a Prometheus scraping the fleet would have stored, plus
// the release log and the ground truth:
//
//   DIR/fleet.om         every node's dcgm-exporter and vLLM series, scraped
//                        every scrape_s seconds (docs/contracts.md §4), through
//                        field_exposition and the product's RecordingWriter;
//   DIR/releases.jsonl   the release annotations (docs/contracts.md §5);
//   DIR/labels.json      the true events (FleetEvent) and the case.
//
// The labels come from the simulation: an event's onset is when its effect
// first runs on a node (a release's server serving, a throttle bit first
// set), its magnitude is measured on the simulated fleet (affected nodes
// against the others, before against after), never from a detector.
//
//   Result<FleetFiles> f = GenerateFleetCase(cases[0], "/tmp/fleet/healthy-01");
//   // gpucanary correlate --telemetry f->telemetry --releases f->releases --output json
//
// Errors: kIoError when a file cannot be written; kInvalidArgument from the
// writer for a series it refuses (a bug here). Thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/fleet/fleet_case.h"

namespace gpucanary::eval::fleet {

// Whether a correlator must report an event: kYes (a release regression, a
// material node fault), kNo (a report there is noise: load shifts, restarts
// with no release), kOptional (a fleet-wide heat or power event: reporting
// it is fine, blaming a release for it is not).
enum class Must : std::uint8_t { kYes, kNo, kOptional };

struct FleetEvent {
  std::string type;     // "release", "node", "fleet", "load"
  std::string release;  // the guilty release (type "release")
  std::string what;     // effect or fault ("slower", "airflow_loss", ...)
  std::vector<std::string> nodes;
  std::vector<double> node_onsets;  // Unix seconds, one per node
  double onset = 0;                 // Unix seconds, first node
  double end = 0;                   // Unix seconds the effect stops (rollback, end of fault)
  std::string measure;              // "per_token_latency", "sm_clock", ...
  double magnitude = 0;             // relative change of `measure` (or a share, see measure)
  std::vector<std::string> kinds;   // acceptable cause kinds (src/vocab/vocab.h)
  Must must = Must::kYes;
  std::string description;
};

struct FleetFiles {
  std::string telemetry, releases, labels;
  std::int64_t start_unix_s = 0;
  std::vector<FleetEvent> events;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;  // of the telemetry file
};

Result<FleetFiles> GenerateFleetCase(const FleetCase& c, const std::string& dir);

std::string_view MustName(Must m);  // "true", "false", "optional"

}  // namespace gpucanary::eval::fleet
