#pragma once
// A scrape job's kubernetes_sd_configs entry, in Prometheus's names
// (prometheus.io/docs/prometheus/latest/configuration/configuration/#kubernetes_sd_config,
// checked as discovery/kubernetes/kubernetes.go's SDConfig.UnmarshalYAML
// checks it):
//
//   kubernetes_sd_configs:
//     - role: pod                 # required: pod, endpoints or node
//       api_server: https://k8s:6443   # absent: in-cluster (the pod's service account)
//       namespaces:               # absent: every namespace
//         names: [gpu-operator]
//         own_namespace: false    # in-cluster only: add the pod's own namespace
//       selectors:                # sent as labelSelector / fieldSelector
//         - role: pod
//           label: app=dcgm-exporter
//           field: spec.nodeName=gpu-node-1
//       tls_config: {ca_file: ca.crt}            # with api_server only
//       authorization: {credentials_file: token}  # with api_server only; type Bearer
//
// Roles Prometheus has and we do not (service, endpointslice, ingress) and
// keys we do not read (kubeconfig_file, attach_metadata, basic_auth,
// bearer_token_file, ...) are errors, not silently ignored.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/tls_options.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace gpucanary::config {
class Reporter;
}  // namespace gpucanary::config

namespace gpucanary::scrape {

// A Kubernetes resource kind discovery reads. kPod, kEndpoints and kNode are
// also the roles a config may name; kService is read for the endpoints role.
enum class KubernetesKind : std::uint8_t { kPod, kEndpoints, kNode, kService };

// "pod", "endpoints", "node", "service": the role names of the config and
// of the meta labels (__meta_kubernetes_<name>_...).
std::string_view KubernetesKindName(KubernetesKind kind);

struct KubernetesSelector {
  KubernetesKind kind = KubernetesKind::kPod;
  std::string label;  // a label selector ("app=dcgm-exporter,tier in (gpu)"); "" none
  std::string field;  // a field selector ("spec.nodeName=n1"); "" none

  friend bool operator==(const KubernetesSelector&, const KubernetesSelector&) = default;
};

struct KubernetesSdConfig {
  KubernetesKind role = KubernetesKind::kPod;  // kPod, kEndpoints or kNode
  // "https://host:port[/prefix]" without a trailing '/'; "" means
  // in-cluster (KUBERNETES_SERVICE_HOST/PORT and the service account).
  std::string api_server;
  std::vector<std::string> namespaces;  // empty (and no own_namespace): all
  bool own_namespace = false;
  std::vector<KubernetesSelector> selectors;  // at most one per kind
  net::TlsClientOptions tls;                  // api_server only; paths absolute
  // The Authorization header's scheme and where its credentials are (read
  // again for every request, so a rotated token is picked up); api_server
  // only. Inline credentials are kept in `credentials`.
  std::string authorization_type = "Bearer";
  std::string credentials;
  std::string credentials_file;
  std::string where;  // "FILE:LINE:COL" of the entry, for messages (not compared)

  // The selector for `kind`, or null.
  const KubernetesSelector* SelectorFor(KubernetesKind kind) const;

  friend bool operator==(const KubernetesSdConfig& a, const KubernetesSdConfig& b) {
    return a.role == b.role && a.api_server == b.api_server && a.namespaces == b.namespaces &&
           a.own_namespace == b.own_namespace && a.selectors == b.selectors && a.tls == b.tls &&
           a.authorization_type == b.authorization_type && a.credentials == b.credentials &&
           a.credentials_file == b.credentials_file;
  }
};

// Reads one kubernetes_sd_configs entry `node` named `field`
// ("scrape_configs[0].kubernetes_sd_configs[1]"); relative file paths are
// made absolute against `base_dir`. Errors: kParseError "FILE:LINE:COL:
// field.key: what" (an unknown key, a missing or unknown role, a selector
// of a role this role does not read, a malformed selector, tls_config
// without api_server, ...).
Result<KubernetesSdConfig> ReadKubernetesSdConfig(const config::Reporter& r, const YAML::Node& node,
                                                  const std::string& field,
                                                  const std::string& base_dir);

// Kubernetes's selector grammars, as the API server parses them
// (k8s.io/apimachinery labels.Parse and fields.ParseSelector). Ok, or
// kInvalidArgument saying what is wrong.
Status CheckLabelSelector(std::string_view selector);
Status CheckFieldSelector(std::string_view selector);

}  // namespace gpucanary::scrape
