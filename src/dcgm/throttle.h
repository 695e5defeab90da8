#pragma once
// Clock-event ("throttle") reasons: the bitmask in DCGM field 112
// (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, 4.6 name DCGM_FI_DEV_CLOCKS_EVENT_REASONS),
// bit for bit the same as NVML's nvmlDeviceGetCurrentClocksEventReasons.
//
// dcgm_fields.h, on the bits: "These macros are masks for relevant throttling,
// and are a 1:1 map to the NVML reasons documented in nvml.h."
// Table: shared/reference/dcgm-telemetry.md section 2.3.
//
// The mask is a point-in-time sample: an episode between two samples is missed.
// The per-reason duration counters (fields 240-247, 1420-1424) see every one.
//
// All functions are thread-safe; the table is static and lives forever.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gpucanary::dcgm {

// What a set bit means for an inference workload's throughput.
enum class ClockEventImpact : std::uint8_t {
  kBenign,    // no slowdown of a busy GPU (idle, application/display clock settings)
  kHarmful,   // clocks held below what the work asks for: throughput drops
  kSeePeers,  // sync boost: held to the slowest GPU of its group; look at the peers' reasons
};

struct ClockEventReason {
  std::uint64_t bit;
  std::string_view name;           // gpucanary's name, e.g. "sw_power_cap"
  std::string_view exporter_name;  // dcgm-exporter clock_event label, e.g. "power_cap"
  std::string_view dcgm_macro;     // DCGM_CLOCKS_EVENT_REASON_* (THROTTLE_ names are aliases)
  std::string_view nvml_macro;     // nvmlClocksEventReason* / nvmlClocksThrottleReason*
  std::string_view nvidia_smi;     // the text `nvidia-smi -q` prints
  std::string_view phrase;         // short text for one-line summaries
  std::string_view meaning;
  ClockEventImpact impact;
};

// The nine reasons NVML and DCGM define, in ascending bit order.
std::span<const ClockEventReason> AllClockEventReasons();

inline constexpr std::uint64_t kClockEventGpuIdle = 0x1;
inline constexpr std::uint64_t kClockEventClocksSetting = 0x2;
inline constexpr std::uint64_t kClockEventSwPowerCap = 0x4;
inline constexpr std::uint64_t kClockEventHwSlowdown = 0x8;
inline constexpr std::uint64_t kClockEventSyncBoost = 0x10;
inline constexpr std::uint64_t kClockEventSwThermal = 0x20;
inline constexpr std::uint64_t kClockEventHwThermal = 0x40;
inline constexpr std::uint64_t kClockEventHwPowerBrake = 0x80;
inline constexpr std::uint64_t kClockEventDisplayClocks = 0x100;

// Every bit NVML/DCGM define, and the ones gpucanary treats as harmful.
inline constexpr std::uint64_t kKnownClockEventBits = 0x1FF;
inline constexpr std::uint64_t kHarmfulClockEventBits =
    kClockEventSwPowerCap | kClockEventHwSlowdown | kClockEventSwThermal | kClockEventHwThermal |
    kClockEventHwPowerBrake;

// The reason for exactly one bit, or nullptr when `bit` is not a single known bit.
const ClockEventReason* FindClockEventReason(std::uint64_t bit);

// The reason whose gpucanary name or dcgm-exporter clock_event name is exactly
// `name` ("sw_power_cap" and "power_cap" both work), or nullptr.
const ClockEventReason* FindClockEventReasonByName(std::string_view name);

std::string_view ClockEventImpactName(ClockEventImpact impact);  // "harmful"

struct DecodedClockEvents {
  std::uint64_t mask = 0;
  // Known reasons whose bit is set, ascending bit order.
  std::vector<const ClockEventReason*> reasons;
  // Each set bit NVML/DCGM do not define (newer driver, corrupt value), ascending.
  // Kept so that nothing in a mask is dropped silently.
  std::vector<std::uint64_t> unknown_bits;

  bool any_harmful() const { return (mask & kHarmfulClockEventBits) != 0; }
};

// Splits `mask` into named reasons and unknown bits. Never fails.
DecodedClockEvents DecodeThrottleReasons(std::uint64_t mask);

// Parses a mask as a person or a scrape writes it: hexadecimal with a 0x/0X
// prefix ("0xA8", "0XA8", "0xa8") or decimal ("168"). No sign, no spaces, no
// other prefix. Returns kInvalidArgument naming what was wrong for empty input,
// a negative number, anything that is not a number, or a value over 64 bits.
Result<std::uint64_t> ParseBitmask(std::string_view text);

// "0xA8": upper-case hex digits, no leading zeros.
std::string FormatMaskHex(std::uint64_t mask);

// One line for a person, e.g.
//   "0xA8: SW thermal slowdown, HW power brake slowdown, HW slowdown (clocks held
//    down; hurts throughput)"
// Harmful reasons come first (HW slowdown last among them: it names the effect,
// its cause bit usually comes with it), then sync boost, then benign reasons,
// then unknown bits as "unknown bit 0x200". A zero mask reads
// "0x0: no clock event: clocks unconstrained".
std::string DescribeThrottleReasons(std::uint64_t mask);

}  // namespace gpucanary::dcgm
