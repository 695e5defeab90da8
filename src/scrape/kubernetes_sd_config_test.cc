// kubernetes_sd_configs as the scrape config reads it: Prometheus's keys,
// its checks (kubernetes.go SDConfig.UnmarshalYAML) and Kubernetes's
// selector grammars, every error at its FILE:LINE:COL.

#include "scrape/kubernetes_sd_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "scrape/config.h"

namespace gpucanary::scrape {
namespace {

using ::testing::HasSubstr;

// A scrape config of one job whose kubernetes_sd_configs is `entries`
// (YAML, indented as a list under the job).
std::string WithEntries(const std::string& entries) {
  return "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs:\n" + entries;
}

std::string ErrorOf(const std::string& entries, const std::string& file = "k.yaml") {
  Result<ScrapeConfig> c = ParseScrapeConfig(WithEntries(entries), file);
  if (c) return "(no error)";
  EXPECT_EQ(c.error().code(), StatusCode::kParseError);
  return c.error().message();
}

TEST(KubernetesSdConfigTest, ReadsEveryKey) {
  std::string dir = ::testing::TempDir();
  if (dir.ends_with('/')) dir.pop_back();
  std::ofstream(dir + "/k8s-ca.pem") << "x";
  std::ofstream(dir + "/k8s-token") << "t\n";
  Result<ScrapeConfig> c = ParseScrapeConfig(WithEntries(R"(      - role: pod
        api_server: https://k8s.internal:6443/
        namespaces:
          names: [gpu-operator, inference]
        selectors:
          - role: pod
            label: app.kubernetes.io/name=dcgm-exporter,tier in (gpu, infer)
            field: spec.nodeName=gpu-node-1
          - {role: node, label: nvidia.com/gpu.present}
        tls_config: {ca_file: k8s-ca.pem}
        authorization: {credentials_file: k8s-token}
      - role: node
      - role: endpoints
        namespaces: {own_namespace: true}
        selectors: [{role: service, label: '!canary'}]
)"),
                                             dir + "/scrape.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  const std::vector<KubernetesSdConfig>& k = c->jobs[0].kubernetes_sd_configs;
  ASSERT_EQ(k.size(), 3U);
  EXPECT_EQ(k[0].role, KubernetesKind::kPod);
  EXPECT_EQ(k[0].api_server, "https://k8s.internal:6443");
  EXPECT_EQ(k[0].namespaces, (std::vector<std::string>{"gpu-operator", "inference"}));
  EXPECT_FALSE(k[0].own_namespace);
  ASSERT_EQ(k[0].selectors.size(), 2U);
  const KubernetesSelector* pod = k[0].SelectorFor(KubernetesKind::kPod);
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->label, "app.kubernetes.io/name=dcgm-exporter,tier in (gpu, infer)");
  EXPECT_EQ(pod->field, "spec.nodeName=gpu-node-1");
  EXPECT_EQ(k[0].SelectorFor(KubernetesKind::kNode)->label, "nvidia.com/gpu.present");
  EXPECT_EQ(k[0].tls.ca_file, dir + "/k8s-ca.pem");
  EXPECT_EQ(k[0].authorization_type, "Bearer");
  EXPECT_EQ(k[0].credentials_file, dir + "/k8s-token");
  EXPECT_EQ(k[0].where, dir + "/scrape.yaml:4:9");

  EXPECT_EQ(k[1].role, KubernetesKind::kNode);
  EXPECT_TRUE(k[1].api_server.empty());  // in-cluster
  EXPECT_TRUE(k[1].namespaces.empty());

  EXPECT_EQ(k[2].role, KubernetesKind::kEndpoints);
  EXPECT_TRUE(k[2].own_namespace);
  EXPECT_EQ(k[2].SelectorFor(KubernetesKind::kService)->label, "!canary");
  EXPECT_EQ(k[2].SelectorFor(KubernetesKind::kPod), nullptr);
}

TEST(KubernetesSdConfigTest, ErrorsNameTheFieldAndItsPosition) {
  // Prometheus's own messages where it has one (kubernetes.go).
  EXPECT_EQ(ErrorOf("      - namespaces: {names: [a]}\n"),
            "k.yaml:4:9: scrape_configs[0].kubernetes_sd_configs[0].role: role missing (one of: "
            "pod, endpoints, node)");
  EXPECT_EQ(ErrorOf("      - role: pods\n"),
            "k.yaml:4:15: scrape_configs[0].kubernetes_sd_configs[0].role: unknown Kubernetes SD "
            "role \"pods\" (one of: pod, endpoints, node)");
  EXPECT_EQ(ErrorOf("      - role: ingress\n"),
            "k.yaml:4:15: scrape_configs[0].kubernetes_sd_configs[0].role: role ingress is not "
            "supported by gpucanary (pod, endpoints or node)");
  EXPECT_EQ(ErrorOf("      - role: pod\n        kubeconfig_file: /root/.kube/config\n"),
            "k.yaml:5:9: scrape_configs[0].kubernetes_sd_configs[0].kubeconfig_file: unknown "
            "field (expected one of role, api_server, namespaces, selectors, tls_config, "
            "authorization)");
  EXPECT_EQ(ErrorOf("      - role: pod\n        tls_config: {insecure_skip_verify: true}\n"),
            "k.yaml:5:21: scrape_configs[0].kubernetes_sd_configs[0].tls_config: to use custom "
            "HTTP client configuration please provide the 'api_server' URL explicitly");
  EXPECT_EQ(ErrorOf("      - role: pod\n        api_server: http://127.0.0.1:8001\n"
                    "        namespaces: {own_namespace: true}\n"),
            "k.yaml:6:21: scrape_configs[0].kubernetes_sd_configs[0].namespaces.own_namespace: "
            "cannot use 'api_server' and 'namespaces.own_namespace' simultaneously");
  EXPECT_EQ(ErrorOf("      - role: node\n        selectors: [{role: pod, label: a=b}]\n"),
            "k.yaml:5:28: scrape_configs[0].kubernetes_sd_configs[0].selectors[0].role: node "
            "role supports only node selectors");
  EXPECT_EQ(ErrorOf("      - role: endpoints\n        selectors:\n          - {role: pod}\n"
                    "          - {role: pod, field: spec.nodeName=n}\n"),
            "k.yaml:7:20: scrape_configs[0].kubernetes_sd_configs[0].selectors[1].role: "
            "duplicated selector role: pod");
  EXPECT_EQ(ErrorOf("      - role: pod\n        selectors: [{role: pod, label: 'app in gpu'}]\n"),
            "k.yaml:5:40: scrape_configs[0].kubernetes_sd_configs[0].selectors[0].label: found "
            "'gpu', expected: '('");
  EXPECT_EQ(ErrorOf("      - role: pod\n        selectors: [{role: pod, field: spec.nodeName}]\n"),
            "k.yaml:5:40: scrape_configs[0].kubernetes_sd_configs[0].selectors[0].field: invalid "
            "selector: 'spec.nodeName'; can't understand 'spec.nodeName'");
  EXPECT_EQ(ErrorOf("      - role: pod\n        namespaces: {names: [GPU]}\n"),
            "k.yaml:5:30: scrape_configs[0].kubernetes_sd_configs[0].namespaces.names[0]: not a "
            "namespace name (lower-case alphanumerics and '-', at most 63)");
  EXPECT_EQ(ErrorOf("      - role: pod\n        api_server: ftp://k8s\n"),
            "k.yaml:5:21: scrape_configs[0].kubernetes_sd_configs[0].api_server: bad URL "
            "'ftp://k8s': only http:// and https:// are supported");
  EXPECT_EQ(ErrorOf("      - role: pod\n        api_server: https://k8s\n"
                    "        authorization: {type: Basic, credentials: x}\n"),
            "k.yaml:6:31: scrape_configs[0].kubernetes_sd_configs[0].authorization.type: "
            "'Basic' is not an authorization scheme (Basic is not supported)");
  EXPECT_EQ(ErrorOf("      - role: pod\n        api_server: https://k8s\n"
                    "        authorization: {type: Bearer}\n"),
            "k.yaml:6:24: scrape_configs[0].kubernetes_sd_configs[0].authorization.credentials: "
            "credentials or credentials_file required");
  EXPECT_THAT(ErrorOf("      - role: pod\n        api_server: https://k8s\n"
                      "        authorization: {credentials_file: /nonexistent/token}\n"),
              HasSubstr("k.yaml:6:43: scrape_configs[0].kubernetes_sd_configs[0].authorization."
                        "credentials_file: /nonexistent/token"));
  EXPECT_EQ(ErrorOf("      - role: pod\n        namespaces: [a]\n"),
            "k.yaml:5:21: scrape_configs[0].kubernetes_sd_configs[0].namespaces: expected a map");
}

TEST(KubernetesSdConfigTest, LabelSelectorsFollowKubernetesGrammar) {
  for (const char* ok : {"", "app=dcgm-exporter", "app==x", "app!=x", "app", "!app", "app=",
                         "a in (x,y)", "a notin ( x , y )", "a in ()", "example.com/gpu-class=h100",
                         "a=b,c!=d,!e,f in (g)", "replicas>2", "replicas<10"}) {
    EXPECT_TRUE(CheckLabelSelector(ok).ok()) << ok << ": " << CheckLabelSelector(ok).message();
  }
  for (const char* bad :
       {"=x", "a=b,", "a in x", "a in (x", "a b", "!a=b", "Bad_/x", "a=-x", "a>x", "a<", "a=(b)"}) {
    EXPECT_FALSE(CheckLabelSelector(bad).ok()) << bad;
  }
  EXPECT_FALSE(CheckLabelSelector(std::string(64, 'a')).ok());  // names: 63 at most
}

TEST(KubernetesSdConfigTest, FieldSelectorsFollowKubernetesGrammar) {
  for (const char* ok : {"", "spec.nodeName=n1", "status.phase!=Failed,spec.nodeName==n1",
                         "metadata.name=a\\,b", "a=", ","}) {
    EXPECT_TRUE(CheckFieldSelector(ok).ok()) << ok << ": " << CheckFieldSelector(ok).message();
  }
  for (const char* bad : {"spec.nodeName", "a=b,c", "a=\\x", "a=b\\"}) {
    EXPECT_FALSE(CheckFieldSelector(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace gpucanary::scrape
