// The contract between the writer and the reader: every recording that
// RecordingWriter and the importers produce must read back through gpucanary's
// own OpenMetrics reader (expfmt) without a single complaint, with the same
// families, series and samples.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "expfmt/reader.h"
#include "importers/dcgm_csv_importer.h"
#include "importers/import_test_util.h"
#include "importers/nvidia_smi_importer.h"
#include "recording/recording_writer.h"

namespace gpucanary::importers {
namespace {

using testing::TempPath;

const std::string kTraces = std::string(GPUCANARY_SHARED_DIR) + "/data/gpu-traces/";

expfmt::ReadReport ReadBack(const std::filesystem::path& path) {
  expfmt::ReadOptions options;
  options.format = expfmt::Format::kOpenMetrics;
  auto report = expfmt::ReadFile(path.string(), options);
  EXPECT_TRUE(report.has_value()) << report.error().ToString();
  if (!report) return {};
  for (const std::string& message : report->messages) ADD_FAILURE() << message;
  return *report;
}

TEST(RoundTripTest, WriterEdgeCasesReadBack) {
  const auto path = TempPath("edge_cases.om.gz");
  auto writer = recording::RecordingWriter::Open(path.string());
  ASSERT_TRUE(writer.has_value());
  recording::RecordingWriter& w = **writer;
  ASSERT_TRUE(w.DeclareFamily("requests_total", model::MetricType::kCounter, "c").ok());
  ASSERT_TRUE(w.DeclareFamily("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", model::MetricType::kCounter,
                              "Total number of PCIe retries.")
                  .ok());
  ASSERT_TRUE(w.DeclareFamily("odd", model::MetricType::kGauge, "a \"quoted\"\\ help\nline").ok());
  const std::array<model::LabelView, 3> odd = {model::LabelView{"path", "C:\\dir"},
                                               model::LabelView{"quote", "say \"hi\""},
                                               model::LabelView{"nl", "a\nb"}};
  const double special[] = {std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            5e-06,
                            -0.0,
                            1e300};
  std::int64_t ms = -1500;
  for (const double value : special) {
    ASSERT_TRUE(w.Append("requests_total", {}, 12, ms).ok());
    ASSERT_TRUE(w.Append("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", odd, 3, ms).ok());
    ASSERT_TRUE(w.Append("odd", odd, value, ms).ok());
    ms += 999;
  }
  ASSERT_TRUE(w.Close().ok());
  const expfmt::ReadReport report = ReadBack(path);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.stats.families, 3u);
  EXPECT_EQ(report.stats.series, 3u);
  EXPECT_EQ(report.stats.samples, 18u);
  EXPECT_EQ(report.stats.min_timestamp_ms, -1500);
  EXPECT_EQ(report.stats.max_timestamp_ms, -1500 + 5 * 999);
}

TEST(RoundTripTest, ImportedTracesReadBack) {
  struct Case {
    bool nvidia_smi;
    std::string input;
    const char* output;
    std::uint64_t families;
    std::uint64_t series;
  };
  const Case cases[] = {
      {false, kTraces + "atharvanihalani-gpu-telemetry-exploration/b1_telemetry.csv", "rt_b1.om",
       16, 16 * 8},
      {true, kTraces + "yqg9651-cuda_test/h100pcie350w_fp8gemm_random.csv", "rt_smi.om.gz", 7, 7},
  };
  for (const Case& c : cases) {
    const auto output = TempPath(c.output);
    auto writer = recording::RecordingWriter::Open(output.string());
    ASSERT_TRUE(writer.has_value());
    auto imported = c.nvidia_smi ? ImportNvidiaSmiCsv(c.input, {}, **writer)
                                 : ImportDcgmCsv(c.input, {}, **writer);
    ASSERT_TRUE(imported.has_value()) << imported.error().ToString();
    ASSERT_TRUE((*writer)->Close().ok());
    const expfmt::ReadReport report = ReadBack(output);
    EXPECT_TRUE(report.ok()) << c.input;
    EXPECT_EQ(report.stats.families, c.families) << c.input;
    EXPECT_EQ(report.stats.series, c.series) << c.input;
    EXPECT_EQ(report.stats.samples, imported->samples_written) << c.input;
    EXPECT_EQ(report.stats.timestamped_samples, imported->samples_written) << c.input;
    EXPECT_EQ(report.stats.min_timestamp_ms, *imported->first_timestamp_ms) << c.input;
    EXPECT_EQ(report.stats.max_timestamp_ms, *imported->last_timestamp_ms) << c.input;
  }
}

}  // namespace
}  // namespace gpucanary::importers
