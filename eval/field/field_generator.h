#pragma once
// Runs one field case (field_case.h) through the GPU and server models and
// writes what a recorder would have captured from the fleet: `baseline.om`
// (the baseline nodes) and `canary.om` (the canary nodes, history before the
// release included), gpucanary's recorded-telemetry format (docs/contracts.md
// §4: timestamped OpenMetrics, time-blocked, `# EOF`), written with the
// product's RecordingWriter.
//
// GPU series are dcgm-exporter's, family by family in field-id order with
// the exporter's label order (gpu, UUID, pci_bus_id, device, modelName,
// Hostname, DCGM_FI_DRIVER_VERSION, then container/namespace/pod), INT64
// fields as integers and DOUBLE fields with six decimals, blank fields
// absent (reference/dcgm-telemetry.md §1.3). Server series are vLLM's
// (src/vocab/testdata/vllm.prom; vllm_legacy.prom for 0.10) with the
// scrape's `instance` and `job` labels. Each target is scraped once a second
// at its own phase with a few ms of jitter; a lost scrape leaves no sample.
//
//   Result<CaseFiles> files = GenerateCase(cases[0], "/tmp/field/aa-01");
//   // gpucanary judge --baseline files->baseline --canary files->canary
//   //                 --release-start files->release_unix_s
//
// Errors: kIoError when a file cannot be written; kInvalidArgument from the
// writer for a series it refuses (a bug here). Thread-compatible.

#include <cstdint>
#include <string>

#include "core/status.h"
#include "eval/field/field_case.h"

namespace gpucanary::eval::field {

// What the generator wrote and what it saw happen (the case's ground truth,
// measured on the simulated fleet, not on the recordings).
struct CaseFiles {
  std::string baseline;
  std::string canary;
  std::int64_t start_unix_s = 0;    // first second
  std::int64_t release_unix_s = 0;  // --release-start
  double onset_unix_s = 0;          // when the labelled fault begins
  // Busy seconds after the release is serving (and the onset, for fails):
  double canary_clock_mhz = 0, baseline_clock_mhz = 0;  // mean SM clock
  double canary_itl_s = 0, baseline_itl_s = 0;          // token-weighted mean ITL
  double canary_power_w = 0, baseline_power_w = 0;
  int canary_capped_s = 0, baseline_capped_s = 0;    // GPU-seconds with 0x4
  int canary_thermal_s = 0, baseline_thermal_s = 0;  // GPU-seconds with 0x20/0x40
  std::uint64_t samples = 0;                         // both files
  // With `trace`: one CSV line per 10 s of the simulated fleet (canary vs
  // baseline means), for looking at a case by eye.
  std::string trace;
};

Result<CaseFiles> GenerateCase(const FieldCase& c, const std::string& dir, bool trace = false);

}  // namespace gpucanary::eval::field
