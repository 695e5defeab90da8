#include "net/gzip.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucanary::net {
namespace {

std::string MetricsText(int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    out += "DCGM_FI_DEV_SM_CLOCK{gpu=\"" + std::to_string(i % 8) + "\",UUID=\"GPU-" +
           std::to_string(i * 7919) + "\"} " + std::to_string(1980 - i % 13) + "\n";
  }
  return out;
}

TEST(GzipTest, RoundTripsAndShrinksText) {
  const std::string text = MetricsText(500);
  auto gz = GzipCompress(text, 1);
  ASSERT_TRUE(gz) << gz.error().ToString();
  EXPECT_LT(gz->size(), text.size() / 4);
  // RFC 1952 §2.3.1: ID1 ID2 CM (8 = deflate).
  ASSERT_GE(gz->size(), 10U);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  EXPECT_EQ((*gz)[2], 8);
  auto back = GzipDecompress(*gz, 1 << 20);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, text);
}

TEST(GzipTest, ReusedStateGivesTheSameBytes) {
  const std::string a = MetricsText(300);
  const std::string b = MetricsText(7);
  auto first = GzipCompress(a, 1);
  auto other = GzipCompress(b, 1);
  auto again = GzipCompress(a, 1);
  ASSERT_TRUE(first && other && again);
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(GzipDecompress(*other, 1 << 20).value_or(""), b);
}

TEST(GzipTest, RoundTripsEmptyInput) {
  auto gz = GzipCompress("", 6);
  ASSERT_TRUE(gz);
  auto back = GzipDecompress(*gz, 10);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, "");
}

TEST(GzipTest, HigherLevelIsNotLarger) {
  const std::string text = MetricsText(2000);
  auto fast = GzipCompress(text, 1);
  auto best = GzipCompress(text, 9);
  ASSERT_TRUE(fast && best);
  EXPECT_LE(best->size(), fast->size());
}

TEST(GzipTest, RejectsBadLevel) {
  EXPECT_EQ(GzipCompress("x", 0).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GzipCompress("x", 10).error().code(), StatusCode::kInvalidArgument);
}

TEST(GzipTest, DecompressesConcatenatedMembers) {
  auto a = GzipCompress("hello ", 1);
  auto b = GzipCompress("world", 9);
  ASSERT_TRUE(a && b);
  auto back = GzipDecompress(*a + *b, 100);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, "hello world");
}

TEST(GzipTest, RejectsTruncatedCorruptAndNonGzip) {
  auto gz = GzipCompress(MetricsText(100), 1);
  ASSERT_TRUE(gz);
  auto truncated = GzipDecompress(gz->substr(0, gz->size() / 2), 1 << 20);
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code(), StatusCode::kParseError);

  std::string corrupt = *gz;
  corrupt[corrupt.size() - 6] = static_cast<char>(corrupt[corrupt.size() - 6] ^ 0xff);  // CRC32
  auto bad_crc = GzipDecompress(corrupt, 1 << 20);
  ASSERT_FALSE(bad_crc);
  EXPECT_EQ(bad_crc.error().code(), StatusCode::kParseError);

  auto plain = GzipDecompress("plain text, not gzip", 1 << 20);
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code(), StatusCode::kParseError);
  EXPECT_FALSE(GzipDecompress("", 10));
}

TEST(GzipTest, StopsAtMaxBytes) {
  const std::string zeros(1 << 20, '0');
  auto gz = GzipCompress(zeros, 9);
  ASSERT_TRUE(gz);
  EXPECT_LT(gz->size(), 5000U);
  auto bomb = GzipDecompress(*gz, 100000);
  ASSERT_FALSE(bomb);
  EXPECT_EQ(bomb.error().code(), StatusCode::kOutOfRange);
  auto exact = GzipDecompress(*gz, zeros.size());
  ASSERT_TRUE(exact) << exact.error().ToString();
  EXPECT_EQ(exact->size(), zeros.size());
}

TEST(AcceptsGzipTest, FollowsRfc9110Weights) {
  EXPECT_TRUE(AcceptsGzip("gzip"));  // Prometheus
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip("br, *;q=0.1"));
  EXPECT_TRUE(AcceptsGzip("gzip ; q=1.0"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("deflate, br"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0, *"));  // listed by name: the name wins
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzipx, xgzip"));
}

}  // namespace
}  // namespace gpucanary::net
