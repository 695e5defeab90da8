#include "store/chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "store/appender.h"

namespace gpucanary::store {
namespace {

std::vector<Sample> Series(std::size_t n, std::int64_t t0, std::int64_t step,
                           const std::function<double(std::size_t)>& value) {
  std::vector<Sample> s;
  for (std::size_t i = 0; i < n; ++i) {
    s.push_back({t0 + static_cast<std::int64_t>(i) * step, value(i)});
  }
  return s;
}

// Encodes, decodes, and checks every timestamp and value bit; returns the
// encoded size.
std::size_t RoundTrip(const std::vector<Sample>& in, ValueEncoding* encoding = nullptr) {
  std::string bytes;
  const ValueEncoding e = EncodeChunk(in, bytes);
  if (encoding != nullptr) *encoding = e;
  std::vector<Sample> out;
  const Status s = DecodeChunk(bytes, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < std::min(in.size(), out.size()); ++i) {
    EXPECT_EQ(out[i].t, in[i].t) << i;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(out[i].v), std::bit_cast<std::uint64_t>(in[i].v))
        << i << ": " << in[i].v << " vs " << out[i].v;
  }
  return bytes.size();
}

// dcgm-exporter prints %f: six decimals.
double Dcgm(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%f", v);
  return std::strtod(buf, nullptr);
}

TEST(ChunkTest, ConstantSeriesOnARegularScheduleCostsAFewBytes) {
  ValueEncoding e{};
  const std::size_t size =
      RoundTrip(Series(240, 1764680000000, 1000, [](auto) { return 1980; }), &e);
  EXPECT_EQ(e, ValueEncoding::kConst);
  EXPECT_LE(size, 20U);
}

TEST(ChunkTest, SteppingIntegerGaugeCostsAboutABitPerSample) {
  // A temperature stepping up one degree every 20 s: decimal residuals of 0
  // or 1 and XOR's "same value" bit come out about even; either is fine.
  const std::size_t size = RoundTrip(
      Series(240, 0, 1000, [](std::size_t i) { return 60.0 + static_cast<double>(i / 20); }));
  EXPECT_LT(size, 60U);
}

TEST(ChunkTest, NoisyIntegerGaugeIsDecimal) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> noise(-2, 2);
  ValueEncoding e{};
  const std::size_t size =
      RoundTrip(Series(240, 0, 1000, [&](std::size_t) { return 40.0 + noise(rng); }), &e);
  EXPECT_EQ(e, ValueEncoding::kDecimal);
  EXPECT_LT(static_cast<double>(size) / 240, 0.6);
}

TEST(ChunkTest, PowerWithThreeRandomDecimalsBeatsXor) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> milli(0, 999);
  const auto in =
      Series(240, 0, 1000, [&](std::size_t) { return Dcgm(300 + milli(rng) / 1000.0); });
  ValueEncoding e{};
  const std::size_t size = RoundTrip(in, &e);
  EXPECT_EQ(e, ValueEncoding::kDecimal);
  // ~11 bits per sample; Gorilla XOR needs about 7 bytes here.
  EXPECT_LT(static_cast<double>(size) / 240, 1.6);
}

TEST(ChunkTest, SteadyCounterUsesSecondDifferences) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> noise(-50, 50);
  double energy = 1e9;
  const auto in = Series(240, 0, 1000, [&](std::size_t) {
    energy += 300000 + noise(rng);
    return energy;
  });
  const std::size_t size = RoundTrip(in);
  EXPECT_LT(static_cast<double>(size) / 240, 1.3);
}

TEST(ChunkTest, RatiosWithSixDecimalsRoundTrip) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  RoundTrip(Series(240, 0, 1000, [&](std::size_t) { return Dcgm(u(rng)); }));
}

TEST(ChunkTest, ArbitraryFloatsNaNsAndStaleMarkersKeepTheirBits) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  ValueEncoding e{};
  auto in = Series(100, 0, 1000, [&](std::size_t) { return u(rng); });
  in[10].v = std::numeric_limits<double>::quiet_NaN();
  in[11].v = StaleNaN();
  in[12].v = std::numeric_limits<double>::infinity();
  in[13].v = -0.0;
  in[14].v = std::numeric_limits<double>::denorm_min();
  RoundTrip(in, &e);
  EXPECT_EQ(e, ValueEncoding::kXor);
}

TEST(ChunkTest, NegativeZeroIsNotDecimalZero) {
  std::vector<Sample> in = {{0, 1.5}, {1000, -0.0}, {2000, 0.0}};
  RoundTrip(in);
}

TEST(ChunkTest, JitteredTimestampsUseEveryDodBucket) {
  std::vector<Sample> in;
  const std::int64_t deltas[] = {1000, 1003,   997,  1000,       9000, 1000, 70000,
                                 1000, 600000, 1000, 5000000000, 1,    1000};
  std::int64_t t = -5000;
  for (std::int64_t d : deltas) {
    in.push_back({t, 1.0 * static_cast<double>(in.size())});
    t += d;
  }
  in.push_back({t, 0.25});
  RoundTrip(in);
}

TEST(ChunkTest, SingleAndTwoSampleChunks) {
  RoundTrip({{42, 3.5}});
  RoundTrip({{42, 3.5}, {43, 7.25}});
  RoundTrip({{std::numeric_limits<std::int64_t>::min() / 4, 1e300}});
}

TEST(ChunkTest, HugeMantissasFallBackToXor) {
  RoundTrip(
      Series(50, 0, 1000, [](std::size_t i) { return 9.2e18 + static_cast<double>(i) * 4096; }));
  RoundTrip(Series(50, 0, 1000, [](std::size_t i) { return (i % 2 ? 1 : -1) * 4.5e15; }));
}

TEST(ChunkTest, RangeDecodeKeepsOnlyTheWindow) {
  const auto in = Series(240, 0, 1000, [](std::size_t i) { return static_cast<double>(i); });
  std::string bytes;
  EncodeChunk(in, bytes);
  std::vector<Sample> out = {{-1, -1}};
  ASSERT_TRUE(DecodeChunkRange(bytes, 10500, 20000, out).ok());
  ASSERT_EQ(out.size(), 11U);  // the prefix kept, then 11 s .. 20 s
  EXPECT_EQ(out[1].t, 11000);
  EXPECT_EQ(out.back().t, 20000);
}

TEST(ChunkTest, EveryTruncationIsAnErrorNotACrash) {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> milli(0, 999);
  for (const auto& in : {Series(40, 0, 1000, [&](std::size_t) { return milli(rng) / 8.0; }),
                         Series(40, 0, 1003, [&](std::size_t) { return std::sqrt(milli(rng)); })}) {
    std::string bytes;
    EncodeChunk(in, bytes);
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      std::vector<Sample> out;
      const Status s = DecodeChunk(std::string_view(bytes).substr(0, cut), out);
      EXPECT_FALSE(s.ok()) << "cut at " << cut << " of " << bytes.size();
    }
  }
}

TEST(ChunkTest, OpenChunkStreamsAndDecodesExactly) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> milli(0, 999);
  std::uniform_int_distribution<int> jitter(-3, 3);
  OpenChunk open;
  std::vector<Sample> in;
  std::int64_t t = 1764680000000;
  for (int i = 0; i < 240; ++i) {
    t += 1000 + jitter(rng);
    const double v = i == 100 ? StaleNaN() : Dcgm(300 + milli(rng) / 1000.0);
    open.Append(t, v);
    in.push_back({t, v});
  }
  EXPECT_EQ(open.size(), 240U);
  EXPECT_EQ(open.mint(), in.front().t);
  EXPECT_EQ(open.maxt(), in.back().t);
  std::vector<Sample> out;
  open.Decode(out);
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].t, in[i].t);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(out[i].v), std::bit_cast<std::uint64_t>(in[i].v));
  }
  open.Clear();
  EXPECT_TRUE(open.empty());
  open.Append(5, 1);
  out.clear();
  open.Decode(out);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].t, 5);
}

}  // namespace
}  // namespace gpucanary::store
