// Integration: `gpucanary exporter` and `gpucanary serve`'s `nvml:` source as
// a user runs them, on the fake libnvidia-ml.so.1 the test suite builds
// (tests/fake_nvml) with a real-time scripted timeline: a throttling GPU and
// a GPU that falls off the bus. The exporter's text is compared with a real
// dcgm-exporter scrape (shared/data/dcgm-samples), and the daemon's store is
// queried over its HTTP API. Waits on conditions, never on fixed sleeps.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "net/http_client.h"
#include "net/url.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using gpucanary::test::ChildProcess;
using gpucanary::test::ReadTextFile;
using gpucanary::test::WaitFor;
using gpucanary::testing::CliHarness;
using gpucanary::testing::RunResult;

const std::string kFakeNvml = std::string(GPUCANARY_FAKE_NVML_DIR) + "/modern/libnvidia-ml.so.1";

Json Gpu(int index) {
  return Json{{"name", "NVIDIA H200"},
              {"uuid", "GPU-5e1f0c2a-0000-4000-8000-00000000000" + std::to_string(index)},
              {"pci_bus_id", "00000000:" + std::to_string(19 + index) + ":00.0"},
              {"gpm", true},
              {"values",
               {{"sm_clock", 1980},
                {"mem_clock", 3201},
                {"clocks_event_reasons", 0},
                {"power_mw", 655000},
                {"energy_mj", 1000},
                {"power_limit_mw", 700000},
                {"enforced_power_limit_mw", 700000},
                {"gpu_temp", 64},
                {"pcie_gen", 5},
                {"pcie_width", 16},
                {"pcie_max_gen", 5},
                {"pcie_max_width", 16},
                {"pcie_replay", 0},
                {"util_gpu", 100},
                {"util_memory", 55},
                {"mem_total_bytes", 143771ULL << 20},
                {"mem_reserved_bytes", 700ULL << 20},
                {"mem_used_bytes", 100000ULL << 20},
                {"gpm_graphics_util", 95.0},
                {"gpm_sm_util", 80.0},
                {"gpm_sm_occupancy", 25.0},
                {"gpm_any_tensor_util", 40.0},
                {"gpm_dram_bw_util", 60.0},
                {"gpm_pcie_tx_mibps", 5.0},
                {"gpm_pcie_rx_mibps", 7.0}}}};
}

// GPU 0 power-brakes from 1.0 s (1980 -> 1050 MHz, HW slowdown + power
// brake); GPU 1 falls off the bus at 1.5 s (Xid 79, then GPU_IS_LOST).
Json Script() {
  Json g0 = Gpu(0);
  g0["timeline"] = Json::array(
      {Json{{"t", 1.0}, {"set", {{"sm_clock", 1050}, {"clocks_event_reasons", 0x88}}}}});
  Json g1 = Gpu(1);
  g1["timeline"] = Json::array({Json{{"t", 1.5}, {"xid", 79}, {"lost", true}}});
  return Json{{"driver_version", "550.90.12"}, {"devices", Json::array({g0, g1})}};
}

// name{labels} -> the label names in order, for the families of `text`.
std::map<std::string, std::vector<std::string>> LabelOrder(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t brace = line.find('{');
    if (brace == std::string::npos) continue;
    const std::string name = line.substr(0, brace);
    if (out.count(name) != 0) continue;
    std::vector<std::string> labels;
    std::size_t pos = brace + 1;
    while (pos < line.size() && line[pos] != '}') {
      const std::size_t eq = line.find('=', pos);
      labels.push_back(line.substr(pos, eq - pos));
      const std::size_t close = line.find('"', eq + 2);
      pos = close + 1;
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    out[name] = labels;
  }
  return out;
}

// The value on the first line of `text` that starts with `series_prefix`;
// "" when there is none.
std::string ValueOf(const std::string& text, const std::string& series_prefix) {
  std::size_t at = text.find("\n" + series_prefix);
  if (at == std::string::npos) return "";
  const std::size_t end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, end - at - 1);
  return line.substr(line.rfind(' ') + 1);
}

std::string MetadataLine(const std::string& text, const std::string& prefix) {
  const std::size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

class ExporterTest : public CliHarness {
 protected:
  ExporterTest() : CliHarness("gpucanary-exporter") {}
  void SetUp() override {
    CliHarness::SetUp();
    std::ofstream(dir_ / "script.json") << Script().dump(2);
    setenv("GPUCANARY_FAKE_NVML_SCRIPT", (dir_ / "script.json").c_str(), 1);
  }
  void TearDown() override {
    child_.reset();
    CliHarness::TearDown();
  }

  // Starts the exporter; returns its base URL ("" on failure).
  std::string StartExporter(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {GPUCANARY_BIN, "exporter",     "--nvml-library",
                                     kFakeNvml,     "--listen",     "127.0.0.1:0",
                                     "--interval",  "100ms",        "--hostname",
                                     "gpu-node-9",  "--ready-file", (dir_ / "url.txt").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    child_ = std::make_unique<ChildProcess>(argv, dir_ / "exporter.log");
    if (!WaitFor(30, [&] { return fs::exists(dir_ / "url.txt") || !child_->Running(); })) {
      return "";
    }
    std::string url = ReadTextFile(dir_ / "url.txt");
    while (!url.empty() && url.back() == '\n') url.pop_back();
    return url;
  }

  std::string Metrics(const std::string& url) {
    auto r = gpucanary::net::Fetch(url + "/metrics");
    return r && r->status == 200 ? r->body : "";
  }

  std::unique_ptr<ChildProcess> child_;
};

TEST_F(ExporterTest, ServesWhatDcgmExporterServesAndFollowsTheGpus) {
  const std::string url = StartExporter();
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "exporter.log");
  auto first = gpucanary::net::Fetch(url + "/metrics");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(first->body.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-5e1f0c2a-0000-4000-8000-"
                             "000000000000\",pci_bus_id=\"00000000:19:00.0\",device=\"nvidia0\","
                             "modelName=\"NVIDIA H200\",Hostname=\"gpu-node-9\","
                             "DCGM_FI_DRIVER_VERSION=\"550.90.12\"} 1980\n"),
            std::string::npos)
      << first->body;
  EXPECT_NE(first->body.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\""), std::string::npos);
  EXPECT_NE(first->body.find("} 655.000000\n"), std::string::npos);  // W, "%f" like DCGM

  // Same family names, metadata and label order as a real dcgm-exporter
  // (an L4 node with the default counters).
  const std::string real = ReadTextFile(fs::path(GPUCANARY_SHARED_DIR) /
                                        "data/dcgm-samples/l4-default-counters-kops.txt");
  ASSERT_FALSE(real.empty());
  const auto ours = LabelOrder(first->body);
  const auto theirs = LabelOrder(real);
  int compared = 0;
  for (const auto& [name, labels] : theirs) {
    const auto it = ours.find(name);
    if (it == ours.end()) continue;
    ++compared;
    EXPECT_EQ(it->second, labels) << name;
    EXPECT_EQ(MetadataLine(first->body, "# TYPE " + name + " "),
              MetadataLine(real, "# TYPE " + name + " "));
  }
  EXPECT_GE(compared, 10);

  // The power brake on GPU 0 and the lost GPU 1, as they happen.
  std::string text;
  ASSERT_TRUE(WaitFor(20, [&] {
    text = Metrics(url);
    return ValueOf(text, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu=\"0\"") == "136" &&
           ValueOf(text, "gpucanary_nvml_gpu_lost{gpu=\"1\"") == "1";
  })) << text;
  EXPECT_EQ(ValueOf(text, "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\""), "1050") << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"1\""), std::string::npos) << text;
  EXPECT_NE(text.find("err_code=\"79\",err_msg=\"GPU has fallen off the bus\"} 79"),
            std::string::npos)
      << text;
  EXPECT_TRUE(child_->Running());  // a lost GPU is not fatal
  const std::string log = ReadTextFile(dir_ / "exporter.log");
  EXPECT_NE(log.find("GPU 1"), std::string::npos) << log;
  EXPECT_NE(log.find("is lost"), std::string::npos) << log;

  auto health = gpucanary::net::Fetch(url + "/health");
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->status, 200);
  auto missing = gpucanary::net::Fetch(url + "/nope");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, 404);
  gpucanary::net::FetchOptions post;
  post.method = "POST";
  auto refused = gpucanary::net::Fetch(url + "/metrics", post);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 405);
}

TEST_F(ExporterTest, OncePrintsOneSampleWithGpm) {
  const RunResult r = Run("exporter --once --interval 150ms --nvml-library " + kFakeNvml +
                          " --hostname n1 --hostname-label hostname");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("DCGM_FI_PROF_SM_OCCUPANCY{gpu=\"0\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",hostname=\"n1\","), std::string::npos);
  EXPECT_EQ(r.out.find("Hostname="), std::string::npos);
  EXPECT_NE(r.out.find("} 0.250000\n"), std::string::npos);  // 25 % -> 0.25
}

TEST_F(ExporterTest, WithoutNvmlItSaysSoAndWhatToDo) {
  const RunResult r =
      Run("exporter --once --nvml-library " + (dir_ / "none/libnvidia-ml.so.1").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("NVML is not available"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("install the driver"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(ExporterTest, BadFlagsAreClearErrors) {
  RunResult r = Run("exporter --once --interval 50ms --nvml-library " + kFakeNvml);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--interval: 50ms is below NVML's 100 ms minimum"), std::string::npos)
      << r.err;
  r = Run("exporter --once --hostname-label host --nvml-library " + kFakeNvml);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--hostname-label: 'host' is neither"), std::string::npos) << r.err;
  r = Run("exporter --listen 9400 --nvml-library " + kFakeNvml);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--listen: '9400' is not host:port"), std::string::npos) << r.err;
}

class ServeNvmlTest : public ExporterTest {};

TEST_F(ServeNvmlTest, TheDaemonStoresTheLocalGpusLikeAScrape) {
  std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\n"
                                        "storage: {path: data, retention: 1d}\n"
                                        "nvml:\n"
                                        "  library: " +
                                            kFakeNvml +
                                            "\n"
                                            "  interval: 200ms\n"
                                            "  hostname: gpu-node-9\n";
  std::unique_ptr<ChildProcess> serve;
  const std::string url = gpucanary::test::StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml",
                                                           "serve.log", serve);
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve.log");
  const auto query = [&](const std::string& promql) {
    auto r =
        gpucanary::net::Fetch(url + "/api/v1/query?query=" + gpucanary::net::UrlEncode(promql));
    if (!r || r->status != 200) return Json();
    Json j = Json::parse(r->body, nullptr, false);
    return j.is_discarded() ? Json() : j["data"]["result"];
  };
  Json result;
  ASSERT_TRUE(WaitFor(20,
                      [&] {
                        result = query("DCGM_FI_DEV_SM_CLOCK{job=\"nvml\",gpu=\"0\"}");
                        return result.is_array() && result.size() == 1 &&
                               result[0]["value"][1] == "1050";
                      }))
      << result.dump() << ReadTextFile(dir_ / "serve.log");
  const Json& metric = result[0]["metric"];
  EXPECT_EQ(metric["instance"], "gpu-node-9");
  EXPECT_EQ(metric["Hostname"], "gpu-node-9");
  EXPECT_EQ(metric["UUID"], "GPU-5e1f0c2a-0000-4000-8000-000000000000");
  EXPECT_EQ(metric["modelName"], "NVIDIA H200");
  // GPU 1 is lost: its clock series went stale, the lost flag says why.
  ASSERT_TRUE(WaitFor(20, [&] {
    result = query("gpucanary_nvml_gpu_lost{gpu=\"1\"}");
    return result.is_array() && result.size() == 1 && result[0]["value"][1] == "1";
  })) << result.dump();
  ASSERT_TRUE(WaitFor(20, [&] {
    result = query("DCGM_FI_DEV_SM_CLOCK{job=\"nvml\"}");
    return result.is_array() && result.size() == 1;
  })) << result.dump();
  result = query("up{job=\"nvml\"}");
  ASSERT_EQ(result.size(), 1U) << result.dump();
  EXPECT_EQ(result[0]["value"][1], "1");
  serve.reset();
}

TEST_F(ServeNvmlTest, AnNvmlSectionWithoutNvmlStopsTheStart) {
  std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\n"
                                        "storage: {path: data}\n"
                                        "nvml: {library: /no/such/libnvidia-ml.so.1}\n";
  const RunResult r = Run("serve --config " + (dir_ / "serve.yaml").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("NVML is not available: cannot load /no/such/libnvidia-ml.so.1"),
            std::string::npos)
      << r.err;
}

}  // namespace
