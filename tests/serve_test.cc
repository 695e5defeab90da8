// Integration: `gpucanary serve` as a user runs it. It scrapes a fleet served
// by `gpucanary sim` at 1 s, answers range queries over HTTP, survives kill -9
// mid-ingest with every sample it had committed (and visible) still there, and
// accepts remote_write from a real Prometheus. Every process runs on
// loopback on ports the OS picks; the test waits on conditions, never on
// fixed sleeps.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "net/url.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using gpucanary::test::ChildProcess;
using gpucanary::test::ReadTextFile;
using gpucanary::test::WaitFor;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpucanary-serve-" + std::to_string(getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    serve_.reset();
    sim_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts the simulated fleet and waits for its file_sd targets.
  void StartSim() {
    sim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUCANARY_BIN, "sim", "--scenario",
                                 std::string(GPUCANARY_SOURCE_DIR) + "/scenarios/power-brake.yaml",
                                 "--base-port", "0", "--control-port", "0", "--targets-file",
                                 (dir_ / "targets.json").string()},
        dir_ / "sim.log");
    ASSERT_TRUE(WaitFor(30, [&] { return fs::exists(dir_ / "targets.json"); }))
        << ReadTextFile(dir_ / "sim.log");
  }

  // Starts gpucanary serve on `config` and returns its URL ("" on failure).
  std::string StartServe(const std::string& config, const std::string& log_name) {
    std::ofstream(dir_ / "serve.yaml") << config;
    return StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml", log_name, serve_);
  }

  Json Query(const std::string& url, const std::string& promql, const std::string& time = "") {
    auto r =
        gpucanary::net::Fetch(url + "/api/v1/query?query=" + gpucanary::net::UrlEncode(promql) +
                              (time.empty() ? "" : "&time=" + time));
    if (!r || r->status != 200) return Json();
    Json j = Json::parse(r->body, nullptr, false);
    return j.is_discarded() ? Json() : j["data"]["result"];
  }

  // Samples in every series of `selector` over the last hour at `time`.
  static std::size_t CountSamples(const Json& result) {
    std::size_t n = 0;
    if (!result.is_array()) return 0;
    for (const Json& s : result) n += s["values"].size();
    return n;
  }

  static std::string ScrapeConfig(const std::string& data_dir) {
    return "listen: 127.0.0.1:0\n"
           "storage:\n  path: " +
           data_dir +
           "\n  retention: 1d\n"
           "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
           "scrape_configs:\n"
           "  - job_name: fleet\n"
           "    file_sd_configs:\n"
           "      - files: [targets.json]\n"
           "        refresh_interval: 5s\n";
  }

  fs::path dir_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> serve_;
};

TEST_F(ServeTest, KillNineMidIngestLosesNoCommittedSample) {
  StartSim();
  const std::string config = ScrapeConfig((dir_ / "data").string());
  std::string url = StartServe(config, "serve1.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve1.log");

  // Every dcgm target up, and a few seconds of 1 s data.
  ASSERT_TRUE(WaitFor(30, [&] {
    const Json up = Query(url, R"(up{exporter="dcgm"})");
    if (!up.is_array() || up.size() != 8) return false;
    for (const Json& s : up) {
      if (s["value"][1] != "1") return false;
    }
    return CountSamples(Query(url, R"(DCGM_FI_DEV_SM_CLOCK{node="node-1",gpu="0"}[1h])")) >= 6;
  })) << ReadTextFile(dir_ / "serve1.log");

  // What the API shows as of now was committed; a kill -9 must not lose it.
  auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::string t =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  const std::string all = R"({__name__=~"DCGM_.*|vllm:.*"}[1h])";
  const std::size_t before = CountSamples(Query(url, all, t));
  ASSERT_GT(before, 1000U);
  ASSERT_EQ(kill(serve_->pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(10, [&] { return !serve_->Running(); }));

  url = StartServe(config, "serve2.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve2.log");
  EXPECT_EQ(CountSamples(Query(url, all, t)), before) << ReadTextFile(dir_ / "serve2.log");
  // And it goes on scraping into the same series.
  const std::size_t gpu0 =
      CountSamples(Query(url, R"(DCGM_FI_DEV_SM_CLOCK{node="node-1",gpu="0"}[1h])"));
  EXPECT_TRUE(WaitFor(20, [&] {
    return CountSamples(Query(url, R"(DCGM_FI_DEV_SM_CLOCK{node="node-1",gpu="0"}[1h])")) >=
           gpu0 + 3;
  }));
  // A second daemon on the same directory is refused, clearly.
  ChildProcess other({GPUCANARY_BIN, "serve", "--config", (dir_ / "serve.yaml").string()},
                     dir_ / "serve3.log");
  ASSERT_TRUE(WaitFor(20, [&] { return !other.Running(); }));
  EXPECT_NE(ReadTextFile(dir_ / "serve3.log").find("is in use by another gpucanary"),
            std::string::npos)
      << ReadTextFile(dir_ / "serve3.log");
}

TEST_F(ServeTest, AcceptsRemoteWriteFromARealPrometheus) {
  StartSim();
  const std::string url = StartServe(
      "listen: 127.0.0.1:0\nstorage:\n  path: " + (dir_ / "data").string() + "\n", "serve.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve.log");
  std::string error;
  const std::string targets = (dir_ / "targets.json").string();
  auto prometheus = gpucanary::test::PrometheusProcess::Start(
      "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
      "scrape_configs:\n  - job_name: fleet\n    file_sd_configs:\n      - files: ['" +
          targets +
          "']\n"
          "remote_write:\n  - url: " +
          url +
          "/api/v1/write\n"
          "    queue_config: {batch_send_deadline: 1s}\n",
      {}, &error);
  ASSERT_NE(prometheus, nullptr) << error;
  // Prometheus's labels (job) and the simulator's come through our store.
  EXPECT_TRUE(WaitFor(40,
                      [&] {
                        const Json r =
                            Query(url, R"(DCGM_FI_DEV_SM_CLOCK{job="fleet",node="node-2"}[1h])");
                        return r.is_array() && !r.empty() && CountSamples(r) >= 3 * r.size();
                      }))
      << ReadTextFile(dir_ / "serve.log") << prometheus->Log();
  auto metrics = gpucanary::net::Fetch(url + "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->body.find("gpucanary_remote_write_samples_appended_total"), std::string::npos);
  EXPECT_EQ(metrics->body.find("gpucanary_remote_write_errors_total{reason=\"bad_protobuf\"} 1"),
            std::string::npos);
}

TEST_F(ServeTest, BadConfigSaysWhere) {
  std::ofstream(dir_ / "serve.yaml") << "listen: 127.0.0.1:0\nstorage:\n  retention: 15 days\n";
  ChildProcess serve({GPUCANARY_BIN, "serve", "--config", (dir_ / "serve.yaml").string()},
                     dir_ / "bad.log");
  ASSERT_TRUE(WaitFor(20, [&] { return !serve.Running(); }));
  const std::string log = ReadTextFile(dir_ / "bad.log");
  EXPECT_NE(log.find("serve.yaml:3:14: storage.retention: bad duration '15 days'"),
            std::string::npos)
      << log;
}

}  // namespace
