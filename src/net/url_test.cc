#include "net/url.h"

#include <gtest/gtest.h>

namespace gpucanary::net {
namespace {

TEST(UrlTest, EncodeKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(UrlEncode(R"(up{job="a b"}[5m])"), "up%7Bjob%3D%22a%20b%22%7D%5B5m%5D");
  EXPECT_EQ(UrlEncode("A-z_0.9~"), "A-z_0.9~");
}

TEST(UrlTest, ParseFormDecodesPairsInOrder) {
  auto form = ParseForm("query=up%7Bjob%3D%22a+b%22%7D&time=12.5&match[]=a&match[]=b&flag");
  ASSERT_TRUE(form.has_value());
  ASSERT_EQ(form->size(), 5U);
  EXPECT_EQ((*form)[0], (std::pair<std::string, std::string>{"query", R"(up{job="a b"})"}));
  EXPECT_EQ((*form)[2].first, "match[]");
  EXPECT_EQ((*form)[3].second, "b");
  EXPECT_EQ((*form)[4], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_TRUE(ParseForm("")->empty());
  EXPECT_EQ(ParseForm(UrlEncode("ä%&=+"))->at(0).first, "ä%&=+");
}

TEST(UrlTest, PathDecodeKeepsPlus) {
  EXPECT_EQ(*PathDecode("gpu%5Fid"), "gpu_id");
  EXPECT_EQ(*PathDecode("a+b%20c"), "a+b c");
  EXPECT_EQ(*PathDecode(UrlEncode("ä/+ x")), "ä/+ x");
  EXPECT_EQ(PathDecode("ab%2").error().message(), "bad percent escape at offset 2");
}

TEST(UrlTest, BadEscapesSayWhere) {
  EXPECT_EQ(ParseForm("a=1&b=%4").error().message(), "bad percent escape at offset 6");
  EXPECT_EQ(ParseForm("a=%zz").error().message(), "bad percent escape at offset 2");
}

TEST(HostPortTest, BracketsIpv6) {
  EXPECT_EQ(HostPort("127.0.0.1", 80), "127.0.0.1:80");
  EXPECT_EQ(HostPort("node-3", 9400), "node-3:9400");
  EXPECT_EQ(HostPort("::1", 8000), "[::1]:8000");
}

}  // namespace
}  // namespace gpucanary::net
