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
#include "sim/service_exposition.h"
#include "sim/serving.h"
#include "sim/sglang_render.h"
#include "sim/tgi_render.h"
#include "sim/triton_render.h"
#include "sim/vllm_render.h"
#include "vocab/service_measures.h"

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

// ---- SGLang, TGI, Triton ---------------------------------------------------

// The shape of one family of a server's exposition: its type, its label
// names (without le), the values of the labels that tell its samples apart
// (Triton's request_type, kv_cache_block_type, response_metric_type), and
// the bucket bounds, as written, of its first series.
struct ServerFamilyShape {
  model::MetricType type = model::MetricType::kUnknown;
  std::set<std::string> labels;
  std::set<std::string> kinds;
  std::vector<std::string> bounds;
};

struct ServerExposition {
  std::map<std::string, ServerFamilyShape> families;
  // Sample name -> the label sets it was seen with.
  std::map<std::string, std::vector<std::map<std::string, std::string>>> samples;
};

ServerExposition ReadServerExposition(std::string_view text, const std::string& name) {
  ServerExposition e;
  std::map<std::string, std::string> first_series;  // family -> its first bucket's labels
  const expfmt::ReadReport report = expfmt::ReadBuffer(
      text, expfmt::Format::kPrometheusText, name, {},
      [&](const expfmt::SampleView& sample, std::string_view family, model::MetricType type) {
        ServerFamilyShape& f = e.families[std::string(family)];
        f.type = type;
        std::map<std::string, std::string> labels;
        std::string series;
        std::string_view le;
        for (const model::LabelView& l : sample.labels) {
          labels[std::string(l.name)] = std::string(l.value);
          if (l.name == "le") {
            le = l.value;
            continue;
          }
          f.labels.emplace(l.name);
          series += std::string(l.name) + "=" + std::string(l.value) + ",";
          if (l.name == "request_type" || l.name == "kv_cache_block_type" ||
              l.name == "response_metric_type") {
            f.kinds.emplace(std::string(l.name) + "=" + std::string(l.value));
          }
        }
        if (sample.name.ends_with("_bucket")) {
          auto it = first_series.emplace(std::string(family), series).first;
          if (it->second == series) f.bounds.emplace_back(le);
        }
        e.samples[std::string(sample.name)].push_back(std::move(labels));
      });
  EXPECT_TRUE(report.ok()) << name << ": " << (report.messages.empty() ? "" : report.messages[0]);
  return e;
}

ServerExposition ReadRealExposition(const std::string& file) {
  return ReadServerExposition(
      ReadFileText(std::string(GPUCANARY_SOURCE_DIR) + "/src/vocab/testdata/" + file), file);
}

// A node running `server` after 30 s at 20 requests/s, then 60 s without
// traffic: every family its server has is filled.
ServingNode Served(vocab::Server server) {
  ServingProfile profile;
  profile.model_name = "meta-llama/Llama-3.1-8B-Instruct";
  ServingNode node(profile, "node-1", 11, server);
  for (int i = 0; i < 300; ++i) node.Step(0.1, 20, 1);
  for (int i = 0; i < 600; ++i) node.Step(0.1, 0, 1);
  return node;
}

std::string Render(const ServingNode& node) {
  std::string out;
  RenderServerExposition(node, out);
  return out;
}

struct ServerCase {
  vocab::Server server;
  const char* file;
  // Families of the real exposition the simulator does not fill, and families
  // of the server's source it fills that the committed exposition leaves out.
  std::set<std::string> left_out;
  std::set<std::string> added;
};

const std::vector<ServerCase>& ServerCases() {
  static const std::vector<ServerCase> cases = {
      {vocab::Server::kSglang, "sglang.prom", {}, {}},
      {vocab::Server::kTgi,
       "tgi.prom",
       {},
       // backends/v3/src/backend.rs; router/src/server.rs, durations' buckets.
       {"tgi_batch_current_size", "tgi_request_queue_duration", "tgi_request_inference_duration"}},
      {vocab::Server::kTritonTrtllm,
       "triton_trtllm.prom",
       // Nothing simulated fills them (triton_render.h).
       {"nv_trt_llm_runtime_memory_metrics", "nv_trt_llm_inflight_batcher_metrics",
        "nv_trt_llm_general_metrics", "nv_trt_llm_disaggregated_serving_metrics",
        "nv_inference_exec_count", "nv_inference_queue_duration_us",
        "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
        "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count"},
       {}},
  };
  return cases;
}

// What SGLang, TGI and Triton serve, from the committed expositions
// (src/vocab/testdata, their sources in its README): every family there is
// in the simulator's output with the same type, label names, distinguishing
// label values and bucket bounds (as written), except those the simulator
// leaves out; the simulator's other families are the server's own (same
// labels, and a TGI duration's buckets are tgi_request_duration's). None has
// a host label.
TEST(ServerRenderTest, FamiliesLabelsAndBucketsAreTheRealServers) {
  for (const ServerCase& c : ServerCases()) {
    SCOPED_TRACE(c.file);
    const ServingNode node = Served(c.server);
    const std::string out = Render(node);
    EXPECT_EQ(out.find("node-1"), std::string::npos);  // no host label
    const ServerExposition sim = ReadServerExposition(out, "sim");
    const ServerExposition real = ReadRealExposition(c.file);
    ASSERT_FALSE(real.families.empty());
    for (const auto& [family, shape] : real.families) {
      SCOPED_TRACE(family);
      auto it = sim.families.find(family);
      if (c.left_out.contains(family)) {
        EXPECT_EQ(it, sim.families.end());
        continue;
      }
      ASSERT_NE(it, sim.families.end()) << family << " is not in the simulator's output";
      EXPECT_EQ(it->second.type, shape.type);
      EXPECT_EQ(it->second.labels, shape.labels);
      EXPECT_EQ(it->second.kinds, shape.kinds);
      EXPECT_EQ(it->second.bounds, shape.bounds);
    }
    for (const auto& [family, shape] : sim.families) {
      if (real.families.contains(family)) continue;
      SCOPED_TRACE(family);
      EXPECT_TRUE(c.added.contains(family));
      EXPECT_TRUE(shape.labels.empty());  // TGI's have none
      if (shape.type == model::MetricType::kHistogram) {
        EXPECT_EQ(shape.bounds, real.families.at("tgi_request_duration").bounds);
      }
    }
  }
}

// The render is recognised as its server, and every row of the service-measure
// table for that server finds its samples there, with the row's label.
TEST(ServerRenderTest, DetectedAsItsServerAndEveryMeasureResolves) {
  for (const ServerCase& c : ServerCases()) {
    SCOPED_TRACE(c.file);
    const ServerExposition sim = ReadServerExposition(Render(Served(c.server)), "sim");
    std::vector<std::string> names;
    for (const auto& [family, shape] : sim.families) names.push_back(family);
    EXPECT_EQ(vocab::DetectServer(names), c.server);
    int rows = 0;
    for (const vocab::ServiceMetric& row : vocab::ServiceMetrics()) {
      if (row.server != c.server) continue;
      ++rows;
      for (const std::string& name : vocab::SampleNames(row)) {
        SCOPED_TRACE(name);
        auto it = sim.samples.find(name);
        ASSERT_NE(it, sim.samples.end());
        if (row.selector.empty()) continue;
        bool found = false;
        for (const auto& labels : it->second) {
          auto l = labels.find(std::string(row.selector.name));
          found |= l != labels.end() && l->second == row.selector.value;
        }
        EXPECT_TRUE(found) << row.selector.name << "=" << row.selector.value;
      }
      if (row.type == vocab::SourceType::kHistogram) {
        EXPECT_EQ(sim.families.at(std::string(row.metric)).type, model::MetricType::kHistogram);
      }
    }
    EXPECT_GE(rows, 4);
  }
}

std::string RustFloat(double v) {
  std::string s;
  AppendRustFloat(v, s);
  return s;
}

std::string CppFloat(double v) {
  std::string s;
  AppendCppFloat(v, s);
  return s;
}

TEST(ServerRenderTest, NumberFormatsOfTheServersLibraries) {
  // Rust's Display for f64: shortest round-trip digits, never an exponent.
  EXPECT_EQ(RustFloat(0), "0");
  EXPECT_EQ(RustFloat(201), "201");
  EXPECT_EQ(RustFloat(1024), "1024");
  EXPECT_EQ(RustFloat(0.5), "0.5");
  EXPECT_EQ(RustFloat(5.31), "5.31");
  EXPECT_EQ(RustFloat(0.0001 * 1.5), "0.00015000000000000001");
  EXPECT_EQ(RustFloat(40.96 * 35), "1433.6000000000001");
  EXPECT_EQ(RustFloat(1e20), "100000000000000000000");
  EXPECT_EQ(RustFloat(1e-7), "0.0000001");
  EXPECT_EQ(RustFloat(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(RustFloat(std::numeric_limits<double>::infinity()), "inf");
  // prometheus-cpp: "%.16g".
  EXPECT_EQ(CppFloat(0), "0");
  EXPECT_EQ(CppFloat(1610236), "1610236");
  EXPECT_EQ(CppFloat(0.4875), "0.4875");
  EXPECT_EQ(CppFloat(0.1 + 0.2), "0.3");
  EXPECT_EQ(CppFloat(1e20), "1e+20");
  EXPECT_EQ(CppFloat(std::numeric_limits<double>::quiet_NaN()), "Nan");
  EXPECT_EQ(CppFloat(-std::numeric_limits<double>::infinity()), "-Inf");
  // The TGI bounds are computed as server.rs computes them.
  EXPECT_EQ(RustFloat(TgiDurationBuckets()[0]), "0.00015000000000000001");
  EXPECT_EQ(RustFloat(TgiDurationBuckets()[34]), "145.61096060497135");
  EXPECT_EQ(RustFloat(TgiGeneratedTokensBuckets()[34]), "1433.6000000000001");
  EXPECT_EQ(RustFloat(TgiGeneratedTokensBuckets()[99]), "4096");
}

// metrics-exporter-prometheus 0.15: HELP, TYPE, no labels, buckets then _sum
// and _count, a blank line after every family; families appear once touched.
TEST(ServerRenderTest, TgiTextIsMetricsExporterPrometheuss) {
  TgiState s;
  std::string out;
  RenderTgiExposition(s, out);
  EXPECT_EQ(out, "");  // a router that has seen no request shows none of these
  s.request_count = 3;
  s.queue_size = 1;
  RenderTgiExposition(s, out);
  EXPECT_EQ(out,
            "# HELP tgi_request_count Total number of requests\n"
            "# TYPE tgi_request_count counter\n"
            "tgi_request_count 3\n"
            "\n"
            "# HELP tgi_queue_size Current queue size\n"
            "# TYPE tgi_queue_size gauge\n"
            "tgi_queue_size 1\n"
            "\n");
  s.batched = true;
  s.request_success = 2;
  s.request_duration.Observe(0.0002);
  s.request_duration.Observe(0.5);
  out.clear();
  RenderTgiExposition(s, out);
  EXPECT_EQ(out.rfind("# HELP tgi_request_success Number of successful requests\n"
                      "# TYPE tgi_request_success counter\n"
                      "tgi_request_success 2\n\n",
                      0),
            0u);
  EXPECT_NE(out.find("# HELP tgi_request_duration Request duration\n"
                     "# TYPE tgi_request_duration histogram\n"
                     "tgi_request_duration_bucket{le=\"0.00015000000000000001\"} 0\n"
                     "tgi_request_duration_bucket{le=\"0.00022500000000000002\"} 1\n"),
            std::string::npos);
  EXPECT_NE(out.find("tgi_request_duration_bucket{le=\"145.61096060497135\"} 2\n"
                     "tgi_request_duration_bucket{le=\"+Inf\"} 2\n"
                     "tgi_request_duration_sum 0.5002\n"
                     "tgi_request_duration_count 2\n\n"),
            std::string::npos);
  EXPECT_NE(out.find("tgi_request_generated_tokens_bucket{le=\"4096\"} 0\n"), std::string::npos);
  EXPECT_NE(out.find("tgi_batch_current_size 0\n"), std::string::npos);
  EXPECT_TRUE(ReadServerExposition(out, "tgi").families.size() == 9);
}

// prometheus_client in multiprocess mode: _sum, buckets with `le` first, _count;
// Python floats; a family appears with its first value.
TEST(ServerRenderTest, SglangTextIsMultiprocessPrometheusClients) {
  SglangState s;
  s.model_name = "m";
  std::string out;
  RenderSglangExposition(s, out);
  EXPECT_EQ(out, "");
  s.time_to_first_token_seconds.Observe(0.03);
  s.time_to_first_token_seconds.Observe(0.5);
  RenderSglangExposition(s, out);
  EXPECT_EQ(out.rfind("# HELP sglang:time_to_first_token_seconds Histogram of time to first token "
                      "in seconds.\n"
                      "# TYPE sglang:time_to_first_token_seconds histogram\n"
                      "sglang:time_to_first_token_seconds_sum{model_name=\"m\"} 0.53\n"
                      "sglang:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} "
                      "0.0\n",
                      0),
            0u);
  EXPECT_NE(
      out.find("sglang:time_to_first_token_seconds_bucket{le=\"0.04\",model_name=\"m\"} 1.0\n"),
      std::string::npos);
  EXPECT_NE(out.find("sglang:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2.0\n"
                     "sglang:time_to_first_token_seconds_count{model_name=\"m\"} 2.0\n"),
            std::string::npos);
  EXPECT_EQ(out.find("sglang:num_running_reqs"), std::string::npos);  // no batch yet
  s.scheduled = true;
  s.num_running_reqs = 162;
  s.requests_finished = 1;
  s.prompt_tokens_total = 8128902;
  out.clear();
  RenderSglangExposition(s, out);
  EXPECT_NE(out.find("sglang:num_running_reqs{model_name=\"m\"} 162.0\n"), std::string::npos);
  EXPECT_NE(out.find("sglang:prompt_tokens_total{model_name=\"m\"} 8.128902e+06\n"),
            std::string::npos);
}

// prometheus-cpp: labels sorted, `le` last, _count and _sum before the
// buckets; every family from the start.
TEST(ServerRenderTest, TritonTextIsPrometheusCpps) {
  TritonState s;
  std::string out;
  RenderTritonExposition(s, out);
  EXPECT_EQ(ReadServerExposition(out, "triton").families.size(), kTritonFamilies.size());
  s.kv_fraction = 0.4875;
  s.kv_max = 6239;
  s.waiting = 1;
  s.first_response_ms.Observe(120);
  s.output_token_len.Observe(30);
  out.clear();
  RenderTritonExposition(s, out);
  EXPECT_NE(out.find("# HELP nv_trt_llm_request_metrics TRT LLM request metrics\n"
                     "# TYPE nv_trt_llm_request_metrics gauge\n"
                     "nv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"waiting\","
                     "version=\"1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(out.find("nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\","
                     "model=\"tensorrt_llm\",version=\"1\"} 0.4875\n"),
            std::string::npos);
  EXPECT_NE(out.find("nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\","
                     "model=\"tensorrt_llm\",version=\"1\"} 6239\n"),
            std::string::npos);
  EXPECT_NE(out.find("nv_inference_first_response_histogram_ms_count{model=\"tensorrt_llm\","
                     "version=\"1\"} 1\n"
                     "nv_inference_first_response_histogram_ms_sum{model=\"tensorrt_llm\","
                     "version=\"1\"} 120\n"
                     "nv_inference_first_response_histogram_ms_bucket{model=\"tensorrt_llm\","
                     "version=\"1\",le=\"100\"} 0\n"
                     "nv_inference_first_response_histogram_ms_bucket{model=\"tensorrt_llm\","
                     "version=\"1\",le=\"500\"} 1\n"),
            std::string::npos);
  EXPECT_NE(out.find("nv_llm_output_token_len_bucket{model=\"tensorrt_llm\",response_metric_type="
                     "\"total_output_tokens\",version=\"1\",le=\"50\"} 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace gpucanary::sim
