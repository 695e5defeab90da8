#pragma once
// Imports `nvidia-smi --query-gpu=... --format=csv` logs (optionally gzipped)
// into a recorded telemetry file, in DCGM vocabulary. See docs/importers.md.
//
// Input, as nvidia-smi writes it:
//   timestamp, index, utilization.gpu [%], power.draw [W], clocks.current.sm [MHz], ...
//   2023/08/24 22:18:34.203, 0, 0 %, 34.63 W, 210 MHz, ...
// - Header cells are query field names; a trailing " [unit]" is dropped before
//   the lookup. Each known field becomes one DCGM field (NvidiaSmiQueryFields()).
//   Unknown fields are not imported and are listed in the report.
// - index / uuid / name / pci.bus_id become the labels gpu / UUID / modelName /
//   pci_bus_id; without an index column the gpu label is ImportOptions::gpu.
// - Values keep their units as written: nvidia-smi's units (%, C, W, MHz, MiB)
//   are DCGM's. "[N/A]", "[Not Supported]", "N/A" and empty cells give no sample.
//   Throttle reasons ("0x0000000000000004") and P-states ("P0") become numbers.
// - Timestamps "YYYY/MM/DD HH:MM:SS.mmm" are the logging host's local time
//   without a zone; ImportOptions::utc_offset_minutes converts them to UTC.

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "importers/import_report.h"
#include "recording/recording_writer.h"

namespace gpucanary::importers {

struct QueryFieldMapping {
  std::string_view query_field;  // nvidia-smi --query-gpu name, e.g. "clocks.current.sm"
  std::string_view dcgm_field;   // e.g. "DCGM_FI_DEV_SM_CLOCK"
};

// The query-field -> DCGM-field table, in the order docs/importers.md lists it.
std::span<const QueryFieldMapping> NvidiaSmiQueryFields();

// Imports the nvidia-smi CSV log at `input_path` ("-" = standard input) into
// `writer`. The writer stays open. Errors: see ImportCsv in csv_importer.h.
Result<ImportReport> ImportNvidiaSmiCsv(const std::string& input_path, const ImportOptions& options,
                                        recording::RecordingWriter& writer);

// Parses "2023/08/24 22:18:34.203" (also with '-' between date parts, and with
// 0 to 9 fraction digits, truncated to milliseconds) as local time at
// `utc_offset_minutes`, returning Unix milliseconds or kParseError.
Result<std::int64_t> ParseNvidiaSmiTimestamp(std::string_view text, int utc_offset_minutes);

}  // namespace gpucanary::importers
