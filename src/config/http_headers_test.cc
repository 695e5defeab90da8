#include "config/http_headers.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace gpucanary::config {
namespace {

constexpr std::array<std::string_view, 2> kReserved = {"host", "authorization"};

// The headers of `yaml`'s top-level `headers` map, or the error message.
std::string Read(const std::string& yaml, HttpHeaderRules rules = {}) {
  rules.reserved = kReserved;
  const YAML::Node root = YAML::Load(yaml);
  auto headers = ReadHttpHeaders(Reporter("c.yaml"), root["headers"], "x.headers", rules);
  if (!headers) return headers.error().message();
  std::string out;
  for (const auto& [name, value] : *headers) out += name + "=" + value + ";";
  return out;
}

TEST(HttpHeadersTest, ReadsTheMapInFileOrder) {
  EXPECT_EQ(Read("headers: {X-Scope-OrgID: team-a, X-Api-Key: \"k\"}"),
            "X-Scope-OrgID=team-a;X-Api-Key=k;");
  EXPECT_EQ(Read("headers: {}"), "");
}

TEST(HttpHeadersTest, NamesMustBeTokensTheClientDoesNotSet) {
  EXPECT_EQ(Read("headers:\n  X Bad: 1\n"),
            "c.yaml:2:3: x.headers.X Bad: not a header name gpucanary may set");
  EXPECT_EQ(Read("headers:\n  AUTHORIZATION: x\n"),
            "c.yaml:2:3: x.headers.AUTHORIZATION: not a header name gpucanary may set");
  EXPECT_EQ(Read("headers:\n  X-A: 1\n  X-A: 2\n"), "c.yaml:3:3: x.headers.X-A: duplicate key");
  EXPECT_EQ(Read("headers: [a]"), "c.yaml:1:10: x.headers: expected a map");
  HttpHeaderRules rules;
  rules.bad_name = "not a valid header name";
  rules.reserved_name = "set by gpucanary, not configurable";
  EXPECT_EQ(Read("headers: {X Bad: 1}", rules),
            "c.yaml:1:11: x.headers.X Bad: not a valid header name");
  EXPECT_EQ(Read("headers: {Host: h}", rules),
            "c.yaml:1:11: x.headers.Host: set by gpucanary, not configurable");
}

TEST(HttpHeadersTest, ValuesAreStringsWithoutLineBreaks) {
  EXPECT_EQ(Read("headers: {X-A: \"\"}"), "c.yaml:1:16: x.headers.X-A: expected a name");
  EXPECT_EQ(Read("headers: {X-A: [1]}"), "c.yaml:1:16: x.headers.X-A: expected a name");
  EXPECT_EQ(Read("headers: {X-A: \"a\\nb\"}"),
            "c.yaml:1:16: x.headers.X-A: a header value must not hold line breaks");
  EXPECT_EQ(Read("headers: {X-A: \"a\\0b\"}"),
            "c.yaml:1:16: x.headers.X-A: a header value must not hold line breaks");
  HttpHeaderRules rules;
  rules.non_empty_value = false;
  rules.refuse_nul = false;
  rules.line_break = "header values must not contain line breaks";
  EXPECT_EQ(Read("headers: {X-A: \"\"}", rules), "X-A=;");
  EXPECT_EQ(Read("headers: {X-A: [1]}", rules), "c.yaml:1:16: x.headers.X-A: expected a string");
  EXPECT_EQ(Read("headers: {X-A: \"a\\0b\"}", rules), std::string("X-A=a\0b;", 8));
  EXPECT_EQ(Read("headers: {X-A: \"a\\rb\"}", rules),
            "c.yaml:1:16: x.headers.X-A: header values must not contain line breaks");
}

}  // namespace
}  // namespace gpucanary::config
