#include "dcgm/exposition.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "dcgm/xid.h"

namespace gpucanary::dcgm {
namespace {

// One row per ExporterField, in ExporterField order. Help texts of fields in dcgm-exporter's
// etc/default-counters.csv (and the commented rows of it) are verbatim
// (reference §1.2); the others (112, 160, 164, 235-238) are ours, written in the
// same style for a site's custom CSV. Monotonic fields are counters.
constexpr std::array<DcgmFamilyInfo, kExporterFieldCount> kFamilies = {{
    {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", false},
    {"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge", false},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
     "Current clock event (throttle) reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*).", "gauge",
     false},
    {"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", "gauge", false},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", false},
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", true},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).",
     "counter", false},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).", "gauge", true},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
     "Effective power limit the driver enforces after all limiters (in W).", "gauge", true},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", "counter", false},
    {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", false},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", false},
    {"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", false},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "PCIe maximum link generation.", "gauge", false},
    {"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "PCIe maximum link width (in lanes).", "gauge", false},
    {"DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe current link generation.", "gauge", false},
    {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe current link width (in lanes).", "gauge", false},
    {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", false},
    {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", false},
    {"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", "gauge", false},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.", "counter",
     false},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", "counter",
     false},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors",
     "counter", false},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors",
     "counter", false},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed", "gauge", false},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gauge",
     true},
    {"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", "gauge",
     true},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.", "gauge", true},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.",
     "gauge", true},
    {"DCGM_FI_PROF_DRAM_ACTIVE",
     "Ratio of cycles the device memory interface is active sending or receiving data.", "gauge",
     true},
    {"DCGM_FI_PROF_PCIE_TX_BYTES",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second.",
     "gauge", false},
    {"DCGM_FI_PROF_PCIE_RX_BYTES",
     "The rate of data received over the PCIe bus - including both protocol headers and data "
     "payloads - in bytes per second.",
     "gauge", false},
}};

// A value the exporter would print: set and finite (DCGM blanks never reach here).
std::optional<double> Printable(const Readings& r, ExporterField f) {
  const std::optional<double>& v = r.Get(f);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

// INT64 fields: the model keeps doubles; round to the nearest integer, clamped
// to the int64 range so llround is always defined.
std::int64_t ToInt(double v) {
  constexpr double kMax = 9.2e18;
  if (v > kMax) v = kMax;
  if (v < -kMax) v = -kMax;
  return static_cast<std::int64_t>(std::llround(v));
}

void AppendInt(std::int64_t v, std::string& out) {
  std::array<char, 24> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), res.ptr);
}

// Go's "%f": fixed, 6 decimals, never an exponent.
void AppendFixed6(double v, std::string& out) {
  std::array<char, 352> buf{};  // %f of DBL_MAX is 309 digits + 7
  const auto res =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, 6);
  out.append(buf.data(), res.ptr);
}

}  // namespace

double DcgmExporterValue(const DcgmFamilyInfo& info, double v) {
  if (!std::isfinite(v)) return v;
  if (!info.is_double) return static_cast<double>(ToInt(v));
  std::string text;
  AppendFixed6(v, text);
  double parsed = v;
  std::from_chars(text.data(), text.data() + text.size(), parsed);
  return parsed;
}

namespace {

void AppendLabel(std::string_view name, std::string_view value, std::string& out) {
  out += ',';
  out += name;
  out += "=\"";
  out += value;  // not escaped: dcgm-exporter inserts label values raw
  out += '"';
}

// `{gpu=...,DCGM_FI_DRIVER_VERSION="..."` plus the sorted attributes, with
// err_code/err_msg among them when `xid` is set; no closing brace.
void AppendLabels(const GpuIdentity& gpu, const DcgmRenderOptions& options, const std::int64_t* xid,
                  std::string& out) {
  out += "{gpu=\"";
  AppendInt(gpu.index, out);
  out += '"';
  AppendLabel("UUID", gpu.uuid, out);
  AppendLabel("pci_bus_id", gpu.pci_bus_id, out);
  out += ",device=\"nvidia";
  AppendInt(gpu.index, out);
  out += '"';
  AppendLabel("modelName", gpu.model_name, out);
  AppendLabel(options.lowercase_hostname ? "hostname" : "Hostname", gpu.hostname, out);
  AppendLabel("DCGM_FI_DRIVER_VERSION", gpu.driver_version, out);
  const bool has_pod = !gpu.pod.empty();
  // Attributes in sorted key order (Go text/template ranges maps sorted).
  if (has_pod) AppendLabel("container", gpu.container, out);
  if (xid != nullptr) {
    out += ",err_code=\"";
    AppendInt(*xid, out);
    out += '"';
    AppendLabel("err_msg", XidErrMsg(*xid), out);
  }
  if (has_pod) {
    AppendLabel("namespace", gpu.kube_namespace, out);
    AppendLabel("pod", gpu.pod, out);
  }
}

void RenderFamily(ExporterField field, std::span<const GpuIdentity> gpus,
                  std::span<const Readings> readings, const DcgmRenderOptions& options,
                  std::string& out) {
  const DcgmFamilyInfo& info = DcgmFamily(field);
  bool any = false;
  for (const Readings& r : readings) any = any || Printable(r, field).has_value();
  if (!any) return;  // current exporters omit an all-blank family entirely
  out += "# HELP ";
  out += info.name;
  out += ' ';
  out += info.help;
  out += "\n# TYPE ";
  out += info.name;
  out += ' ';
  out += info.type;
  out += '\n';
  const bool is_xid = field == ExporterField::kXidErrors;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::optional<double> v = Printable(readings[i], field);
    if (!v) continue;
    out += info.name;
    if (info.is_double) {
      AppendLabels(gpus[i], options, nullptr, out);
      out += "} ";
      AppendFixed6(*v, out);
    } else {
      const std::int64_t n = ToInt(*v);
      AppendLabels(gpus[i], options, is_xid ? &n : nullptr, out);
      out += "} ";
      AppendInt(n, out);
    }
    out += '\n';
  }
}

}  // namespace

const DcgmFamilyInfo& DcgmFamily(ExporterField field) {
  return kFamilies.at(static_cast<std::size_t>(field));
}

std::string_view XidErrMsg(std::int64_t code) {
  // dcgm-exporter internal/pkg/collector/xid_errors.go: 0 "No Error", unknown
  // codes "Unknown Error".
  if (code == 0) return "No Error";
  if (code < 0 || code > std::numeric_limits<std::uint32_t>::max()) return "Unknown Error";
  const XidInfo* info = FindXid(static_cast<std::uint32_t>(code));
  return info != nullptr ? info->err_msg : std::string_view("Unknown Error");
}

void RenderDcgmExposition(std::span<const GpuIdentity> gpus, std::span<const Readings> readings,
                          const DcgmRenderOptions& options, std::string& out) {
  if (gpus.size() != readings.size()) {
    std::fprintf(stderr, "RenderDcgmExposition: %zu GPUs but %zu readings\n", gpus.size(),
                 readings.size());
    std::abort();
  }
  for (std::size_t f = 0; f < kExporterFieldCount; ++f) {
    RenderFamily(static_cast<ExporterField>(f), gpus, readings, options, out);
  }
}

}  // namespace gpucanary::dcgm
