#include "core/clock.h"

#include <chrono>
#include <thread>

#include "core/mutex.h"
#include "core/status.h"

namespace gpucanary {

std::int64_t RealClock::NowMs() const {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  using std::chrono::system_clock;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

void RealClock::SleepUntilMs(std::int64_t deadline_ms) {
  const std::int64_t now = NowMs();
  if (deadline_ms > now) std::this_thread::sleep_for(std::chrono::milliseconds(deadline_ms - now));
}

std::int64_t ManualClock::NowMs() const {
  MutexLock lock(mu_);
  return now_ms_;
}

void ManualClock::SleepUntilMs(std::int64_t deadline_ms) {
  MutexLock lock(mu_);
  moved_.Wait(mu_, [&]() REQUIRES(mu_) { return now_ms_ >= deadline_ms; });
}

void ManualClock::Advance(std::int64_t delta_ms) {
  GC_CHECK(delta_ms >= 0, "ManualClock cannot go backwards");
  {
    MutexLock lock(mu_);
    now_ms_ += delta_ms;
  }
  moved_.NotifyAll();
}

void ManualClock::Set(std::int64_t now_ms) {
  {
    MutexLock lock(mu_);
    GC_CHECK(now_ms >= now_ms_, "ManualClock cannot go backwards");
    now_ms_ = now_ms;
  }
  moved_.NotifyAll();
}

}  // namespace gpucanary
