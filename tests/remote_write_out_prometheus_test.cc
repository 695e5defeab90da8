// Integration: remote_write out to a real Prometheus (Debian's 2.42, started
// with --web.enable-remote-write-receiver). `gpucanary serve` scrapes a
// `gpucanary sim` fleet at 1 s and sends every sample to Prometheus. The
// receiver goes away for a minute and comes back; later the daemon is
// killed with SIGKILL mid-stream and restarted. At the end Prometheus holds
// exactly the samples the daemon stored, series by series, value by value:
// nothing lost, nothing twice, none refused. docs/remote-write-out.md.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/url.h"
#include "prometheus_process.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using gpucanary::test::ChildProcess;
using gpucanary::test::PrometheusProcess;
using gpucanary::test::ReadTextFile;
using gpucanary::test::WaitFor;

// The issue's "a receiver that goes away for a minute".
constexpr int kOutageSeconds = 60;

constexpr char kScenario[] = R"(seed: 5
duration: 900s
fleet:
  - {nodes: "node-[1-2]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
traffic: {rps: 40}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

// (timestamp ms, value as the API prints it) per series (labels as JSON).
using Samples = std::map<std::string, std::vector<std::pair<std::int64_t, std::string>>>;

Samples RawSamples(const std::string& base, const std::string& selector, std::int64_t window_s,
                   double at_s, std::string* error) {
  const std::string url =
      base + "/api/v1/query?query=" +
      gpucanary::net::UrlEncode(selector + "[" + std::to_string(window_s) + "s]") +
      "&time=" + std::to_string(at_s);
  auto r = gpucanary::net::Fetch(url, {.timeout_ms = 60'000});
  Samples out;
  if (!r || r->status != 200) {
    *error = url + ": " + (r ? std::to_string(r->status) + " " + r->body : r.error().message());
    return out;
  }
  const Json j = Json::parse(r->body);
  for (const Json& series : j["data"]["result"]) {
    auto& v = out[series["metric"].dump()];
    for (const Json& p : series["values"]) {
      v.emplace_back(static_cast<std::int64_t>(p[0].get<double>() * 1000 + 0.5),
                     p[1].get<std::string>());
    }
  }
  return out;
}

// The value of `name{labels...}` on gpucanary's /metrics (-1: not there).
double Metric(const std::string& base, const std::string& line_prefix) {
  auto r = gpucanary::net::Fetch(base + "/metrics");
  if (!r || r->status != 200) return -1;
  std::size_t at = r->body.find("\n" + line_prefix);
  if (at == std::string::npos) return -1;
  at = r->body.find(' ', at + 1 + line_prefix.size());
  return std::stod(r->body.substr(at + 1, r->body.find('\n', at) - at - 1));
}

class RemoteWriteOutPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpucanary-rw-out-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    serve_.reset();
    sim_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string StartServe(const std::string& log_name) {
    return gpucanary::test::StartServeChild(GPUCANARY_BIN, dir_, dir_ / "serve.yaml", log_name,
                                            serve_);
  }

  fs::path dir_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> serve_;
};

TEST_F(RemoteWriteOutPrometheusTest, AMinuteOutageAndAKillNineLoseNothingAndSendNothingTwice) {
  std::string error;
  auto prom = PrometheusProcess::Start("global: {scrape_interval: 1h}\n",
                                       {"--web.enable-remote-write-receiver"}, &error);
  ASSERT_NE(prom, nullptr) << error;

  std::ofstream(dir_ / "fleet.yaml") << kScenario;
  sim_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{GPUCANARY_BIN, "sim", "--scenario", (dir_ / "fleet.yaml").string(),
                               "--base-port", "0", "--control-port", "0", "--targets-file",
                               (dir_ / "targets.json").string()},
      dir_ / "sim.log");
  ASSERT_TRUE(WaitFor(30, [&] { return fs::exists(dir_ / "targets.json"); }))
      << ReadTextFile(dir_ / "sim.log");

  std::ofstream(dir_ / "serve.yaml")
      << "listen: 127.0.0.1:0\n"
         "storage:\n  path: data\n"
         "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
         "scrape_configs:\n"
         "  - job_name: fleet\n"
         "    file_sd_configs: [{files: [targets.json], refresh_interval: 5s}]\n"
         "remote_write_out:\n"
         "  - url: "
      << prom->url()
      << "/api/v1/write\n"
         "    name: prom\n"
         "    remote_timeout: 5s\n"
         "    queue_config: {shards: 2, max_samples_per_send: 2000, batch_send_deadline: 1s,\n"
         "                   min_backoff: 50ms, max_backoff: 2s}\n"
         "    metadata_config: {send_interval: 2s}\n";
  std::string url = StartServe("serve1.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve1.log");
  const std::string sent = "gpucanary_remote_write_out_samples_sent_total{remote_name=\"prom\"";
  ASSERT_TRUE(WaitFor(30, [&] { return Metric(url, sent) > 1000; }))
      << ReadTextFile(dir_ / "serve1.log");

  const std::string prefix = "gpucanary_remote_write_out_";
  const std::string labels = "{remote_name=\"prom\",url=\"" + prom->url() + "/api/v1/write\"}";
  const std::string pending = prefix + "samples_pending" + labels;
  const std::string errors = prefix + "requests_total{remote_name=\"prom\",url=\"" + prom->url() +
                             "/api/v1/write\",code=\"error\"}";

  // The receiver goes away for a minute. Scraping goes on; the WAL keeps it.
  // Half way through, the daemon is killed with SIGKILL while it retries,
  // and restarted on the same data directory.
  prom->Stop();
  const auto outage_start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(kOutageSeconds / 2));
  EXPECT_GT(Metric(url, errors), 0);
  EXPECT_GT(Metric(url, pending), 0);
  EXPECT_GT(Metric(url, prefix + "samples_retried_total" + labels), 0);
  ASSERT_EQ(kill(serve_->pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(10, [&] { return !serve_->Running(); }));
  url = StartServe("serve2.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve2.log");
  EXPECT_NE(ReadTextFile(dir_ / "serve2.log").find("remote_write prom: resuming at"),
            std::string::npos)
      << ReadTextFile(dir_ / "serve2.log");
  std::this_thread::sleep_until(outage_start + std::chrono::seconds(kOutageSeconds));
  EXPECT_GT(Metric(url, pending), 0);
  ASSERT_TRUE(prom->StartAgain()) << prom->Log();
  ASSERT_TRUE(WaitFor(60, [&] { return Metric(url, pending) == 0 && Metric(url, sent) > 0; }))
      << ReadTextFile(dir_ / "serve2.log");
  // Nothing refused: no batch reached Prometheus twice (2.42 answers a
  // repeated batch 400, out of order).
  EXPECT_EQ(Metric(url, prefix + "samples_failed_total" + labels), 0);
  EXPECT_GT(Metric(url, prefix + "metadata_sent_total" + labels), 0);

  // kill -9 again, while samples stream, and a restart.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(kill(serve_->pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(10, [&] { return !serve_->Running(); }));
  url = StartServe("serve3.log");
  ASSERT_FALSE(url.empty()) << ReadTextFile(dir_ / "serve3.log");
  ASSERT_TRUE(WaitFor(30, [&] { return Metric(url, sent) > 500; }))
      << ReadTextFile(dir_ / "serve3.log");

  // The fleet stops and its targets go (stale markers follow, then no more
  // samples); everything stored gets sent.
  sim_.reset();
  std::ofstream(dir_ / "targets.json") << "[]\n";
  ASSERT_TRUE(WaitFor(30, [&] {
    auto r = gpucanary::net::Fetch(url + "/api/v1/targets");
    return r && r->status == 200 && r->body.find("\"activeTargets\":[]") != std::string::npos;
  })) << ReadTextFile(dir_ / "serve3.log");
  ASSERT_TRUE(WaitFor(30, [&] {
    return Metric(url, pending) == 0 && Metric(url, prefix + "wal_backlog_bytes" + labels) == 0;
  })) << ReadTextFile(dir_ / "serve3.log");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(Metric(url, prefix + "samples_failed_total" + labels), 0);
  EXPECT_GT(Metric(url, prefix + "metadata_sent_total" + labels), 0);
  EXPECT_EQ(Metric(url, prefix + "metadata_failed_total" + labels), 0);
  const double resent_refused =
      Metric(url, prefix + "samples_dropped_total{remote_name=\"prom\",url=\"" + prom->url() +
                      "/api/v1/write\",reason=\"resent_refused\"}");
  EXPECT_GE(resent_refused, 0);
  std::printf("[          ] batch in flight at the kill, refused when sent again: %.0f samples\n",
              resent_refused);

  const double now_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Samples ours = RawSamples(url, R"({job="fleet"})", 900, now_s, &error);
  ASSERT_TRUE(error.empty()) << error;
  const Samples theirs = RawSamples(prom->url(), R"({job="fleet"})", 900, now_s, &error);
  ASSERT_TRUE(error.empty()) << error;
  std::size_t samples = 0;
  for (const auto& [series, values] : ours) samples += values.size();
  std::printf("[          ] %zu series, %zu samples stored and compared\n", ours.size(), samples);
  ASSERT_GT(samples, 10'000U);
  ASSERT_EQ(ours.size(), theirs.size());
  std::size_t differ = 0;
  for (const auto& [series, values] : ours) {
    auto it = theirs.find(series);
    if (it == theirs.end() || it->second != values) {
      if (differ++ < 3) {
        ADD_FAILURE() << series << ": gpucanary " << values.size() << " samples, Prometheus "
                      << (it == theirs.end() ? 0 : it->second.size());
      }
    }
  }
  EXPECT_EQ(differ, 0U);
}

}  // namespace
