// Kubernetes discovery over HTTP against a local server that answers as the
// API server does (kubernetes_sd_test_server.h): a dcgm-exporter DaemonSet
// and a vLLM Deployment found with Prometheus's labels, relabeled into
// targets by Discovery, kept current by watch events, re-listed after 410,
// and kept when the API fails.

#include "scrape/kubernetes_sd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "net/tls_test_util.h"
#include "scrape/discovery.h"
#include "scrape/kubernetes_sd_test_server.h"

namespace gpucanary::scrape {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;
using test::FakeKubernetesApi;
using ::testing::HasSubstr;

// --- Objects as the API server returns them (core/v1 Pod, Node, ...) ---

// A pod of the GPU operator's dcgm-exporter DaemonSet: container port 9400
// named "metrics", and a validation init container without ports.
Json DcgmExporterPod(const std::string& suffix, const std::string& node, const std::string& ip) {
  return Json::parse(R"({
    "metadata": {"name": "nvidia-dcgm-exporter-)" +
                     suffix + R"(",
      "generateName": "nvidia-dcgm-exporter-", "namespace": "gpu-operator",
      "uid": "4c5b8f0e-6a7d-4e52-9a8e-)" +
                     suffix + R"(0000000",
      "creationTimestamp": "2025-11-03T09:12:44Z",
      "labels": {"app": "nvidia-dcgm-exporter", "controller-revision-hash": "6c9f9d7b5d",
                 "pod-template-generation": "1", "app.kubernetes.io/managed-by": "gpu-operator"},
      "annotations": {"prometheus.io/scrape": "true"},
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "name": "nvidia-dcgm-exporter", "uid": "0d3b2a4c-1111-2222-3333-444455556666",
        "controller": true, "blockOwnerDeletion": true}]},
    "spec": {"nodeName": ")" +
                     node + R"(",
      "containers": [{"name": "nvidia-dcgm-exporter",
        "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04",
        "ports": [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]}],
      "initContainers": [{"name": "toolkit-validation",
        "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v23.9.2"}]},
    "status": {"phase": "Running", "hostIP": "10.0.1.11", "podIP": ")" +
                     ip + R"(",
      "podIPs": [{"ip": ")" +
                     ip + R"("}],
      "conditions": [{"type": "Initialized", "status": "True"},
                     {"type": "Ready", "status": "True"},
                     {"type": "ContainersReady", "status": "True"},
                     {"type": "PodScheduled", "status": "True"}],
      "containerStatuses": [{"name": "nvidia-dcgm-exporter", "ready": true, "restartCount": 0,
        "containerID": "containerd://9f2c)" +
                     suffix + R"(", "started": true,
        "state": {"running": {"startedAt": "2025-11-03T09:13:02Z"}}}],
      "initContainerStatuses": [{"name": "toolkit-validation", "ready": true,
        "containerID": "containerd://11aa)" +
                     suffix + R"(", "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}})");
}

// A pod of a vLLM Deployment (owned by its ReplicaSet): port 8000 "http".
Json VllmPod(const std::string& name, const std::string& node, const std::string& ip,
             const std::string& phase = "Running", const std::string& ready = "True") {
  return Json::parse(R"({
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "inference",
      "uid": "9b1e7d22-)" +
                     name + R"(",
      "labels": {"app": "vllm", "model": "llama-3-8b", "pod-template-hash": "7d9f8c6b5"},
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "vllm-llama3-8b-7d9f8c6b5", "uid": "aa", "controller": true}]},
    "spec": {"nodeName": ")" +
                     node + R"(", "containers": [{"name": "vllm",
      "image": "vllm/vllm-openai:v0.6.3",
      "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]}]},
    "status": {"phase": ")" +
                     phase + R"(", "hostIP": "10.0.1.11", "podIP": ")" + ip + R"(",
      "conditions": [{"type": "Ready", "status": ")" +
                     ready + R"("}],
      "containerStatuses": [{"name": "vllm", "containerID": "containerd://77)" +
                     name + R"("}]}})");
}

Json GpuNode(const std::string& name, const std::string& ip) {
  return Json::parse(R"({"metadata": {"name": ")" + name + R"(",
      "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "kubernetes.io/hostname": ")" +
                     name + R"("}},
    "spec": {"providerID": "aws:///us-east-1a/i-)" +
                     name + R"("},
    "status": {"addresses": [{"type": "InternalIP", "address": ")" +
                     ip + R"("},
                             {"type": "Hostname", "address": ")" +
                     name + R"("}],
      "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
      "conditions": [{"type": "Ready", "status": "True"}]}})");
}

// The labels a group gives its target before relabeling, __meta_* only.
std::map<std::string, std::string> MetaLabels(const TargetGroup& g) {
  std::map<std::string, std::string> out;
  JobConfig job;
  for (const model::Label& l : DiscoveredLabels(job, g.targets.at(0), g)) {
    if (l.name.starts_with("__meta_")) out[l.name] = l.value;
  }
  return out;
}

class KubernetesSdTest : public ::testing::Test {
 protected:
  KubernetesSd::Options FastOptions() {
    KubernetesSd::Options o;
    o.backoff_initial_ms = 20;
    o.backoff_max_ms = 200;
    o.request_timeout_ms = 5000;
    o.on_change = [this] { Notify(); };
    return o;
  }

  std::unique_ptr<KubernetesSd> Sd(const std::string& yaml_entry, KubernetesSd::Options options) {
    Result<ScrapeConfig> c = ParseScrapeConfig(
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs:\n      - " + yaml_entry,
        "k.yaml");
    EXPECT_TRUE(c.has_value()) << c.error().message();
    return std::make_unique<KubernetesSd>(c->jobs.at(0).kubernetes_sd_configs.at(0),
                                          "k kubernetes_sd_configs[0]", clock_, std::move(options));
  }

  void Notify() {
    {
      MutexLock lock(mu_);
      ++changes_;
    }
    cv_.NotifyAll();
  }

  // Waits until `pred` holds (checked at each change, and every 50 ms).
  template <typename Pred>
  bool WaitFor(Pred pred, milliseconds timeout = milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      MutexLock lock(mu_);
      cv_.WaitFor(mu_, milliseconds(50));
    }
    return true;
  }

  // Discovery's updates, per job.
  Discovery::Update Recorder() {
    return [this](const JobConfig& job, std::vector<Target> targets) {
      {
        MutexLock lock(mu_);
        targets_[job.job_name] = std::move(targets);
        ++updates_;
      }
      cv_.NotifyAll();
    };
  }
  std::vector<Target> TargetsOf(const std::string& job) {
    MutexLock lock(mu_);
    return targets_[job];
  }
  std::vector<std::string> UrlsOf(const std::string& job) {
    std::vector<std::string> urls;
    for (const Target& t : TargetsOf(job)) urls.push_back(t.url);
    return urls;
  }

  RealClock clock_;
  Mutex mu_;
  CondVar cv_;
  int changes_ GUARDED_BY(mu_) = 0;
  int updates_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::vector<Target>> targets_ GUARDED_BY(mu_);
};

TEST_F(KubernetesSdTest, FindsDcgmExporterAndVllmPodsWithPrometheusLabels) {
  FakeKubernetesApi api;
  api.Add("pods", DcgmExporterPod("x7k2p", "gpu-node-1", "10.244.1.17"));
  api.Add("pods", DcgmExporterPod("q9m4d", "gpu-node-2", "10.244.2.9"));
  api.Add("pods", VllmPod("vllm-llama3-8b-7d9f8c6b5-x2kqp", "gpu-node-1", "10.244.1.23"));
  auto sd = Sd("{role: pod, api_server: '" + api.url() + "'}", FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  const KubernetesSd::State s = sd->state();
  EXPECT_EQ(s.error, "");
  // Per pod: each container port, and the init container at the bare IP.
  std::vector<std::string> addresses;
  for (const TargetGroup& g : s.groups) addresses.push_back(g.targets.at(0));
  EXPECT_THAT(addresses,
              ::testing::UnorderedElementsAre("10.244.1.17:9400", "10.244.1.17", "10.244.2.9:9400",
                                              "10.244.2.9", "10.244.1.23:8000"));
  for (const TargetGroup& g : s.groups) {
    if (g.targets[0] == "10.244.1.17:9400") {
      EXPECT_EQ(g.source, "k kubernetes_sd_configs[0] pod/gpu-operator/nvidia-dcgm-exporter-x7k2p");
      // Prometheus's pod labels (pod.go podLabels and buildPod).
      EXPECT_EQ(MetaLabels(g),
                (std::map<std::string, std::string>{
                    {"__meta_kubernetes_namespace", "gpu-operator"},
                    {"__meta_kubernetes_pod_annotation_prometheus_io_scrape", "true"},
                    {"__meta_kubernetes_pod_annotationpresent_prometheus_io_scrape", "true"},
                    {"__meta_kubernetes_pod_container_id", "containerd://9f2cx7k2p"},
                    {"__meta_kubernetes_pod_container_image",
                     "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04"},
                    {"__meta_kubernetes_pod_container_init", "false"},
                    {"__meta_kubernetes_pod_container_name", "nvidia-dcgm-exporter"},
                    {"__meta_kubernetes_pod_container_port_name", "metrics"},
                    {"__meta_kubernetes_pod_container_port_number", "9400"},
                    {"__meta_kubernetes_pod_container_port_protocol", "TCP"},
                    {"__meta_kubernetes_pod_controller_kind", "DaemonSet"},
                    {"__meta_kubernetes_pod_controller_name", "nvidia-dcgm-exporter"},
                    {"__meta_kubernetes_pod_host_ip", "10.0.1.11"},
                    {"__meta_kubernetes_pod_ip", "10.244.1.17"},
                    {"__meta_kubernetes_pod_label_app", "nvidia-dcgm-exporter"},
                    {"__meta_kubernetes_pod_label_app_kubernetes_io_managed_by", "gpu-operator"},
                    {"__meta_kubernetes_pod_label_controller_revision_hash", "6c9f9d7b5d"},
                    {"__meta_kubernetes_pod_label_pod_template_generation", "1"},
                    {"__meta_kubernetes_pod_labelpresent_app", "true"},
                    {"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_managed_by", "true"},
                    {"__meta_kubernetes_pod_labelpresent_controller_revision_hash", "true"},
                    {"__meta_kubernetes_pod_labelpresent_pod_template_generation", "true"},
                    {"__meta_kubernetes_pod_name", "nvidia-dcgm-exporter-x7k2p"},
                    {"__meta_kubernetes_pod_node_name", "gpu-node-1"},
                    {"__meta_kubernetes_pod_phase", "Running"},
                    {"__meta_kubernetes_pod_ready", "true"},
                    {"__meta_kubernetes_pod_uid", "4c5b8f0e-6a7d-4e52-9a8e-x7k2p0000000"},
                }));
    }
    if (g.targets[0] == "10.244.1.17") {
      EXPECT_EQ(MetaLabels(g).at("__meta_kubernetes_pod_container_init"), "true");
      EXPECT_EQ(MetaLabels(g).count("__meta_kubernetes_pod_container_port_number"), 0U);
    }
    if (g.targets[0] == "10.244.1.23:8000") {
      const auto m = MetaLabels(g);
      EXPECT_EQ(m.at("__meta_kubernetes_pod_controller_kind"), "ReplicaSet");
      EXPECT_EQ(m.at("__meta_kubernetes_pod_controller_name"), "vllm-llama3-8b-7d9f8c6b5");
      EXPECT_EQ(m.at("__meta_kubernetes_pod_label_model"), "llama-3-8b");
      EXPECT_EQ(m.at("__meta_kubernetes_pod_container_port_name"), "http");
    }
  }
  // A LIST, then a WATCH from the list's resourceVersion (103: three adds after 100).
  ASSERT_TRUE(WaitFor([&] { return api.Count("/api/v1/pods", true) > 0; }));
  const std::vector<FakeKubernetesApi::Request> r = api.requests();
  ASSERT_GE(r.size(), 2U);
  EXPECT_EQ(r[0].target, "/api/v1/pods?limit=500");
  EXPECT_THAT(r[1].target, ::testing::MatchesRegex("/api/v1/pods\\?allowWatchBookmarks=true&"
                                                   "resourceVersion=103&timeoutSeconds=[0-9]+&"
                                                   "watch=true"));
}

// The docs' configuration (docs/scraping.md, "Kubernetes discovery"):
// relabeling keeps the pods of each job and builds instance and node.
constexpr std::string_view kTwoJobs = R"(scrape_configs:
  - job_name: dcgm
    kubernetes_sd_configs:
      - role: pod
        api_server: API
        namespaces: {names: [gpu-operator]}
        selectors: [{role: pod, label: app=nvidia-dcgm-exporter}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app]
        regex: nvidia-dcgm-exporter
        action: keep
      - source_labels: [__meta_kubernetes_pod_container_port_name]
        regex: metrics
        action: keep
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: instance
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: node
  - job_name: vllm
    kubernetes_sd_configs:
      - role: pod
        api_server: API
        namespaces: {names: [inference]}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app, __meta_kubernetes_pod_container_port_name]
        regex: vllm;http
        action: keep
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Succeeded|Failed
        action: drop
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: instance
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: Hostname
      - source_labels: [__meta_kubernetes_pod_label_model]
        target_label: model
)";

ScrapeConfig TwoJobs(const FakeKubernetesApi& api) {
  std::string yaml(kTwoJobs);
  for (std::size_t at; (at = yaml.find("API")) != std::string::npos;)
    yaml.replace(at, 3, api.url());
  Result<ScrapeConfig> c = ParseScrapeConfig(yaml, "scrape.yaml");
  EXPECT_TRUE(c.has_value()) << c.error().message();
  return c.value_or(ScrapeConfig{});
}

TEST_F(KubernetesSdTest, RelabelingKeepsLabelledPodsAndBuildsInstanceAndNode) {
  FakeKubernetesApi api;
  api.Add("pods", DcgmExporterPod("x7k2p", "gpu-node-1", "10.244.1.17"));
  api.Add("pods", DcgmExporterPod("q9m4d", "gpu-node-2", "10.244.2.9"));
  api.Add("pods", VllmPod("vllm-llama3-8b-7d9f8c6b5-x2kqp", "gpu-node-1", "10.244.1.23"));
  api.Add("pods", VllmPod("vllm-llama3-8b-7d9f8c6b5-done", "gpu-node-2", "10.244.2.30", "Succeeded",
                          "False"));
  Discovery::Options options;
  options.kubernetes = FastOptions();
  Discovery d(TwoJobs(api), clock_, Recorder(), options);
  ASSERT_TRUE(d.RefreshNow().ok());

  const std::vector<Target> dcgm = TargetsOf("dcgm");
  ASSERT_EQ(dcgm.size(), 2U);
  EXPECT_EQ(dcgm[0].url, "http://10.244.1.17:9400/metrics");
  EXPECT_EQ(dcgm[0].labels,
            (model::Labels{{"instance", "gpu-node-1"}, {"job", "dcgm"}, {"node", "gpu-node-1"}}));
  EXPECT_EQ(dcgm[1].url, "http://10.244.2.9:9400/metrics");
  EXPECT_EQ(dcgm[1].labels,
            (model::Labels{{"instance", "gpu-node-2"}, {"job", "dcgm"}, {"node", "gpu-node-2"}}));
  const std::vector<Target> vllm = TargetsOf("vllm");
  ASSERT_EQ(vllm.size(), 1U);  // the Succeeded pod is dropped
  EXPECT_EQ(vllm[0].url, "http://10.244.1.23:8000/metrics");
  EXPECT_EQ(vllm[0].labels, (model::Labels{{"Hostname", "gpu-node-1"},
                                           {"instance", "vllm-llama3-8b-7d9f8c6b5-x2kqp"},
                                           {"job", "vllm"},
                                           {"model", "llama-3-8b"}}));
  // Each job reads its namespace, with its selector.
  EXPECT_EQ(api.Count("/api/v1/namespaces/gpu-operator/pods", false), 1);
  EXPECT_EQ(api.Count("/api/v1/namespaces/inference/pods", false), 1);
  EXPECT_EQ(api.requests()[0].target.find("/api/v1/pods"), std::string::npos);

  const std::vector<Discovery::SourceStatus> sources = d.Sources();
  ASSERT_EQ(sources.size(), 2U);
  EXPECT_EQ(sources[0].kind, "kubernetes");
  EXPECT_EQ(sources[0].name, api.url() + " role=pod namespaces=gpu-operator");
  EXPECT_EQ(sources[0].targets, 4U);  // before relabeling: port and init container per pod
  EXPECT_EQ(sources[0].last_error, "");
  EXPECT_GT(sources[0].last_refresh_ms, 0);
}

TEST_F(KubernetesSdTest, WatchEventsChangeTargetsWithinASecond) {
  FakeKubernetesApi api;
  api.Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  Discovery::Options options;
  options.kubernetes = FastOptions();
  Discovery d(TwoJobs(api), clock_, Recorder(), options);
  ASSERT_TRUE(d.RefreshNow().ok());
  d.Start();
  ASSERT_THAT(UrlsOf("vllm"), ::testing::ElementsAre("http://10.244.1.23:8000/metrics"));

  // ADDED
  auto t0 = std::chrono::steady_clock::now();
  api.Add("pods", VllmPod("vllm-b", "gpu-node-2", "10.244.2.31"));
  ASSERT_TRUE(WaitFor([&] { return TargetsOf("vllm").size() == 2; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  EXPECT_THAT(UrlsOf("vllm"), ::testing::ElementsAre("http://10.244.1.23:8000/metrics",
                                                     "http://10.244.2.31:8000/metrics"));
  // MODIFIED: the pod finished; relabeling now drops it.
  t0 = std::chrono::steady_clock::now();
  api.Modify("pods", VllmPod("vllm-b", "gpu-node-2", "10.244.2.31", "Failed", "False"));
  ASSERT_TRUE(WaitFor([&] { return TargetsOf("vllm").size() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  // MODIFIED again: rescheduled elsewhere, a new IP.
  api.Modify("pods", VllmPod("vllm-b", "gpu-node-3", "10.244.3.5"));
  ASSERT_TRUE(WaitFor([&] { return TargetsOf("vllm").size() == 2; }));
  EXPECT_EQ(TargetsOf("vllm")[1].url, "http://10.244.3.5:8000/metrics");
  EXPECT_EQ(model::LabelValue(TargetsOf("vllm")[1].labels, "Hostname"), "gpu-node-3");
  // DELETED
  t0 = std::chrono::steady_clock::now();
  api.Delete("pods", "inference", "vllm-a");
  ASSERT_TRUE(WaitFor([&] { return TargetsOf("vllm").size() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  EXPECT_THAT(UrlsOf("vllm"), ::testing::ElementsAre("http://10.244.3.5:8000/metrics"));
  // All of it from one list per namespace: the rest came by watching.
  EXPECT_EQ(api.Count("/api/v1/namespaces/inference/pods", false), 1);
  EXPECT_GE(api.Count("/api/v1/namespaces/inference/pods", true), 1);
  d.Stop();
}

TEST_F(KubernetesSdTest, ExpiredResourceVersionRelists) {
  FakeKubernetesApi api;
  api.Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  api.Add("pods", VllmPod("vllm-b", "gpu-node-1", "10.244.1.24"));
  auto sd = Sd("{role: pod, api_server: '" + api.url() + "', namespaces: {names: [inference]}}",
               FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  ASSERT_EQ(sd->state().groups.size(), 2U);
  // Changes whose events the client never sees, then the watch's
  // resourceVersion expires: only a new list can find them.
  api.DeleteSilently("pods", "inference", "vllm-a");
  api.ChangeSilently("pods", VllmPod("vllm-c", "gpu-node-2", "10.244.2.40"));
  api.Expire();
  ASSERT_TRUE(WaitFor([&] {
    const KubernetesSd::State s = sd->state();
    return s.groups.size() == 2 && (s.groups[0].targets[0] == "10.244.2.40:8000" ||
                                    s.groups[1].targets[0] == "10.244.2.40:8000");
  }));
  EXPECT_EQ(api.Count("/api/v1/namespaces/inference/pods", false), 2);
  EXPECT_EQ(sd->state().error, "");  // expiry is routine, not an error
  std::vector<std::string> addresses;
  for (const TargetGroup& g : sd->state().groups) addresses.push_back(g.targets[0]);
  EXPECT_THAT(addresses, ::testing::UnorderedElementsAre("10.244.1.24:8000", "10.244.2.40:8000"));
}

TEST_F(KubernetesSdTest, ApiDownKeepsTheTargetsAndReportsTheErrorUntilItIsBack) {
  auto api = std::make_unique<FakeKubernetesApi>();
  const std::uint16_t port = api->port();
  api->Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  std::vector<Status> reported;
  Mutex reported_mu;
  Discovery::Options options;
  options.kubernetes = FastOptions();
  options.on_error = [&](const Status& s) {
    MutexLock lock(reported_mu);
    reported.push_back(s);
  };
  Discovery d(TwoJobs(*api), clock_, Recorder(), options);
  ASSERT_TRUE(d.RefreshNow().ok());
  d.Start();
  ASSERT_EQ(TargetsOf("vllm").size(), 1U);

  api.reset();  // the API server goes away
  const auto vllm_source = [&] {
    for (const Discovery::SourceStatus& s : d.Sources()) {
      if (s.job == "vllm") return s;
    }
    return Discovery::SourceStatus{};
  };
  // The watch under way may fail first (naming the watch's URL); the
  // re-lists after it fail the same way.
  const std::string refused = "GET http://127.0.0.1:" + std::to_string(port) +
                              "/api/v1/namespaces/inference/pods?limit=500: connect: Connection "
                              "refused";
  ASSERT_TRUE(WaitFor([&] { return vllm_source().last_error == refused; }));
  const Discovery::SourceStatus down = vllm_source();
  EXPECT_EQ(down.targets, 1U);  // the last good ones
  EXPECT_EQ(TargetsOf("vllm").size(), 1U);
  {
    MutexLock lock(reported_mu);
    ASSERT_FALSE(reported.empty());
    EXPECT_THAT(reported.front().message(), HasSubstr("Connection refused"));
  }

  // Back, with a change made meanwhile: listed again, the error gone.
  FakeKubernetesApi back(port);
  back.Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  back.Add("pods", VllmPod("vllm-b", "gpu-node-2", "10.244.2.31"));
  ASSERT_TRUE(WaitFor([&] { return vllm_source().last_error.empty(); }));
  ASSERT_TRUE(WaitFor([&] { return TargetsOf("vllm").size() == 2; }));
  d.Stop();
}

TEST_F(KubernetesSdTest, UnauthorizedAndForbiddenAreReportedWithTheApiMessage) {
  FakeKubernetesApi api;
  api.Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  api.FailWith(403,
               "pods is forbidden: User \"system:serviceaccount:monitoring:gpucanary\" cannot "
               "list resource \"pods\" in API group \"\" in the namespace \"inference\"");
  auto sd = Sd("{role: pod, api_server: '" + api.url() + "', namespaces: {names: [inference]}}",
               FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  EXPECT_EQ(sd->state().error,
            "GET " + api.url() +
                "/api/v1/namespaces/inference/pods?limit=500: HTTP status 403: pods is forbidden: "
                "User \"system:serviceaccount:monitoring:gpucanary\" cannot list resource "
                "\"pods\" in API group \"\" in the namespace \"inference\"");
  EXPECT_TRUE(sd->state().groups.empty());

  api.FailWith(401, "Unauthorized");
  ASSERT_TRUE(
      WaitFor([&] { return sd->state().error.ends_with("HTTP status 401: Unauthorized"); }));
  // Retried with backoff; once allowed, found.
  api.FailWith(0, "");
  ASSERT_TRUE(WaitFor([&] { return sd->state().groups.size() == 1; }));
  EXPECT_EQ(sd->state().error, "");
  EXPECT_GE(sd->state().failures, 2U);
}

TEST_F(KubernetesSdTest, AnswersThatAreNotListsAreReportedAndKeepTheTargets) {
  FakeKubernetesApi api;
  api.Add("pods", VllmPod("vllm-a", "gpu-node-1", "10.244.1.23"));
  auto sd = Sd("{role: pod, api_server: '" + api.url() + "'}", FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  ASSERT_EQ(sd->state().groups.size(), 1U);
  api.AnswerListsWith("<html>proxy error</html>");
  api.Expire();  // the watch ends with 410: a new list, which gets the HTML
  ASSERT_TRUE(WaitFor([&] { return !sd->state().error.empty(); }));
  EXPECT_EQ(sd->state().error, "GET " + api.url() +
                                   "/api/v1/pods?limit=500: the answer is not a Kubernetes list "
                                   "(not JSON): <html>proxy error</html>");
  EXPECT_EQ(sd->state().groups.size(), 1U);
  api.AnswerListsWith(R"({"kind":"PodList","items":"x","metadata":{}})");
  ASSERT_TRUE(WaitFor([&] { return sd->state().error.find("no items") != std::string::npos; }));
  EXPECT_EQ(sd->state().groups.size(), 1U);
}

TEST_F(KubernetesSdTest, NamespacesAndSelectorsReachTheRequestUrl) {
  FakeKubernetesApi api;
  auto sd =
      Sd("{role: endpoints, api_server: '" + api.url() +
             "', namespaces: {names: [inference, gpu-operator]}, selectors: [{role: endpoints, "
             "label: 'app in (vllm)'}, {role: pod, field: 'status.phase=Running', label: "
             "'!canary'}]}",
         FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  ASSERT_TRUE(WaitFor([&] { return api.Count("/api/v1/namespaces/gpu-operator/pods", true) > 0; }));
  std::vector<std::string> lists;
  for (const FakeKubernetesApi::Request& r : api.requests()) {
    if (!r.watch) lists.push_back(r.target);
  }
  EXPECT_THAT(
      lists,
      ::testing::UnorderedElementsAre(
          "/api/v1/namespaces/inference/endpoints?labelSelector=app%20in%20%28vllm%29&limit=500",
          "/api/v1/namespaces/inference/services?limit=500",
          "/api/v1/namespaces/inference/pods?fieldSelector=status.phase%3DRunning&"
          "labelSelector=%21canary&limit=500",
          "/api/v1/namespaces/gpu-operator/endpoints?labelSelector=app%20in%20%28vllm%29&"
          "limit=500",
          "/api/v1/namespaces/gpu-operator/services?limit=500",
          "/api/v1/namespaces/gpu-operator/pods?fieldSelector=status.phase%3DRunning&"
          "labelSelector=%21canary&limit=500"));
  for (const FakeKubernetesApi::Request& r : api.requests()) {
    if (r.watch && r.target.starts_with("/api/v1/namespaces/gpu-operator/pods")) {
      EXPECT_THAT(r.target, HasSubstr("fieldSelector=status.phase%3DRunning&labelSelector=%21"
                                      "canary&resourceVersion="));
    }
  }
  EXPECT_EQ(sd->Describe(), api.url() + " role=endpoints namespaces=inference,gpu-operator");
}

TEST_F(KubernetesSdTest, InClusterUsesTheServiceAccountAndReadsTheTokenEachTime) {
  net::test::TestPki pki;
  const net::TlsServerOptions tls = pki.Server("server");  // 127.0.0.1, by the test CA
  FakeKubernetesApi api(0, &tls);
  api.Add("pods", DcgmExporterPod("x7k2p", "gpu-node-1", "10.244.1.17"));
  KubernetesSd::Options o = FastOptions();
  o.in_cluster.service_host = "127.0.0.1";
  o.in_cluster.service_port = std::to_string(api.port());
  o.in_cluster.ca_file = pki.Crt("ca");
  o.in_cluster.token_file = pki.dir.Write("token", "eyJhbGciOiJSUzI1NiJ9.first\n");
  o.in_cluster.namespace_file = pki.dir.Write("namespace", "gpu-operator");
  auto sd = Sd("{role: pod, namespaces: {own_namespace: true}}", o);
  EXPECT_EQ(sd->Describe(), "https://127.0.0.1:" + std::to_string(api.port()) +
                                " role=pod namespaces=gpu-operator");
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  EXPECT_EQ(sd->state().error, "");
  ASSERT_EQ(sd->state().groups.size(), 2U);
  std::vector<FakeKubernetesApi::Request> r = api.requests();
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].target, "/api/v1/namespaces/gpu-operator/pods?limit=500");
  EXPECT_EQ(r[0].authorization, "Bearer eyJhbGciOiJSUzI1NiJ9.first");

  // The kubelet rotates the token file; the next request sends the new one.
  pki.dir.Write("token", "eyJhbGciOiJSUzI1NiJ9.second");
  api.Add("pods", DcgmExporterPod("q9m4d", "gpu-node-2", "10.244.2.9"));
  ASSERT_TRUE(WaitFor([&] {
    r = api.requests();
    return r.back().authorization == "Bearer eyJhbGciOiJSUzI1NiJ9.second";
  }));
}

TEST_F(KubernetesSdTest, InClusterNeedsItsEnvironmentAndFiles) {
  KubernetesSd::Options o = FastOptions();
  o.in_cluster.service_host = "";
  o.in_cluster.service_port = "";
  if (std::getenv("KUBERNETES_SERVICE_HOST") == nullptr) {  // NOLINT(concurrency-mt-unsafe)
    auto sd = Sd("{role: node}", o);
    sd->Start();
    EXPECT_TRUE(sd->WaitFirstSync(milliseconds(10)));
    EXPECT_EQ(sd->state().error,
              "k kubernetes_sd_configs[0]: unable to load in-cluster configuration, "
              "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined (or set "
              "api_server)");
    EXPECT_EQ(sd->Describe(), "in-cluster role=node");
  }
  o.in_cluster.service_host = "127.0.0.1";
  o.in_cluster.service_port = "1";
  o.in_cluster.namespace_file = "/nonexistent/namespace";
  auto own = Sd("{role: pod, namespaces: {own_namespace: true}}", o);
  EXPECT_EQ(own->state().error,
            "k kubernetes_sd_configs[0]: could not determine the pod's namespace: cannot read "
            "/nonexistent/namespace");
}

TEST_F(KubernetesSdTest, NodesAreFoundAtTheirKubeletPort) {
  FakeKubernetesApi api;
  api.Add("nodes", GpuNode("gpu-node-1", "10.0.1.11"));
  api.Add("nodes", GpuNode("gpu-node-2", "10.0.1.12"));
  auto sd = Sd("{role: node, api_server: '" + api.url() +
                   "', namespaces: {names: [x]}, authorization: {credentials: s3cr3t}}",
               FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  const KubernetesSd::State s = sd->state();
  ASSERT_EQ(s.groups.size(), 2U);
  EXPECT_EQ(s.groups[0].targets[0], "10.0.1.11:10250");
  EXPECT_EQ(s.groups[0].source, "k kubernetes_sd_configs[0] node/gpu-node-1");
  const auto m = MetaLabels(s.groups[0]);
  EXPECT_EQ(m.at("__meta_kubernetes_node_name"), "gpu-node-1");
  EXPECT_EQ(m.at("__meta_kubernetes_node_address_InternalIP"), "10.0.1.11");
  EXPECT_EQ(m.at("__meta_kubernetes_node_address_Hostname"), "gpu-node-1");
  EXPECT_EQ(m.at("__meta_kubernetes_node_label_nvidia_com_gpu_product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(m.at("__meta_kubernetes_node_condition_ready"), "true");
  JobConfig job;
  EXPECT_EQ(
      model::LabelValue(DiscoveredLabels(job, s.groups[0].targets[0], s.groups[0]), "instance"),
      "gpu-node-1");
  EXPECT_EQ(api.Count("/api/v1/nodes", false), 1);  // cluster-wide: namespaces do not apply
  EXPECT_EQ(api.requests().at(0).authorization, "Bearer s3cr3t");
  api.Delete("nodes", "", "gpu-node-2");
  ASSERT_TRUE(WaitFor([&] { return sd->state().groups.size() == 1; }));
}

TEST_F(KubernetesSdTest, EndpointsJoinTheirPodsAndServices) {
  FakeKubernetesApi api;
  Json pod = VllmPod("vllm-a", "gpu-node-1", "10.244.1.23", "Pending", "False");
  api.Add("pods", pod);
  api.Add("services", Json::parse(R"({"metadata": {"name": "vllm", "namespace": "inference",
    "labels": {"app": "vllm"}}, "spec": {"clusterIP": "10.96.4.20", "type": "ClusterIP",
    "ports": [{"name": "http", "port": 80, "targetPort": 8000, "protocol": "TCP"}]}})"));
  api.Add("endpoints", Json::parse(R"({"metadata": {"name": "vllm", "namespace": "inference"},
    "subsets": [{"addresses": [{"ip": "10.244.1.23", "nodeName": "gpu-node-1",
                   "targetRef": {"kind": "Pod", "namespace": "inference", "name": "vllm-a"}}],
                 "ports": [{"name": "http", "port": 8000, "protocol": "TCP"}]}]})"));
  auto sd = Sd("{role: endpoints, api_server: '" + api.url() + "'}", FastOptions());
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  ASSERT_EQ(sd->state().groups.size(), 1U);
  auto m = MetaLabels(sd->state().groups[0]);
  EXPECT_EQ(sd->state().groups[0].targets[0], "10.244.1.23:8000");
  EXPECT_EQ(m.at("__meta_kubernetes_service_name"), "vllm");
  EXPECT_EQ(m.at("__meta_kubernetes_service_label_app"), "vllm");
  EXPECT_EQ(m.at("__meta_kubernetes_endpoints_name"), "vllm");
  EXPECT_EQ(m.at("__meta_kubernetes_endpoint_ready"), "true");
  EXPECT_EQ(m.at("__meta_kubernetes_endpoint_node_name"), "gpu-node-1");
  EXPECT_EQ(m.at("__meta_kubernetes_pod_name"), "vllm-a");
  EXPECT_EQ(m.at("__meta_kubernetes_pod_phase"), "Pending");
  EXPECT_EQ(m.at("__meta_kubernetes_pod_container_port_name"), "http");

  // The pod's phase changes without its Endpoints changing: rebuilt
  // (endpoints.go, prometheus#11305; as there, only for a pod among the
  // ready addresses, which its podIndex covers).
  pod["status"]["phase"] = "Running";
  api.Modify("pods", pod);
  ASSERT_TRUE(WaitFor([&] {
    return MetaLabels(sd->state().groups.at(0)).at("__meta_kubernetes_pod_phase") == "Running";
  }));
}

TEST_F(KubernetesSdTest, ListsArePagedAndBookmarksMoveTheResourceVersion) {
  FakeKubernetesApi api;
  for (int i = 0; i < 5; ++i) {
    api.Add("pods", VllmPod("vllm-" + std::to_string(i), "gpu-node-1",
                            "10.244.1." + std::to_string(30 + i)));
  }
  KubernetesSd::Options o = FastOptions();
  o.list_page_size = 2;
  auto sd = Sd("{role: pod, api_server: '" + api.url() + "'}", o);
  sd->Start();
  ASSERT_TRUE(sd->WaitFirstSync(milliseconds(5000)));
  EXPECT_EQ(sd->state().groups.size(), 5U);
  std::vector<std::string> lists;
  for (const FakeKubernetesApi::Request& r : api.requests()) {
    if (!r.watch) lists.push_back(r.target);
  }
  EXPECT_THAT(lists,
              ::testing::ElementsAre("/api/v1/pods?limit=2", "/api/v1/pods?continue=2&limit=2",
                                     "/api/v1/pods?continue=4&limit=2"));
  api.Bookmark("pods");  // resourceVersion 106
  ASSERT_TRUE(WaitFor([&] {
    for (const FakeKubernetesApi::Request& r : api.requests()) {
      if (r.watch && r.target.find("resourceVersion=106&") != std::string::npos) return true;
    }
    return false;
  }));
}

}  // namespace
}  // namespace gpucanary::scrape
