// Integration: a real Prometheus (Debian's `prometheus` package) scrapes a
// fleet served by `gpucanary sim` every second, and sees every dcgm-exporter
// and vLLM endpoint up, with no scrape errors, with the samples the scenario
// implies. Both programs run as separate processes on loopback, on ports the
// OS picks; the test waits on conditions (polling), never on fixed sleeps.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using Child = gpucanary::test::ChildProcess;
using gpucanary::test::FreePort;
using gpucanary::test::WaitFor;
constexpr const char* kPrometheus = gpucanary::test::kPrometheusBinary;

std::string ReadFile(const fs::path& p) { return gpucanary::test::ReadTextFile(p); }

class PrometheusSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kPrometheus))
        << kPrometheus << " is missing: scripts/install-deps.sh installs Debian's prometheus";
    dir_ = fs::temp_directory_path() /
           ("gpucanary-prom-" + std::to_string(getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    prometheus_.reset();
    sim_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // GET /api/v1/...; the parsed "data" of a successful answer.
  Json Api(const std::string& path_and_query) {
    gpucanary::Result<gpucanary::net::HttpResponse> r =
        gpucanary::net::Fetch(prom_url_ + "/api/v1/" + path_and_query);
    if (!r || r->status != 200) return Json();
    Json j = Json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return Json();
    return j["data"];
  }

  // The single value of an instant query, or NaN.
  double Scalar(const std::string& promql) {
    std::string q;
    for (char c : promql) {
      if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.') {
        q += c;
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
        q += buf;
      }
    }
    Json d = Api("query?query=" + q);
    if (!d.is_object() || d["result"].empty()) return std::nan("");
    return std::stod(d["result"][0]["value"][1].get<std::string>());
  }

  // Starts `gpucanary sim` on scenarios/`scenario` (live, ports the OS
  // picks) and waits for its file_sd targets (dir_/targets.json) and its
  // control API's URL (control_, read from its log). False (the failure
  // recorded) when either does not come within 30 s.
  bool StartSim(const std::string& scenario) {
    const fs::path targets = dir_ / "targets.json";
    sim_ = std::make_unique<Child>(
        std::vector<std::string>{GPUCANARY_BIN, "sim", "--scenario",
                                 std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/" + scenario,
                                 "--base-port", "0", "--control-port", "0", "--targets-file",
                                 targets.string()},
        dir_ / "sim.log");
    constexpr std::string_view kControl = "control API http://";
    const bool up = WaitFor(30, [&] {
      const std::string log = ReadFile(dir_ / "sim.log");
      const std::size_t at = log.find(kControl);
      const std::size_t end = log.find("/state", at);
      if (at == std::string::npos || end == std::string::npos) return false;
      control_ = "http://" + log.substr(at + kControl.size(), end - at - kControl.size());
      return fs::exists(targets);
    });
    if (!up)
      ADD_FAILURE() << "gpucanary sim: no targets file or control API: "
                    << ReadFile(dir_ / "sim.log");
    return up;
  }

  fs::path dir_;
  std::string control_;
  std::string prom_url_;
  std::unique_ptr<Child> sim_;
  std::unique_ptr<Child> prometheus_;
};

TEST_F(PrometheusSimTest, PrometheusScrapesTheWholeFleetEverySecondWithoutErrors) {
  const fs::path targets = dir_ / "targets.json";
  ASSERT_TRUE(StartSim("power-brake.yaml"));
  const Json groups = Json::parse(ReadFile(targets));
  ASSERT_EQ(groups.size(), 16U);  // 8 nodes x (dcgm, vllm)

  const int port = FreePort();
  prom_url_ = "http://127.0.0.1:" + std::to_string(port);
  std::ofstream(dir_ / "prometheus.yml") << "global:\n"
                                         << "  scrape_interval: 1s\n"
                                         << "  scrape_timeout: 900ms\n"
                                         << "scrape_configs:\n"
                                         << "  - job_name: sim\n"
                                         << "    file_sd_configs:\n"
                                         << "      - files: ['" << targets.string() << "']\n";
  prometheus_ = std::make_unique<Child>(
      std::vector<std::string>{kPrometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir_ / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir_ / "prometheus.log");

  // Every target scraped at least 6 times (6 s at 1 s), all up.
  const std::string enough = "count(count_over_time(up{job=\"sim\"}[30s]) >= 6)";
  ASSERT_TRUE(WaitFor(60, [&] { return Scalar(enough) == 16; }))
      << "prometheus log:\n"
      << ReadFile(dir_ / "prometheus.log") << "\nsim log:\n"
      << ReadFile(dir_ / "sim.log");
  ASSERT_TRUE(sim_->Running());

  const Json active = Api("targets?state=active")["activeTargets"];
  ASSERT_EQ(active.size(), 16U);
  for (const Json& t : active) {
    EXPECT_EQ(t["health"], "up") << t.dump();
    EXPECT_EQ(t["lastError"], "") << t.dump();
    EXPECT_EQ(t["scrapeInterval"], "1s");
  }
  // Never down, and the interval really is 1 s: ~ one sample of up per second.
  EXPECT_EQ(Scalar("min(min_over_time(up{job=\"sim\"}[1m]))"), 1);
  EXPECT_EQ(Scalar("count(up{job=\"sim\"} == 1)"), 16);
  EXPECT_NEAR(Scalar("avg(count_over_time(up{job=\"sim\"}[5s]))"), 5, 1);
  // No sample the TSDB refused, no scrape that failed to parse (Prometheus's
  // own /metrics).
  gpucanary::Result<gpucanary::net::HttpResponse> own =
      gpucanary::net::Fetch(prom_url_ + "/metrics");
  ASSERT_TRUE(own.has_value());
  int checked = 0;
  std::istringstream lines(own->body);
  for (std::string line; std::getline(lines, line);) {
    for (const char* name : {"prometheus_target_scrapes_sample_out_of_order_total ",
                             "prometheus_target_scrapes_sample_duplicate_timestamp_total ",
                             "prometheus_target_scrapes_sample_out_of_bounds_total ",
                             "prometheus_target_scrapes_exceeded_sample_limit_total "}) {
      if (line.rfind(name, 0) == 0) {
        EXPECT_EQ(std::stod(line.substr(std::string(name).size())), 0) << line;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4);
  // What the scenario implies: 64 GPUs at full clock before the canary
  // (t = 60 s), 8 vLLM servers generating tokens.
  EXPECT_EQ(Scalar("count(DCGM_FI_DEV_SM_CLOCK)"), 64);
  EXPECT_EQ(Scalar("count(DCGM_FI_DEV_SM_CLOCK{modelName=\"NVIDIA H100 80GB HBM3\"} > 1900)"), 64);
  EXPECT_EQ(Scalar("count(rate(vllm:generation_tokens_total[5s]) > 1000)"), 8);
  EXPECT_GT(Scalar("sum(rate(vllm:generation_tokens_total[5s]))"), 40000);
  EXPECT_EQ(Scalar("count(vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"})"), 8);
}

// The Grafana dashboard of deploy/grafana (docs/grafana.md) on a live
// stack: the simulated fleet (a release that raises XIDs), `gpucanary serve` scraping it with a
// canary running, and Prometheus scraping both at 1 s. Every panel's query and the release
// annotation's, with Grafana's variables as Grafana fills them
// ($Hostname "All" is `.*`, $__rate_interval 30s), parses and returns data
// over the last 30 s; so does the Hostname variable's label_values query.
TEST_F(PrometheusSimTest, EveryDashboardQueryReturnsData) {
  const fs::path targets = dir_ / "targets.json";
  ASSERT_TRUE(StartSim("xid-flood.yaml"));
  const std::string control = control_;
  std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\n"
                                        "storage:\n  path: data-gc\n"
                                        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                        "scrape_configs:\n"
                                        "  - job_name: fleet\n"
                                        "    file_sd_configs:\n"
                                        "      - files: ['"
                                     << targets.string()
                                     << "']\n"
                                        "canary:\n  history: 5s\n  duration: 5m\n";
  std::unique_ptr<Child> serve;
  const std::string gc_url = gpucanary::test::StartServeChild(
      GPUCANARY_BIN, dir_, dir_ / "serve.yaml", "serve.log", serve);
  ASSERT_FALSE(gc_url.empty()) << ReadFile(dir_ / "serve.log");
  const std::string gc_host = gc_url.substr(gc_url.find("//") + 2);

  const int port = FreePort();
  prom_url_ = "http://127.0.0.1:" + std::to_string(port);
  std::ofstream(dir_ / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
      << "scrape_configs:\n"
      << "  - job_name: sim\n"
      << "    file_sd_configs:\n"
      << "      - files: ['" << targets.string() << "']\n"
      << "  - job_name: gpucanary\n"
      << "    static_configs: [{targets: ['" << gc_host << "']}]\n";
  prometheus_ = std::make_unique<Child>(
      std::vector<std::string>{kPrometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir_ / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir_ / "prometheus.log");
  // A release with a canary on node-4 once gpucanary has its history.
  ASSERT_TRUE(WaitFor(30, [&] { return Scalar("count(DCGM_FI_DEV_SM_CLOCK)") == 64; }))
      << ReadFile(dir_ / "prometheus.log");
  std::this_thread::sleep_for(std::chrono::seconds(6));
  gpucanary::net::FetchOptions post;
  post.method = "POST";
  post.content_type = "application/json";
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  post.body = R"({"id":"dash-1","service":"chat-api","started_at":)" + std::to_string(now_s) +
              R"(,"targets":["node-4"]})";
  const auto posted = gpucanary::net::Fetch(gc_url + "/api/v1/releases", post);
  ASSERT_TRUE(posted.has_value());
  ASSERT_EQ(posted->status, 201) << posted->body;
  // The release is the scenario's CUDA-graph bug: XID 31 on node-4 (the
  // last-XID field is blank until a GPU's first XID, as dcgm-exporter's).
  post.body = R"({"release":"graphs","nodes":["node-4"]})";
  const auto deployed = gpucanary::net::Fetch(control + "/deploy", post);
  ASSERT_TRUE(deployed.has_value());
  ASSERT_EQ(deployed->status, 200) << deployed->body;
  ASSERT_TRUE(WaitFor(
      60,
      [&] {
        return Scalar("count(gpucanary_canary_verdict)") > 0 &&
               Scalar("count(DCGM_FI_DEV_XID_ERRORS)") > 0 &&
               Scalar("count(count_over_time(vllm:generation_tokens_total[30s]) >= 10)") == 8;
      }))
      << ReadFile(dir_ / "prometheus.log") << ReadFile(dir_ / "serve.log");

  const Json dash = Json::parse(
      ReadFile(fs::path(GPUCANARY_SOURCE_DIR) / "deploy" / "grafana" / "gpucanary.json"));
  std::vector<std::string> exprs;
  for (const Json& panel : dash["panels"]) {
    for (const Json& t : panel.value("targets", Json::array())) exprs.push_back(t["expr"]);
  }
  for (const Json& a : dash["annotations"]["list"]) {
    if (a.contains("expr")) exprs.push_back(a["expr"]);
  }
  ASSERT_GE(exprs.size(), 15U);
  const auto fill = [](std::string e) {
    for (const auto& [var, value] :
         {std::pair<std::string, std::string>{"$Hostname", ".*"}, {"$__rate_interval", "30s"}}) {
      for (std::size_t at = e.find(var); at != std::string::npos; at = e.find(var)) {
        e.replace(at, var.size(), value);
      }
    }
    return e;
  };
  const auto encode = [](const std::string& text) {
    std::string q;
    for (char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.') {
        q += c;
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
        q += buf;
      }
    }
    return q;
  };
  const std::string range =
      "&start=" + std::to_string(now_s - 20) + "&end=" + std::to_string(now_s + 40) + "&step=5";
  for (const std::string& e : exprs) {
    const Json data = Api("query_range?query=" + encode(fill(e)) + range);
    ASSERT_TRUE(data.is_object()) << "does not parse or failed: " << fill(e);
    EXPECT_FALSE(data["result"].empty()) << "no data: " << fill(e);
  }
  const Json hosts = Api("label/Hostname/values?match[]=DCGM_FI_DEV_SM_CLOCK");
  ASSERT_TRUE(hosts.is_array());
  EXPECT_EQ(hosts.size(), 8U);
  serve.reset();
}

}  // namespace
