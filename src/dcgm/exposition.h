#pragma once
// Renders GPU readings (simulated or sampled through NVML) as the exact text a dcgm-exporter serves
// on GET /metrics (shared/reference/dcgm-telemetry.md §1.3, from dcgm-exporter's
// internal/pkg/rendermetrics/render_metrics.go):
//
//   # HELP <FieldName> <help>
//   # TYPE <FieldName> <type>
//   <FieldName>{gpu="<idx>",UUID="<uuid>",pci_bus_id="<busid>",device="nvidia<idx>",
//     modelName="<name>",Hostname="<host>",DCGM_FI_DRIVER_VERSION="<drv>"
//     [,<attributes sorted: container,err_code,err_msg,namespace,pod>]} <value>
//
// Families in ascending DCGM field id; a family whose value is blank on every
// GPU is omitted entirely (no HELP/TYPE); a blank value prints no line. INT64
// fields print as "%d", DOUBLE fields as "%f" (6 decimals). Label values are not
// escaped (dcgm-exporter inserts them raw). No timestamps, no "# EOF".

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "dcgm/readings.h"

namespace gpucanary::dcgm {

struct DcgmRenderOptions {
  // dcgm-exporter prints "Hostname" up to 4.5.3-4.8.2 and "hostname" after
  // commit d5e5f510 (PR #655).
  bool lowercase_hostname = false;
};

// How the exporter names and describes one ExporterField (its counter-CSV row).
struct DcgmFamilyInfo {
  std::string_view name;  // legacy name, e.g. DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
  std::string_view help;  // default-counters.csv text where the field is in it
  std::string_view type;  // "gauge" or "counter"
  bool is_double;         // DCGM_FT_DOUBLE ("%f") rather than INT64 ("%d")
};

// The row for `field`. REQUIRES: field != ExporterField::kCount.
const DcgmFamilyInfo& DcgmFamily(ExporterField field);

// The value a scraper reads back from the exporter's text for `v` in `field`:
// INT64 fields rounded to an integer, DOUBLE fields rounded to the 6 decimals
// of "%f" (formatted and parsed back, so bit-identical to a scrape). Offline
// recordings store this, so that they match a live scrape of the same run.
double DcgmExporterValue(const DcgmFamilyInfo& info, double v);

// The err_msg text dcgm-exporter attaches to DCGM_FI_DEV_XID_ERRORS for `code`:
// "No Error" for 0, the catalog text for known XIDs, "Unknown Error" otherwise.
std::string_view XidErrMsg(std::int64_t code);

// Appends to `out` the exposition a dcgm-exporter serves for `gpus`, whose
// values are `readings` (same order and length). Non-finite values count as
// blank. Allocates nothing beyond growing `out`; reuse `out` across calls.
// REQUIRES: gpus.size() == readings.size().
// Thread-safe (no shared state).
void RenderDcgmExposition(std::span<const GpuIdentity> gpus, std::span<const Readings> readings,
                          const DcgmRenderOptions& options, std::string& out);

}  // namespace gpucanary::dcgm
