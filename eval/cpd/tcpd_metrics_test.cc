#include "eval/cpd/tcpd_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace gpucanary::eval::cpd::tcpd {
namespace {

using Points = std::vector<std::size_t>;

std::filesystem::path TcpdDir() {
  return std::filesystem::path(GPUCANARY_SHARED_DIR) / "data/tcpd";
}

// The matching examples of TCPDBench's metrics.py docstrings.
TEST(CpdTcpdMetricsTest, TruePositivesMatchesTcpdBenchExamples) {
  EXPECT_EQ(TruePositives(Points{1, 10, 20, 23}, Points{3, 8, 20}), 3u);
  EXPECT_EQ(TruePositives(Points{1, 10, 20, 23}, Points{1, 3, 8, 20}), 3u);
  EXPECT_EQ(TruePositives(Points{1, 10, 20, 23}, Points{1, 3, 5, 8, 20}), 3u);
  EXPECT_EQ(TruePositives(Points{}, Points{1, 2, 3}), 0u);
  EXPECT_EQ(TruePositives(Points{1, 2, 3}, Points{}), 0u);
}

TEST(CpdTcpdMetricsTest, TruePositivesNeverCountsAPredictionTwice) {
  // Both true points are within 5 of 12; only one may take it.
  EXPECT_EQ(TruePositives(Points{10, 14}, Points{12}), 1u);
  // Ascending order: 10 takes 12 (closest), 14 then takes 18 (distance 4).
  EXPECT_EQ(TruePositives(Points{10, 14}, Points{12, 18}), 2u);
  // Margin is inclusive.
  EXPECT_EQ(TruePositives(Points{10}, Points{15}), 1u);
  EXPECT_EQ(TruePositives(Points{10}, Points{16}), 0u);
  EXPECT_EQ(TruePositives(Points{10}, Points{16}, /*margin=*/6), 1u);
}

TEST(CpdTcpdMetricsTest, FMeasureMatchesTcpdBenchExamples) {
  const std::vector<ChangePoints> four = {{10, 20}, {11, 20}, {10}, {0, 5}};
  EXPECT_DOUBLE_EQ(FMeasure(four, Points{10, 20}).f1, 1.0);
  const std::vector<ChangePoints> three = {{}, {10}, {50}};
  EXPECT_NEAR(FMeasure(three, Points{10}).f1, 0.9090909090909091, 1e-12);
  EXPECT_NEAR(FMeasure(three, Points{}).f1, 0.8, 1e-12);
}

TEST(CpdTcpdMetricsTest, FMeasurePrecisionUsesTheUnionRecallTheMean) {
  const std::vector<ChangePoints> annotators = {{}, {10}, {50}};
  // X = {0, 10, 30}: 0 and 10 are in the union, 30 is not -> P = 2/3.
  // Recall: {0} 1/1, {0,10} 2/2, {0,50} 1/2 -> R = 5/6.
  const FMeasureResult r = FMeasure(annotators, Points{10, 30});
  EXPECT_NEAR(r.precision, 2.0 / 3, 1e-12);
  EXPECT_NEAR(r.recall, 5.0 / 6, 1e-12);
  EXPECT_NEAR(r.f1, 2 * (2.0 / 3) * (5.0 / 6) / (2.0 / 3 + 5.0 / 6), 1e-12);
  // A prediction at 0 or a duplicate changes nothing (sets).
  EXPECT_DOUBLE_EQ(FMeasure(annotators, Points{0, 10, 30, 30}).f1, r.f1);
}

TEST(CpdTcpdMetricsTest, CoveringMatchesTcpdBenchExamples) {
  const std::vector<ChangePoints> a = {{10, 20}, {10}, {0, 5}};
  EXPECT_NEAR(Covering(a, Points{10, 20}, 45), 0.7962962962962963, 1e-12);
  const std::vector<ChangePoints> b = {{}, {10}, {40}};
  EXPECT_NEAR(Covering(b, Points{10}, 45), 0.7954144620811286, 1e-12);
  EXPECT_NEAR(Covering(b, Points{}, 45), 0.8189300411522634, 1e-12);
}

TEST(CpdTcpdMetricsTest, CoveringIgnoresPointsThatCutNothing) {
  const std::vector<ChangePoints> a = {{10}};
  EXPECT_DOUBLE_EQ(Covering(a, Points{10}, 20), 1.0);
  EXPECT_DOUBLE_EQ(Covering(a, Points{0, 10, 20, 99}, 20), 1.0);
  EXPECT_DOUBLE_EQ(Covering(a, Points{}, 0), 0.0);
  EXPECT_DOUBLE_EQ(Covering({}, Points{}, 10), 0.0);
}

// Scores TCPDBench published for real predictions: analysis/output/summaries/
// summary_nile.json, amoc runs of the oracle grid with cplocations [27] and [46].
TEST(CpdTcpdMetricsTest, MatchesPublishedScoresOnNile) {
  const std::vector<ChangePoints> nile = {{}, {28}, {}, {28}, {28}};
  EXPECT_NEAR(FMeasure(nile, Points{27}).f1, 1.0, 1e-12);
  EXPECT_NEAR(Covering(nile, Points{27}, 100), 0.8800821917808218, 1e-12);
  const FMeasureResult r = FMeasure(nile, Points{46});
  EXPECT_NEAR(r.f1, 0.5833333333333333, 1e-12);
  EXPECT_NEAR(r.precision, 0.5, 1e-12);
  EXPECT_NEAR(r.recall, 0.7, 1e-12);
  EXPECT_NEAR(Covering(nile, Points{46}, 100), 0.6422608695652174, 1e-12);
  EXPECT_NEAR(Covering(nile, Points{}, 100), 0.75808, 1e-12);
}

TEST(CpdTcpdMetricsTest, LoadsTheLocalDataset) {
  auto data = LoadDataset(TcpdDir());
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  ASSERT_EQ(data->size(), 32u);
  for (const LabelledSeries& s : *data) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(s.annotators.size(), 5u);
    ASSERT_FALSE(s.dims.empty());
    for (const auto& dim : s.dims) EXPECT_EQ(dim.size(), s.n_obs);
    std::size_t missing = 0;
    for (double v : s.dims[0]) missing += std::isnan(v) ? 1u : 0u;
    EXPECT_EQ(missing, s.name == "uk_coal_employ" ? 2u : 0u);
    EXPECT_EQ(s.dims.size(), s.name == "run_log" ? 2u : 1u);
  }
}

// Every value of the zero-detector table in shared/data/tcpd/README.md, to
// the 4 decimals printed there (F1 equals TCPDBench's default_f1_scores.json).
TEST(CpdTcpdMetricsTest, ReproducesTheReadmeZeroDetectorTable) {
  const std::map<std::string, std::pair<double, double>> expected = {
      {"bank", {1.0000, 1.0000}},
      {"brent_spot", {0.3146, 0.2658}},
      {"businv", {0.5882, 0.4609}},
      {"centralia", {0.7629, 0.6747}},
      {"children_per_woman", {0.5075, 0.4291}},
      {"co2_canada", {0.3610, 0.2776}},
      {"construction", {0.6957, 0.5746}},
      {"debt_ireland", {0.4694, 0.3206}},
      {"gdp_argentina", {0.8235, 0.7371}},
      {"gdp_croatia", {0.8235, 0.7083}},
      {"gdp_iran", {0.6517, 0.5826}},
      {"gdp_japan", {0.8889, 0.8021}},
      {"global_co2", {0.8462, 0.7583}},
      {"homeruns", {0.6592, 0.5107}},
      {"jfk_passengers", {0.7234, 0.6298}},
      {"lga_passengers", {0.5348, 0.3830}},
      {"nile", {0.8235, 0.7581}},
      {"ozone", {0.7234, 0.5737}},
      {"quality_control_1", {0.6667, 0.5031}},
      {"quality_control_2", {0.7500, 0.6383}},
      {"quality_control_3", {0.6667, 0.5003}},
      {"quality_control_4", {0.7805, 0.6727}},
      {"quality_control_5", {1.0000, 1.0000}},
      {"rail_lines", {0.5366, 0.4282}},
      {"run_log", {0.4456, 0.3035}},
      {"seatbelts", {0.6207, 0.5284}},
      {"shanghai_license", {0.6364, 0.5471}},
      {"uk_coal_employ", {0.5133, 0.3565}},
      {"unemployment_nl", {0.5663, 0.5066}},
      {"us_population", {0.8889, 0.8034}},
      {"usd_isk", {0.4887, 0.4363}},
      {"well_log", {0.2370, 0.2246}},
  };
  auto data = LoadDataset(TcpdDir());
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  ASSERT_EQ(data->size(), expected.size());
  double f1_sum = 0;
  double cover_sum = 0;
  for (const LabelledSeries& s : *data) {
    SCOPED_TRACE(s.name);
    const auto it = expected.find(s.name);
    ASSERT_NE(it, expected.end());
    const double f1 = FMeasure(s.annotators, Points{}).f1;
    const double cover = Covering(s.annotators, Points{}, s.n_obs);
    EXPECT_NEAR(f1, it->second.first, 5e-5);
    EXPECT_NEAR(cover, it->second.second, 5e-5);
    f1_sum += f1;
    cover_sum += cover;
  }
  EXPECT_NEAR(f1_sum / 32, 0.6561, 5e-5);
  EXPECT_NEAR(cover_sum / 32, 0.5593, 5e-5);
}

TEST(CpdTcpdMetricsTest, ScoreUnivariateSkipsMultivariateSeries) {
  auto data = LoadDataset(TcpdDir());
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  const ScoreTable zero =
      ScoreUnivariate(*data, [](std::span<const double>) { return std::vector<std::size_t>{}; });
  ASSERT_EQ(zero.rows.size(), 31u);
  for (const ScoreRow& r : zero.rows) {
    EXPECT_NE(r.name, "run_log");
    EXPECT_DOUBLE_EQ(r.f1, r.zero_f1);
    EXPECT_DOUBLE_EQ(r.cover, r.zero_cover);
  }
  // 0.663: the zero detector's mean default F1 on these 31 series
  // (shared/reference/papers-benchmarks.md, section 6).
  EXPECT_NEAR(zero.zero_mean_f1, 0.663, 5e-4);
  const std::string md = FormatMarkdown(zero);
  EXPECT_NE(md.find("| nile | 100 | 0 | 0.8235 | 0.7581 | 0.8235 | 0.7581 |"), std::string::npos)
      << md;
}

class CpdTcpdLoadErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpucanary_tcpd_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "datasets");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::filesystem::path& rel, const std::string& text) {
    std::ofstream(dir_ / rel) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(CpdTcpdLoadErrorTest, MissingDirectoryIsAnIoError) {
  auto data = LoadDataset(dir_ / "nope");
  ASSERT_FALSE(data.has_value());
  EXPECT_EQ(data.error().code(), StatusCode::kIoError);
}

TEST_F(CpdTcpdLoadErrorTest, MalformedFilesAreParseErrorsNamingTheField) {
  Write("annotations.json", R"({"s": {"1": [3]}})");
  Write("datasets/s.json", R"({"name": "s", "n_obs": 2, "series": [{"raw": [1, "x"]}]})");
  auto data = LoadDataset(dir_);
  ASSERT_FALSE(data.has_value());
  EXPECT_EQ(data.error().code(), StatusCode::kParseError);
  EXPECT_NE(data.error().message().find("series[].raw"), std::string::npos);

  Write("datasets/s.json", R"({"name": "s", "n_obs": 3, "series": [{"raw": [1, 2]}]})");
  data = LoadDataset(dir_);
  ASSERT_FALSE(data.has_value());
  EXPECT_NE(data.error().message().find("n_obs"), std::string::npos);

  Write("datasets/s.json", "{not json");
  data = LoadDataset(dir_);
  ASSERT_FALSE(data.has_value());
  EXPECT_EQ(data.error().code(), StatusCode::kParseError);

  Write("annotations.json", R"({"s": {"1": [-3]}})");
  data = LoadDataset(dir_);
  ASSERT_FALSE(data.has_value());
  EXPECT_NE(data.error().message().find("s.1"), std::string::npos);
}

TEST_F(CpdTcpdLoadErrorTest, SeriesWithoutAnnotationsIsNotFound) {
  Write("annotations.json", R"({"other": {"1": []}})");
  Write("datasets/s.json", R"({"name": "s", "n_obs": 2, "series": [{"raw": [1, null]}]})");
  auto data = LoadDataset(dir_);
  ASSERT_FALSE(data.has_value());
  EXPECT_EQ(data.error().code(), StatusCode::kNotFound);

  Write("annotations.json", R"({"s": {"1": [], "2": [1]}})");
  data = LoadDataset(dir_);
  ASSERT_TRUE(data.has_value()) << data.error().ToString();
  ASSERT_EQ(data->size(), 1u);
  EXPECT_TRUE(std::isnan((*data)[0].dims[0][1]));
  EXPECT_EQ((*data)[0].annotators.size(), 2u);
}

}  // namespace
}  // namespace gpucanary::eval::cpd::tcpd
