#pragma once
// The diagnostic bundle (docs/actions.md, "diagnostic_bundle"): one folder
// per failed canary with what an engineer needs to look into it later,
// written atomically (a hidden temporary folder, renamed when complete).
//
//   {root}/{canary id}-{UTC time}/
//     incident.json   the verdict, causes and release (IncidentToJson)
//     ...             what the telemetry writer adds (the GPUs' samples)
//     README.txt      what each file is

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "actions/incident.h"
#include "core/status.h"

namespace gpucanary::actions {

// Writes the telemetry window of an incident into a bundle's folder (the
// daemon writes the affected GPUs' samples as an OpenMetrics recording).
using TelemetryWriter = std::function<Status(const std::filesystem::path& dir)>;

struct BundleResult {
  std::filesystem::path path;      // the bundle's folder
  std::vector<std::string> files;  // its files, sorted
  Status telemetry;                // the writer's error (the bundle is kept without it)
};

// Writes the bundle of `incident` under `root` (created if missing), named
// BundleName(canary id, now_ms), "-2", "-3" ... appended if taken.
// `telemetry` may be empty. Errors (nothing is left behind): kIoError
// naming the path and what the OS said.
Result<BundleResult> WriteDiagnosticBundle(const std::filesystem::path& root,
                                           const Incident& incident, std::int64_t now_ms,
                                           const TelemetryWriter& telemetry);

// The bundle's folder name: "{canary id}-{UTC time}", e.g.
// "canary-7-20261202T130034Z", with characters other than [A-Za-z0-9._-]
// of the id replaced by '_'.
std::string BundleName(const std::string& canary_id, std::int64_t now_ms);

}  // namespace gpucanary::actions
