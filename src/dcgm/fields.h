#pragma once
// The DCGM field vocabulary of gpucanary: which dcgm-exporter metric names we
// understand, what DCGM field each one is, its unit, how its value behaves
// (gauge, counter, bitmask, enum, label) and what it means.
//
// Names: dcgm-exporter prints exactly the name written in its counter CSV, so a
// scrape may carry the legacy name (DCGM_FI_DEV_GPU_TEMP) or, with a CSV written
// for DCGM 4.6, the "Field Naming Standard" name (DCGM_FI_DEV_GPU_TEMP_CELSIUS).
// DCGM 4.6 kept every old name as a deprecated alias with the same numeric id,
// so ids are the stable key. gpucanary's canonical name is the legacy one,
// because that is what the shipped CSVs (and every dashboard) use.
//
// Sources: NVIDIA/DCGM dcgmlib/dcgm_fields.h and the DCGM 4.6 Python bindings
// (dcgm_fields.py, deprecated-alias table), dcgm-exporter etc/default-counters.csv;
// summarised in shared/reference/dcgm-telemetry.md sections 1.2, 2.
//
// Everything here is immutable static data: all functions are thread-safe, never
// allocate, and return pointers/views into static storage that live forever.

#include <cstdint>
#include <span>
#include <string_view>

namespace gpucanary::dcgm {

// DCGM field id (dcgm_fields.h DCGM_FI_*). 0 is DCGM_FI_UNKNOWN; gpucanary uses
// it for metrics that dcgm-exporter makes itself (DCGM_EXP_*), which have no id.
using FieldId = std::uint16_t;
inline constexpr FieldId kNoFieldId = 0;

// What part of the GPU a field describes. Error-ish counters of a link stay with
// their link (NVLink CRC counters are kNvlink, PCIe replays are kPcie); kErrors
// holds XIDs, ECC, page retirement, row remapping and DCGM health.
enum class FieldCategory : std::uint8_t {
  kIdentity,     // driver/device identity, usually attached as labels
  kClocks,       // clocks, P-state, clock-event reasons and throttle durations
  kPower,        // board power, energy, power limits
  kThermal,      // temperatures, thresholds, fan
  kSmOccupancy,  // activity: NVML utilization and DCP/profiling pipe ratios
  kMemoryDram,   // framebuffer usage and DRAM/copy-engine activity
  kPcie,         // PCIe link state, throughput, replays
  kNvlink,       // NVLink throughput and link error counters
  kErrors,       // XID, ECC, retired pages, remapped rows, health
};

// How a value behaves over time; decides how analysis may use it.
enum class ValueKind : std::uint8_t {
  kGauge,    // a level sampled now; compare levels
  kCounter,  // monotonic since some reset; use deltas over a window
  kBitmask,  // a set of flags (field 112); decode bits, never average
  kEnum,     // a code or a 0/1 flag; compare for change, never average
  kLabel,    // a string (or id) dcgm-exporter attaches as a label, not a series
};

enum class Unit : std::uint8_t {
  kNone,
  kMegahertz,
  kWatts,
  kCelsius,
  kMillijoules,
  kRatio,    // 0..1 (DCGM profiling fields)
  kPercent,  // 0..100 (NVML utilization)
  kBytesPerSecond,
  kKilobytesPerSecond,  // NVML PCIe throughput (deprecated fields 200/201)
  kMegabytesPerSecond,  // DCGM "BW_MBPS" NVLink bandwidth fields
  kMebibytes,
  kBytes,
  kCount,
  kBitmask,
  kNanoseconds,
  kCycles,
  kLanes,
};

// The value type DCGM stores (DCGM_FT_*); it decides which blank sentinel applies.
enum class DcgmType : std::uint8_t { kInt64, kDouble, kString };

// Who defines the metric.
enum class FieldOrigin : std::uint8_t {
  kDcgmField,       // a DCGM field; id is its DCGM_FI_* number
  kExporterMetric,  // made by dcgm-exporter (DCGM_EXP_*); id is kNoFieldId
};

struct FieldInfo {
  FieldId id;
  // The name dcgm-exporter prints with its shipped CSVs (the pre-4.6 name).
  std::string_view name;
  // The DCGM 4.6 Field Naming Standard name; empty when 4.6 kept `name`.
  std::string_view dcgm46_name;
  FieldOrigin origin;
  DcgmType type;
  Unit unit;
  ValueKind kind;
  FieldCategory category;
  std::string_view meaning;  // one line, for people
};

// Every catalog entry: dcgm-exporter metrics first (id 0), then DCGM fields in
// ascending id order (the order dcgm-exporter prints families in).
std::span<const FieldInfo> AllFields();

// The DCGM field with this id, or nullptr if the catalog does not hold it (or id
// is kNoFieldId). O(log n).
const FieldInfo* FindFieldById(FieldId id);

// The entry whose legacy name or DCGM 4.6 name is exactly `name` (case-sensitive,
// no trimming), or nullptr. O(log n) over a sorted table built at compile time;
// no allocation, so it is cheap enough to call for every series on ingest.
const FieldInfo* FindFieldByName(std::string_view name);

// The name dcgm-exporter prints for `name`: a DCGM 4.6 name maps to its legacy
// name, a legacy name maps to itself. A name the catalog does not know is
// returned unchanged (the same view), so callers can normalise every family.
std::string_view CanonicalFieldName(std::string_view name);

std::string_view FieldCategoryName(FieldCategory category);  // "sm_occupancy"
std::string_view ValueKindName(ValueKind kind);              // "counter"
std::string_view UnitSymbol(Unit unit);                      // "MHz", "" for kNone
std::string_view DcgmTypeName(DcgmType type);                // "int64"

// ---------------------------------------------------------------------------
// Blank sentinels. DCGM marks a missing value with reserved numbers
// (dcgm_structs.h DCGM_*_BLANK, +1 NOT_FOUND, +2 NOT_SUPPORTED,
// +3 NOT_PERMISSIONED). Current dcgm-exporter skips them, but old builds printed
// them raw (e.g. `DCGM_FI_DEV_MEMORY_TEMP{...} 9223372036854775794`), so a value
// read from text must be checked before it is treated as data.

inline constexpr std::int64_t kInt32Blank = 0x7ffffff0;
inline constexpr std::int64_t kInt64Blank = 0x7ffffffffffffff0;
inline constexpr double kFp64Blank = 140737488355328.0;  // 2^47
inline constexpr std::string_view kStringBlanks[] = {"<<<NULL>>>", "<<<NOT_FOUND>>>",
                                                     "<<<NOT_SUPPORTED>>>", "<<<NOT_PERM>>>"};

// True when `value`, as parsed from exposition text into a double, is one of the
// DCGM blank sentinels of any type:
//  - INT64: DCGM_INT64_IS_BLANK is v >= 0x7ffffffffffffff0. Every such int64
//    rounds to 2^63 as a double (9223372036854775794 parses to
//    9.223372036854776e18), and no real int64 reaches 2^63, so any value
//    >= 2^63 is blank.
//  - INT32: exactly 0x7ffffff0..0x7ffffff3.
//  - FP64: exactly 2^47 + 0..3. (DCGM's own check is v >= 2^47, but without the
//    field type a large int64 counter, e.g. PCIe bytes, could pass 2^47.)
// NaN, negative and ordinary values are not blank.
bool IsBlankSentinel(double value);

// True when `value` is one of the DCGM string sentinels ("<<<NULL>>>", ...).
bool IsBlankStringSentinel(std::string_view value);

// ---------------------------------------------------------------------------
// Label vocabulary of the dcgm-exporter GPU template. The same label has had
// different spellings: `Hostname` up to 4.5.3-4.8.2 and `hostname` after PR #655
// (2026-05-12); `-o/--use-old-namespace` prints `uuid`, `pod_name`,
// `pod_namespace`, `container_name` instead of `UUID`, `pod`, `namespace`,
// `container`. CanonicalLabelName maps each spelling to one name (`hostname`,
// `UUID`, `pod`, `namespace`, `container`) and returns any other name unchanged
// (the same view).
std::string_view CanonicalLabelName(std::string_view label);

}  // namespace gpucanary::dcgm
