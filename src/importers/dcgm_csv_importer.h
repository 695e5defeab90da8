#pragma once
// Imports CSV traces written by DCGM collectors (optionally gzipped) into a
// recorded telemetry file. See docs/importers.md.
//
// Input: one row per GPU and sampling tick, e.g. (atharvanihalani traces)
//   timestamp,phase,gpu,gpu_model,power_w,temp_c,...,throttle_reasons,energy_mj
//   1775016266.006,init,0,NVIDIA H100 80GB HBM3,71.4,34,...,1,238749445947
// - timestamp: Unix epoch seconds, decimal (rounded to the millisecond).
// - gpu / gpu_model|modelName / uuid|UUID / pci_bus_id / Hostname|hostname: labels.
// - phase: a workload label, not a DCGM field. No metric is made of it; its
//   changes are reported (ImportReport::phase_transitions).
// - Value columns: named in DcgmCsvColumns(), or literally a DCGM field name the
//   catalog (dcgm/fields.h) knows: a column "DCGM_FI_DEV_SM_CLOCK" imports as
//   that field. DCGM 4.6 names are written under their legacy name, the one
//   dcgm-exporter's shipped CSVs use (DCGM_FI_DEV_CLOCKS_EVENT_REASONS ->
//   DCGM_FI_DEV_CLOCK_THROTTLE_REASONS). Anything else is listed as unknown and
//   not imported.
// - Empty cells give no sample.

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "importers/import_report.h"
#include "recording/recording_writer.h"

namespace gpucanary::importers {

struct CsvColumnMapping {
  std::string_view column;      // CSV header name, e.g. "power_w"
  std::string_view dcgm_field;  // e.g. "DCGM_FI_DEV_POWER_USAGE"
};

// Column aliases known besides DCGM field names, in the order docs/importers.md lists them.
std::span<const CsvColumnMapping> DcgmCsvColumns();

// Imports the DCGM CSV trace at `input_path` ("-" = standard input) into
// `writer`. The writer stays open. ImportOptions::utc_offset_minutes is unused
// (epoch timestamps are UTC). Errors: see ImportCsv in csv_importer.h.
Result<ImportReport> ImportDcgmCsv(const std::string& input_path, const ImportOptions& options,
                                   recording::RecordingWriter& writer);

// Parses Unix epoch seconds ("1775016266.006", "1775016266", "1.775016266006e9")
// into milliseconds, rounding half away from zero. Returns kParseError.
Result<std::int64_t> ParseEpochSeconds(std::string_view text);

}  // namespace gpucanary::importers
