#include "importers/csv_importer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/string_map.h"
#include "importers/csv_line.h"
#include "importers/line_reader.h"

namespace gpucanary::importers {
namespace {

using model::LabelView;

constexpr size_t kRoleCount = static_cast<size_t>(ColumnRole::kValue) + 1;

bool IsBlankLine(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) {
      return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// A decimal number, all of `text`. std::from_chars refuses a leading '+'.
bool ParseDecimal(std::string_view text, double* value) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text[0] == '-') return false;
  }
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseUnsigned(std::string_view text, int base, double* value) {
  std::uint64_t integer = 0;
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), integer, base);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  *value = static_cast<double>(integer);
  return true;
}

// Error in one row: where (byte offset in the line), which header field, why.
struct RowError {
  size_t offset;
  std::string_view field;  // header cell; empty when no single field is at fault
  std::string message;
};

struct Column {
  std::string header;
  ColumnSpec spec;
};

struct PendingSample {
  const dcgm::FieldInfo* field;
  double value;
};

// One import run. Holds only per-column and per-GPU state, never per-row history.
class CsvImport {
 public:
  CsvImport(const CsvDialect& dialect, const std::string& input_path, const ImportOptions& options,
            recording::RecordingWriter& writer)
      : dialect_(dialect),
        options_(options),
        writer_(writer),
        file_(input_path == "-" ? "<stdin>" : input_path),
        default_hostname_(options.hostname.empty() ? DefaultHostname(input_path)
                                                   : options.hostname) {
    report_.input = file_;
  }

  Result<ImportReport> Run(const std::string& input_path);

 private:
  Status SetUpColumns(std::string_view header);
  // Checks one data row and prepares it for WriteRow (pending_, row_ms_,
  // labels_); on failure sets *error and leaves nothing to write.
  bool ParseRow(std::string_view line, RowError* error);
  bool ParseCells(RowError* error);   // timestamp, values, identity cells
  bool IdentifyGpu(RowError* error);  // gpu/Hostname, time order per GPU, labels
  Status WriteRow();
  std::string_view PhaseCell() const { return identity_[static_cast<size_t>(ColumnRole::kPhase)]; }
  std::string Where(std::string_view line, size_t offset) const;
  std::string Describe(std::string_view line, const RowError& error) const;

  const CsvDialect& dialect_;
  const ImportOptions& options_;
  recording::RecordingWriter& writer_;
  const std::string file_;
  const std::string default_hostname_;
  ImportReport report_;
  std::unique_ptr<LineReader> reader_;
  std::uint64_t samples_before_ = 0;  // the writer may already hold other inputs' samples

  std::vector<Column> columns_;
  std::array<int, kRoleCount> role_column_{};  // column index per ColumnRole, -1 if absent
  std::string header_line_;
  StringMap<std::int64_t> gpu_last_ms_;
  std::string last_phase_;

  // Per-row scratch, reused so that rows allocate nothing once warmed up.
  std::vector<CsvCell> cells_;
  std::string cell_scratch_;
  std::vector<PendingSample> pending_;
  std::uint64_t row_missing_ = 0;
  std::int64_t row_ms_ = 0;
  bool row_other_gpu_ = false;            // a GPU that ImportOptions::gpus leaves out
  std::optional<std::int64_t> shift_ms_;  // ImportOptions::start_at_ms - first row, once known
  std::string gpu_key_;                   // "<Hostname>/<gpu>"
  std::string device_;                    // "nvidia<gpu>"
  std::array<std::string_view, kRoleCount> identity_{};  // identity cells by ColumnRole
  std::array<LabelView, 6> labels_{};
  size_t label_count_ = 0;
};

Result<ImportReport> CsvImport::Run(const std::string& input_path) {
  auto reader = LineReader::Open(input_path);
  if (!reader) return Error(reader.error());
  reader_ = std::move(*reader);
  samples_before_ = writer_.samples_written();

  std::string_view line;
  while (true) {
    auto more = reader_->Next(&line);
    if (!more) return Error(more.error());
    if (!*more) {
      return Error(StatusCode::kParseError, file_ + ":1:1: empty input: expected a " +
                                                std::string(dialect_.name) + " header line");
    }
    if (!IsBlankLine(line)) break;
  }
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // UTF-8 byte order mark
  header_line_.assign(line);
  if (Status status = SetUpColumns(header_line_); !status.ok()) return Error(std::move(status));

  while (true) {
    auto more = reader_->Next(&line);
    if (!more) return Error(more.error());
    if (!*more) break;
    if (IsBlankLine(line) || line == header_line_) continue;
    ++report_.rows_read;
    RowError error;
    const bool parsed = ParseRow(line, &error);
    if (parsed && row_other_gpu_) {
      ++report_.rows_other_gpus;
      continue;
    }
    if (!parsed) {
      std::string message = Describe(line, error);
      if (!options_.skip_bad_lines) return Error(StatusCode::kParseError, std::move(message));
      ++report_.rows_skipped;
      if (report_.skipped_messages.size() < ImportReport::kMaxSkippedMessages) {
        report_.skipped_messages.push_back(std::move(message));
      }
      continue;
    }
    if (Status status = WriteRow(); !status.ok()) {
      // Output failures (disk full) are not about this row; anything else the
      // writer refuses is, so it gets the row's position.
      if (status.code() == StatusCode::kIoError) return Error(std::move(status));
      return Error(status.WithPrefix(file_ + ":" + std::to_string(reader_->line_number())));
    }
  }
  if (!options_.gpus.empty() && report_.rows_imported == 0 && report_.rows_other_gpus > 0) {
    std::string wanted;
    for (const std::string& g : options_.gpus) wanted += (wanted.empty() ? "" : ",") + g;
    return Error(StatusCode::kInvalidArgument,
                 file_ + ": no row of GPU(s) " + wanted + " (--gpus): all " +
                     std::to_string(report_.rows_other_gpus) + " rows are of other GPUs");
  }
  report_.samples_written = writer_.samples_written() - samples_before_;
  return std::move(report_);
}

Status CsvImport::SetUpColumns(std::string_view header) {
  role_column_.fill(-1);
  if (auto split_error = SplitCsvLine(header, &cells_, &cell_scratch_)) {
    return Status(StatusCode::kParseError,
                  Where(header, split_error->offset) + ": " + split_error->message);
  }
  for (const CsvCell& cell : cells_) {
    Column column{std::string(cell.text), dialect_.resolve_column(cell.text)};
    const auto role_index = static_cast<size_t>(column.spec.role);
    std::string not_imported;
    if (column.spec.role == ColumnRole::kIgnored) {
      not_imported = column.header.empty()
                         ? "(empty header at column " +
                               std::to_string(CharacterColumn(header, cell.offset)) + ")"
                         : column.header;
    } else if (column.spec.role == ColumnRole::kValue) {
      for (const ImportedColumn& imported : report_.imported_columns) {
        if (imported.metric == column.spec.field->name) {
          not_imported = column.header + " (same DCGM field as " + imported.column + ")";
        }
      }
    } else if (role_column_[role_index] >= 0) {
      not_imported = column.header + " (repeated column)";
    }
    if (!not_imported.empty()) {
      report_.unknown_columns.push_back(std::move(not_imported));
      column.spec = ColumnSpec{};
    } else if (column.spec.role == ColumnRole::kValue) {
      const dcgm::FieldInfo& field = *column.spec.field;
      GC_RETURN_IF_ERROR(writer_.DeclareFamily(field.name, MetricKindOf(field), HelpOf(field)));
      report_.imported_columns.push_back({column.header, std::string(field.name)});
    } else if (column.spec.role != ColumnRole::kIgnored) {
      role_column_[role_index] = static_cast<int>(columns_.size());
    }
    columns_.push_back(std::move(column));
  }
  if (role_column_[static_cast<size_t>(ColumnRole::kTimestamp)] < 0) {
    return Status(StatusCode::kParseError,
                  Where(header, 0) + ": the header has no 'timestamp' column");
  }
  if (report_.imported_columns.empty()) {
    return Status(StatusCode::kParseError,
                  Where(header, 0) + ": no column of the header maps to a DCGM field");
  }
  return Status::Ok();
}

bool CsvImport::ParseRow(std::string_view line, RowError* error) {
  if (auto split_error = SplitCsvLine(line, &cells_, &cell_scratch_)) {
    *error = RowError{split_error->offset, {}, split_error->message};
    return false;
  }
  if (cells_.size() != columns_.size()) {
    const std::string counts = "row has " + std::to_string(cells_.size()) + " cells, header has " +
                               std::to_string(columns_.size());
    if (cells_.size() < columns_.size()) {
      *error = RowError{line.size(), columns_[cells_.size()].header, "missing: " + counts};
    } else {
      *error =
          RowError{cells_[columns_.size()].offset,
                   {},
                   "extra cell after the last field '" + columns_.back().header + "': " + counts};
    }
    return false;
  }
  return ParseCells(error) && IdentifyGpu(error);
}

bool CsvImport::ParseCells(RowError* error) {
  pending_.clear();
  row_missing_ = 0;
  identity_.fill({});
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Column& column = columns_[i];
    const CsvCell& cell = cells_[i];
    switch (column.spec.role) {
      case ColumnRole::kIgnored:
        break;
      case ColumnRole::kTimestamp: {
        auto ms = dialect_.parse_timestamp(cell.text, options_);
        if (!ms) {
          *error = RowError{cell.offset, column.header, ms.error()};
          return false;
        }
        row_ms_ = *ms;
        break;
      }
      case ColumnRole::kValue: {
        double value = 0;
        const ValueSyntax syntax = SyntaxOf(*column.spec.field);
        const CellValue parsed = ParseValueCell(cell.text, syntax, &value);
        if (parsed == CellValue::kNumber) pending_.push_back({column.spec.field, value});
        if (parsed == CellValue::kMissing) ++row_missing_;
        if (parsed == CellValue::kBad) {
          const char* what = syntax == ValueSyntax::kBitmask  ? "a bitmask"
                             : syntax == ValueSyntax::kPstate ? "a P-state"
                                                              : "a number";
          *error = RowError{cell.offset, column.header,
                            "cannot parse \"" + std::string(cell.text) + "\" as " + what};
          return false;
        }
        break;
      }
      default:
        identity_[static_cast<size_t>(column.spec.role)] = cell.text;
        break;
    }
  }
  return true;
}

bool CsvImport::IdentifyGpu(RowError* error) {
  const auto cell_of = [&](ColumnRole role) { return identity_[static_cast<size_t>(role)]; };
  const auto column_of = [&](ColumnRole role) {
    return static_cast<size_t>(role_column_[static_cast<size_t>(role)]);
  };
  std::string_view gpu = options_.gpu;
  if (role_column_[static_cast<size_t>(ColumnRole::kGpu)] >= 0) {
    gpu = cell_of(ColumnRole::kGpu);
    if (gpu.empty()) {
      const size_t column = column_of(ColumnRole::kGpu);
      *error = RowError{cells_[column].offset, columns_[column].header, "empty GPU index"};
      return false;
    }
  }
  row_other_gpu_ = !options_.gpus.empty() && std::find(options_.gpus.begin(), options_.gpus.end(),
                                                       gpu) == options_.gpus.end();
  if (row_other_gpu_) return true;
  if (options_.start_at_ms) {
    if (!shift_ms_) {
      shift_ms_ = *options_.start_at_ms - row_ms_;
      report_.shift_ms = *shift_ms_;
    }
    row_ms_ += *shift_ms_;
  }
  std::string_view hostname = cell_of(ColumnRole::kHostname);
  if (hostname.empty()) hostname = default_hostname_;

  gpu_key_.assign(hostname);
  gpu_key_ += '/';
  gpu_key_ += gpu;
  if (auto it = gpu_last_ms_.find(std::string_view(gpu_key_));
      it != gpu_last_ms_.end() && row_ms_ < it->second) {
    const size_t column = column_of(ColumnRole::kTimestamp);
    *error = RowError{cells_[column].offset, columns_[column].header,
                      "timestamp " + FormatUtcMillis(row_ms_) + " goes back before " +
                          FormatUtcMillis(it->second) + ", the previous row of GPU " + gpu_key_};
    return false;
  }

  device_.assign("nvidia");
  device_ += gpu;
  label_count_ = 0;
  const auto add_label = [&](std::string_view name, std::string_view value) {
    if (!value.empty()) labels_[label_count_++] = LabelView{name, value};
  };
  // dcgm-exporter's label order (shared/reference/dcgm-telemetry.md §1.3).
  add_label("gpu", gpu);
  add_label("UUID", cell_of(ColumnRole::kUuid));
  add_label("pci_bus_id", cell_of(ColumnRole::kPciBusId));
  add_label("device", device_);
  std::string_view model_name = cell_of(ColumnRole::kModelName);
  if (model_name.empty()) model_name = options_.model_name;
  add_label("modelName", model_name);
  add_label("Hostname", hostname);
  return true;
}

Status CsvImport::WriteRow() {
  const std::span<const LabelView> labels(labels_.data(), label_count_);
  for (const PendingSample& sample : pending_) {
    GC_RETURN_IF_ERROR(writer_.Append(sample.field->name, labels, sample.value, row_ms_));
  }
  ++report_.rows_imported;
  report_.missing_cells += row_missing_;
  if (!report_.first_timestamp_ms || row_ms_ < *report_.first_timestamp_ms) {
    report_.first_timestamp_ms = row_ms_;
  }
  if (!report_.last_timestamp_ms || row_ms_ > *report_.last_timestamp_ms) {
    report_.last_timestamp_ms = row_ms_;
  }
  if (auto it = gpu_last_ms_.find(std::string_view(gpu_key_)); it != gpu_last_ms_.end()) {
    it->second = row_ms_;
  } else {
    gpu_last_ms_.emplace(gpu_key_, row_ms_);
    report_.gpus.push_back(gpu_key_);
  }
  if (role_column_[static_cast<size_t>(ColumnRole::kPhase)] >= 0 &&
      (report_.phase_transitions_total == 0 || PhaseCell() != last_phase_)) {
    last_phase_.assign(PhaseCell());
    ++report_.phase_transitions_total;
    if (report_.phase_transitions.size() < ImportReport::kMaxPhaseTransitions) {
      report_.phase_transitions.push_back({row_ms_, last_phase_});
    }
  }
  return Status::Ok();
}

std::string CsvImport::Where(std::string_view line, size_t offset) const {
  return file_ + ":" + std::to_string(reader_->line_number()) + ":" +
         std::to_string(CharacterColumn(line, offset));
}

std::string CsvImport::Describe(std::string_view line, const RowError& error) const {
  std::string message = Where(line, error.offset) + ": ";
  if (!error.field.empty()) {
    message += "field '";
    message += error.field;
    message += "': ";
  }
  message += error.message;
  return message;
}

}  // namespace

ValueSyntax SyntaxOf(const dcgm::FieldInfo& field) {
  if (field.kind == dcgm::ValueKind::kBitmask) return ValueSyntax::kBitmask;
  constexpr dcgm::FieldId kPstateId = 190;  // DCGM_FI_DEV_PSTATE
  if (field.id == kPstateId) return ValueSyntax::kPstate;
  return ValueSyntax::kNumber;
}

model::MetricType MetricKindOf(const dcgm::FieldInfo& field) {
  return field.kind == dcgm::ValueKind::kCounter ? model::MetricType::kCounter
                                                 : model::MetricType::kGauge;
}

std::string HelpOf(const dcgm::FieldInfo& field) {
  std::string help(field.meaning);
  switch (field.unit) {
    case dcgm::Unit::kNone:
    case dcgm::Unit::kCount:
    case dcgm::Unit::kBitmask:
      break;
    case dcgm::Unit::kRatio:
      help += " (ratio 0..1)";
      break;
    default:
      help += " (in ";
      help += dcgm::UnitSymbol(field.unit);
      help += ")";
  }
  return help;
}

const dcgm::FieldInfo* FindValueField(std::string_view name) {
  const dcgm::FieldInfo* field = dcgm::FindFieldByName(name);
  if (field == nullptr || field->kind == dcgm::ValueKind::kLabel) return nullptr;
  return field;
}

CellValue ParseValueCell(std::string_view cell, ValueSyntax syntax, double* value) {
  if (cell.empty() || cell == "N/A" || EqualsIgnoreCase(cell, "nan") ||
      (cell.size() >= 2 && cell.front() == '[' && cell.back() == ']')) {
    return CellValue::kMissing;
  }
  if (syntax == ValueSyntax::kBitmask && cell.size() > 2 && cell[0] == '0' &&
      (cell[1] == 'x' || cell[1] == 'X')) {
    return ParseUnsigned(cell.substr(2), 16, value) ? CellValue::kNumber : CellValue::kBad;
  }
  if (syntax == ValueSyntax::kPstate && cell[0] == 'P') {
    return ParseUnsigned(cell.substr(1), 10, value) ? CellValue::kNumber : CellValue::kBad;
  }
  if (syntax == ValueSyntax::kBitmask) {
    return ParseUnsigned(cell, 10, value) ? CellValue::kNumber : CellValue::kBad;
  }
  std::string_view number = cell;
  if (const size_t space = cell.find(' '); space != std::string_view::npos) {
    // "34.63 W": one space, then a unit word without blanks.
    const std::string_view unit = cell.substr(space + 1);
    if (unit.empty() || unit.find_first_of(" \t") != std::string_view::npos) return CellValue::kBad;
    number = cell.substr(0, space);
  }
  return ParseDecimal(number, value) ? CellValue::kNumber : CellValue::kBad;
}

Result<ImportReport> ImportCsv(const CsvDialect& dialect, const std::string& input_path,
                               const ImportOptions& options, recording::RecordingWriter& writer) {
  CsvImport import(dialect, input_path, options, writer);
  return import.Run(input_path);
}

}  // namespace gpucanary::importers
