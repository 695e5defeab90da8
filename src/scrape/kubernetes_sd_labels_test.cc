// The target groups of pods, nodes and endpoints, checked against
// Prometheus's own expectations: each case below is a test of
// discovery/kubernetes/{pod,node,endpoints}_test.go at prometheus/prometheus
// d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86 (named in its comment), its Go
// objects written as the JSON the API server sends for them and its
// expected label sets copied as they are.

#include "scrape/kubernetes_sd_labels.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/labels.h"

namespace gpucanary::scrape {
namespace {

using Json = nlohmann::json;
using Set = std::map<std::string, std::string>;

LabelPairs L(const Set& set) { return {set.begin(), set.end()}; }

const Json* None(const std::string&) { return nullptr; }

// pod_test.go makeMultiPortPods.
Json MultiPortPod() {
  return Json::parse(R"({
    "metadata": {"name": "testpod", "namespace": "default", "uid": "abc123",
      "labels": {"test/label": "testvalue"},
      "annotations": {"test/annotation": "testannotationvalue"},
      "ownerReferences": [{"kind": "testcontrollerkind", "name": "testcontrollername",
                           "controller": true}]},
    "spec": {"nodeName": "testnode", "containers": [
      {"name": "testcontainer0", "image": "testcontainer0:latest", "ports": [
        {"name": "testport0", "protocol": "TCP", "containerPort": 9000},
        {"name": "testport1", "protocol": "UDP", "containerPort": 9001}]},
      {"name": "testcontainer1", "image": "testcontainer1:latest"}]},
    "status": {"podIP": "1.2.3.4", "hostIP": "2.3.4.5", "phase": "Running",
      "conditions": [{"type": "Ready", "status": "True"}],
      "containerStatuses": [
        {"name": "testcontainer0", "containerID": "docker://a1b2c3d4e5f6"},
        {"name": "testcontainer1", "containerID": "containerd://6f5e4d3c2b1a"}]}})");
}

// pod_test.go TestPodDiscoveryBeforeRun.
TEST(KubernetesSdLabelsTest, PodPrometheusMultiPortCase) {
  const KubernetesGroup g = PodGroup(MultiPortPod());
  EXPECT_EQ(g.source, "pod/default/testpod");
  EXPECT_EQ(g.labels,
            L({
                {"__meta_kubernetes_pod_name", "testpod"},
                {"__meta_kubernetes_namespace", "default"},
                {"__meta_kubernetes_pod_label_test_label", "testvalue"},
                {"__meta_kubernetes_pod_labelpresent_test_label", "true"},
                {"__meta_kubernetes_pod_annotation_test_annotation", "testannotationvalue"},
                {"__meta_kubernetes_pod_annotationpresent_test_annotation", "true"},
                {"__meta_kubernetes_pod_node_name", "testnode"},
                {"__meta_kubernetes_pod_ip", "1.2.3.4"},
                {"__meta_kubernetes_pod_host_ip", "2.3.4.5"},
                {"__meta_kubernetes_pod_ready", "true"},
                {"__meta_kubernetes_pod_phase", "Running"},
                {"__meta_kubernetes_pod_uid", "abc123"},
                {"__meta_kubernetes_pod_controller_kind", "testcontrollerkind"},
                {"__meta_kubernetes_pod_controller_name", "testcontrollername"},
            }));
  ASSERT_EQ(g.targets.size(), 3U);
  EXPECT_EQ(g.targets[0], L({
                              {"__address__", "1.2.3.4:9000"},
                              {"__meta_kubernetes_pod_container_name", "testcontainer0"},
                              {"__meta_kubernetes_pod_container_image", "testcontainer0:latest"},
                              {"__meta_kubernetes_pod_container_port_name", "testport0"},
                              {"__meta_kubernetes_pod_container_port_number", "9000"},
                              {"__meta_kubernetes_pod_container_port_protocol", "TCP"},
                              {"__meta_kubernetes_pod_container_init", "false"},
                              {"__meta_kubernetes_pod_container_id", "docker://a1b2c3d4e5f6"},
                          }));
  EXPECT_EQ(g.targets[1], L({
                              {"__address__", "1.2.3.4:9001"},
                              {"__meta_kubernetes_pod_container_name", "testcontainer0"},
                              {"__meta_kubernetes_pod_container_image", "testcontainer0:latest"},
                              {"__meta_kubernetes_pod_container_port_name", "testport1"},
                              {"__meta_kubernetes_pod_container_port_number", "9001"},
                              {"__meta_kubernetes_pod_container_port_protocol", "UDP"},
                              {"__meta_kubernetes_pod_container_init", "false"},
                              {"__meta_kubernetes_pod_container_id", "docker://a1b2c3d4e5f6"},
                          }));
  // A container without ports: one target at the bare pod IP.
  EXPECT_EQ(g.targets[2], L({
                              {"__address__", "1.2.3.4"},
                              {"__meta_kubernetes_pod_container_name", "testcontainer1"},
                              {"__meta_kubernetes_pod_container_image", "testcontainer1:latest"},
                              {"__meta_kubernetes_pod_container_init", "false"},
                              {"__meta_kubernetes_pod_container_id", "containerd://6f5e4d3c2b1a"},
                          }));
}

// pod_test.go TestPodDiscoveryInitContainer (makeInitContainerPods).
TEST(KubernetesSdLabelsTest, PodPrometheusInitContainerCase) {
  const KubernetesGroup g = PodGroup(Json::parse(R"({
    "metadata": {"name": "testpod", "namespace": "default", "uid": "abc123"},
    "spec": {"nodeName": "testnode",
      "containers": [{"name": "testcontainer", "image": "testcontainer:latest",
        "ports": [{"name": "testport", "protocol": "TCP", "containerPort": 9000}]}],
      "initContainers": [{"name": "initcontainer", "image": "initcontainer:latest"}]},
    "status": {"podIP": "1.2.3.4", "hostIP": "2.3.4.5", "phase": "Pending",
      "conditions": [{"type": "Ready", "status": "False"}],
      "containerStatuses": [{"name": "testcontainer", "containerID": "docker://a1b2c3d4e5f6"}],
      "initContainerStatuses": [
        {"name": "initcontainer", "containerID": "containerd://6f5e4d3c2b1a"}]}})"));
  EXPECT_EQ(g.labels, L({
                          {"__meta_kubernetes_pod_name", "testpod"},
                          {"__meta_kubernetes_namespace", "default"},
                          {"__meta_kubernetes_pod_node_name", "testnode"},
                          {"__meta_kubernetes_pod_ip", "1.2.3.4"},
                          {"__meta_kubernetes_pod_host_ip", "2.3.4.5"},
                          {"__meta_kubernetes_pod_ready", "false"},
                          {"__meta_kubernetes_pod_phase", "Pending"},
                          {"__meta_kubernetes_pod_uid", "abc123"},
                      }));
  ASSERT_EQ(g.targets.size(), 2U);
  EXPECT_EQ(g.targets[0], L({
                              {"__address__", "1.2.3.4:9000"},
                              {"__meta_kubernetes_pod_container_name", "testcontainer"},
                              {"__meta_kubernetes_pod_container_image", "testcontainer:latest"},
                              {"__meta_kubernetes_pod_container_port_name", "testport"},
                              {"__meta_kubernetes_pod_container_port_number", "9000"},
                              {"__meta_kubernetes_pod_container_port_protocol", "TCP"},
                              {"__meta_kubernetes_pod_container_init", "false"},
                              {"__meta_kubernetes_pod_container_id", "docker://a1b2c3d4e5f6"},
                          }));
  EXPECT_EQ(g.targets[1], L({
                              {"__address__", "1.2.3.4"},
                              {"__meta_kubernetes_pod_container_name", "initcontainer"},
                              {"__meta_kubernetes_pod_container_image", "initcontainer:latest"},
                              {"__meta_kubernetes_pod_container_init", "true"},
                              {"__meta_kubernetes_pod_container_id", "containerd://6f5e4d3c2b1a"},
                          }));
}

// pod_test.go TestPodDiscoveryUpdateEmptyPodIP: no IP, no targets (the
// group stays, empty, so its targets go).
TEST(KubernetesSdLabelsTest, PodWithoutIpHasNoTargets) {
  Json pod = MultiPortPod();
  pod["status"].erase("podIP");
  const KubernetesGroup g = PodGroup(pod);
  EXPECT_EQ(g.source, "pod/default/testpod");
  EXPECT_TRUE(g.labels.empty());
  EXPECT_TRUE(g.targets.empty());
  EXPECT_TRUE(ToTargetGroups(g, "job").empty());
}

TEST(KubernetesSdLabelsTest, PodReadyIsUnknownWithoutTheCondition) {
  Json pod = MultiPortPod();
  pod["status"]["conditions"] = Json::array({{{"type", "PodScheduled"}, {"status", "True"}}});
  const LabelPairs labels = PodGroup(pod).labels;
  EXPECT_NE(
      std::find(labels.begin(), labels.end(),
                std::pair<std::string, std::string>("__meta_kubernetes_pod_ready", "unknown")),
      labels.end());
}

// node_test.go makeNode(name, "1.2.3.4", providerID, labels, annotations, conditions).
Json MakeNode(const std::string& name, const std::string& provider_id, const Json& labels,
              const Json& annotations, const Json& conditions) {
  Json node = {{"metadata", {{"name", name}}},
               {"spec", {{"providerID", provider_id}}},
               {"status",
                {{"addresses", Json::array({{{"type", "InternalIP"}, {"address", "1.2.3.4"}}})},
                 {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}}}}};
  if (!labels.empty()) node["metadata"]["labels"] = labels;
  if (!annotations.empty()) node["metadata"]["annotations"] = annotations;
  if (!conditions.empty()) node["status"]["conditions"] = conditions;
  return node;
}

// node_test.go TestNodeDiscoveryBeforeStart.
TEST(KubernetesSdLabelsTest, NodePrometheusCase) {
  const std::optional<KubernetesGroup> g = NodeGroup(
      MakeNode("test", "aws:///nl-north-7b/i-03149834983492827", {{"test-label", "testvalue"}},
               {{"test-annotation", "testannotationvalue"}}, Json::array()));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->source, "node/test");
  ASSERT_EQ(g->targets.size(), 1U);
  EXPECT_EQ(g->targets[0], L({
                               {"__address__", "1.2.3.4:10250"},
                               {"instance", "test"},
                               {"__meta_kubernetes_node_address_InternalIP", "1.2.3.4"},
                           }));
  EXPECT_EQ(g->labels,
            L({
                {"__meta_kubernetes_node_name", "test"},
                {"__meta_kubernetes_node_provider_id", "aws:///nl-north-7b/i-03149834983492827"},
                {"__meta_kubernetes_node_label_test_label", "testvalue"},
                {"__meta_kubernetes_node_labelpresent_test_label", "true"},
                {"__meta_kubernetes_node_annotation_test_annotation", "testannotationvalue"},
                {"__meta_kubernetes_node_annotationpresent_test_annotation", "true"},
            }));
}

// node_test.go TestNodeDiscoveryConditions, "node multiple conditions".
TEST(KubernetesSdLabelsTest, NodeConditionsPrometheusCase) {
  const Json conditions = Json::parse(R"([{"type": "MemoryPressure", "status": "False"},
    {"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}])");
  const std::optional<KubernetesGroup> g = NodeGroup(
      MakeNode("test", "aws:///test-zone/i-test", Json::object(), Json::object(), conditions));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->labels, L({
                           {"__meta_kubernetes_node_name", "test"},
                           {"__meta_kubernetes_node_provider_id", "aws:///test-zone/i-test"},
                           {"__meta_kubernetes_node_condition_memorypressure", "false"},
                           {"__meta_kubernetes_node_condition_ready", "true"},
                           {"__meta_kubernetes_node_condition_diskpressure", "false"},
                       }));
}

// node.go nodeAddress: InternalIP, InternalDNS, ExternalIP, ExternalDNS,
// LegacyHostIP, Hostname; each type's first address as a label.
TEST(KubernetesSdLabelsTest, NodeAddressPreference) {
  Json node = MakeNode("gpu-node-7", "", Json::object(), Json::object(), Json::array());
  node["status"]["addresses"] = Json::parse(R"([
    {"type": "Hostname", "address": "gpu-node-7"},
    {"type": "ExternalIP", "address": "203.0.113.7"},
    {"type": "ExternalIP", "address": "203.0.113.8"},
    {"type": "InternalDNS", "address": "gpu-node-7.internal"}])");
  std::optional<KubernetesGroup> g = NodeGroup(node);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->targets[0],
            L({
                {"__address__", "gpu-node-7.internal:10250"},
                {"instance", "gpu-node-7"},
                {"__meta_kubernetes_node_address_Hostname", "gpu-node-7"},
                {"__meta_kubernetes_node_address_ExternalIP", "203.0.113.7"},
                {"__meta_kubernetes_node_address_InternalDNS", "gpu-node-7.internal"},
            }));
  node["status"]["addresses"] = Json::parse(R"([{"type": "InternalIP", "address": "fd00::7"}])");
  g = NodeGroup(node);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->targets[0].front(),
            (std::pair<std::string, std::string>("__address__", "[fd00::7]:10250")));
  node["status"].erase("addresses");
  EXPECT_FALSE(NodeGroup(node).has_value());  // "No node address found"
}

// endpoints_test.go makeEndpoints.
Json MakeEndpoints() {
  return Json::parse(R"({
    "metadata": {"name": "testendpoints", "namespace": "default",
                 "annotations": {"test.annotation": "test"}},
    "subsets": [
      {"addresses": [{"ip": "1.2.3.4", "hostname": "testendpoint1", "nodeName": "foobar"}],
       "ports": [{"name": "testport", "port": 9000, "protocol": "TCP"}]},
      {"addresses": [{"ip": "2.3.4.5"}], "notReadyAddresses": [{"ip": "2.3.4.5"}],
       "ports": [{"name": "testport", "port": 9001, "protocol": "TCP"}]},
      {"addresses": [{"ip": "6.7.8.9", "targetRef": {"kind": "Node", "name": "barbaz"}}],
       "ports": [{"name": "testport", "port": 9002, "protocol": "TCP"}]}]})");
}

const std::vector<LabelPairs> kMakeEndpointsTargets = {
    L({{"__address__", "1.2.3.4:9000"},
       {"__meta_kubernetes_endpoint_hostname", "testendpoint1"},
       {"__meta_kubernetes_endpoint_node_name", "foobar"},
       {"__meta_kubernetes_endpoint_port_name", "testport"},
       {"__meta_kubernetes_endpoint_port_protocol", "TCP"},
       {"__meta_kubernetes_endpoint_ready", "true"}}),
    L({{"__address__", "2.3.4.5:9001"},
       {"__meta_kubernetes_endpoint_port_name", "testport"},
       {"__meta_kubernetes_endpoint_port_protocol", "TCP"},
       {"__meta_kubernetes_endpoint_ready", "true"}}),
    L({{"__address__", "2.3.4.5:9001"},
       {"__meta_kubernetes_endpoint_port_name", "testport"},
       {"__meta_kubernetes_endpoint_port_protocol", "TCP"},
       {"__meta_kubernetes_endpoint_ready", "false"}}),
    L({{"__address__", "6.7.8.9:9002"},
       {"__meta_kubernetes_endpoint_address_target_kind", "Node"},
       {"__meta_kubernetes_endpoint_address_target_name", "barbaz"},
       {"__meta_kubernetes_endpoint_port_name", "testport"},
       {"__meta_kubernetes_endpoint_port_protocol", "TCP"},
       {"__meta_kubernetes_endpoint_ready", "true"}}),
};

// endpoints_test.go TestEndpointsDiscoveryBeforeRun.
TEST(KubernetesSdLabelsTest, EndpointsPrometheusCase) {
  const KubernetesGroup g = EndpointsGroup(MakeEndpoints(), None, None);
  EXPECT_EQ(g.source, "endpoints/default/testendpoints");
  EXPECT_EQ(g.targets, kMakeEndpointsTargets);
  EXPECT_EQ(g.labels,
            L({{"__meta_kubernetes_namespace", "default"},
               {"__meta_kubernetes_endpoints_name", "testendpoints"},
               {"__meta_kubernetes_endpoints_annotation_test_annotation", "test"},
               {"__meta_kubernetes_endpoints_annotationpresent_test_annotation", "true"}}));
}

// endpoints_test.go TestEndpointsDiscoveryWithService.
TEST(KubernetesSdLabelsTest, EndpointsWithServicePrometheusCase) {
  const Json service = Json::parse(R"({"metadata": {"name": "testendpoints",
    "namespace": "default", "labels": {"app/name": "test"}}})");
  const KubernetesGroup g =
      EndpointsGroup(MakeEndpoints(), None, [&](const std::string& key) -> const Json* {
        return key == "default/testendpoints" ? &service : nullptr;
      });
  EXPECT_EQ(g.targets, kMakeEndpointsTargets);
  EXPECT_EQ(g.labels,
            L({{"__meta_kubernetes_namespace", "default"},
               {"__meta_kubernetes_endpoints_name", "testendpoints"},
               {"__meta_kubernetes_service_label_app_name", "test"},
               {"__meta_kubernetes_service_labelpresent_app_name", "true"},
               {"__meta_kubernetes_service_name", "testendpoints"},
               {"__meta_kubernetes_endpoints_annotation_test_annotation", "test"},
               {"__meta_kubernetes_endpoints_annotationpresent_test_annotation", "true"}}));
}

// endpoints_test.go TestEndpointsDiscoveryAdd: the pod's labels on its
// endpoint, and a target for the pod port no endpoint port covers.
TEST(KubernetesSdLabelsTest, EndpointsWithPodPrometheusCase) {
  const Json pod = Json::parse(R"({
    "metadata": {"name": "testpod", "namespace": "default", "uid": "deadbeef"},
    "spec": {"nodeName": "testnode", "containers": [
      {"name": "c1", "image": "c1:latest",
       "ports": [{"name": "mainport", "containerPort": 9000, "protocol": "TCP"}]},
      {"name": "c2", "image": "c2:latest",
       "ports": [{"name": "sideport", "containerPort": 9001, "protocol": "TCP"}]}]},
    "status": {"hostIP": "2.3.4.5", "podIP": "1.2.3.4"}})");
  const Json eps = Json::parse(R"({
    "metadata": {"name": "testendpoints", "namespace": "default"},
    "subsets": [{"addresses": [{"ip": "4.3.2.1",
                                "targetRef": {"kind": "Pod", "name": "testpod",
                                              "namespace": "default"}}],
                 "ports": [{"name": "testport", "port": 9000, "protocol": "TCP"}]}]})");
  EXPECT_EQ(EndpointsPodRefs(eps), (std::vector<std::string>{"default/testpod"}));
  const KubernetesGroup g = EndpointsGroup(
      eps,
      [&](const std::string& key) -> const Json* {
        return key == "default/testpod" ? &pod : nullptr;
      },
      None);
  ASSERT_EQ(g.targets.size(), 2U);
  EXPECT_EQ(g.targets[0], L({{"__address__", "4.3.2.1:9000"},
                             {"__meta_kubernetes_endpoint_port_name", "testport"},
                             {"__meta_kubernetes_endpoint_port_protocol", "TCP"},
                             {"__meta_kubernetes_endpoint_ready", "true"},
                             {"__meta_kubernetes_endpoint_address_target_kind", "Pod"},
                             {"__meta_kubernetes_endpoint_address_target_name", "testpod"},
                             {"__meta_kubernetes_pod_name", "testpod"},
                             {"__meta_kubernetes_pod_ip", "1.2.3.4"},
                             {"__meta_kubernetes_pod_ready", "unknown"},
                             {"__meta_kubernetes_pod_phase", ""},
                             {"__meta_kubernetes_pod_node_name", "testnode"},
                             {"__meta_kubernetes_pod_host_ip", "2.3.4.5"},
                             {"__meta_kubernetes_pod_container_name", "c1"},
                             {"__meta_kubernetes_pod_container_image", "c1:latest"},
                             {"__meta_kubernetes_pod_container_port_name", "mainport"},
                             {"__meta_kubernetes_pod_container_port_number", "9000"},
                             {"__meta_kubernetes_pod_container_port_protocol", "TCP"},
                             {"__meta_kubernetes_pod_uid", "deadbeef"},
                             {"__meta_kubernetes_pod_container_init", "false"}}));
  EXPECT_EQ(g.targets[1], L({{"__address__", "1.2.3.4:9001"},
                             {"__meta_kubernetes_pod_name", "testpod"},
                             {"__meta_kubernetes_pod_ip", "1.2.3.4"},
                             {"__meta_kubernetes_pod_ready", "unknown"},
                             {"__meta_kubernetes_pod_phase", ""},
                             {"__meta_kubernetes_pod_node_name", "testnode"},
                             {"__meta_kubernetes_pod_host_ip", "2.3.4.5"},
                             {"__meta_kubernetes_pod_container_name", "c2"},
                             {"__meta_kubernetes_pod_container_image", "c2:latest"},
                             {"__meta_kubernetes_pod_container_port_name", "sideport"},
                             {"__meta_kubernetes_pod_container_port_number", "9001"},
                             {"__meta_kubernetes_pod_container_port_protocol", "TCP"},
                             {"__meta_kubernetes_pod_uid", "deadbeef"},
                             {"__meta_kubernetes_pod_container_init", "false"}}));
  EXPECT_EQ(g.labels, L({{"__meta_kubernetes_endpoints_name", "testendpoints"},
                         {"__meta_kubernetes_namespace", "default"}}));
}

TEST(KubernetesSdLabelsTest, SanitizeLabelNameIsPrometheus) {
  // strutil.SanitizeLabelName replaces each rune outside [a-zA-Z0-9_].
  EXPECT_EQ(SanitizeLabelName("test/label"), "test_label");
  EXPECT_EQ(SanitizeLabelName("app.kubernetes.io/name"), "app_kubernetes_io_name");
  EXPECT_EQ(SanitizeLabelName("nvidia.com/gpu-product"), "nvidia_com_gpu_product");
  EXPECT_EQ(SanitizeLabelName("Unschedulable"), "Unschedulable");
  EXPECT_EQ(SanitizeLabelName("caf\xc3\xa9"), "caf_");             // one rune, one '_'
  EXPECT_EQ(SanitizeLabelName("\xe6\x97\xa5\xe6\x9c\xac"), "__");  // two runes
  EXPECT_EQ(SanitizeLabelName("a\xff\xfe"), "a__");                // invalid bytes, one each
  EXPECT_EQ(SanitizeLabelName("\xf0\x9f\x9a\x80!"), "__");         // a 4-byte rune, then '!'
  EXPECT_EQ(SanitizeLabelName("1st"), "1st");  // a leading digit is the caller's business
}

// One of our groups per target: the group's labels then the target's, which
// win, and an empty value deletes (as PopulateDiscoveredLabels).
TEST(KubernetesSdLabelsTest, ToTargetGroupsMergesAsPrometheus) {
  KubernetesGroup g;
  g.source = "pod/ns/p";
  g.labels = L({{"__meta_kubernetes_pod_phase", "Running"}, {"team", "a"}});
  g.targets = {L({{"__address__", "10.0.0.1:9400"}, {"team", "b"}}),
               L({{"__address__", "10.0.0.1"}, {"team", ""}}),
               L({{"__meta_kubernetes_pod_container_name", "x"}})};  // no address: left out
  const std::vector<TargetGroup> out = ToTargetGroups(g, "dcgm kubernetes_sd_configs[0]");
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].source, "dcgm kubernetes_sd_configs[0] pod/ns/p");
  EXPECT_EQ(out[0].targets, (std::vector<std::string>{"10.0.0.1:9400"}));
  JobConfig job;
  job.job_name = "dcgm";
  EXPECT_EQ(model::LabelValue(DiscoveredLabels(job, out[0].targets[0], out[0]), "team"), "b");
  EXPECT_EQ(model::LabelValue(DiscoveredLabels(job, out[1].targets[0], out[1]), "team"), "");
  EXPECT_EQ(model::LabelValue(DiscoveredLabels(job, out[1].targets[0], out[1]),
                              "__meta_kubernetes_pod_phase"),
            "Running");
}

TEST(KubernetesSdLabelsTest, FieldsOfTheWrongTypeReadAsZeroValues) {
  // A broken or hostile answer must not crash: client-go would refuse it,
  // we read what we can.
  const Json odd = Json::parse(R"({"metadata": {"name": 7, "namespace": ["x"], "labels": 3,
    "ownerReferences": "x"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort":
    "9400"}]}, 5]}, "status": {"podIP": "10.0.0.1", "conditions": {"type": "Ready"}}})");
  const KubernetesGroup g = PodGroup(odd);
  EXPECT_EQ(g.source, "pod//");
  ASSERT_EQ(g.targets.size(), 2U);
  EXPECT_EQ(g.targets[0].front().second, "10.0.0.1:0");
  EXPECT_FALSE(NodeGroup(Json::array()).has_value());
  EXPECT_TRUE(EndpointsGroup(Json("x"), None, None).targets.empty());
}

}  // namespace
}  // namespace gpucanary::scrape
