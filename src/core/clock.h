#pragma once
// Time, injected. Everything in gpucanary that depends on time (scrape
// schedules, retention, canary windows, "more than 3 consecutive seconds"
// rules, the simulator) reads a Clock, so tests and offline runs use
// ManualClock and run at full speed, deterministically, without sleeping.

#include <cstdint>

#include "core/mutex.h"

namespace gpucanary {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual std::int64_t NowMs() const = 0;
  // Blocks until NowMs() >= deadline_ms; returns at once for a past deadline.
  virtual void SleepUntilMs(std::int64_t deadline_ms) = 0;
};

// The system's wall clock.
class RealClock final : public Clock {
 public:
  std::int64_t NowMs() const override;
  void SleepUntilMs(std::int64_t deadline_ms) override;
};

// A clock that moves only when told to. Sleepers wake when Advance or Set
// reaches their deadline.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start_ms) : now_ms_(start_ms) {}

  std::int64_t NowMs() const override;
  void SleepUntilMs(std::int64_t deadline_ms) override;

  // REQUIRES: delta_ms >= 0 (time never goes backwards).
  void Advance(std::int64_t delta_ms);
  // REQUIRES: now_ms >= NowMs().
  void Set(std::int64_t now_ms);

 private:
  mutable Mutex mu_;
  CondVar moved_;
  std::int64_t now_ms_ GUARDED_BY(mu_);
};

}  // namespace gpucanary
