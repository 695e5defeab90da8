#include "core/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gpucanary {
namespace {

TEST(ManualClockTest, MovesOnlyWhenTold) {
  ManualClock clock(1'764'680'000'000);
  EXPECT_EQ(clock.NowMs(), 1'764'680'000'000);
  clock.Advance(1500);
  EXPECT_EQ(clock.NowMs(), 1'764'680'001'500);
  clock.Set(1'764'680'010'000);
  EXPECT_EQ(clock.NowMs(), 1'764'680'010'000);
  clock.SleepUntilMs(0);  // a past deadline returns at once
}

TEST(ManualClockTest, SleeperWakesWhenDeadlineIsReached) {
  ManualClock clock(0);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepUntilMs(3000);
    woke = true;
  });
  clock.Advance(1000);
  clock.Advance(1000);
  // Not yet at 3000: the sleeper must still be waiting. (It cannot have woken:
  // the predicate is false for every value the clock has had.)
  EXPECT_FALSE(woke.load());
  clock.Advance(1000);
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(ManualClockDeathTest, RefusesToGoBackwards) {
  ManualClock clock(100);
  EXPECT_DEATH(clock.Set(99), "cannot go backwards");
  EXPECT_DEATH(clock.Advance(-1), "cannot go backwards");
}

TEST(RealClockTest, IsWallTimeAndSleeps) {
  RealClock clock;
  const std::int64_t a = clock.NowMs();
  EXPECT_GT(a, 1'700'000'000'000);  // after 2023: a real epoch clock, not a steady one
  clock.SleepUntilMs(a + 20);
  EXPECT_GE(clock.NowMs(), a + 20);
}

}  // namespace
}  // namespace gpucanary
