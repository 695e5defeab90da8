// Relabeling cost per label set (see docs/performance.md): the three configs
// of Prometheus's own BenchmarkRelabel (model/relabel/relabel_test.go at
// d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86) on its label sets: "example"
// (from its config/testdata/conf.good.yml), "kubernetes" (a 24-rule pod
// config over 31 discovery labels) and "static" (static label pairs), plus
// the node-mapping recipe of docs/scraping.md on a vLLM target.
//
//   cmake --preset release && cmake --build build/release --target relabel_bench
//   build/release/bench/relabel_bench
//
// Each iteration copies the input labels and applies the whole list, as
// Prometheus's benchmark resets its builder and runs ProcessBuilder.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "model/relabel.h"
#include "scrape/relabel_config.h"

namespace gpucanary {
namespace {

model::Labels FromStrings(std::vector<std::string> kv) {
  model::Labels out;
  for (std::size_t i = 0; i + 1 < kv.size(); i += 2) out.push_back({kv[i], kv[i + 1]});
  model::SortLabels(out);
  return out;
}

std::vector<model::RelabelRule> Rules(const char* yaml) {
  Result<std::vector<model::RelabelRule>> r = scrape::ParseRelabelConfigs(yaml, "bench.yaml");
  if (!r) {
    std::cerr << r.error().message() << "\n";
    std::abort();
  }
  return std::move(*r);
}

constexpr const char* kExample = R"(
- source_labels: [job, __meta_dns_name]
  regex: "(.*)some-[regex]"
  target_label: job
  replacement: foo-${1}
- source_labels: [abc]
  target_label: cde
- replacement: static
  target_label: abc
- regex:
  replacement: static
  target_label: abc
)";

constexpr const char* kKubernetes = R"(
- source_labels: [__meta_kubernetes_pod_container_port_name]
  regex: .*-metrics
  action: keep
- source_labels: [__meta_kubernetes_pod_label_name]
  action: drop
  regex: ""
- source_labels: [__meta_kubernetes_pod_phase]
  regex: Succeeded|Failed
  action: drop
- source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
  regex: "false"
  action: drop
- source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scheme]
  target_label: __scheme__
  regex: (https?)
  replacement: $1
  action: replace
- source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
  target_label: __metrics_path__
  regex: (.+)
  replacement: $1
  action: replace
- source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
  target_label: __address__
  regex: (.+?)(\:\d+)?;(\d+)
  replacement: $1:$3
  action: replace
- regex: __meta_kubernetes_pod_annotation_prometheus_io_param_(.+)
  replacement: __param_$1
  action: labelmap
- regex: __meta_kubernetes_pod_label_prometheus_io_label_(.+)
  action: labelmap
- regex: __meta_kubernetes_pod_annotation_prometheus_io_label_(.+)
  action: labelmap
- source_labels: [__meta_kubernetes_namespace, __meta_kubernetes_pod_label_name]
  separator: /
  target_label: job
  replacement: $1
  action: replace
- source_labels: [__meta_kubernetes_namespace]
  target_label: namespace
  action: replace
- source_labels: [__meta_kubernetes_pod_name]
  target_label: pod
  action: replace
- source_labels: [__meta_kubernetes_pod_container_name]
  target_label: container
  action: replace
- source_labels: [__meta_kubernetes_pod_name, __meta_kubernetes_pod_container_name,
                  __meta_kubernetes_pod_container_port_name]
  separator: ':'
  target_label: instance
  action: replace
- target_label: cluster
  replacement: dev-us-central-0
- source_labels: [__meta_kubernetes_namespace]
  regex: hosted-grafana
  action: drop
- source_labels: [__address__]
  target_label: __tmp_hash
  modulus: 3
  action: hashmod
- source_labels: [__tmp_hash]
  regex: ^0$
  action: keep
- regex: __tmp_hash
  action: labeldrop
)";

constexpr const char* kStatic = R"(
- replacement: wwwwww
  target_label: wwwwww
- replacement: yyyyyyyyyyyy
  target_label: xxxxxxxxx
- replacement: xxxxxxxxx
  target_label: yyyyyyyyyyyy
- source_labels: ["something"]
  target_label: with_source_labels
  replacement: value
- replacement: dropped
  target_label: ${0}
- replacement: ${0}
  target_label: dropped
)";

constexpr const char* kNodeMapping = R"(
- source_labels: [__meta_kubernetes_pod_phase]
  regex: Succeeded|Failed
  action: drop
- source_labels: [__meta_kubernetes_pod_node_name]
  target_label: Hostname
)";

void Run(benchmark::State& state, const char* yaml, const model::Labels& input) {
  const std::vector<model::RelabelRule> rules = Rules(yaml);
  std::size_t kept = 0;
  for (auto _ : state) {
    model::Labels labels = input;
    kept += model::Relabel(rules, labels) ? 1 : 0;
    benchmark::DoNotOptimize(labels);
  }
  state.counters["kept"] = static_cast<double>(kept) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
}

void BM_Example(benchmark::State& state) {
  Run(state, kExample,
      FromStrings({"__meta_dns_name", "example-some-x.com", "abc", "def", "job", "foo"}));
}

void BM_Kubernetes(benchmark::State& state) {
  Run(state, kKubernetes,
      FromStrings({"__address__",
                   "10.132.183.40:80",
                   "__meta_kubernetes_namespace",
                   "loki-boltdb-shipper",
                   "__meta_kubernetes_pod_annotation_promtail_loki_boltdb_shipper_hash",
                   "50523b9759094a144adcec2eae0aa4ad",
                   "__meta_kubernetes_pod_annotationpresent_promtail_loki_boltdb_shipper_hash",
                   "true",
                   "__meta_kubernetes_pod_container_init",
                   "false",
                   "__meta_kubernetes_pod_container_name",
                   "promtail",
                   "__meta_kubernetes_pod_container_port_name",
                   "http-metrics",
                   "__meta_kubernetes_pod_container_port_number",
                   "80",
                   "__meta_kubernetes_pod_container_port_protocol",
                   "TCP",
                   "__meta_kubernetes_pod_controller_kind",
                   "DaemonSet",
                   "__meta_kubernetes_pod_controller_name",
                   "promtail-loki-boltdb-shipper",
                   "__meta_kubernetes_pod_host_ip",
                   "10.128.0.178",
                   "__meta_kubernetes_pod_ip",
                   "10.132.183.40",
                   "__meta_kubernetes_pod_label_controller_revision_hash",
                   "555b77cd7d",
                   "__meta_kubernetes_pod_label_name",
                   "promtail-loki-boltdb-shipper",
                   "__meta_kubernetes_pod_label_pod_template_generation",
                   "45",
                   "__meta_kubernetes_pod_labelpresent_controller_revision_hash",
                   "true",
                   "__meta_kubernetes_pod_labelpresent_name",
                   "true",
                   "__meta_kubernetes_pod_labelpresent_pod_template_generation",
                   "true",
                   "__meta_kubernetes_pod_name",
                   "promtail-loki-boltdb-shipper-jgtr7",
                   "__meta_kubernetes_pod_node_name",
                   "gke-dev-us-central-0-main-n2s8-2-14d53341-9hkr",
                   "__meta_kubernetes_pod_phase",
                   "Running",
                   "__meta_kubernetes_pod_ready",
                   "true",
                   "__meta_kubernetes_pod_uid",
                   "4c586419-7f6c-448d-aeec-ca4fa5b05e60",
                   "__metrics_path__",
                   "/metrics",
                   "__scheme__",
                   "http",
                   "__scrape_interval__",
                   "15s",
                   "__scrape_timeout__",
                   "10s",
                   "job",
                   "kubernetes-pods"}));
}

void BM_Static(benchmark::State& state) {
  Run(state, kStatic,
      FromStrings({"abcdefg01", "hijklmn1", "abcdefg02", "hijklmn2", "abcdefg03", "hijklmn3",
                   "abcdefg04", "hijklmn4", "abcdefg05", "hijklmn5", "abcdefg06", "hijklmn6",
                   "abcdefg07", "hijklmn7", "abcdefg08", "hijklmn8", "job", "foo"}));
}

void BM_NodeMapping(benchmark::State& state) {
  Run(state, kNodeMapping,
      FromStrings({"__address__", "10.4.0.17:8000", "__meta_kubernetes_pod_node_name", "gpu-node-7",
                   "__meta_kubernetes_pod_phase", "Running", "__metrics_path__", "/metrics",
                   "__scheme__", "http", "job", "vllm"}));
}

BENCHMARK(BM_Example);
BENCHMARK(BM_Kubernetes);
BENCHMARK(BM_Static);
BENCHMARK(BM_NodeMapping);

}  // namespace
}  // namespace gpucanary

BENCHMARK_MAIN();
