// The same relabel_configs give the same target labels in a real Prometheus
// (Debian's 2.42) as in gpucanary: one file SD file of targets with
// Kubernetes-style discovery labels, one scrape config with rules of every
// action 2.42 knows, read by both. Prometheus's /api/v1/targets (active
// labels, dropped count) is compared with scrape::MakeTargets. The addresses
// need not answer: targets are listed whether or not their scrapes succeed.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "prometheus_process.h"
#include "scrape/config.h"
#include "scrape/file_sd.h"
#include "scrape/target.h"

namespace gpucanary {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTargets = R"([
  {"targets": ["10.4.0.17:8000"],
   "labels": {"__meta_kubernetes_pod_node_name": "gpu-node-7",
              "__meta_kubernetes_pod_phase": "Running",
              "__meta_kubernetes_namespace": "Serving",
              "__meta_kubernetes_pod_label_app": "vllm",
              "__meta_kubernetes_pod_annotation_prometheus_io_port": "8001",
              "__tmp_port": "8001"}},
  {"targets": ["10.4.0.18:8000"],
   "labels": {"__meta_kubernetes_pod_node_name": "gpu-node-8",
              "__meta_kubernetes_pod_phase": "Succeeded",
              "__meta_kubernetes_namespace": "serving"}},
  {"targets": ["10.4.0.19:8000", "10.4.0.20:8000"],
   "labels": {"__meta_kubernetes_pod_node_name": "GPU-Node-9",
              "__meta_kubernetes_pod_phase": "Running",
              "__meta_kubernetes_namespace": "batch",
              "__meta_kubernetes_pod_label_app": "sglang",
              "__meta_kubernetes_pod_annotation_prometheus_io_port": "9000",
              "__tmp_port": "9001"}}
])";

// Rules for every action Prometheus 2.42 has (keepequal/dropequal since
// 2.41, lowercase/uppercase since 2.36).
constexpr const char* kRules = R"(
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Succeeded|Failed
        action: drop
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: Hostname
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: node
        action: lowercase
      - source_labels: [__meta_kubernetes_namespace]
        target_label: ns_upper
        action: UpperCase
      - regex: __meta_kubernetes_pod_label_(.+)
        replacement: pod_$1
        action: labelmap
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        regex: '([^:]+)(?::\d+)?;(\d+)'
        replacement: '${1}:${2}'
        target_label: __address__
      - source_labels: [__address__]
        modulus: 4
        target_label: shard
        action: hashmod
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_port]
        target_label: __tmp_port
        action: dropequal
      - source_labels: [__meta_kubernetes_pod_label_app]
        regex: '(.)(.*)'
        target_label: 'app_$1'
        replacement: '$2-$1x'
      - regex: 'pod_.*'
        action: labeldrop
      - source_labels: [ns_upper]
        regex: '.+'
        action: keep
)";

TEST(RelabelPrometheusTest, SameLabelsAsARealPrometheus) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpucanary-relabel-" + std::to_string(test::NowMs()) + "-" +
                                   std::to_string(test::FreePort()));
  fs::create_directories(dir);
  const fs::path targets = dir / "pods.json";
  std::ofstream(targets) << kTargets;
  const std::string job =
      "scrape_configs:\n  - job_name: pods\n    file_sd_configs:\n"
      "      - files: ['" +
      targets.string() + "']\n" + kRules;

  // Ours.
  Result<scrape::ScrapeConfig> config = scrape::ParseScrapeConfig(job, "scrape.yaml");
  ASSERT_TRUE(config.has_value()) << config.error().message();
  const scrape::JobConfig& jc = config->jobs[0];
  scrape::FileSd sd(jc.file_sd_configs[0]);
  std::vector<Status> errors;
  sd.Refresh(true, &errors);
  std::vector<scrape::Target> ours = scrape::MakeTargets(jc, sd.Groups(), &errors);
  ASSERT_TRUE(errors.empty()) << errors[0].message();
  std::map<std::string, std::map<std::string, std::string>> our_labels;
  for (const scrape::Target& t : ours) {
    for (const model::Label& l : t.labels) our_labels[t.url][l.name] = l.value;
  }

  // Prometheus's.
  std::string error;
  std::unique_ptr<test::PrometheusProcess> prom = test::PrometheusProcess::Start(job, {}, &error);
  ASSERT_NE(prom, nullptr) << error;
  std::map<std::string, std::map<std::string, std::string>> their_labels;
  std::size_t dropped = 0;
  ASSERT_TRUE(test::WaitFor(
      30,
      [&] {
        Result<net::HttpResponse> r = net::Fetch(prom->url() + "/api/v1/targets");
        if (!r || r->status != 200) return false;
        const nlohmann::json doc = nlohmann::json::parse(r->body, nullptr, false);
        if (doc.is_discarded()) return false;
        their_labels.clear();
        for (const auto& t : doc["data"]["activeTargets"]) {
          for (const auto& [name, value] : t["labels"].items()) {
            their_labels[t["scrapeUrl"].get<std::string>()][name] = value.get<std::string>();
          }
        }
        dropped = doc["data"]["droppedTargets"].size();
        return their_labels.size() == ours.size();
      }))
      << "Prometheus listed " << their_labels.size() << " targets, we have " << ours.size();
  EXPECT_EQ(our_labels, their_labels);
  EXPECT_EQ(dropped, 2U);  // the finished pod, and the one dropequal drops
  ASSERT_EQ(ours.size(), 2U);
  const std::map<std::string, std::string>& first = our_labels.begin()->second;
  EXPECT_EQ(first.at("Hostname"), "GPU-Node-9");
  EXPECT_EQ(first.at("node"), "gpu-node-9");
  EXPECT_EQ(first.at("app_s"), "glang-");  // "$1x" names group "1x": empty, in both
  EXPECT_EQ(our_labels.begin()->first, "http://10.4.0.19:9000/metrics");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpucanary
