// Integration: the scraper takes its dcgm-exporter targets from a real
// Prometheus 2.42 (prometheus_sd_configs, our extension) instead of a second
// list. Prometheus scrapes a live simulated fleet with its own static config
// (job "dcgm", a `node` label per target, plus a "vllm" job we must not
// take); we read its /api/v1/targets, keep job dcgm, and scrape those
// targets ourselves: same URLs, Prometheus's labels, our job name.

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "prometheus_process.h"
#include "scrape/scrape_manager.h"
#include "scrape/test_appendable.h"
#include "sim/live.h"
#include "sim/scenario.h"

namespace gpucanary {
namespace {

constexpr std::string_view kFleet = R"(
seed: 3
duration: 1h
fleet:
  - {nodes: "node-[1-3]", gpu: h100-sxm}
releases:
  stable: {profile: baseline}
traffic: {rps: 100}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

TEST(ScrapePrometheusTest, DiscoversTheDcgmJobFromPrometheus) {
  RealClock clock;
  Result<sim::Scenario> scenario = sim::ParseScenario(kFleet, "fleet.yaml");
  ASSERT_TRUE(scenario.has_value()) << scenario.error().message();
  sim::LiveOptions lo;
  lo.base_port = 0;
  lo.control_port = 0;
  sim::LiveSim live(*scenario, sim::EngineOptions{}, lo, clock);
  ASSERT_TRUE(live.Start().ok());

  std::string prom_config =
      "global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: dcgm\n    static_configs:\n";
  std::set<std::string> dcgm_urls;
  for (const sim::LiveSim::Endpoint& e : live.endpoints()) {
    const std::string address = "127.0.0.1:" + std::to_string(e.dcgm_port);
    prom_config +=
        "      - targets: ['" + address + "']\n        labels: {node: " + e.hostname + "}\n";
    dcgm_urls.insert("http://" + address + "/metrics");
  }
  prom_config += "  - job_name: vllm\n    static_configs:\n      - targets: ['127.0.0.1:" +
                 std::to_string(live.endpoints()[0].server_port) + "']\n";
  std::string error;
  std::unique_ptr<test::PrometheusProcess> prom =
      test::PrometheusProcess::Start(prom_config, {}, &error);
  ASSERT_NE(prom, nullptr) << error;

  Result<scrape::ScrapeConfig> config = scrape::ParseScrapeConfig(
      "global: {fast_interval: 1s}\n"
      "scrape_configs:\n"
      "  - job_name: gpus\n"
      "    scrape_interval: 1s\n"
      "    prometheus_sd_configs:\n"
      "      - {url: '" +
          prom->url() + "', job: dcgm, refresh_interval: 30s}\n",
      "scrape.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();

  scrape::test::CapturingAppendable store;
  scrape::ScrapeManager m(store, clock, scrape::ScrapeManager::Options{});
  // Prometheus lists its targets once its discovery has run (it batches
  // updates every 5 s): ask until they are there.
  const auto urls = [&] {
    std::set<std::string> out;
    for (const scrape::TargetStatus& t : m.Targets()) out.insert(t.url);
    return out;
  };
  Status first = m.ApplyConfig(*config);
  ASSERT_TRUE(first.ok()) << first.message();
  ASSERT_TRUE(test::WaitFor(30, [&] {
    EXPECT_TRUE(m.ReloadDiscovery().ok());
    return urls() == dcgm_urls;
  })) << prom->Log();

  ASSERT_TRUE(m.Start().ok());
  const std::vector<scrape::TargetStatus> targets = m.Targets();
  for (const scrape::TargetStatus& t : targets) {
    EXPECT_EQ(model::LabelValue(t.labels, "job"), "gpus");
    EXPECT_TRUE(model::LabelValue(t.labels, "node").starts_with("node-")) << t.url;
    EXPECT_EQ(model::LabelValue(t.labels, "instance"), t.url.substr(7, t.url.size() - 15));
  }
  // And they are scraped, under our job with Prometheus's labels.
  ASSERT_TRUE(store.WaitFor(
      [&] {
        for (const scrape::TargetStatus& t : targets) {
          const std::string up =
              "up{instance=\"" + std::string(model::LabelValue(t.labels, "instance")) +
              "\",job=\"gpus\",node=\"" + std::string(model::LabelValue(t.labels, "node")) + "\"}";
          const auto s = store.Samples(up);
          if (s.empty() || s.back().value != 1) return false;
        }
        return true;
      },
      std::chrono::seconds(10)));
  const auto sources = m.DiscoverySources();
  ASSERT_EQ(sources.size(), 1U);
  EXPECT_EQ(sources[0].kind, "prometheus");
  EXPECT_EQ(sources[0].targets, 3U);
  EXPECT_EQ(sources[0].last_error, "");
  m.Stop();
  live.Stop();
}

TEST(ScrapePrometheusTest, AnUnreachablePrometheusIsAnErrorNotACrash) {
  RealClock clock;
  Result<scrape::ScrapeConfig> config = scrape::ParseScrapeConfig(
      "scrape_configs:\n  - job_name: gpus\n    prometheus_sd_configs:\n"
      "      - {url: 'http://127.0.0.1:" +
          std::to_string(test::FreePort()) + "', job: dcgm}\n",
      "scrape.yaml");
  ASSERT_TRUE(config.has_value());
  scrape::test::CapturingAppendable store;
  scrape::ScrapeManager m(store, clock, scrape::ScrapeManager::Options{});
  Status s = m.ApplyConfig(*config);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos) << s.message();
  EXPECT_TRUE(m.Targets().empty());
  EXPECT_NE(m.DiscoverySources().at(0).last_error, "");
}

}  // namespace
}  // namespace gpucanary
