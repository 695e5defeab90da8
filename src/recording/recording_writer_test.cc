#include "recording/recording_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace gpucanary::recording {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

fs::path TempPath(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("recording_writer_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string ReadPlain(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ReadGzip(const fs::path& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  EXPECT_NE(gz, nullptr);
  if (gz == nullptr) return "";
  std::string text;
  std::array<char, 4096> chunk{};
  int n = 0;
  while ((n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) {
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  EXPECT_EQ(n, 0);
  EXPECT_EQ(gzclose(gz), Z_OK);
  return text;
}

bool IsGzipMagic(const fs::path& path) {
  const std::string bytes = ReadPlain(path);
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::unique_ptr<RecordingWriter> OpenOrDie(const fs::path& path) {
  auto writer = RecordingWriter::Open(path.string());
  EXPECT_TRUE(writer.has_value()) << writer.error().ToString();
  return std::move(*writer);
}

// The small sequence of the golden test: a gauge over two ticks, a DCGM counter
// without _total, a counter with _total, escaping, special values, and
// timestamps at and before the epoch.
void WriteGoldenSequence(RecordingWriter& writer) {
  ASSERT_TRUE(writer
                  .DeclareFamily("DCGM_FI_DEV_GPU_TEMP", model::MetricType::kGauge,
                                 "GPU temperature (in C).")
                  .ok());
  ASSERT_TRUE(writer
                  .DeclareFamily("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                 model::MetricType::kCounter,
                                 "Total energy consumption since boot (in mJ).")
                  .ok());
  ASSERT_TRUE(
      writer.DeclareFamily("requests_total", model::MetricType::kCounter, "Requests served.").ok());
  ASSERT_TRUE(writer
                  .DeclareFamily("odd_gauge", model::MetricType::kGauge,
                                 "Help with \\ backslash, \"quotes\"\nand a newline")
                  .ok());
  ASSERT_TRUE(writer.DeclareFamily("no_help", model::MetricType::kUnknown, "").ok());

  const std::vector<model::LabelView> gpu0 = {
      {"gpu", "0"}, {"modelName", "NVIDIA H100 80GB HBM3"}, {"Hostname", "node-1"}};
  const std::vector<model::LabelView> gpu1 = {
      {"gpu", "1"}, {"modelName", "NVIDIA H100 80GB HBM3"}, {"Hostname", "node-1"}};
  const std::vector<model::LabelView> odd = {
      {"path", "C:\\dir"}, {"quote", "say \"hi\""}, {"nl", "a\nb"}, {"empty", ""}};

  ASSERT_TRUE(writer.Append("DCGM_FI_DEV_GPU_TEMP", gpu0, 34, 1775016266006).ok());
  ASSERT_TRUE(writer.Append("DCGM_FI_DEV_GPU_TEMP", gpu1, 31, 1775016266006).ok());
  ASSERT_TRUE(
      writer.Append("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu0, 238749445947, 1775016266006)
          .ok());
  ASSERT_TRUE(writer.Append("requests_total", {}, 12, -1500).ok());
  ASSERT_TRUE(writer.Append("odd_gauge", odd, kNaN, -1).ok());
  ASSERT_TRUE(writer.Append("odd_gauge", odd, kInf, 0).ok());
  ASSERT_TRUE(writer.Append("odd_gauge", odd, -kInf, 0).ok());
  ASSERT_TRUE(writer.Append("odd_gauge", odd, 5e-06, 1).ok());
  ASSERT_TRUE(writer.Append("no_help", {}, 0.1, 2).ok());
  ASSERT_TRUE(writer.Append("DCGM_FI_DEV_GPU_TEMP", gpu0, 35, 1775016266106).ok());
  ASSERT_TRUE(
      writer.Append("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu0, 238749446000, 1775016266106)
          .ok());
  ASSERT_TRUE(writer.Append("requests_total", {}, 13, -500).ok());
}

constexpr std::string_view kGoldenText =
    "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 34 "
    "1775016266.006\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 31 "
    "1775016266.006\n"
    "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\","
    "Hostname=\"node-1\"} 238749445947 1775016266.006\n"
    "# HELP requests Requests served.\n"
    "# TYPE requests counter\n"
    "requests_total 12 -1.500\n"
    "# HELP odd_gauge Help with \\\\ backslash, \\\"quotes\\\"\\nand a newline\n"
    "# TYPE odd_gauge gauge\n"
    "odd_gauge{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"} NaN -0.001\n"
    "odd_gauge{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"} +Inf 0.000\n"
    "odd_gauge{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"} -Inf 0.000\n"
    "odd_gauge{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"} 5e-06 0.001\n"
    "# TYPE no_help unknown\n"
    "no_help 0.1 0.002\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 35 "
    "1775016266.106\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\","
    "Hostname=\"node-1\"} 238749446000 1775016266.106\n"
    "requests_total 13 -0.500\n"
    "# EOF\n";

TEST(RecordingWriterTest, WritesExactText) {
  const fs::path path = TempPath("golden.om");
  auto writer = OpenOrDie(path);
  WriteGoldenSequence(*writer);
  EXPECT_EQ(writer->samples_written(), 12u);
  EXPECT_EQ(writer->series_count(), 6u);
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_FALSE(IsGzipMagic(path));
  EXPECT_EQ(ReadPlain(path), kGoldenText);
}

TEST(RecordingWriterTest, GzipOutputDecompressesToTheSameText) {
  const fs::path path = TempPath("golden.om.gz");
  auto writer = OpenOrDie(path);
  WriteGoldenSequence(*writer);
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_TRUE(IsGzipMagic(path));
  EXPECT_EQ(ReadGzip(path), kGoldenText);
}

TEST(RecordingWriterTest, LargeOutputCrossesTheFlushThreshold) {
  const fs::path plain = TempPath("large.om");
  const fs::path gz = TempPath("large.om.gz");
  for (const fs::path& path : {plain, gz}) {
    auto writer = OpenOrDie(path);
    ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
    for (int i = 0; i < 50000; ++i) {
      const std::string gpu = std::to_string(i % 8);
      const std::array<model::LabelView, 1> labels = {model::LabelView{"gpu", gpu}};
      ASSERT_TRUE(writer->Append("m", labels, i, 1000 + i / 8).ok());
    }
    ASSERT_TRUE(writer->Close().ok());
  }
  const std::string text = ReadPlain(plain);
  EXPECT_EQ(ReadGzip(gz), text);
  EXPECT_TRUE(text.starts_with("# TYPE m gauge\nm{gpu=\"0\"} 0 1.000\n"));
  EXPECT_TRUE(text.ends_with("m{gpu=\"7\"} 49999 7.249\n# EOF\n"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 50002);
}

TEST(RecordingWriterTest, RefusesOutOfOrderAppendPerSeries) {
  auto writer = OpenOrDie(TempPath("order.om"));
  ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
  const std::array<model::LabelView, 1> a = {model::LabelView{"gpu", "0"}};
  const std::array<model::LabelView, 1> b = {model::LabelView{"gpu", "1"}};
  ASSERT_TRUE(writer->Append("m", a, 1, 2000).ok());
  ASSERT_TRUE(writer->Append("m", a, 2, 2000).ok());  // equal timestamps are allowed
  ASSERT_TRUE(writer->Append("m", b, 3, 1000).ok());  // another series may be older
  const Status older = writer->Append("m", a, 4, 1999);
  EXPECT_EQ(older.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(older.message().find("m{gpu=\"0\"}"), std::string::npos) << older.message();
  EXPECT_EQ(writer->samples_written(), 3u);
  ASSERT_TRUE(writer->Append("m", a, 5, 2001).ok());  // the refused sample changed nothing
  ASSERT_TRUE(writer->Close().ok());
}

TEST(RecordingWriterTest, RefusesInvalidNames) {
  auto writer = OpenOrDie(TempPath("names.om"));
  EXPECT_EQ(writer->DeclareFamily("bad-name", model::MetricType::kGauge, "").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->DeclareFamily("1st", model::MetricType::kGauge, "").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->DeclareFamily("", model::MetricType::kGauge, "").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->DeclareFamily("_total", model::MetricType::kCounter, "").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->DeclareFamily("m", model::MetricType::kGauge, "\xff").code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());

  const std::array<model::LabelView, 1> bad_label = {model::LabelView{"pci.bus_id", "x"}};
  EXPECT_EQ(writer->Append("m", bad_label, 1, 0).code(), StatusCode::kInvalidArgument);
  const std::array<model::LabelView, 1> colon_label = {model::LabelView{"a:b", "x"}};
  EXPECT_EQ(writer->Append("m", colon_label, 1, 0).code(), StatusCode::kInvalidArgument);
  const std::array<model::LabelView, 2> repeated = {model::LabelView{"gpu", "0"},
                                                    model::LabelView{"gpu", "1"}};
  EXPECT_EQ(writer->Append("m", repeated, 1, 0).code(), StatusCode::kInvalidArgument);
  const std::array<model::LabelView, 1> bad_value = {model::LabelView{"gpu", "\xc3"}};
  EXPECT_EQ(writer->Append("m", bad_value, 1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Append("undeclared", {}, 1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->samples_written(), 0u);
  ASSERT_TRUE(writer->Close().ok());
}

TEST(RecordingWriterTest, DeclarationConflicts) {
  auto writer = OpenOrDie(TempPath("conflicts.om"));
  ASSERT_TRUE(writer->DeclareFamily("x_total", model::MetricType::kCounter, "h").ok());
  EXPECT_TRUE(writer->DeclareFamily("x_total", model::MetricType::kCounter, "h").ok());
  EXPECT_EQ(writer->DeclareFamily("x_total", model::MetricType::kGauge, "h").code(),
            StatusCode::kInvalidArgument);
  // A gauge "x" would need the family name of counter "x_total".
  EXPECT_EQ(writer->DeclareFamily("x", model::MetricType::kGauge, "").code(),
            StatusCode::kInvalidArgument);
  // OpenMetrics: a counter's _total must not be negative or NaN.
  EXPECT_EQ(writer->Append("x_total", {}, -1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Append("x_total", {}, kNaN, 0).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(writer->Append("x_total", {}, 0, 0).ok());
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(writer->Close().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Append("x_total", {}, 1, 1).code(), StatusCode::kInvalidArgument);
}

TEST(RecordingWriterTest, ReportsDiskFullOnClose) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is not available";
  auto writer = OpenOrDie("/dev/full");
  ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
  ASSERT_TRUE(writer->Append("m", {}, 1, 0).ok());  // still buffered
  const Status status = writer->Close();
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("/dev/full"), std::string::npos) << status.message();
}

TEST(RecordingWriterTest, ReportsDiskFullWhileAppending) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is not available";
  auto writer = OpenOrDie("/dev/full");
  ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
  Status status;
  for (int i = 0; i < 100000 && status.ok(); ++i) status = writer->Append("m", {}, i, i);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  // The error is sticky.
  EXPECT_EQ(writer->Append("m", {}, 1, 1 << 30).code(), StatusCode::kIoError);
  EXPECT_EQ(writer->Close().code(), StatusCode::kIoError);
}

TEST(RecordingWriterTest, OpenFailsForMissingDirectory) {
  auto writer = RecordingWriter::Open("/nonexistent-dir-for-gpucanary/x.om");
  ASSERT_FALSE(writer.has_value());
  EXPECT_EQ(writer.error().code(), StatusCode::kIoError);
  auto gz = RecordingWriter::Open("/nonexistent-dir-for-gpucanary/x.om.gz");
  ASSERT_FALSE(gz.has_value());
  EXPECT_EQ(gz.error().code(), StatusCode::kIoError);
}

TEST(RecordingWriterTest, DestructorWithoutCloseLeavesNoEof) {
  const fs::path path = TempPath("abandoned.om");
  {
    auto writer = OpenOrDie(path);
    ASSERT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
    ASSERT_TRUE(writer->Append("m", {}, 1, 0).ok());
  }
  EXPECT_EQ(ReadPlain(path), "# TYPE m gauge\nm 1 0.000\n");
}

}  // namespace
TEST(RecordingWriterTest, WritesHistogramsUnderOneFamily) {
  const fs::path path = TempPath("histogram.om");
  auto writer = OpenOrDie(path);
  ASSERT_TRUE(writer->DeclareFamily("lat_seconds", model::MetricType::kHistogram, "Latency.").ok());
  const model::LabelView host{"Hostname", "n1"};
  const model::LabelView b1[] = {host, {"le", "0.5"}};
  const model::LabelView inf[] = {host, {"le", "+Inf"}};
  const model::LabelView base[] = {host};
  ASSERT_TRUE(writer->Append("lat_seconds_bucket", b1, 2, 1000).ok());
  ASSERT_TRUE(writer->Append("lat_seconds_bucket", inf, 3, 1000).ok());
  ASSERT_TRUE(writer->Append("lat_seconds_count", base, 3, 1000).ok());
  ASSERT_TRUE(writer->Append("lat_seconds_sum", base, 1.25, 1000).ok());
  // The family name is no sample name; buckets and counts cannot go negative.
  EXPECT_FALSE(writer->Append("lat_seconds", base, 1, 2000).ok());
  EXPECT_FALSE(writer->Append("lat_seconds_bucket", b1, -1, 2000).ok());
  EXPECT_FALSE(writer->Append("lat_seconds_count", base, std::nan(""), 2000).ok());
  // Its sample names are taken.
  EXPECT_FALSE(writer->DeclareFamily("lat_seconds_count", model::MetricType::kGauge, "").ok());
  ASSERT_TRUE(writer->DeclareFamily("x", model::MetricType::kGauge, "").ok());
  EXPECT_FALSE(writer->DeclareFamily("x", model::MetricType::kHistogram, "").ok());  // redeclared
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(ReadPlain(path),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{Hostname=\"n1\",le=\"0.5\"} 2 1.000\n"
            "lat_seconds_bucket{Hostname=\"n1\",le=\"+Inf\"} 3 1.000\n"
            "lat_seconds_count{Hostname=\"n1\"} 3 1.000\n"
            "lat_seconds_sum{Hostname=\"n1\"} 1.25 1.000\n"
            "# EOF\n");
}

TEST(RecordingWriterTest, AHistogramNeedsItsSampleNamesFree) {
  const fs::path path = TempPath("histogram-conflict.om");
  auto writer = OpenOrDie(path);
  ASSERT_TRUE(writer->DeclareFamily("h_sum", model::MetricType::kGauge, "").ok());
  const Status s = writer->DeclareFamily("h", model::MetricType::kHistogram, "");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("h_sum"), std::string::npos) << s.message();
}

// model::MetricType names types that recordings have no rules for.
TEST(RecordingWriterTest, RefusesTypesRecordingsDoNotHold) {
  auto writer = OpenOrDie(TempPath("types.om"));
  for (model::MetricType type : {model::MetricType::kGaugeHistogram, model::MetricType::kSummary,
                                 model::MetricType::kInfo, model::MetricType::kStateSet}) {
    const Status s = writer->DeclareFamily("m", type, "");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(model::MetricTypeName(type)), std::string::npos) << s.message();
  }
  EXPECT_TRUE(writer->DeclareFamily("m", model::MetricType::kGauge, "").ok());
  ASSERT_TRUE(writer->Close().ok());
}

}  // namespace gpucanary::recording
