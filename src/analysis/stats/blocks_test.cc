#include "analysis/stats/blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "analysis/stats/testdata.h"

namespace gpucanary::analysis::stats {
namespace {

using testing::LoadGolden;
using testing::NearRel;

TEST(BlockAccumulatorTest, MatchesGoldenBlockMeans) {
  const auto golden = LoadGolden("blocks.json");
  BlockAccumulator acc(golden["block_s"].get<std::int64_t>(), golden["min_fraction"].get<double>(),
                       golden["origin"].get<std::int64_t>());
  std::vector<Block> blocks;
  for (const auto& t : golden["ticks"]) {
    const auto tick = t["tick"].get<std::int64_t>();
    std::optional<double> canary;
    if (!t["canary"].is_null()) canary = t["canary"].get<double>();
    // One call per baseline GPU; the canary value rides on the first.
    const auto& base = t["baseline"];
    for (std::size_t i = 0; i < std::max<std::size_t>(base.size(), 1); ++i) {
      std::optional<double> b;
      if (i < base.size()) b = base[i].get<double>();
      auto done = acc.Add(tick, i == 0 ? canary : std::nullopt, b);
      if (done) blocks.push_back(*done);
    }
  }
  if (auto last = acc.Flush()) blocks.push_back(*last);
  const auto& expected = golden["blocks"];
  ASSERT_EQ(blocks.size(), expected.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE("block " + std::to_string(i));
    EXPECT_EQ(blocks[i].index, expected[i]["index"].get<std::int64_t>());
    EXPECT_EQ(blocks[i].start_tick, expected[i]["start_tick"].get<std::int64_t>());
    EXPECT_EQ(blocks[i].canary_seconds, expected[i]["canary_seconds"].get<std::int64_t>());
    EXPECT_EQ(blocks[i].baseline_seconds, expected[i]["baseline_seconds"].get<std::int64_t>());
    EXPECT_EQ(blocks[i].baseline_values, 2 * blocks[i].baseline_seconds);
    EXPECT_TRUE(NearRel(blocks[i].canary_mean, expected[i]["canary_mean"].get<double>()));
    EXPECT_TRUE(NearRel(blocks[i].baseline_mean, expected[i]["baseline_mean"].get<double>()));
  }
  // 10 blocks opened (ticks 1000..1094): 7 emitted, the gap block and the
  // 5-second tail skipped, and one more with too little canary data.
  EXPECT_EQ(acc.skipped() + static_cast<std::int64_t>(blocks.size()), 10);
}

TEST(BlockAccumulatorTest, SkipsBlocksShortOnEitherSide) {
  BlockAccumulator acc(4, 0.5);
  // Block 0 (ticks 0-3): canary at 0, 1; baseline only at 0. Skipped.
  EXPECT_FALSE(acc.Add(0, 1.0, 2.0));
  EXPECT_FALSE(acc.Add(1, 3.0, std::nullopt));
  // Block 1 (4-7): both at 4 and 6 -> qualifies, emitted when tick 8 arrives.
  EXPECT_FALSE(acc.Add(4, 2.0, 4.0));
  EXPECT_FALSE(acc.Add(6, 4.0, NAN));  // NaN is no data
  EXPECT_FALSE(acc.Add(6, std::nullopt, 8.0));
  const auto block = acc.Add(8, 1.0, 1.0);
  ASSERT_TRUE(block.has_value());
  EXPECT_EQ(block->index, 1);
  EXPECT_EQ(block->start_tick, 4);
  EXPECT_DOUBLE_EQ(block->canary_mean, 3.0);
  EXPECT_DOUBLE_EQ(block->baseline_mean, 6.0);
  EXPECT_EQ(block->baseline_seconds, 2);
  EXPECT_EQ(acc.skipped(), 1);
  // Block 2 has one second of each: Flush skips it; a second Flush is a no-op.
  EXPECT_FALSE(acc.Flush());
  EXPECT_FALSE(acc.Flush());
  EXPECT_EQ(acc.skipped(), 2);
}

TEST(AutocorrelationTest, MatchesGoldenAr1) {
  const auto golden = LoadGolden("blocks.json")["ar1"];
  const auto x = golden["x"].get<std::vector<double>>();
  const double r1 = Lag1Autocorrelation(x);
  EXPECT_TRUE(NearRel(r1, golden["r1"].get<double>()));
  EXPECT_TRUE(NearRel(EffectiveSampleSize(static_cast<std::int64_t>(x.size()), r1),
                      golden["n_eff"].get<double>()));
}

// Block means of an AR(1) series with phi = 0.5 (activity, power): the 1 s
// series has r1 ~ 0.5, its 10 s block means r1 ~ phi^10-ish, near 0.
TEST(AutocorrelationTest, BlockMeansTameAutocorrelation) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(20000);
  double prev = 0.0;
  for (double& v : x) v = prev = 0.5 * prev + normal(rng);
  std::vector<double> means;
  for (std::size_t i = 0; i + 10 <= x.size(); i += 10) {
    double s = 0.0;
    for (std::size_t j = i; j < i + 10; ++j) s += x[j];
    means.push_back(s / 10.0);
  }
  EXPECT_NEAR(Lag1Autocorrelation(x), 0.5, 0.03);
  EXPECT_LT(std::fabs(Lag1Autocorrelation(means)), 0.15);
  EXPECT_NEAR(EffectiveSampleSize(100, 0.5), 100.0 / 3.0, 1e-12);
  EXPECT_TRUE(std::isnan(Lag1Autocorrelation(std::vector<double>{1.0, 2.0})));
  EXPECT_TRUE(std::isnan(Lag1Autocorrelation(std::vector<double>{2.0, 2.0, 2.0})));
}

}  // namespace
}  // namespace gpucanary::analysis::stats
