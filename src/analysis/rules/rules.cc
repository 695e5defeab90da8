#include "analysis/rules/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpucanary::analysis {
namespace {

constexpr std::uint64_t kSwPowerCap = 0x4;
constexpr std::uint64_t kHwSlowdown = 0x8;
constexpr std::uint64_t kSwThermal = 0x20;
constexpr std::uint64_t kHwThermal = 0x40;
constexpr std::uint64_t kHwPowerBrake = 0x80;

}  // namespace

bool StreakCounter::Add(std::int64_t tick, std::optional<bool> condition) {
  const bool continues = length_ > 0 && tick == last_tick_ + 1;
  last_tick_ = tick;
  if (!condition || !*condition) {
    length_ = 0;
    fired_ = false;
    return false;
  }
  if (!continues) {
    start_ = tick;
    length_ = 0;
    fired_ = false;
  }
  ++length_;
  if (!fired_ && static_cast<double>(length_) > seconds_) {
    fired_ = true;
    return true;
  }
  return false;
}

std::optional<vocab::CauseKind> ThrottleCause(std::uint64_t bits) {
  if ((bits & kHwPowerBrake) != 0) return vocab::CauseKind::kPowerBrake;
  if ((bits & (kSwThermal | kHwThermal)) != 0) return vocab::CauseKind::kThermalThrottle;
  if ((bits & kHwSlowdown) != 0) return vocab::CauseKind::kHwSlowdown;
  if ((bits & kSwPowerCap) != 0) return vocab::CauseKind::kPowerCap;
  return std::nullopt;
}

bool ThrottleRule::Add(std::int64_t tick, std::optional<std::uint64_t> canary_mask,
                       std::span<const std::optional<std::uint64_t>> baseline_masks) {
  if (!policy_.enabled) return false;
  std::optional<bool> throttled;
  std::uint64_t held = 0;
  if (canary_mask) {
    // Share of baseline GPUs (with data) holding each candidate bit.
    const auto baseline_share = [&](std::uint64_t bit) {
      int with_data = 0;
      int holding = 0;
      for (const std::optional<std::uint64_t>& m : baseline_masks) {
        if (!m) continue;
        ++with_data;
        holding += (*m & bit) != 0 ? 1 : 0;
      }
      return with_data > 0 ? static_cast<double>(holding) / with_data : 0.0;
    };
    std::uint64_t harmful = policy_.harmful_mask;
    if (policy_.power_cap_if_baseline_uncapped) harmful |= kSwPowerCap;
    for (std::uint64_t bit = 1; bit != 0 && bit <= harmful; bit <<= 1) {
      if ((harmful & bit) == 0 || (*canary_mask & bit) == 0) continue;
      // The baseline holding it too is the fleet's condition, not the release's.
      if (baseline_share(bit) < 0.5) held |= bit;
    }
    throttled = held != 0;
  }
  const bool fired = streak_.Add(tick, throttled);
  if (!streak_.active()) {
    bits_ = 0;
  } else {
    bits_ = streak_.length() == 1 ? held : bits_ | held;
  }
  return fired;
}

bool PcieLinkRule::Add(std::int64_t tick, std::optional<double> width,
                       std::optional<double> max_width, std::optional<double> gen,
                       std::optional<double> max_gen, std::string_view expected) {
  std::optional<bool> degraded;
  if (width && max_width && gen && max_gen) {
    degraded = *width < *max_width || *gen < *max_gen;
    if (*degraded) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "x%.0f Gen%.0f (%.*s x%.0f Gen%.0f)", *width, *gen,
                    static_cast<int>(expected.size()), expected.data(), *max_width, *max_gen);
      detail_ = buf;
    }
  }
  return streak_.Add(tick, degraded);
}

bool XidRule::Add(std::int64_t tick, std::optional<double> xid) {
  if (!xid || !std::isfinite(*xid)) return false;
  const int code = static_cast<int>(std::lround(*xid));
  if (code == last_ || !std::binary_search(critical_.begin(), critical_.end(), code)) {
    return false;
  }
  if (last_ == 0) first_tick_ = tick;
  last_ = code;
  return true;
}

bool EccDbeRule::Add(std::int64_t /*tick*/, std::optional<double> dbe_total) {
  if (!dbe_total) return false;
  const std::optional<double> previous = last_;
  last_ = dbe_total;
  if (!previous || *dbe_total <= *previous) return false;  // first sample, steady, or reset
  new_errors_ += *dbe_total - *previous;
  return true;
}

}  // namespace gpucanary::analysis
