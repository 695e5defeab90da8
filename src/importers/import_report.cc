#include "importers/import_report.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace gpucanary::importers {
namespace {

bool ParseTwoDigits(std::string_view text, int* value) {
  if (text.size() != 2 || text[0] < '0' || text[0] > '9' || text[1] < '0' || text[1] > '9') {
    return false;
  }
  *value = (text[0] - '0') * 10 + (text[1] - '0');
  return true;
}

// Appends the first `max_items` of `items`, then how many of `total` are left out.
void AppendList(std::string& out, const std::vector<std::string>& items, size_t max_items,
                std::uint64_t total) {
  size_t shown = 0;
  for (; shown < items.size() && shown < max_items; ++shown) {
    if (shown > 0) out += ", ";
    out += items[shown];
  }
  if (total > shown) out += ", ... (" + std::to_string(total - shown) + " more)";
}

void AppendList(std::string& out, const std::vector<std::string>& items, size_t max_items) {
  AppendList(out, items, max_items, items.size());
}

}  // namespace

Result<int> ParseUtcOffset(std::string_view text) {
  if (text == "Z" || text == "z") return 0;
  const auto invalid = [&] {
    return Error(StatusCode::kInvalidArgument,
                 "invalid UTC offset '" + std::string(text) + "': expected +HH:MM or -HH:MM");
  };
  if (text.size() < 3 || (text[0] != '+' && text[0] != '-')) return invalid();
  int hours = 0;
  int minutes = 0;
  if (!ParseTwoDigits(text.substr(1, 2), &hours)) return invalid();
  std::string_view rest = text.substr(3);
  if (!rest.empty() && rest[0] == ':') rest.remove_prefix(1);
  if (!rest.empty() && !ParseTwoDigits(rest, &minutes)) return invalid();
  if (minutes >= 60 || hours * 60 + minutes > 14 * 60) return invalid();
  const int offset = hours * 60 + minutes;
  return text[0] == '-' ? -offset : offset;
}

std::string DefaultHostname(std::string_view input_path) {
  if (input_path == "-") return "stdin";
  std::string name = std::filesystem::path(input_path).filename().string();
  // Drop every extension: "node-3.csv.gz" -> "node-3".
  const size_t dot = name.find('.', 1);
  if (dot != std::string::npos) name.resize(dot);
  return name;
}

std::string FormatImportSummary(const ImportReport& report) {
  std::string out;
  out += "rows: " + std::to_string(report.rows_read) + " read, " +
         std::to_string(report.rows_imported) + " imported, " +
         std::to_string(report.rows_skipped) + " skipped";
  if (report.rows_other_gpus > 0) {
    out += ", " + std::to_string(report.rows_other_gpus) + " of other GPUs left out";
  }
  out += "\n";
  out += "samples: " + std::to_string(report.samples_written) + " written, " +
         std::to_string(report.missing_cells) + " empty or N/A cells\n";
  out += "columns: " + std::to_string(report.imported_columns.size()) + " imported, " +
         std::to_string(report.unknown_columns.size()) + " not imported";
  if (!report.unknown_columns.empty()) {
    out += " (";
    AppendList(out, report.unknown_columns, 20);
    out += ")";
  }
  out += "\n";
  out += "gpus: " + std::to_string(report.gpus.size());
  if (!report.gpus.empty()) {
    out += " (";
    AppendList(out, report.gpus, 16);
    out += ")";
  }
  out += "\n";
  if (report.first_timestamp_ms && report.last_timestamp_ms) {
    const std::int64_t span_ms = *report.last_timestamp_ms - *report.first_timestamp_ms;
    char span[32];
    std::snprintf(span, sizeof(span), "%.3f", static_cast<double>(span_ms) / 1000.0);
    out += "time: " + FormatUtcMillis(*report.first_timestamp_ms) + " .. " +
           FormatUtcMillis(*report.last_timestamp_ms) + " (" + span + " s)";
    if (report.shift_ms != 0) {
      std::snprintf(span, sizeof(span), "%+.3f", static_cast<double>(report.shift_ms) / 1000.0);
      out += std::string(", moved by ") + span + " s";
    }
    out += "\n";
  } else {
    out += "time: no samples\n";
  }
  if (report.phase_transitions_total > 0) {
    std::vector<std::string> phases;
    for (const PhaseTransition& transition : report.phase_transitions) {
      phases.push_back(transition.phase + " at " + FormatUtcMillis(transition.timestamp_ms));
    }
    out += "phases: ";
    AppendList(out, phases, 12, report.phase_transitions_total);
    out += "\n";
  }
  if (report.rows_skipped > 0) {
    out += "skipped rows (first " + std::to_string(report.skipped_messages.size()) + "):\n";
    for (const std::string& message : report.skipped_messages) out += "  " + message + "\n";
  }
  return out;
}

}  // namespace gpucanary::importers
