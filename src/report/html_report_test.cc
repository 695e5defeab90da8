#include "report/html_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "recording/recording_writer.h"

namespace gpucanary::report {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kT0 = 1764680000;

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gc_html_report_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteIncident(const std::string& json) { std::ofstream(dir_ / "incident.json") << json; }

  // node-4 (canary) brakes to 1050 MHz from second 30; node-1 stays at 1980.
  void WriteTelemetry() {
    auto w = recording::RecordingWriter::Open((dir_ / "telemetry.om").string());
    ASSERT_TRUE(w.has_value());
    auto& writer = **w;
    ASSERT_TRUE(writer.DeclareFamily("DCGM_FI_DEV_SM_CLOCK", model::MetricType::kGauge, "").ok());
    ASSERT_TRUE(
        writer.DeclareFamily("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", model::MetricType::kGauge, "")
            .ok());
    ASSERT_TRUE(
        writer.DeclareFamily("vllm:generation_tokens_total", model::MetricType::kCounter, "").ok());
    std::vector<double> tokens(2, 0);
    for (int i = 0; i < 60; ++i) {
      const std::int64_t ms = (kT0 + i) * 1000 + 250;
      for (int n = 0; n < 2; ++n) {
        const std::string host = n == 0 ? "node-1" : "node-4";
        const bool brake = n == 1 && i >= 30;
        for (int g = 0; g < 2; ++g) {
          const std::string gpu = std::to_string(g);
          const model::LabelView labels[] = {{"gpu", gpu}, {"Hostname", host}};
          ASSERT_TRUE(writer.Append("DCGM_FI_DEV_SM_CLOCK", labels, brake ? 1050 : 1980, ms).ok());
          ASSERT_TRUE(
              writer.Append("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", labels, brake ? 0x88 : 0, ms)
                  .ok());
        }
        tokens[static_cast<std::size_t>(n)] += brake ? 600 : 1000;
        const model::LabelView node[] = {{"Hostname", host}};
        ASSERT_TRUE(writer
                        .Append("vllm:generation_tokens_total", node,
                                tokens[static_cast<std::size_t>(n)], ms)
                        .ok());
      }
    }
    ASSERT_TRUE(writer.Close().ok());
  }

  fs::path dir_;
};

constexpr char kIncident[] = R"json({"canary": "fp8-kernel", "verdict": "fail",
  "decided_at": 1764680034.0,
  "release": {"id": "fp8-kernel", "service": "chat-api",
              "annotation": {"id": "fp8-kernel", "started_at": 1764680020, "quantization": "fp8"}},
  "causes": [{"kind": "power_brake", "scope": "release", "node": "node-4",
              "gpus": ["node-4/0", "node-4/1"],
              "summary": "HW power brake held SM clock at 1050 MHz (<baseline 1980>)"}],
  "canary_nodes": ["node-4"], "baseline_nodes": ["node-1"]})json";

TEST_F(HtmlReportTest, ASelfContainedPageWithTheCauseAndTheCharts) {
  WriteIncident(kIncident);
  WriteTelemetry();
  HtmlReportStats stats;
  auto html = RenderHtmlReport(dir_, &stats);
  ASSERT_TRUE(html.has_value()) << html.error().ToString();
  // GC_REPORT_HTML=FILE keeps the page, to look at it in a browser.
  if (const char* keep = std::getenv("GC_REPORT_HTML")) std::ofstream(keep) << *html;
  EXPECT_EQ(stats.gpus, 4);
  EXPECT_EQ(stats.seconds, 60);
  EXPECT_EQ(stats.charts, 2);  // SM clock, tokens per second
  // The cause in words, escaped.
  EXPECT_NE(html->find("HW power brake held SM clock at 1050 MHz (&lt;baseline 1980&gt;)"),
            std::string::npos);
  EXPECT_NE(html->find("<span class=\"verdict fail\">fail</span>"), std::string::npos);
  EXPECT_NE(html->find("<th>quantization</th><td>fp8</td>"), std::string::npos);
  // Canary GPUs lead the chart data; the braked seconds are shaded.
  EXPECT_LT(html->find("\"node-4/0\""), html->find("\"node-1/0\""));
  EXPECT_NE(html->find("\"throttled\":[[1764680030,1764680059]]"), std::string::npos);
  // Nothing is fetched: uPlot is inlined, no external script or stylesheet.
  EXPECT_NE(html->find("uPlot"), std::string::npos);
  EXPECT_EQ(html->find("src=\"http"), std::string::npos);
  EXPECT_EQ(html->find("href=\"http"), std::string::npos);
  EXPECT_EQ(html->find("<script src"), std::string::npos);
}

TEST_F(HtmlReportTest, AMissingOrBadBundleIsAClearError) {
  auto none = RenderHtmlReport(dir_);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), StatusCode::kNotFound);
  EXPECT_NE(none.error().message().find("incident.json"), std::string::npos);
  WriteIncident("[1, 2");
  auto bad = RenderHtmlReport(dir_);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kParseError);
  WriteIncident(kIncident);
  auto no_telemetry = RenderHtmlReport(dir_);
  ASSERT_FALSE(no_telemetry.has_value());
  EXPECT_NE(no_telemetry.error().message().find("telemetry.om: no such file"), std::string::npos);
  std::ofstream(dir_ / "telemetry.om") << "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} oops 1\n# EOF\n";
  auto broken = RenderHtmlReport(dir_);
  ASSERT_FALSE(broken.has_value());
  EXPECT_NE(broken.error().message().find("telemetry.om:1:"), std::string::npos)
      << broken.error().message();
}

}  // namespace
}  // namespace gpucanary::report
