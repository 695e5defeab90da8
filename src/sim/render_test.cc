#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "dcgm/exposition.h"
#include "dcgm/readings.h"
#include "expfmt/reader.h"
#include "sim/vllm_render.h"

namespace gpucanary::sim {
namespace {

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The identity and values of the real L4 scrape
// (shared/data/dcgm-samples/l4-default-counters-kops.txt).
dcgm::GpuIdentity L4Identity() {
  dcgm::GpuIdentity gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c";
  gpu.pci_bus_id = "00000000:31:00.0";
  gpu.model_name = "NVIDIA L4";
  gpu.hostname = "i-030791dc5a37cd257";
  gpu.driver_version = "580.105.08";
  return gpu;
}

dcgm::Readings IdleL4() {
  dcgm::Readings r;
  r.Set(dcgm::ExporterField::kSmClock, 210);
  r.Set(dcgm::ExporterField::kMemClock, 405);
  r.Set(dcgm::ExporterField::kMemoryTemp, 0);
  r.Set(dcgm::ExporterField::kGpuTemp, 31);
  r.Set(dcgm::ExporterField::kPowerUsage, 16.365);
  r.Set(dcgm::ExporterField::kTotalEnergy, 4742776);
  r.Set(dcgm::ExporterField::kPcieReplayCounter, 0);
  r.Set(dcgm::ExporterField::kGpuUtil, 0);
  r.Set(dcgm::ExporterField::kMemCopyUtil, 0);
  r.Set(dcgm::ExporterField::kFbFree, 22563);
  r.Set(dcgm::ExporterField::kFbUsed, 0);
  r.Set(dcgm::ExporterField::kFbReserved, 470);
  r.Set(dcgm::ExporterField::kUncorrectableRemappedRows, 0);
  r.Set(dcgm::ExporterField::kCorrectableRemappedRows, 0);
  r.Set(dcgm::ExporterField::kRowRemapFailure, 0);
  r.Set(dcgm::ExporterField::kGrEngineActive, 0);
  r.Set(dcgm::ExporterField::kTensorActive, 0);
  r.Set(dcgm::ExporterField::kDramActive, 0);
  r.Set(dcgm::ExporterField::kPcieTxBytes, 112603);
  r.Set(dcgm::ExporterField::kPcieRxBytes, 17544);
  return r;
}

expfmt::ReadReport Parse(std::string_view text) {
  return expfmt::ReadBuffer(text, expfmt::Format::kPrometheusText, "sim", {});
}

// Golden: the rendered idle L4 equals the real scrape, line for line. The scrape
// also has ENC_UTIL (206), DEC_UTIL (207) and VGPU_LICENSE_STATUS (526), which the
// simulator does not model; their three-line families are dropped from the file.
TEST(DcgmRenderTest, IdleL4MatchesRealScrape) {
  const std::string file = ReadFileText(std::string(GPUCANARY_SHARED_DIR) +
                                        "/data/dcgm-samples/l4-default-counters-kops.txt");
  ASSERT_FALSE(file.empty());
  std::vector<std::string> expected;
  for (const std::string& line : SplitLines(file)) {
    if (line.find("DCGM_FI_DEV_ENC_UTIL") != std::string::npos ||
        line.find("DCGM_FI_DEV_DEC_UTIL") != std::string::npos ||
        line.find("DCGM_FI_DEV_VGPU_LICENSE_STATUS") != std::string::npos) {
      continue;
    }
    expected.push_back(line);
  }
  const dcgm::GpuIdentity gpu = L4Identity();
  const dcgm::Readings readings = IdleL4();
  std::string out;
  dcgm::RenderDcgmExposition({&gpu, 1}, {&readings, 1}, {}, out);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  const std::vector<std::string> got = SplitLines(out);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "line " << i + 1;
}

TEST(DcgmRenderTest, ParsesWithOurParser) {
  const dcgm::GpuIdentity gpu = L4Identity();
  const dcgm::Readings readings = IdleL4();
  std::string out;
  dcgm::RenderDcgmExposition({&gpu, 1}, {&readings, 1}, {}, out);
  const expfmt::ReadReport report = Parse(out);
  EXPECT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]);
  EXPECT_EQ(report.stats.families, 20u);
  EXPECT_EQ(report.stats.series, 20u);
  EXPECT_EQ(report.stats.duplicate_samples, 0u);
}

std::vector<dcgm::GpuIdentity> EightGpus() {
  std::vector<dcgm::GpuIdentity> gpus(8);
  for (int i = 0; i < 8; ++i) {
    dcgm::GpuIdentity& g = gpus[static_cast<std::size_t>(i)];
    g.index = i;
    g.uuid = "GPU-0000000" + std::to_string(i) + "-52bb-bcc1-a8ee-f78c3faa2e2d";
    g.pci_bus_id = "00000000:" + std::to_string(10 + i) + ":00.0";
    g.model_name = "NVIDIA H100 80GB HBM3";
    g.hostname = "gpu-node-1";
    g.driver_version = "580.105.08";
  }
  return gpus;
}

std::vector<dcgm::Readings> FullReadings(std::size_t n) {
  std::vector<dcgm::Readings> all(n);
  for (dcgm::Readings& r : all) {
    for (std::size_t f = 0; f < dcgm::kExporterFieldCount; ++f) r.values[f] = 1.0;
  }
  return all;
}

TEST(DcgmRenderTest, EveryFieldOnEightGpusParses) {
  const std::vector<dcgm::GpuIdentity> gpus = EightGpus();
  const std::vector<dcgm::Readings> readings = FullReadings(gpus.size());
  std::string out;
  dcgm::RenderDcgmExposition(gpus, readings, {}, out);
  const expfmt::ReadReport report = Parse(out);
  EXPECT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]);
  EXPECT_EQ(report.stats.families, dcgm::kExporterFieldCount);
  EXPECT_EQ(report.stats.series, dcgm::kExporterFieldCount * 8);
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge\n"), std::string::npos);
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu=\"7\""), std::string::npos);
  EXPECT_NE(out.find("} 1.000000\n"), std::string::npos);  // double field
  EXPECT_NE(out.find("} 1\n"), std::string::npos);         // int field
}

TEST(DcgmRenderTest, BlankFieldsAreSkipped) {
  const std::vector<dcgm::GpuIdentity> gpus = EightGpus();
  std::vector<dcgm::Readings> readings = FullReadings(gpus.size());
  readings[3].Clear(dcgm::ExporterField::kMemoryTemp);  // blank on one GPU only
  for (dcgm::Readings& r : readings)
    r.Clear(dcgm::ExporterField::kSmOccupancy);  // blank everywhere
  std::string out;
  dcgm::RenderDcgmExposition(gpus, readings, {}, out);
  EXPECT_NE(out.find("DCGM_FI_DEV_MEMORY_TEMP{gpu=\"2\""), std::string::npos);
  EXPECT_EQ(out.find("DCGM_FI_DEV_MEMORY_TEMP{gpu=\"3\""), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DEV_MEMORY_TEMP{gpu=\"4\""), std::string::npos);
  EXPECT_NE(out.find("# HELP DCGM_FI_DEV_MEMORY_TEMP "), std::string::npos);
  EXPECT_EQ(out.find("DCGM_FI_PROF_SM_OCCUPANCY"), std::string::npos);
  const expfmt::ReadReport report = Parse(out);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.stats.families, dcgm::kExporterFieldCount - 1);
  EXPECT_EQ(report.stats.series, (dcgm::kExporterFieldCount - 1) * 8 - 1);
}

TEST(DcgmRenderTest, XidLabelsInSortedAttributePosition) {
  std::vector<dcgm::GpuIdentity> gpus = EightGpus();
  gpus.resize(2);
  gpus[1].container = "cuda";
  gpus[1].kube_namespace = "default";
  gpus[1].pod = "cuda-75454ffb9f-jpwkc";
  gpus[0].container = "ignored-without-pod";
  std::vector<dcgm::Readings> readings(2);
  readings[0].Set(dcgm::ExporterField::kXidErrors, 31);
  readings[1].Set(dcgm::ExporterField::kXidErrors, 0);
  readings[1].Set(dcgm::ExporterField::kGpuTemp, 40);
  std::string out;
  dcgm::RenderDcgmExposition(gpus, readings, {.lowercase_hostname = true}, out);
  const std::string expected =
      "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-00000001-52bb-bcc1-a8ee-f78c3faa2e2d\","
      "pci_bus_id=\"00000000:11:00.0\",device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\","
      "hostname=\"gpu-node-1\",DCGM_FI_DRIVER_VERSION=\"580.105.08\",container=\"cuda\","
      "namespace=\"default\",pod=\"cuda-75454ffb9f-jpwkc\"} 40\n"
      "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
      "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
      "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-00000000-52bb-bcc1-a8ee-f78c3faa2e2d\","
      "pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
      "hostname=\"gpu-node-1\",DCGM_FI_DRIVER_VERSION=\"580.105.08\",err_code=\"31\","
      "err_msg=\"GPU memory page fault\"} 31\n"
      "DCGM_FI_DEV_XID_ERRORS{gpu=\"1\",UUID=\"GPU-00000001-52bb-bcc1-a8ee-f78c3faa2e2d\","
      "pci_bus_id=\"00000000:11:00.0\",device=\"nvidia1\",modelName=\"NVIDIA H100 80GB HBM3\","
      "hostname=\"gpu-node-1\",DCGM_FI_DRIVER_VERSION=\"580.105.08\",container=\"cuda\","
      "err_code=\"0\",err_msg=\"No Error\",namespace=\"default\",pod=\"cuda-75454ffb9f-jpwkc\"} "
      "0\n";
  EXPECT_EQ(out, expected);
  EXPECT_TRUE(Parse(out).ok());
  EXPECT_EQ(dcgm::XidErrMsg(79), "GPU has fallen off the bus");
  EXPECT_EQ(dcgm::XidErrMsg(100000), "Unknown Error");
}

TEST(DcgmRenderTest, ValueFormatting) {
  const dcgm::GpuIdentity gpu = L4Identity();
  dcgm::Readings r;
  r.Set(dcgm::ExporterField::kSmClock, 1979.6);          // int field: rounded
  r.Set(dcgm::ExporterField::kPowerUsage, 699.9999996);  // %f rounding
  r.Set(dcgm::ExporterField::kSmActive, 0.8123454);
  r.Set(dcgm::ExporterField::kPcieTxBytes, 3.0e10);  // int64, no exponent
  std::string out;
  dcgm::RenderDcgmExposition({&gpu, 1}, {&r, 1}, {}, out);
  EXPECT_NE(out.find("} 1980\n"), std::string::npos);
  EXPECT_NE(out.find("} 700.000000\n"), std::string::npos);
  EXPECT_NE(out.find("} 0.812345\n"), std::string::npos);
  EXPECT_NE(out.find("} 30000000000\n"), std::string::npos);
}

TEST(DcgmRenderTest, AppendsWithoutClearing) {
  const dcgm::GpuIdentity gpu = L4Identity();
  dcgm::Readings r;
  r.Set(dcgm::ExporterField::kGpuTemp, 31);
  std::string out = "prefix\n";
  dcgm::RenderDcgmExposition({&gpu, 1}, {&r, 1}, {}, out);
  EXPECT_EQ(out.rfind("prefix\n# HELP DCGM_FI_DEV_GPU_TEMP", 0), 0u);
}

std::string PyFloat(double v) {
  std::string s;
  AppendPythonFloat(v, s);
  return s;
}

TEST(VllmRenderTest, PythonFloatFormatting) {
  EXPECT_EQ(PyFloat(0), "0.0");
  EXPECT_EQ(PyFloat(12), "12.0");
  EXPECT_EQ(PyFloat(0.3), "0.3");
  EXPECT_EQ(PyFloat(0.001), "0.001");
  EXPECT_EQ(PyFloat(1.5e-05), "1.5e-05");
  EXPECT_EQ(PyFloat(123456), "123456.0");
  EXPECT_EQ(PyFloat(1234567), "1.234567e+06");
  EXPECT_EQ(PyFloat(10000000), "1e+07");
  EXPECT_EQ(PyFloat(1e16), "1e+16");
  EXPECT_EQ(PyFloat(-2.5), "-2.5");
  EXPECT_EQ(PyFloat(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PyFloat(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(VllmRenderTest, ExpositionParsesAndHistogramsAreCumulative) {
  VllmState s;
  s.model_name = "meta-llama/Llama-3.1-8B-Instruct";
  s.hostname = "gpu-node-1";
  s.prompt_tokens_total = 1000;
  s.generation_tokens_total = 5000;
  s.request_success_total = 4;
  s.num_requests_running = 2;
  s.gpu_cache_usage_perc = 0.25;
  for (double v : {0.2, 0.5, 0.9, 70.0}) s.e2e_request_latency_seconds.Observe(v);
  for (double v : {0.0005, 0.03, 0.03, 20.0}) s.time_to_first_token_seconds.Observe(v);
  s.time_per_output_token_seconds.Observe(0.016, 40);
  s.time_per_output_token_seconds.Observe(3.0, 2);
  std::string out;
  RenderVllmExposition(s, out);

  EXPECT_NE(out.find("# TYPE vllm:generation_tokens_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("vllm:request_success_total{model_name=\"meta-llama/Llama-3.1-8B-Instruct\","
                     "engine=\"0\",finished_reason=\"stop\"} 4.0\n"),
            std::string::npos);
  EXPECT_EQ(out.find("gpu-node-1"), std::string::npos);  // vLLM has no host label
  EXPECT_NE(out.find("# TYPE vllm:e2e_request_latency_seconds histogram\n"), std::string::npos);

  std::vector<double> e2e_buckets;
  double e2e_count = -1;
  double inf_bucket = -2;
  const expfmt::ReadReport report = expfmt::ReadBuffer(
      out, expfmt::Format::kPrometheusText, "vllm", {},
      [&](const expfmt::SampleView& sample, std::string_view, model::MetricType) {
        if (sample.name == "vllm:e2e_request_latency_seconds_bucket") {
          e2e_buckets.push_back(sample.value);
          if (sample.Label("le") == "+Inf") inf_bucket = sample.value;
        } else if (sample.name == "vllm:e2e_request_latency_seconds_count") {
          e2e_count = sample.value;
        }
      });
  EXPECT_TRUE(report.ok()) << (report.messages.empty() ? "" : report.messages[0]);
  EXPECT_EQ(report.stats.families, 9u);
  EXPECT_EQ(report.stats.series, 6u + (kTtftBuckets.size() + 3) + (kTpotBuckets.size() + 3) +
                                     (kE2eLatencyBuckets.size() + 3));
  ASSERT_EQ(e2e_buckets.size(), kE2eLatencyBuckets.size() + 1);
  for (std::size_t i = 1; i < e2e_buckets.size(); ++i)
    EXPECT_GE(e2e_buckets[i], e2e_buckets[i - 1]);
  EXPECT_EQ(e2e_buckets[0], 1);   // 0.2 <= 0.3
  EXPECT_EQ(e2e_buckets[1], 2);   // 0.5 <= 0.5 (le is inclusive)
  EXPECT_EQ(e2e_buckets[14], 3);  // 70 s is over 60...
  EXPECT_EQ(e2e_buckets[15], 4);  // ...and under 120
  EXPECT_EQ(inf_bucket, 4);
  EXPECT_EQ(e2e_count, 4);
  EXPECT_NE(out.find("vllm:time_to_first_token_seconds_bucket{model_name=\"meta-llama/"
                     "Llama-3.1-8B-Instruct\",engine=\"0\",le=\"0.04\"} 3.0\n"),
            std::string::npos);
  EXPECT_NE(out.find("# TYPE vllm:inter_token_latency_seconds histogram\n"), std::string::npos);
  EXPECT_NE(out.find("vllm:inter_token_latency_seconds_bucket{model_name=\"meta-llama/"
                     "Llama-3.1-8B-Instruct\",engine=\"0\",le=\"0.025\"} 40.0\n"),
            std::string::npos);
  EXPECT_NE(out.find("vllm:inter_token_latency_seconds_bucket{model_name=\"meta-llama/"
                     "Llama-3.1-8B-Instruct\",engine=\"0\",le=\"5.0\"} 42.0\n"),
            std::string::npos);
  EXPECT_NE(out.find("vllm:e2e_request_latency_seconds_sum{model_name=\"meta-llama/"
                     "Llama-3.1-8B-Instruct\",engine=\"0\"} 71.6\n"),
            std::string::npos);
}

// The shape of an exposition: per family its type, label names (without le)
// and, for a histogram, its bucket bounds as written.
struct FamilyShape {
  model::MetricType type = model::MetricType::kUnknown;
  std::set<std::string> labels;
  std::vector<std::string> bounds;
  friend bool operator==(const FamilyShape&, const FamilyShape&) = default;
};

std::map<std::string, FamilyShape> ReadShapes(std::string_view text, const std::string& name) {
  std::map<std::string, FamilyShape> shapes;
  std::set<std::string> first_series_done;
  const expfmt::ReadReport report = expfmt::ReadBuffer(
      text, expfmt::Format::kPrometheusText, name, {},
      [&](const expfmt::SampleView& sample, std::string_view family, model::MetricType type) {
        FamilyShape& f = shapes[std::string(family)];
        f.type = type;
        for (const model::LabelView& l : sample.labels) {
          if (l.name == "le") {
            if (sample.name.ends_with("_bucket") &&
                !first_series_done.contains(std::string(family))) {
              f.bounds.emplace_back(l.value);
            }
          } else if (l.name != "finished_reason") {
            f.labels.emplace(l.name);
          }
        }
        if (sample.name.ends_with("_count")) first_series_done.emplace(family);
      });
  EXPECT_TRUE(report.ok()) << name << ": " << (report.messages.empty() ? "" : report.messages[0]);
  return shapes;
}

// What vLLM serves, from the committed expositions (src/vocab/testdata, their
// sources in its README): every family there is in the simulator's output with
// the same type, label names and bucket bounds; the simulator's two families
// the files leave out are vLLM's own (loggers.py: prompt_tokens,
// request_success). Neither has a host label.
TEST(VllmRenderTest, FamiliesLabelsAndBucketsAreTheRealServers) {
  for (const auto& [version, file] : {std::pair{VllmVersion::kCurrent, "vllm.prom"},
                                      std::pair{VllmVersion::kLegacy, "vllm_legacy.prom"}}) {
    SCOPED_TRACE(file);
    VllmState s;
    s.version = version;
    s.model_name = "meta-llama/Llama-3.1-8B-Instruct";
    s.hostname = "node-1";
    s.e2e_request_latency_seconds.Observe(1.0);
    std::string out;
    RenderVllmExposition(s, out);
    const std::map<std::string, FamilyShape> sim = ReadShapes(out, "sim");
    const std::map<std::string, FamilyShape> real = ReadShapes(
        ReadFileText(std::string(GPUCANARY_SOURCE_DIR) + "/src/vocab/testdata/" + file), file);
    ASSERT_FALSE(real.empty());
    for (const auto& [family, shape] : real) {
      auto it = sim.find(family);
      ASSERT_NE(it, sim.end()) << family << " is not in the simulator's output";
      EXPECT_EQ(it->second.type, shape.type) << family;
      EXPECT_EQ(it->second.bounds, shape.bounds) << family;
      EXPECT_EQ(it->second.labels, shape.labels) << family;
      EXPECT_FALSE(shape.labels.contains("Hostname"));
    }
    for (const auto& [family, shape] : sim) {
      if (real.contains(family)) continue;
      EXPECT_TRUE(family == "vllm:prompt_tokens_total" || family == "vllm:request_success_total")
          << family;
    }
  }
}

}  // namespace
}  // namespace gpucanary::sim
