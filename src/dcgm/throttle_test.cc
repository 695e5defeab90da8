#include "dcgm/throttle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace gpucanary::dcgm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string_view> Names(const DecodedClockEvents& decoded) {
  std::vector<std::string_view> names;
  for (const ClockEventReason* r : decoded.reasons) names.push_back(r->name);
  return names;
}

TEST(ThrottleTest, TableMatchesNvmlBitsAndExporterNames) {
  const auto reasons = AllClockEventReasons();
  ASSERT_EQ(reasons.size(), 9u);
  std::vector<std::string_view> exporter_names;
  std::uint64_t all = 0;
  for (const ClockEventReason& r : reasons) {
    all |= r.bit;
    exporter_names.push_back(r.exporter_name);
    EXPECT_EQ(r.dcgm_macro.substr(0, 25), "DCGM_CLOCKS_EVENT_REASON_") << r.name;
    EXPECT_EQ(r.nvml_macro.substr(0, 10), "nvmlClocks") << r.name;
    EXPECT_FALSE(r.nvidia_smi.empty());
    EXPECT_FALSE(r.meaning.empty());
  }
  EXPECT_EQ(all, 0x1FFu);
  EXPECT_THAT(exporter_names,
              ElementsAre("gpu_idle", "clocks_setting", "power_cap", "hw_slowdown", "sync_boost",
                          "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks"));
}

TEST(ThrottleTest, HarmfulBitsAreTheOnesThatHoldClocksDown) {
  std::vector<std::string_view> harmful;
  std::vector<std::string_view> benign;
  for (const ClockEventReason& r : AllClockEventReasons()) {
    if (r.impact == ClockEventImpact::kHarmful) harmful.push_back(r.name);
    if (r.impact == ClockEventImpact::kBenign) benign.push_back(r.name);
  }
  EXPECT_THAT(harmful, ElementsAre("sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                                   "hw_power_brake"));
  EXPECT_THAT(benign, ElementsAre("gpu_idle", "clocks_setting", "display_clocks"));
  EXPECT_EQ(FindClockEventReason(0x10)->impact, ClockEventImpact::kSeePeers);
  EXPECT_EQ(ClockEventImpactName(ClockEventImpact::kSeePeers), "see_peers");
}

TEST(ThrottleTest, DecodesHwSlowdownWithPowerBrake) {
  const DecodedClockEvents decoded = DecodeThrottleReasons(0x88);
  EXPECT_THAT(Names(decoded), ElementsAre("hw_slowdown", "hw_power_brake"));
  EXPECT_THAT(decoded.unknown_bits, IsEmpty());
  EXPECT_TRUE(decoded.any_harmful());
}

TEST(ThrottleTest, DecodesHwSlowdownWithHwThermal) {
  EXPECT_THAT(Names(DecodeThrottleReasons(0x48)), ElementsAre("hw_slowdown", "hw_thermal"));
}

TEST(ThrottleTest, ZeroAndIdle) {
  const DecodedClockEvents none = DecodeThrottleReasons(0);
  EXPECT_THAT(none.reasons, IsEmpty());
  EXPECT_THAT(none.unknown_bits, IsEmpty());
  EXPECT_FALSE(none.any_harmful());
  const DecodedClockEvents idle = DecodeThrottleReasons(1);
  EXPECT_THAT(Names(idle), ElementsAre("gpu_idle"));
  EXPECT_FALSE(idle.any_harmful());
}

TEST(ThrottleTest, UnknownBitsAreKept) {
  const DecodedClockEvents decoded = DecodeThrottleReasons(0x8000000000000204ull);
  EXPECT_THAT(Names(decoded), ElementsAre("sw_power_cap"));
  EXPECT_THAT(decoded.unknown_bits, ElementsAre(0x200u, 0x8000000000000000ull));
  EXPECT_EQ(decoded.mask, 0x8000000000000204ull);
}

TEST(ThrottleTest, FindByBitAndName) {
  EXPECT_EQ(FindClockEventReason(0x4)->name, "sw_power_cap");
  EXPECT_EQ(FindClockEventReason(0x3), nullptr);  // two bits
  EXPECT_EQ(FindClockEventReason(0x200), nullptr);
  EXPECT_EQ(FindClockEventReason(0), nullptr);
  EXPECT_EQ(FindClockEventReasonByName("power_cap"), FindClockEventReason(0x4));
  EXPECT_EQ(FindClockEventReasonByName("sw_power_cap"), FindClockEventReason(0x4));
  EXPECT_EQ(FindClockEventReasonByName("display_clocks")->bit, 0x100u);
  EXPECT_EQ(FindClockEventReasonByName("POWER_CAP"), nullptr);
}

TEST(ThrottleTest, DescribesHarmfulCausesFirstAndHwSlowdownLast) {
  EXPECT_EQ(DescribeThrottleReasons(0xA8),
            "0xA8: SW thermal slowdown, HW power brake slowdown, HW slowdown (clocks held down; "
            "hurts throughput)");
  EXPECT_EQ(DescribeThrottleReasons(0x4), "0x4: SW power cap (clocks held down; hurts throughput)");
}

TEST(ThrottleTest, DescribesZeroAndBenignOnly) {
  EXPECT_EQ(DescribeThrottleReasons(0), "0x0: no clock event: clocks unconstrained");
  EXPECT_EQ(DescribeThrottleReasons(0x1), "0x1: GPU idle (benign only: clocks are not held down)");
  EXPECT_EQ(DescribeThrottleReasons(0x103),
            "0x103: GPU idle, applications clocks setting, display clock setting (benign only: "
            "clocks are not held down)");
}

TEST(ThrottleTest, DescribesMixedSyncBoostAndUnknownBits) {
  EXPECT_EQ(DescribeThrottleReasons(0x5),
            "0x5: SW power cap (clocks held down; hurts throughput); GPU idle (benign)");
  EXPECT_EQ(DescribeThrottleReasons(0x10),
            "0x10: sync boost (held to the slowest GPU of its group; check the peers)");
  EXPECT_EQ(DescribeThrottleReasons(0x201),
            "0x201: GPU idle (benign); unknown bit 0x200 (not defined by NVML/DCGM)");
  EXPECT_EQ(DescribeThrottleReasons(0x600),
            "0x600: unknown bit 0x200, unknown bit 0x400 (not defined by NVML/DCGM)");
}

TEST(ThrottleTest, FormatsMaskInUpperCaseHex) {
  EXPECT_EQ(FormatMaskHex(0), "0x0");
  EXPECT_EQ(FormatMaskHex(168), "0xA8");
  EXPECT_EQ(FormatMaskHex(std::numeric_limits<std::uint64_t>::max()), "0xFFFFFFFFFFFFFFFF");
}

TEST(ThrottleTest, ParsesHexAndDecimal) {
  for (std::string_view text : {"0xA8", "0XA8", "0xa8", "168", "0x00A8", "0168"}) {
    const Result<std::uint64_t> mask = ParseBitmask(text);
    ASSERT_TRUE(mask.has_value()) << text << ": " << mask.error().message();
    EXPECT_EQ(*mask, 168u) << text;
  }
  EXPECT_EQ(ParseBitmask("0").value(), 0u);
  EXPECT_EQ(ParseBitmask("0x0").value(), 0u);
  EXPECT_EQ(ParseBitmask("18446744073709551615").value(),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(ParseBitmask("0xFFFFFFFFFFFFFFFF").value(), std::numeric_limits<std::uint64_t>::max());
}

struct BadMask {
  std::string_view text;
  std::string_view says;
};

TEST(ThrottleTest, RejectsBadMasksWithAReason) {
  const BadMask cases[] = {
      {"", "empty"},
      {"-1", "negative"},
      {"-0x8", "negative"},
      {"abc", "expected hex like 0xA8 or decimal like 168"},
      {"12abc", "expected hex like 0xA8 or decimal like 168"},
      {"0x", "no hex digits"},
      {"0xZZ", "expected only hex digits"},
      {"0xA8h", "expected only hex digits"},
      {" 168", "expected hex like 0xA8"},
      {"168 ", "expected hex like 0xA8"},
      {"+168", "expected hex like 0xA8"},
      {"1.5", "expected hex like 0xA8"},
      {"18446744073709551616", "does not fit in 64 bits"},
      {"0x1FFFFFFFFFFFFFFFF", "does not fit in 64 bits"},
  };
  for (const BadMask& c : cases) {
    const Result<std::uint64_t> mask = ParseBitmask(c.text);
    ASSERT_FALSE(mask.has_value()) << "'" << c.text << "' was accepted";
    EXPECT_EQ(mask.error().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(mask.error().message(), HasSubstr(std::string(c.says))) << c.text;
    if (!c.text.empty()) {
      // Built with append: GCC 12 warns falsely (-Wrestrict) on "'" + std::string.
      std::string quoted(1, '\'');
      quoted.append(c.text).push_back('\'');
      EXPECT_THAT(mask.error().message(), HasSubstr(quoted));
    }
  }
}

}  // namespace
}  // namespace gpucanary::dcgm
