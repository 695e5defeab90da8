#pragma once
// The streaming engine behind the CSV importers (nvidia_smi_importer.h,
// dcgm_csv_importer.h). A dialect says what each header cell means and how
// timestamps are written; the engine does the rest the same way for both:
//
//  - reads the input line by line (plain or gzip) in bounded memory;
//  - writes each row's cells as samples of one timestamp, in header order, with
//    dcgm-exporter's label order gpu, UUID, pci_bus_id, device, modelName, Hostname;
//  - writes no sample for a cell without a value (empty, N/A, [Not Supported], ...);
//  - checks every row (cell count, numbers, timestamps that go back for a GPU)
//    before writing any of it, so a skipped row leaves nothing behind.
//
// Error positions are "FILE:LINE:COLUMN", COLUMN being the 1-based character
// column where the offending cell starts (or the end of the line when cells are
// missing). Blank lines and repeats of the header line are passed over.

#include <cstdint>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

#include "core/status.h"
#include "dcgm/fields.h"
#include "importers/import_report.h"
#include "recording/recording_writer.h"

namespace gpucanary::importers {

enum class ColumnRole : std::uint8_t {
  kIgnored,    // not imported; listed in ImportReport::unknown_columns
  kTimestamp,  // required
  kGpu,        // label gpu (and device="nvidia<gpu>")
  kUuid,       // label UUID
  kPciBusId,   // label pci_bus_id
  kModelName,  // label modelName
  kHostname,   // label Hostname, overriding ImportOptions::hostname
  kPhase,      // workload phase: reported, never a metric
  kValue,      // a DCGM field
};

struct ColumnSpec {
  ColumnRole role = ColumnRole::kIgnored;
  const dcgm::FieldInfo* field = nullptr;  // kValue only: an entry of the DCGM catalog
};

// How a cell of a field is written in the logs.
enum class ValueSyntax : std::uint8_t {
  kNumber,   // decimal, optionally followed by " UNIT" (nvidia-smi: "34.63 W")
  kBitmask,  // "0x0000000000000004" (nvidia-smi) or decimal "4" (DCGM CSV)
  kPstate,   // "P0".."P15" (nvidia-smi) or decimal "0".."15"
};

// The syntax of `field`: bitmask fields (112) take hex, the P-state (190) "P<n>".
ValueSyntax SyntaxOf(const dcgm::FieldInfo& field);

// The Prometheus type a field is recorded with: counter for the catalog's
// counters (written as `unknown` when the name lacks _total, see
// recording_writer.h), gauge for everything else.
model::MetricType MetricKindOf(const dcgm::FieldInfo& field);

// HELP text: the catalog's meaning plus the unit, e.g. "current SM clock (in MHz)".
std::string HelpOf(const dcgm::FieldInfo& field);

// The catalog entry for a DCGM metric name (legacy or DCGM 4.6 name) that can be
// a value column, or nullptr (unknown names and string/label fields).
const dcgm::FieldInfo* FindValueField(std::string_view name);

// What a value cell held.
enum class CellValue : std::uint8_t { kNumber, kMissing, kBad };

// Parses one trimmed value cell. Missing: "", "N/A", "nan" (any case) and any
// "[...]" text (nvidia-smi's "[N/A]", "[Not Supported]", "[Unknown Error]").
// kNumber: a decimal number optionally followed by one space and a unit word
// ("34.63 W", "0 %", "1024 MiB"); kBitmask also takes "0x" hex; kPstate also
// takes "P<n>". Anything else is kBad.
CellValue ParseValueCell(std::string_view cell, ValueSyntax syntax, double* value);

struct CsvDialect {
  std::string_view name;  // "nvidia-smi", "DCGM CSV"
  ColumnSpec (*resolve_column)(std::string_view header_cell);
  // Unix milliseconds of a timestamp cell, or why it cannot be read.
  tl::expected<std::int64_t, std::string> (*parse_timestamp)(std::string_view cell,
                                                             const ImportOptions& options);
};

// Imports `input_path` ("-" = standard input) into `writer`, declaring the
// families it needs. Does not close the writer.
// Returns kParseError "FILE:LINE:COL: ..." for malformed input (the first bad
// row unless options.skip_bad_lines), kNotFound/kIoError when the input cannot
// be read, and the writer's error when output fails.
Result<ImportReport> ImportCsv(const CsvDialect& dialect, const std::string& input_path,
                               const ImportOptions& options, recording::RecordingWriter& writer);

}  // namespace gpucanary::importers
