#include "core/time_format.h"

#include <gtest/gtest.h>

namespace gpucanary {
namespace {

TEST(TimeFormatTest, FormatUtcMillis) {
  EXPECT_EQ(FormatUtcMillis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatUtcMillis(1775016266006), "2026-04-01T04:04:26.006Z");
  EXPECT_EQ(FormatUtcMillis(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace gpucanary
