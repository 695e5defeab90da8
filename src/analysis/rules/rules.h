#pragma once
// The judge's hard rules (docs/analysis-method.md, "Hard rules"): small
// per-GPU state machines fed one 1 s tick at a time, each saying when it
// fires and why. They know nothing of files or HTTP: the judge engine feeds
// them from the replay (offline) or the scraper (live), so both decide alike.
//
// Ticks are whole Unix seconds. A tick with no data breaks a streak: a rule
// never claims "consecutive seconds" across a gap it did not see.
// Thread-compatible.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/policy/policy.h"
#include "vocab/vocab.h"

namespace gpucanary::analysis {

// Counts consecutive ticks on which a condition holds and fires once per
// streak, on the tick that makes the streak last MORE than `seconds`: with
// seconds = 3 the condition must hold on 4 consecutive ticks t-3..t, and the
// rule fires at t (the "3-second rule plus one sample").
class StreakCounter {
 public:
  explicit StreakCounter(double seconds) : seconds_(seconds) {}

  // `condition` unset: no data. Ticks must increase; a skipped tick (or one
  // without data) ends the streak. Returns true on the firing tick only.
  bool Add(std::int64_t tick, std::optional<bool> condition);

  bool active() const { return length_ > 0; }           // the condition holds now
  bool fired() const { return fired_; }                 // this streak has fired
  std::int64_t streak_start() const { return start_; }  // first tick of the current streak
  int length() const { return length_; }

 private:
  double seconds_;
  std::int64_t last_tick_ = 0;
  std::int64_t start_ = 0;
  int length_ = 0;
  bool fired_ = false;
};

// The cause a set of clock-event reason bits points to (docs/contracts.md §6):
// power_brake (0x80), thermal_throttle (0x20 or 0x40), hw_slowdown (0x8
// alone), power_cap (0x4); nullopt for none.
std::optional<vocab::CauseKind> ThrottleCause(std::uint64_t bits);

// One canary GPU's throttle rule. At each tick: the canary's reason mask and
// the masks of the matched baseline GPUs at the same tick (unset entries: no
// data). The canary is throttled when it holds a harmful bit that fewer than
// half of the baseline GPUs with data hold; SW power cap (0x4) counts as
// harmful when the policy says so and fewer than half the baseline is capped.
class ThrottleRule {
 public:
  explicit ThrottleRule(const ThrottlePolicy& policy) : policy_(policy), streak_(policy.seconds) {}

  // Returns true on the tick the rule fires.
  bool Add(std::int64_t tick, std::optional<std::uint64_t> canary_mask,
           std::span<const std::optional<std::uint64_t>> baseline_masks);

  // The harmful bits held over the current (or firing) streak, ORed.
  std::uint64_t bits() const { return bits_; }
  const StreakCounter& streak() const { return streak_; }

 private:
  ThrottlePolicy policy_;
  StreakCounter streak_;
  std::uint64_t bits_ = 0;
};

// PCIe link trained below the GPU's maximum (width or generation) for more
// than `seconds`.
class PcieLinkRule {
 public:
  explicit PcieLinkRule(double seconds) : streak_(seconds) {}
  // Any field unset: no data. `expected` names where the maximum comes from
  // in the detail ("max": the GPU's own max-link fields; "peers": inferred).
  bool Add(std::int64_t tick, std::optional<double> width, std::optional<double> max_width,
           std::optional<double> gen, std::optional<double> max_gen,
           std::string_view expected = "max");
  const StreakCounter& streak() const { return streak_; }
  // The worst link seen in the streak, e.g. "x8 Gen4 (max x16 Gen5)".
  const std::string& detail() const { return detail_; }

 private:
  StreakCounter streak_;
  std::string detail_;
};

// A critical XID on a GPU: fires on the first tick its XID field shows a
// code in `critical` (sorted), and again if a different critical code
// appears.
class XidRule {
 public:
  explicit XidRule(std::vector<int> critical) : critical_(std::move(critical)) {}
  bool Add(std::int64_t tick, std::optional<double> xid);
  int last_critical() const { return last_; }
  std::int64_t first_tick() const { return first_tick_; }

 private:
  std::vector<int> critical_;
  int last_ = 0;
  std::int64_t first_tick_ = 0;
};

// New uncorrectable ECC errors: fires on every tick the DBE counter grows
// (a drop is a counter reset, not an error).
class EccDbeRule {
 public:
  bool Add(std::int64_t tick, std::optional<double> dbe_total);
  double new_errors() const { return new_errors_; }

 private:
  std::optional<double> last_;
  double new_errors_ = 0;
};

}  // namespace gpucanary::analysis
