#include "expfmt/reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gpucanary::expfmt {
namespace {

namespace fs = std::filesystem;

const fs::path kShared = GPUCANARY_SHARED_DIR;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The OpenMetrics conformance suite, run as upstream's openmetricstest does:
// every case is parsed as OpenMetrics; a case passes when "parsed without
// error" equals its shouldParse.
TEST(ConformanceTest, OpenMetricsSuite) {
  const fs::path dir = kShared / "data/openmetrics-tests/parsers";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int total = 0;
  int passed = 0;
  std::string failures;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!fs::exists(entry.path() / "test.json")) continue;
    const std::string meta = Slurp(entry.path() / "test.json");
    const bool should_parse = meta.find("\"shouldParse\": true") != std::string::npos ||
                              meta.find("\"shouldParse\":true") != std::string::npos;
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(should_parse, name.rfind("bad_", 0) != 0) << name;
    ReadOptions o;
    const ReadReport r = ReadBuffer(Slurp(entry.path() / "metrics"), Format::kOpenMetrics, name, o);
    ++total;
    if (r.ok() == should_parse) {
      ++passed;
    } else {
      failures += name + (r.ok() ? " (accepted)" : " (rejected: " + r.messages[0] + ")") + "\n";
    }
  }
  EXPECT_EQ(total, 211);
  EXPECT_EQ(passed, total) << failures;
  std::printf("OpenMetrics conformance: %d/%d\n", passed, total);
}

struct SampleRecord {
  std::string family;
  double value;
  std::size_t labels;
};

std::vector<SampleRecord> ReadAll(const fs::path& p, ReadReport& report, ReadOptions options = {}) {
  std::vector<SampleRecord> out;
  auto r = ReadFile(p.string(), options,
                    [&](const SampleView& s, std::string_view family, model::MetricType) {
                      out.push_back({std::string(family), s.value, s.labels.size()});
                    });
  EXPECT_TRUE(r.has_value());
  if (r) report = *r;
  return out;
}

// Every real dcgm-exporter scrape parses, to the exact series and values it holds.
TEST(DcgmSamplesTest, EverySampleLineBecomesOneSample) {
  for (const auto& entry : fs::directory_iterator(kShared / "data/dcgm-samples")) {
    if (entry.path().extension() != ".txt") continue;
    const std::string text = Slurp(entry.path());
    std::size_t sample_lines = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') ++sample_lines;
    }
    ReadReport r;
    const auto samples = ReadAll(entry.path(), r);
    EXPECT_TRUE(r.ok()) << entry.path() << (r.messages.empty() ? "" : r.messages[0]);
    EXPECT_EQ(r.format, Format::kPrometheusText);
    EXPECT_EQ(samples.size(), sample_lines) << entry.path();
    EXPECT_EQ(r.stats.series, sample_lines) << entry.path();
    EXPECT_EQ(r.stats.duplicate_samples, 0u);
  }
}

TEST(DcgmSamplesTest, H100x8ValuesAndLabels) {
  ReadReport r;
  std::map<std::string, double> power;
  std::size_t pod_labelled = 0;
  auto rr = ReadFile((kShared / "data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt").string(),
                     ReadOptions{}, [&](const SampleView& s, std::string_view, model::MetricType) {
                       if (s.Label("pod")) ++pod_labelled;
                       if (s.name == "DCGM_FI_DEV_POWER_USAGE") {
                         power[std::string(*s.Label("gpu"))] = s.value;
                         EXPECT_EQ(*s.Label("Hostname"), "gpu-node-1");
                         EXPECT_EQ(*s.Label("modelName"), "NVIDIA H100 80GB HBM3");
                       }
                     });
  ASSERT_TRUE(rr.has_value());
  EXPECT_TRUE(rr->ok());
  EXPECT_EQ(power.size(), 8u);
  // Only GPU 0 runs a pod; its series carry pod labels, in 4 families.
  EXPECT_EQ(pod_labelled, 4u);
  EXPECT_EQ(rr->stats.families, 4u);
}

TEST(DcgmSamplesTest, L4ExactValues) {
  std::map<std::string, double> v;
  auto rr = ReadFile((kShared / "data/dcgm-samples/l4-default-counters-kops.txt").string(),
                     ReadOptions{}, [&](const SampleView& s, std::string_view, model::MetricType) {
                       v[std::string(s.name)] = s.value;
                     });
  ASSERT_TRUE(rr.has_value());
  EXPECT_TRUE(rr->ok());
  EXPECT_EQ(v.at("DCGM_FI_DEV_SM_CLOCK"), 210);
  EXPECT_EQ(v.at("DCGM_FI_DEV_MEM_CLOCK"), 405);
  EXPECT_EQ(v.count("DCGM_FI_DEV_XID_ERRORS"), 0u);  // blank: absent, not zero
  EXPECT_EQ(v.count("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), 0u);
}

TEST(DcgmSamplesTest, PrometheusBenchmarkInputs) {
  // These files end with "# EOF", so docs/contracts.md §4 reads them as OpenMetrics, where
  // their counters (no _total) are invalid; Prometheus parses them as 0.0.4.
  for (const char* name : {"alltypes.237mfs.prom.txt", "alltypes.237mfs.nometa.prom.txt"}) {
    ReadReport detected;
    ReadAll(kShared / "data/prometheus-textparse-testdata" / name, detected);
    EXPECT_EQ(detected.format, Format::kOpenMetrics);
    EXPECT_FALSE(detected.ok());
    ReadOptions prom;
    prom.format = Format::kPrometheusText;
    ReadReport r;
    const auto samples = ReadAll(kShared / "data/prometheus-textparse-testdata" / name, r, prom);
    EXPECT_TRUE(r.ok()) << name << (r.messages.empty() ? "" : r.messages[0]);
    EXPECT_EQ(samples.size(), 1857u) << name;
  }
  // This OM file has negative histogram buckets with a _sum, which OpenMetrics
  // 1.0 forbids (Prometheus accepts it); we must say exactly that.
  auto om = ReadFile((kShared / "data/prometheus-textparse-testdata/alltypes.5mfs.om.txt").string(),
                     ReadOptions{});
  ASSERT_TRUE(om.has_value());
  EXPECT_EQ(om->format, Format::kOpenMetrics);
  ASSERT_FALSE(om->ok());
  EXPECT_NE(om->messages[0].find(":33:1: histogram sample 'rpc_durations_histogram_seconds_sum' "
                                 "must not be NaN or negative"),
            std::string::npos)
      << om->messages[0];
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("gpucanary-reader-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string MakeRecording(int ticks, int gpus) {
  std::string out = "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n";
  for (int t = 0; t < ticks; ++t) {
    for (int g = 0; g < gpus; ++g) {
      out += "DCGM_FI_DEV_SM_CLOCK{gpu=\"" + std::to_string(g) + "\",Hostname=\"node-1\"} " +
             std::to_string(1980 - g) + " " + std::to_string(1700000000 + t) + ".250\n";
    }
  }
  return out + "# EOF\n";
}

using StreamingTest = TempDir;

TEST_F(StreamingTest, SmallChunksGiveTheSameResultAsOneBuffer) {
  const std::string text = MakeRecording(200, 8);
  const fs::path path = dir_ / "rec.om";
  std::ofstream(path, std::ios::binary) << text;
  ReadOptions tiny;
  tiny.chunk_bytes = 64;  // forces lines to straddle chunk boundaries
  std::uint64_t n = 0;
  double sum = 0;
  auto r =
      ReadFile(path.string(), tiny, [&](const SampleView& s, std::string_view, model::MetricType) {
        ++n;
        sum += s.value;
      });
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ok()) << (r->messages.empty() ? "" : r->messages[0]);
  EXPECT_EQ(n, 1600u);
  EXPECT_EQ(r->stats.series, 8u);
  EXPECT_EQ(r->lines, 1602u);
  EXPECT_EQ(r->stats.min_timestamp_ms, 1700000000250);
  EXPECT_EQ(r->stats.max_timestamp_ms, 1700000199250);
  EXPECT_DOUBLE_EQ(sum, 200.0 * (1980 * 8 - 28));
}

TEST_F(StreamingTest, GzipRecordingIsDetectedAndRead) {
  const std::string text = MakeRecording(50, 4);
  const fs::path path = dir_ / "rec.txt.gz";  // not named .om: detected by its # EOF tail
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
  auto r = ReadFile(path.string(), ReadOptions{});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->format, Format::kOpenMetrics);
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->stats.samples, 200u);
}

TEST_F(StreamingTest, ErrorsNameFileLineColumn) {
  const fs::path path = dir_ / "bad.prom";
  std::ofstream(path, std::ios::binary) << "ok 1\nok2{a=\"1\" b=\"2\"} 1\nok3 x\n";
  ReadOptions stop;
  auto r = ReadFile(path.string(), stop);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->stopped_early);
  ASSERT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0],
            path.string() + ":2:11: expected ',' or '}' after label value, found 'b'");
  ReadOptions skip;
  skip.skip_bad_lines = true;
  r = ReadFile(path.string(), skip);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->bad_lines, 2u);
  EXPECT_EQ(r->stats.samples, 1u);
  EXPECT_EQ(r->messages[1], path.string() + ":3:5: invalid value 'x'");
}

TEST_F(StreamingTest, MissingFileIsAnIoErrorNotACrash) {
  auto r = ReadFile((dir_ / "nope.om").string(), ReadOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
}

TEST_F(StreamingTest, TruncatedGzipIsReported) {
  const std::string text = MakeRecording(500, 8);
  const fs::path path = dir_ / "rec.om.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  fs::resize_file(path, fs::file_size(path) / 2);
  auto r = ReadFile(path.string(), ReadOptions{});
  if (r.has_value()) {
    // zlib may hand over the intact prefix first: then the missing # EOF is the error.
    EXPECT_FALSE(r->ok());
  } else {
    EXPECT_EQ(r.error().code(), StatusCode::kIoError);
  }
}

TEST(DetectFormatTest, Rules) {
  EXPECT_EQ(DetectFormat("x.om", ""), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("x.om.gz", ""), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("x.txt", "a 1\n# EOF\n"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("x.txt", "a 1\n# EOF"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("x.txt", "a 1\n"), Format::kPrometheusText);
  EXPECT_EQ(DetectFormat("x.txt", "# EOF\n\n"), Format::kPrometheusText);
}

}  // namespace
}  // namespace gpucanary::expfmt
