#include "importers/dcgm_csv_importer.h"

#include <array>
#include <charconv>
#include <cmath>

#include "importers/csv_importer.h"

namespace gpucanary::importers {
namespace {

// The atharvanihalani/gpu-telemetry-exploration collector's columns
// (workloads/collect_telemetry.py, see its README in shared/data/gpu-traces).
constexpr std::array kColumns = {
    CsvColumnMapping{"power_w", "DCGM_FI_DEV_POWER_USAGE"},
    CsvColumnMapping{"temp_c", "DCGM_FI_DEV_GPU_TEMP"},
    CsvColumnMapping{"mem_used_mib", "DCGM_FI_DEV_FB_USED"},
    CsvColumnMapping{"mem_total_mib", "DCGM_FI_DEV_FB_TOTAL"},
    CsvColumnMapping{"gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL"},
    CsvColumnMapping{"mem_util_pct", "DCGM_FI_DEV_MEM_COPY_UTIL"},
    CsvColumnMapping{"sm_active", "DCGM_FI_PROF_SM_ACTIVE"},
    CsvColumnMapping{"tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"},
    CsvColumnMapping{"dram_active", "DCGM_FI_PROF_DRAM_ACTIVE"},
    CsvColumnMapping{"fp16_active", "DCGM_FI_PROF_PIPE_FP16_ACTIVE"},
    CsvColumnMapping{"pcie_tx_bytes_s", "DCGM_FI_PROF_PCIE_TX_BYTES"},
    CsvColumnMapping{"pcie_rx_bytes_s", "DCGM_FI_PROF_PCIE_RX_BYTES"},
    CsvColumnMapping{"nvlink_tx_bytes_s", "DCGM_FI_PROF_NVLINK_TX_BYTES"},
    CsvColumnMapping{"nvlink_rx_bytes_s", "DCGM_FI_PROF_NVLINK_RX_BYTES"},
    CsvColumnMapping{"throttle_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
    CsvColumnMapping{"energy_mj", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
};

ColumnSpec ResolveDcgmCsvColumn(std::string_view name) {
  if (name == "timestamp") return {ColumnRole::kTimestamp};
  if (name == "gpu") return {ColumnRole::kGpu};
  if (name == "gpu_model" || name == "modelName") return {ColumnRole::kModelName};
  if (name == "uuid" || name == "UUID") return {ColumnRole::kUuid};
  if (name == "pci_bus_id") return {ColumnRole::kPciBusId};
  if (name == "Hostname" || name == "hostname") return {ColumnRole::kHostname};
  if (name == "phase") return {ColumnRole::kPhase};
  if (const dcgm::FieldInfo* field = FindValueField(name)) return {ColumnRole::kValue, field};
  for (const CsvColumnMapping& mapping : kColumns) {
    if (mapping.column == name) return {ColumnRole::kValue, FindValueField(mapping.dcgm_field)};
  }
  return {};
}

tl::expected<std::int64_t, std::string> ParseTimestampCell(std::string_view cell,
                                                           const ImportOptions&) {
  auto ms = ParseEpochSeconds(cell);
  if (!ms) return tl::unexpected<std::string>(ms.error().message());
  return *ms;
}

constexpr CsvDialect kDcgmCsvDialect{"DCGM CSV", ResolveDcgmCsvColumn, ParseTimestampCell};

// About 317,000 years after 1970: far beyond any real log, and small enough
// that seconds * 1000 cannot overflow int64.
constexpr std::int64_t kMaxEpochSeconds = 9'999'999'999'999;

}  // namespace

std::span<const CsvColumnMapping> DcgmCsvColumns() { return kColumns; }

Result<std::int64_t> ParseEpochSeconds(std::string_view text) {
  const auto invalid = [&] {
    return Error(StatusCode::kParseError,
                 "cannot parse timestamp \"" + std::string(text) + "\" as Unix epoch seconds");
  };
  // Exact path for plain decimals, the usual form: no binary rounding.
  std::string_view digits = text;
  const bool negative = digits.starts_with('-');
  if (negative) digits.remove_prefix(1);
  const size_t point = digits.find('.');
  const std::string_view whole = digits.substr(0, point);
  const std::string_view fraction =
      point == std::string_view::npos ? std::string_view() : digits.substr(point + 1);
  const auto all_digits = [](std::string_view part) {
    return part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!whole.empty() && all_digits(whole) && all_digits(fraction) &&
      (point == std::string_view::npos || !fraction.empty())) {
    std::int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), seconds);
    if (ec != std::errc() || end != whole.data() + whole.size() || seconds > kMaxEpochSeconds) {
      return invalid();
    }
    std::int64_t millis = 0;
    for (size_t i = 0; i < 3; ++i) {
      millis = millis * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
    }
    if (fraction.size() > 3 && fraction[3] >= '5') ++millis;  // half away from zero
    const std::int64_t ms = seconds * 1000 + millis;
    return negative ? -ms : ms;
  }
  // Other forms (exponents) go through double.
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      std::fabs(seconds) > static_cast<double>(kMaxEpochSeconds)) {
    return invalid();
  }
  return static_cast<std::int64_t>(std::llround(seconds * 1000.0));
}

Result<ImportReport> ImportDcgmCsv(const std::string& input_path, const ImportOptions& options,
                                   recording::RecordingWriter& writer) {
  return ImportCsv(kDcgmCsvDialect, input_path, options, writer);
}

}  // namespace gpucanary::importers
