#include "dcgm/throttle.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <iterator>
#include <system_error>

namespace gpucanary::dcgm {
namespace {

using I = ClockEventImpact;

// Bits, macro names and nvidia-smi texts from dcgm_fields.h / nvml.h (see
// shared/reference/dcgm-telemetry.md 2.3); exporter names from dcgm-exporter's
// clock-events collector. NVML defines the three HW bits only under the
// older nvmlClocksThrottleReason* names.
constexpr ClockEventReason kReasons[] = {
    {kClockEventGpuIdle, "gpu_idle", "gpu_idle", "DCGM_CLOCKS_EVENT_REASON_GPU_IDLE",
     "nvmlClocksEventReasonGpuIdle", "Idle", "GPU idle",
     "nothing runs on the GPU and clocks are dropping to idle", I::kBenign},
    {kClockEventClocksSetting, "clocks_setting", "clocks_setting",
     "DCGM_CLOCKS_EVENT_REASON_CLOCKS_SETTING", "nvmlClocksEventReasonApplicationsClocksSetting",
     "Applications Clocks Setting", "applications clocks setting",
     "clocks are capped by the configured application clocks", I::kBenign},
    {kClockEventSwPowerCap, "sw_power_cap", "power_cap", "DCGM_CLOCKS_EVENT_REASON_SW_POWER_CAP",
     "nvmlClocksEventReasonSwPowerCap", "SW Power Cap", "SW power cap",
     "the power-management algorithm lowers clocks to stay under the power limit", I::kHarmful},
    {kClockEventHwSlowdown, "hw_slowdown", "hw_slowdown", "DCGM_CLOCKS_EVENT_REASON_HW_SLOWDOWN",
     "nvmlClocksThrottleReasonHwSlowdown", "HW Slowdown", "HW slowdown",
     "hardware cuts clocks by half or more: too hot, external power brake, or power-draw fast "
     "trigger; may flicker during a P-state change",
     I::kHarmful},
    {kClockEventSyncBoost, "sync_boost", "sync_boost", "DCGM_CLOCKS_EVENT_REASON_SYNC_BOOST",
     "nvmlClocksEventReasonSyncBoost", "Sync Boost", "sync boost",
     "held to the lowest clock of its sync-boost group; the cause is on another GPU", I::kSeePeers},
    {kClockEventSwThermal, "sw_thermal", "sw_thermal", "DCGM_CLOCKS_EVENT_REASON_SW_THERMAL",
     "nvmlClocksEventReasonSwThermalSlowdown", "SW Thermal Slowdown", "SW thermal slowdown",
     "clocks lowered to keep GPU or memory below its maximum operating temperature", I::kHarmful},
    {kClockEventHwThermal, "hw_thermal", "hw_thermal", "DCGM_CLOCKS_EVENT_REASON_HW_THERMAL",
     "nvmlClocksThrottleReasonHwThermalSlowdown", "HW Thermal Slowdown", "HW thermal slowdown",
     "hardware cuts clocks by half or more because the temperature is too high", I::kHarmful},
    {kClockEventHwPowerBrake, "hw_power_brake", "hw_power_brake",
     "DCGM_CLOCKS_EVENT_REASON_HW_POWER_BRAKE", "nvmlClocksThrottleReasonHwPowerBrakeSlowdown",
     "HW Power Brake Slowdown", "HW power brake slowdown",
     "hardware cuts clocks by half or more because an external power brake is asserted (e.g. "
     "by the power supply)",
     I::kHarmful},
    {kClockEventDisplayClocks, "display_clocks", "display_clocks",
     "DCGM_CLOCKS_EVENT_REASON_DISPLAY_CLOCKS", "nvmlClocksEventReasonDisplayClockSetting",
     "Display Clock Setting", "display clock setting",
     "clocks are capped by the display clock setting", I::kBenign},
};

constexpr bool ReasonsAreConsistent() {
  std::uint64_t all = 0;
  std::uint64_t harmful = 0;
  std::uint64_t previous = 0;
  for (const ClockEventReason& r : kReasons) {
    const bool single_bit = r.bit != 0 && (r.bit & (r.bit - 1)) == 0;
    if (!single_bit || r.bit <= previous) return false;
    previous = r.bit;
    all |= r.bit;
    if (r.impact == I::kHarmful) harmful |= r.bit;
  }
  return all == kKnownClockEventBits && harmful == kHarmfulClockEventBits;
}
static_assert(ReasonsAreConsistent(), "kReasons: single bits, ascending, matching the masks");

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string joined;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) joined += separator;
    joined += items[i];
  }
  return joined;
}

// Adds "a, b, c<note>" to `parts` unless `items` is empty.
void AppendPart(std::vector<std::string>& parts, const std::vector<std::string>& items,
                std::string_view note) {
  if (items.empty()) return;
  parts.push_back(Join(items, ", ") + std::string(note));
}

std::string Quote(std::string_view text) {
  std::string quoted = "'";
  quoted += text;
  quoted += "'";
  return quoted;
}

Status InvalidMask(std::string_view text, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                "not a clock-event bitmask: " + Quote(text) + ": " + std::string(why));
}

}  // namespace

std::span<const ClockEventReason> AllClockEventReasons() { return kReasons; }

const ClockEventReason* FindClockEventReason(std::uint64_t bit) {
  for (const ClockEventReason& r : kReasons) {
    if (r.bit == bit) return &r;
  }
  return nullptr;
}

const ClockEventReason* FindClockEventReasonByName(std::string_view name) {
  for (const ClockEventReason& r : kReasons) {
    if (r.name == name || r.exporter_name == name) return &r;
  }
  return nullptr;
}

std::string_view ClockEventImpactName(ClockEventImpact impact) {
  switch (impact) {
    case ClockEventImpact::kBenign:
      return "benign";
    case ClockEventImpact::kHarmful:
      return "harmful";
    case ClockEventImpact::kSeePeers:
      return "see_peers";
  }
  return "unknown";
}

DecodedClockEvents DecodeThrottleReasons(std::uint64_t mask) {
  DecodedClockEvents decoded;
  decoded.mask = mask;
  for (const ClockEventReason& r : kReasons) {
    if ((mask & r.bit) != 0) decoded.reasons.push_back(&r);
  }
  const std::uint64_t unknown = mask & ~kKnownClockEventBits;
  for (int shift = 0; shift < 64; ++shift) {
    const std::uint64_t bit = std::uint64_t{1} << shift;
    if ((unknown & bit) != 0) decoded.unknown_bits.push_back(bit);
  }
  return decoded;
}

Result<std::uint64_t> ParseBitmask(std::string_view text) {
  if (text.empty()) {
    return Error(StatusCode::kInvalidArgument,
                 "empty clock-event bitmask: expected hex like 0xA8 or decimal like 168");
  }
  if (text.front() == '-') {
    return Error(InvalidMask(text, "negative; a clock-event mask is an unsigned 64-bit number"));
  }
  std::string_view digits = text;
  int base = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
    if (digits.empty()) return Error(InvalidMask(text, "no hex digits after the 0x prefix"));
  }
  std::uint64_t value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (ec == std::errc::invalid_argument || ptr != end) {
    return Error(InvalidMask(text, base == 16 ? "expected only hex digits after 0x"
                                              : "expected hex like 0xA8 or decimal like 168"));
  }
  if (ec == std::errc::result_out_of_range) {
    return Error(InvalidMask(text, "does not fit in 64 bits"));
  }
  return value;
}

std::string FormatMaskHex(std::uint64_t mask) {
  std::array<char, 16> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), mask, 16);
  std::string hex = "0x";
  for (const char* p = buffer.data(); p != result.ptr; ++p) {
    hex += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  }
  return hex;
}

std::string DescribeThrottleReasons(std::uint64_t mask) {
  std::string line = FormatMaskHex(mask) + ": ";
  if (mask == 0) return line + "no clock event: clocks unconstrained";

  const DecodedClockEvents decoded = DecodeThrottleReasons(mask);
  std::vector<std::string> harmful;
  std::vector<std::string> see_peers;
  std::vector<std::string> benign;
  std::vector<std::string> unknown;
  for (const ClockEventReason* r : decoded.reasons) {
    // HW slowdown names the effect, not a cause: it goes after the cause bits
    // that usually come with it (0x48, 0x88).
    if (r->bit == kClockEventHwSlowdown) continue;
    if (r->impact == ClockEventImpact::kHarmful) harmful.emplace_back(r->phrase);
    if (r->impact == ClockEventImpact::kSeePeers) see_peers.emplace_back(r->phrase);
    if (r->impact == ClockEventImpact::kBenign) benign.emplace_back(r->phrase);
  }
  if ((mask & kClockEventHwSlowdown) != 0) {
    harmful.emplace_back(FindClockEventReason(kClockEventHwSlowdown)->phrase);
  }
  for (std::uint64_t bit : decoded.unknown_bits)
    unknown.push_back("unknown bit " + FormatMaskHex(bit));

  const bool only_benign = harmful.empty() && see_peers.empty() && unknown.empty();
  std::vector<std::string> parts;
  AppendPart(parts, harmful, " (clocks held down; hurts throughput)");
  AppendPart(parts, see_peers, " (held to the slowest GPU of its group; check the peers)");
  AppendPart(parts, benign, only_benign ? " (benign only: clocks are not held down)" : " (benign)");
  AppendPart(parts, unknown, " (not defined by NVML/DCGM)");
  return line + Join(parts, "; ");
}

}  // namespace gpucanary::dcgm
