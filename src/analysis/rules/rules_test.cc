#include "analysis/rules/rules.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace gpucanary::analysis {
namespace {

using Mask = std::optional<std::uint64_t>;

ThrottlePolicy DefaultThrottle() { return DefaultPolicy().rules.throttle; }

TEST(StreakCounterTest, FiresOnTheFourthConsecutiveSecondForThreeSeconds) {
  StreakCounter s(3);
  EXPECT_FALSE(s.Add(100, true));
  EXPECT_FALSE(s.Add(101, true));
  EXPECT_FALSE(s.Add(102, true));
  EXPECT_TRUE(s.Add(103, true));   // held for more than 3 s: t = 100..103
  EXPECT_FALSE(s.Add(104, true));  // once per streak
  EXPECT_EQ(s.streak_start(), 100);
  EXPECT_EQ(s.length(), 5);
}

TEST(StreakCounterTest, GapsAndMissingDataBreakTheStreak) {
  StreakCounter s(3);
  s.Add(1, true);
  s.Add(2, true);
  s.Add(3, true);
  EXPECT_FALSE(s.Add(5, true));  // tick 4 never came: a new streak starts at 5
  EXPECT_EQ(s.streak_start(), 5);
  s.Add(6, true);
  EXPECT_FALSE(s.Add(7, std::nullopt));  // no data is not "still throttled"
  EXPECT_FALSE(s.active());
  s.Add(8, true);
  s.Add(9, true);
  s.Add(10, true);
  EXPECT_TRUE(s.Add(11, true));
  EXPECT_FALSE(s.Add(12, false));
  s.Add(13, true);
  s.Add(14, true);
  s.Add(15, true);
  EXPECT_TRUE(s.Add(16, true));  // a new streak fires again
}

TEST(ThrottleRuleTest, APowerBrakeOnTheCanaryOnlyFiresAfterFourSeconds) {
  ThrottleRule rule(DefaultThrottle());
  const std::vector<Mask> baseline = {0x0, 0x0, 0x1, std::nullopt};
  for (std::int64_t t = 0; t < 3; ++t) EXPECT_FALSE(rule.Add(t, 0x88, baseline)) << t;
  EXPECT_TRUE(rule.Add(3, 0x88, baseline));
  EXPECT_EQ(rule.bits(), 0x88U);
  EXPECT_EQ(ThrottleCause(rule.bits()), vocab::CauseKind::kPowerBrake);
}

TEST(ThrottleRuleTest, WhatTheBaselineSharesIsNotTheReleases) {
  ThrottleRule rule(DefaultThrottle());
  // A fleet-wide heat event: most baseline GPUs are in SW thermal slowdown too.
  const std::vector<Mask> hot = {0x20, 0x20, 0x0};
  for (std::int64_t t = 0; t < 10; ++t) EXPECT_FALSE(rule.Add(t, 0x20, hot));
  // Power cap counts only while the baseline is not capped.
  ThrottleRule cap(DefaultThrottle());
  const std::vector<Mask> capped = {0x4, 0x4};
  const std::vector<Mask> uncapped = {0x0, 0x0};
  for (std::int64_t t = 0; t < 10; ++t) EXPECT_FALSE(cap.Add(t, 0x4, capped));
  bool fired = false;
  for (std::int64_t t = 10; t < 14; ++t) fired = cap.Add(t, 0x4, uncapped) || fired;
  EXPECT_TRUE(fired);
  EXPECT_EQ(ThrottleCause(cap.bits()), vocab::CauseKind::kPowerCap);
}

TEST(ThrottleRuleTest, BenignReasonsAndBlipsDoNotFire) {
  ThrottleRule rule(DefaultThrottle());
  const std::vector<Mask> baseline = {0x0};
  for (std::int64_t t = 0; t < 10; ++t) EXPECT_FALSE(rule.Add(t, 0x1, baseline));  // idle
  // A 3-second brake blip, then clean: "more than 3 seconds" is not met.
  for (std::int64_t t = 10; t < 13; ++t) EXPECT_FALSE(rule.Add(t, 0x88, baseline));
  EXPECT_FALSE(rule.Add(13, 0x0, baseline));
  EXPECT_EQ(rule.bits(), 0U);
  // Disabled in the policy: never fires.
  ThrottlePolicy off = DefaultThrottle();
  off.enabled = false;
  ThrottleRule disabled(off);
  for (std::int64_t t = 0; t < 10; ++t) EXPECT_FALSE(disabled.Add(t, 0x88, baseline));
}

TEST(ThrottleCauseTest, NamesTheSpecificMechanism) {
  EXPECT_EQ(ThrottleCause(0x88), vocab::CauseKind::kPowerBrake);
  EXPECT_EQ(ThrottleCause(0x48), vocab::CauseKind::kThermalThrottle);
  EXPECT_EQ(ThrottleCause(0x20), vocab::CauseKind::kThermalThrottle);
  EXPECT_EQ(ThrottleCause(0x8), vocab::CauseKind::kHwSlowdown);
  EXPECT_EQ(ThrottleCause(0x4), vocab::CauseKind::kPowerCap);
  EXPECT_EQ(ThrottleCause(0x1), std::nullopt);
}

TEST(PcieLinkRuleTest, FiresOnADowntrainedLinkAndSaysHowBad) {
  PcieLinkRule rule(3);
  for (std::int64_t t = 0; t < 5; ++t) EXPECT_FALSE(rule.Add(t, 16, 16, 5, 5));
  bool fired = false;
  for (std::int64_t t = 5; t < 9; ++t) fired = rule.Add(t, 8, 16, 4, 5) || fired;
  EXPECT_TRUE(fired);
  EXPECT_EQ(rule.detail(), "x8 Gen4 (max x16 Gen5)");
  PcieLinkRule missing(3);
  for (std::int64_t t = 0; t < 10; ++t) {
    EXPECT_FALSE(missing.Add(t, 8, std::nullopt, 4, 5));  // no max: no data, no verdict
  }
}

TEST(XidRuleTest, FiresOnCriticalCodesOnly) {
  XidRule rule(DefaultPolicy().rules.critical_xids);
  EXPECT_FALSE(rule.Add(1, std::nullopt));
  EXPECT_FALSE(rule.Add(2, 13));  // graphics engine exception: not critical by default
  EXPECT_TRUE(rule.Add(3, 79));
  EXPECT_FALSE(rule.Add(4, 79));  // the field keeps showing the last XID
  EXPECT_TRUE(rule.Add(5, 48));   // a different critical code
  EXPECT_EQ(rule.first_tick(), 3);
  EXPECT_EQ(rule.last_critical(), 48);
}

TEST(EccDbeRuleTest, FiresWhenTheCounterGrowsNotOnResets) {
  EccDbeRule rule;
  EXPECT_FALSE(rule.Add(1, 2));  // first sample: history, not news
  EXPECT_FALSE(rule.Add(2, 2));
  EXPECT_TRUE(rule.Add(3, 3));
  EXPECT_FALSE(rule.Add(4, 0));  // reset
  EXPECT_FALSE(rule.Add(5, std::nullopt));
  EXPECT_TRUE(rule.Add(6, 1));
  EXPECT_DOUBLE_EQ(rule.new_errors(), 2);
}

}  // namespace
}  // namespace gpucanary::analysis
