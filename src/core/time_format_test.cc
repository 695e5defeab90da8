#include "core/time_format.h"

#include <gtest/gtest.h>

namespace gpucanary {
namespace {

TEST(TimeFormatTest, FormatUtcMillis) {
  EXPECT_EQ(FormatUtcMillis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatUtcMillis(1775016266006), "2026-04-01T04:04:26.006Z");
  EXPECT_EQ(FormatUtcMillis(-1), "1969-12-31T23:59:59.999Z");
}

TEST(TimeFormatTest, ParseRfc3339Millis) {
  EXPECT_EQ(ParseRfc3339Millis("2025-12-02T13:00:00Z"), 1764680400000);
  EXPECT_EQ(ParseRfc3339Millis("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseRfc3339Millis("2026-04-01T04:04:26.006Z"), 1775016266006);
  EXPECT_EQ(ParseRfc3339Millis("2026-04-01t04:04:26.0069z"), 1775016266006);  // truncated
  EXPECT_EQ(ParseRfc3339Millis("2026-04-01 04:04:26.5Z"), 1775016266500);
  EXPECT_EQ(ParseRfc3339Millis("2025-12-02T14:30:00+01:30"), 1764680400000);
  EXPECT_EQ(ParseRfc3339Millis("2025-12-02T08:00:00-05:00"), 1764680400000);
  EXPECT_EQ(ParseRfc3339Millis("1969-12-31T23:59:59.999Z"), -1);
  EXPECT_EQ(ParseRfc3339Millis("2024-02-29T00:00:00Z"), 1709164800000);
  EXPECT_EQ(ParseRfc3339Millis("2016-12-31T23:59:60Z"), 1483228800000);  // leap second
  for (const char* bad :
       {"", "2025-12-02", "2025-12-02T13:00:00", "2025-12-02T13:00Z", "2025-13-02T13:00:00Z",
        "2025-02-29T13:00:00Z", "2025-12-02T24:00:00Z", "2025-12-02T13:60:00Z",
        "2025-12-02T13:00:00.Z", "2025-12-02T13:00:00Zx", "2025-12-02T13:00:00+0100",
        "2025-12-02T13:00:00+01:0", "2025-12-02X13:00:00Z", "1764680400", "+025-12-02T13:00:00Z"}) {
    EXPECT_EQ(ParseRfc3339Millis(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace gpucanary
