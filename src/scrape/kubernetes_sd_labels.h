#pragma once
// What Prometheus's Kubernetes discovery makes of one object: the target
// group of a pod, a node or an Endpoints object, with Prometheus's
// __meta_kubernetes_* labels and its rules for which targets exist. A port
// of discovery/kubernetes/{pod,node,endpoints,service,kubernetes}.go at
// prometheus/prometheus d15adb9ad7e5d9fbde3a9a8f30200593a5a14d86 (the pod,
// node and endpoints labels are those of 2.42 as well, but for the node
// conditions, the endpoints' annotations and the endpoints' container_init,
// added since), without attach_metadata:
//
// - pod: a group per pod (source "pod/<ns>/<name>"); none of its targets
//   while it has no IP. A target per container port at <podIP>:<port>, and
//   one at the bare pod IP for a container without ports; init containers
//   after the others.
// - node: one target per node at <address>:<kubelet port>, the address the
//   first of InternalIP, InternalDNS, ExternalIP, ExternalDNS, LegacyHostIP,
//   Hostname; `instance` is the node's name. A node without any address
//   yields no group (Prometheus then keeps the node's previous one).
// - endpoints: a target per address × port of each subset (ready, then not
//   ready), with the labels of the pod an address refers to and of the
//   service of the same name, plus a target for each port of those pods
//   that no endpoint port covers.
//
// Objects are the JSON the API server sends (core/v1 Pod, Node, Endpoints,
// Service); a field that is missing or of another type reads as Go's zero
// value, as client-go decodes it. Thread-compatible pure functions.

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scrape/config.h"
#include "scrape/target.h"

namespace gpucanary::scrape {

// Prometheus's targetgroup.Group: labels shared by the group and each
// target's own (with __address__). A label set may hold empty values:
// Prometheus sets them too, and they delete a label when merged.
struct KubernetesGroup {
  std::string source;  // "pod/gpu/dcgm-exporter-x7k2p"
  LabelPairs labels;   // sorted by name, one value per name
  std::vector<LabelPairs> targets;
};

// strutil.SanitizeLabelName: every character (UTF-8 code point; each byte of
// invalid UTF-8) outside [a-zA-Z0-9_] becomes one '_'.
std::string SanitizeLabelName(std::string_view name);

// "<namespace>/<name>" of an object's metadata (the informers' store key).
std::string NamespacedName(const nlohmann::json& object);

// pod.go buildPod.
KubernetesGroup PodGroup(const nlohmann::json& pod);

// node.go buildNode; nullopt for a node without any address.
std::optional<KubernetesGroup> NodeGroup(const nlohmann::json& node);

// endpoints.go buildEndpoints. `find_pod` and `find_service` look an object
// up by "<namespace>/<name>" among those watched (null when absent).
using KubernetesLookup = std::function<const nlohmann::json*(const std::string& namespaced_name)>;
KubernetesGroup EndpointsGroup(const nlohmann::json& endpoints, const KubernetesLookup& find_pod,
                               const KubernetesLookup& find_service);

// The pods ("<namespace>/<name>") an Endpoints object's addresses refer to.
std::vector<std::string> EndpointsPodRefs(const nlohmann::json& endpoints);

// A group as our TargetGroups: one per target, labelled with the group's
// labels then the target's (the target's win, as in Prometheus's
// PopulateDiscoveredLabels; an empty value deletes), named "<prefix>
// <source>". Targets without __address__ are left out.
std::vector<TargetGroup> ToTargetGroups(const KubernetesGroup& group, std::string_view prefix);

}  // namespace gpucanary::scrape
