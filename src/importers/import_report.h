#pragma once
// Options and results shared by the importers (nvidia_smi_importer.h,
// dcgm_csv_importer.h), and their human-readable summary.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time_format.h"

namespace gpucanary::importers {

struct ImportOptions {
  // Value of the Hostname label. Empty: the input file's name without its
  // directory and extensions ("logs/node-3.csv.gz" -> "node-3"; "-" -> "stdin").
  // A Hostname/hostname column, where the input has one, wins over this.
  std::string hostname;
  // Value of the modelName label (the GPU model, e.g. "NVIDIA H100 PCIe") for
  // rows whose input has no model column or an empty cell there. The judge
  // compares GPUs only within one model, so a log without its model should be
  // given one. A name/gpu_name/gpu_model/modelName cell wins over this.
  std::string model_name;
  // Value of the gpu label when the input has no GPU index column.
  std::string gpu = "0";
  // nvidia-smi timestamps are the logging host's local time without a zone;
  // this is that host's offset from UTC in minutes (+120 for +02:00). UTC is
  // local time minus the offset. Ignored for inputs with epoch timestamps.
  int utc_offset_minutes = 0;
  // false: stop at the first malformed row with its error. true: skip malformed
  // rows, count them and keep the first messages in the report.
  bool skip_bad_lines = false;
  // Only rows of these GPU indices are imported (empty: every GPU); the rows
  // of other GPUs are counted in ImportReport::rows_other_gpus (an input with
  // rows of other GPUs only is an error). Splits an 8-GPU trace into two arms
  // of a side-by-side comparison.
  std::vector<std::string> gpus;
  // Moves every imported row by one offset so the first imported row lands at
  // this instant (Unix ms); intervals stay as they were. Lines up two logs
  // recorded at different times (the same job before and after a change) so
  // they can be judged side by side. The report's timestamps are the moved ones.
  std::optional<std::int64_t> start_at_ms;
};

struct PhaseTransition {
  std::int64_t timestamp_ms;
  std::string phase;
};

struct ImportedColumn {
  std::string column;  // CSV header cell, e.g. "power.draw [W]"
  std::string metric;  // DCGM metric it became, e.g. DCGM_FI_DEV_POWER_USAGE
};

struct ImportReport {
  static constexpr size_t kMaxSkippedMessages = 10;
  static constexpr size_t kMaxPhaseTransitions = 1000;

  std::string input;
  // Data rows: every line after the header except blank lines and repeats of
  // the header line.
  std::uint64_t rows_read = 0;
  std::uint64_t rows_imported = 0;
  std::uint64_t rows_skipped = 0;
  std::uint64_t rows_other_gpus = 0;  // rows of GPUs not in ImportOptions::gpus
  // What ImportOptions::start_at_ms added to every timestamp (0 without it).
  std::int64_t shift_ms = 0;
  std::vector<std::string> skipped_messages;  // "file:line:col: message", the first few
  std::uint64_t samples_written = 0;
  // Cells of imported rows that held no value (empty, N/A, [Not Supported], ...):
  // samples_written + missing_cells == rows_imported * imported_columns.size().
  std::uint64_t missing_cells = 0;
  std::vector<ImportedColumn> imported_columns;
  // Header cells that map to no DCGM field, with the reason when it is not
  // simply an unknown name; their cells were not imported.
  std::vector<std::string> unknown_columns;
  std::optional<std::int64_t> first_timestamp_ms;  // earliest imported row
  std::optional<std::int64_t> last_timestamp_ms;   // latest imported row
  std::vector<std::string> gpus;  // "<Hostname>/<gpu>", in order of first appearance
  // Changes of the `phase` column (DCGM CSV only), the first with the first row.
  std::vector<PhaseTransition> phase_transitions;  // at most kMaxPhaseTransitions
  std::uint64_t phase_transitions_total = 0;
};

// Parses a UTC offset: "Z", "+HH:MM", "-HH:MM", "+HHMM" or "+HH", up to ±14:00.
// Returns the offset in minutes, or kInvalidArgument.
Result<int> ParseUtcOffset(std::string_view text);

// The default Hostname for `input_path`, see ImportOptions::hostname.
std::string DefaultHostname(std::string_view input_path);

// A few lines for people: rows, samples, columns, GPUs, time range, skipped rows
// and phases. Every line ends with '\n'.
std::string FormatImportSummary(const ImportReport& report);

}  // namespace gpucanary::importers
