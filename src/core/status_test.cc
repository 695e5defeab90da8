#include "core/status.h"

#include <gtest/gtest.h>

namespace gpucanary {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return Error(StatusCode::kInvalidArgument, "value must be positive");
  return v;
}

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s(StatusCode::kParseError, "a.om:3:7: expected '='");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "parse_error: a.om:3:7: expected '='");
  EXPECT_EQ(s.WithPrefix("check").message(), "check: a.om:3:7: expected '='");
  EXPECT_EQ(s.WithPrefix("check").code(), StatusCode::kParseError);
}

TEST(StatusTest, ResultHoldsValueOrError) {
  auto good = ParsePositive(3);
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, 3);
  auto bad = ParsePositive(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
}

Status Chain(bool fail) {
  GC_RETURN_IF_ERROR(fail ? Status(StatusCode::kIoError, "disk") : Status::Ok());
  return Status(StatusCode::kNotFound, "reached end");
}

TEST(StatusTest, ReturnIfErrorPropagates) {
  EXPECT_EQ(Chain(true).code(), StatusCode::kIoError);
  EXPECT_EQ(Chain(false).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gpucanary
