#include "importers/nvidia_smi_importer.h"

#include <array>
#include <chrono>

#include "importers/csv_importer.h"

namespace gpucanary::importers {
namespace {

// Query field names from `nvidia-smi --help-query-gpu`; the DCGM fields are
// the ones DCGM fills from the same NVML calls.
constexpr std::array kQueryFields = {
    QueryFieldMapping{"utilization.gpu", "DCGM_FI_DEV_GPU_UTIL"},
    QueryFieldMapping{"utilization.memory", "DCGM_FI_DEV_MEM_COPY_UTIL"},
    QueryFieldMapping{"utilization.encoder", "DCGM_FI_DEV_ENC_UTIL"},
    QueryFieldMapping{"utilization.decoder", "DCGM_FI_DEV_DEC_UTIL"},
    QueryFieldMapping{"temperature.gpu", "DCGM_FI_DEV_GPU_TEMP"},
    QueryFieldMapping{"temperature.memory", "DCGM_FI_DEV_MEMORY_TEMP"},
    QueryFieldMapping{"temperature.gpu.tlimit", "DCGM_FI_DEV_GPU_TEMP_LIMIT"},
    QueryFieldMapping{"power.draw", "DCGM_FI_DEV_POWER_USAGE"},
    QueryFieldMapping{"power.draw.average", "DCGM_FI_DEV_POWER_USAGE"},
    QueryFieldMapping{"power.draw.instant", "DCGM_FI_DEV_POWER_USAGE_INSTANT"},
    QueryFieldMapping{"power.limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"},
    QueryFieldMapping{"enforced.power.limit", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"},
    QueryFieldMapping{"power.min_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN"},
    QueryFieldMapping{"power.max_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX"},
    QueryFieldMapping{"power.default_limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF"},
    QueryFieldMapping{"clocks.current.sm", "DCGM_FI_DEV_SM_CLOCK"},
    QueryFieldMapping{"clocks.sm", "DCGM_FI_DEV_SM_CLOCK"},
    QueryFieldMapping{"clocks.current.memory", "DCGM_FI_DEV_MEM_CLOCK"},
    QueryFieldMapping{"clocks.mem", "DCGM_FI_DEV_MEM_CLOCK"},
    QueryFieldMapping{"clocks.current.video", "DCGM_FI_DEV_VIDEO_CLOCK"},
    QueryFieldMapping{"clocks.video", "DCGM_FI_DEV_VIDEO_CLOCK"},
    QueryFieldMapping{"clocks.applications.memory", "DCGM_FI_DEV_APP_MEM_CLOCK"},
    QueryFieldMapping{"clocks.applications.mem", "DCGM_FI_DEV_APP_MEM_CLOCK"},
    QueryFieldMapping{"clocks.max.sm", "DCGM_FI_DEV_MAX_SM_CLOCK"},
    QueryFieldMapping{"clocks.max.memory", "DCGM_FI_DEV_MAX_MEM_CLOCK"},
    QueryFieldMapping{"clocks.max.mem", "DCGM_FI_DEV_MAX_MEM_CLOCK"},
    QueryFieldMapping{"clocks_event_reasons.active", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
    QueryFieldMapping{"clocks_throttle_reasons.active", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
    QueryFieldMapping{"pstate", "DCGM_FI_DEV_PSTATE"},
    QueryFieldMapping{"fan.speed", "DCGM_FI_DEV_FAN_SPEED"},
    QueryFieldMapping{"pcie.link.gen.current", "DCGM_FI_DEV_PCIE_LINK_GEN"},
    QueryFieldMapping{"pcie.link.gen.gpucurrent", "DCGM_FI_DEV_PCIE_LINK_GEN"},
    QueryFieldMapping{"pcie.link.gen.max", "DCGM_FI_DEV_PCIE_MAX_LINK_GEN"},
    QueryFieldMapping{"pcie.link.width.current", "DCGM_FI_DEV_PCIE_LINK_WIDTH"},
    QueryFieldMapping{"pcie.link.width.max", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH"},
    QueryFieldMapping{"memory.total", "DCGM_FI_DEV_FB_TOTAL"},
    QueryFieldMapping{"memory.free", "DCGM_FI_DEV_FB_FREE"},
    QueryFieldMapping{"memory.used", "DCGM_FI_DEV_FB_USED"},
    QueryFieldMapping{"memory.reserved", "DCGM_FI_DEV_FB_RESERVED"},
    QueryFieldMapping{"ecc.errors.corrected.volatile.total", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"},
    QueryFieldMapping{"ecc.errors.uncorrected.volatile.total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"},
    QueryFieldMapping{"ecc.errors.corrected.aggregate.total", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"},
    QueryFieldMapping{"ecc.errors.uncorrected.aggregate.total", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"},
    QueryFieldMapping{"remapped_rows.correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"},
    QueryFieldMapping{"remapped_rows.uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"},
};

// "power.draw [W]" -> "power.draw".
std::string_view QueryFieldName(std::string_view header_cell) {
  if (header_cell.ends_with(']')) {
    const size_t open = header_cell.rfind('[');
    if (open != std::string_view::npos) header_cell = header_cell.substr(0, open);
  }
  while (!header_cell.empty() && (header_cell.back() == ' ' || header_cell.back() == '\t')) {
    header_cell.remove_suffix(1);
  }
  return header_cell;
}

ColumnSpec ResolveNvidiaSmiColumn(std::string_view header_cell) {
  const std::string_view name = QueryFieldName(header_cell);
  if (name == "timestamp") return {ColumnRole::kTimestamp};
  if (name == "index") return {ColumnRole::kGpu};
  if (name == "uuid" || name == "gpu_uuid") return {ColumnRole::kUuid};
  if (name == "name" || name == "gpu_name") return {ColumnRole::kModelName};
  if (name == "pci.bus_id" || name == "gpu_bus_id") return {ColumnRole::kPciBusId};
  for (const QueryFieldMapping& mapping : kQueryFields) {
    if (mapping.query_field == name) {
      return {ColumnRole::kValue, FindValueField(mapping.dcgm_field)};
    }
  }
  return {};
}

tl::expected<std::int64_t, std::string> ParseTimestampCell(std::string_view cell,
                                                           const ImportOptions& options) {
  auto ms = ParseNvidiaSmiTimestamp(cell, options.utc_offset_minutes);
  if (!ms) return tl::unexpected<std::string>(ms.error().message());
  return *ms;
}

constexpr CsvDialect kNvidiaSmiDialect{"nvidia-smi", ResolveNvidiaSmiColumn, ParseTimestampCell};

// Reads exactly `width` digits at *pos.
bool ReadDigits(std::string_view text, size_t* pos, size_t width, int* value) {
  if (*pos + width > text.size()) return false;
  int result = 0;
  for (size_t i = 0; i < width; ++i) {
    const char c = text[*pos + i];
    if (c < '0' || c > '9') return false;
    result = result * 10 + (c - '0');
  }
  *pos += width;
  *value = result;
  return true;
}

bool ReadChar(std::string_view text, size_t* pos, char expected) {
  if (*pos >= text.size() || text[*pos] != expected) return false;
  ++*pos;
  return true;
}

}  // namespace

std::span<const QueryFieldMapping> NvidiaSmiQueryFields() { return kQueryFields; }

Result<std::int64_t> ParseNvidiaSmiTimestamp(std::string_view text, int utc_offset_minutes) {
  const auto invalid = [&](std::string_view why) {
    return Error(StatusCode::kParseError,
                 "cannot parse timestamp \"" + std::string(text) + "\": " + std::string(why));
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  size_t pos = 0;
  const char date_separator = text.size() > 4 ? text[4] : '/';
  if (!ReadDigits(text, &pos, 4, &year) || (date_separator != '/' && date_separator != '-') ||
      !ReadChar(text, &pos, date_separator) || !ReadDigits(text, &pos, 2, &month) ||
      !ReadChar(text, &pos, date_separator) || !ReadDigits(text, &pos, 2, &day) ||
      !ReadChar(text, &pos, ' ') || !ReadDigits(text, &pos, 2, &hour) ||
      !ReadChar(text, &pos, ':') || !ReadDigits(text, &pos, 2, &minute) ||
      !ReadChar(text, &pos, ':') || !ReadDigits(text, &pos, 2, &second)) {
    return invalid("expected YYYY/MM/DD HH:MM:SS.mmm");
  }
  int millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0 || digits > 9) return invalid("expected 1 to 9 digits after the point");
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  if (pos != text.size()) return invalid("unexpected text after the time");
  using std::chrono::sys_days;
  using std::chrono::year_month_day;
  const year_month_day date{std::chrono::year(year),
                            std::chrono::month(static_cast<unsigned>(month)),
                            std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return invalid("no such date");
  if (hour > 23 || minute > 59 || second > 59) return invalid("no such time of day");
  const std::int64_t days_since_epoch = sys_days(date).time_since_epoch().count();
  const std::int64_t local_ms = days_since_epoch * 86'400'000 + hour * 3'600'000LL +
                                minute * 60'000LL + second * 1000LL + millis;
  return local_ms - static_cast<std::int64_t>(utc_offset_minutes) * 60'000;
}

Result<ImportReport> ImportNvidiaSmiCsv(const std::string& input_path, const ImportOptions& options,
                                        recording::RecordingWriter& writer) {
  return ImportCsv(kNvidiaSmiDialect, input_path, options, writer);
}

}  // namespace gpucanary::importers
