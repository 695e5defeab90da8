#include "scrape/kubernetes_sd_labels.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

namespace gpucanary::scrape {
namespace {

using Json = nlohmann::json;
// Go's model.LabelSet: one value per name, assignment replaces.
using LabelSet = std::map<std::string, std::string>;

constexpr std::string_view kMeta = "__meta_kubernetes_";

// The member `key` of `object` when both are what they should be, else null.
const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json* Path(const Json& object, std::initializer_list<const char*> keys) {
  const Json* at = &object;
  for (const char* key : keys) {
    at = Member(*at, key);
    if (at == nullptr) return nullptr;
  }
  return at;
}

// A string field as client-go decodes it: "" when absent or not a string.
std::string Str(const Json& object, std::initializer_list<const char*> keys) {
  const Json* v = Path(object, keys);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// An int32 field (ports): 0 when absent or not an integer.
std::int64_t Int(const Json& object, const char* key) {
  const Json* v = Member(object, key);
  return v != nullptr && v->is_number_integer() ? v->get<std::int64_t>() : 0;
}

// The elements of an array field; none when it is absent or not an array.
const std::vector<Json>& Items(const Json& object, std::initializer_list<const char*> keys) {
  static const std::vector<Json> kNone;
  const Json* v = Path(object, keys);
  return v != nullptr && v->is_array() ? v->get_ref<const Json::array_t&>() : kNone;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// net.JoinHostPort.
std::string JoinHostPort(const std::string& host, std::int64_t port) {
  const std::string p = std::to_string(port);
  return host.find(':') != std::string::npos ? "[" + host + "]:" + p : host + ":" + p;
}

LabelPairs ToPairs(const LabelSet& set) { return {set.begin(), set.end()}; }

// Go's LabelSet.Merge: `other` wins.
void Merge(LabelSet& into, const LabelSet& other) {
  for (const auto& [name, value] : other) into[name] = value;
}

// kubernetes.go addObjectMetaLabels: <role>_name, then each label and
// annotation with a "present" twin.
void AddObjectMetaLabels(LabelSet& ls, const Json& object, std::string_view role) {
  const std::string prefix = std::string(kMeta) + std::string(role);
  ls[prefix + "_name"] = Str(object, {"metadata", "name"});
  for (const auto& [section, key] :
       {std::pair{"labels", "_label"}, std::pair{"annotations", "_annotation"}}) {
    const Json* map = Path(object, {"metadata", section});
    if (map == nullptr || !map->is_object()) continue;
    for (const auto& [k, v] : map->items()) {
      const std::string ln = SanitizeLabelName(k);
      ls[prefix + key + "_" + ln] = v.is_string() ? v.get<std::string>() : std::string();
      ls[prefix + key + "present_" + ln] = "true";
    }
  }
}

// pod.go podReady: the Ready condition's status in lower case, else "unknown".
std::string PodReady(const Json& pod) {
  for (const Json& c : Items(pod, {"status", "conditions"})) {
    if (Str(c, {"type"}) == "Ready") return Lower(Str(c, {"status"}));
  }
  return "unknown";
}

// pod.go podLabels (without attach_metadata's deployment, job and cronjob).
LabelSet PodLabels(const Json& pod) {
  LabelSet ls{
      {std::string(kMeta) + "pod_ip", Str(pod, {"status", "podIP"})},
      {std::string(kMeta) + "pod_ready", PodReady(pod)},
      {std::string(kMeta) + "pod_phase", Str(pod, {"status", "phase"})},
      {std::string(kMeta) + "pod_node_name", Str(pod, {"spec", "nodeName"})},
      {std::string(kMeta) + "pod_host_ip", Str(pod, {"status", "hostIP"})},
      {std::string(kMeta) + "pod_uid", Str(pod, {"metadata", "uid"})},
  };
  AddObjectMetaLabels(ls, pod, "pod");
  // GetControllerOf: the first owner reference with controller: true.
  for (const Json& ref : Items(pod, {"metadata", "ownerReferences"})) {
    const Json* controller = Member(ref, "controller");
    if (controller == nullptr || !controller->is_boolean() || !controller->get<bool>()) continue;
    if (std::string kind = Str(ref, {"kind"}); !kind.empty()) {
      ls[std::string(kMeta) + "pod_controller_kind"] = std::move(kind);
    }
    if (std::string name = Str(ref, {"name"}); !name.empty()) {
      ls[std::string(kMeta) + "pod_controller_name"] = std::move(name);
    }
    break;
  }
  return ls;
}

// A pod's containers then its init containers, each with whether it is one.
std::vector<std::pair<const Json*, bool>> Containers(const Json& pod) {
  std::vector<std::pair<const Json*, bool>> out;
  for (const Json& c : Items(pod, {"spec", "containers"})) out.emplace_back(&c, false);
  for (const Json& c : Items(pod, {"spec", "initContainers"})) out.emplace_back(&c, true);
  return out;
}

std::string ContainerId(const Json& pod, const std::string& name, bool init) {
  for (const Json& s :
       Items(pod, {"status", init ? "initContainerStatuses" : "containerStatuses"})) {
    if (Str(s, {"name"}) == name) return Str(s, {"containerID"});
  }
  return "";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

LabelSet ServiceLabels(const Json& svc) {
  LabelSet ls{{std::string(kMeta) + "namespace", Str(svc, {"metadata", "namespace"})}};
  AddObjectMetaLabels(ls, svc, "service");
  return ls;
}

// One code point of `s` at `i` as Go's range over a string reads it: its
// length in bytes, 1 for a byte that does not start a valid sequence.
std::size_t RuneLength(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
    min = 0x80;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    min = 0x800;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    min = 0x10000;
  } else {
    return 1;
  }
  if (i + n > s.size()) return 1;
  std::uint32_t cp = b & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 1;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 1;
  return n;
}

}  // namespace

std::string SanitizeLabelName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size();) {
    const char c = name[i];
    const std::size_t n = RuneLength(name, i);
    const bool keep = n == 1 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '_');
    out += keep ? c : '_';
    i += n;
  }
  return out;
}

std::string NamespacedName(const Json& object) {
  return Str(object, {"metadata", "namespace"}) + "/" + Str(object, {"metadata", "name"});
}

KubernetesGroup PodGroup(const Json& pod) {
  KubernetesGroup tg;
  tg.source = "pod/" + NamespacedName(pod);
  const std::string ip = Str(pod, {"status", "podIP"});
  // PodIP can be empty when a pod is starting or has been evicted.
  if (ip.empty()) return tg;
  LabelSet labels = PodLabels(pod);
  labels[std::string(kMeta) + "namespace"] = Str(pod, {"metadata", "namespace"});
  tg.labels = ToPairs(labels);
  for (const auto& [c, init] : Containers(pod)) {
    const std::string name = Str(*c, {"name"});
    const LabelSet base{
        {std::string(kMeta) + "pod_container_name", name},
        {std::string(kMeta) + "pod_container_id", ContainerId(pod, name, init)},
        {std::string(kMeta) + "pod_container_image", Str(*c, {"image"})},
        {std::string(kMeta) + "pod_container_init", Bool(init)},
    };
    const std::vector<Json>& ports = Items(*c, {"ports"});
    // No ports: a target at the bare pod IP; the user adds a port by relabeling.
    if (ports.empty()) {
      LabelSet t = base;
      t["__address__"] = ip;
      tg.targets.push_back(ToPairs(t));
      continue;
    }
    for (const Json& port : ports) {
      const std::int64_t number = Int(port, "containerPort");
      LabelSet t = base;
      t["__address__"] = JoinHostPort(ip, number);
      t[std::string(kMeta) + "pod_container_port_number"] = std::to_string(number);
      t[std::string(kMeta) + "pod_container_port_name"] = Str(port, {"name"});
      t[std::string(kMeta) + "pod_container_port_protocol"] = Str(port, {"protocol"});
      tg.targets.push_back(ToPairs(t));
    }
  }
  return tg;
}

std::optional<KubernetesGroup> NodeGroup(const Json& node) {
  KubernetesGroup tg;
  const std::string name = Str(node, {"metadata", "name"});
  tg.source = "node/" + name;
  LabelSet labels{{std::string(kMeta) + "node_provider_id", Str(node, {"spec", "providerID"})}};
  for (const Json& c : Items(node, {"status", "conditions"})) {
    labels[std::string(kMeta) + "node_condition_" + SanitizeLabelName(Lower(Str(c, {"type"})))] =
        Lower(Str(c, {"status"}));
  }
  AddObjectMetaLabels(labels, node, "node");
  tg.labels = ToPairs(labels);

  // nodeAddress: the addresses by type, in order, and the preferred one.
  std::map<std::string, std::vector<std::string>> by_type;
  for (const Json& a : Items(node, {"status", "addresses"})) {
    by_type[Str(a, {"type"})].push_back(Str(a, {"address"}));
  }
  const std::string* address = nullptr;
  for (const char* type :
       {"InternalIP", "InternalDNS", "ExternalIP", "ExternalDNS", "LegacyHostIP", "Hostname"}) {
    if (const auto it = by_type.find(type); it != by_type.end()) {
      address = &it->second.front();
      break;
    }
  }
  if (address == nullptr) return std::nullopt;  // "No node address found"
  const Json* endpoint = Path(node, {"status", "daemonEndpoints", "kubeletEndpoint"});
  LabelSet t{{"__address__", JoinHostPort(*address, endpoint ? Int(*endpoint, "Port") : 0)},
             {"instance", name}};
  for (const auto& [type, addresses] : by_type) {
    t[SanitizeLabelName(std::string(kMeta) + "node_address_" + type)] = addresses.front();
  }
  tg.targets.push_back(ToPairs(t));
  return tg;
}

std::vector<std::string> EndpointsPodRefs(const Json& endpoints) {
  std::vector<std::string> out;
  for (const Json& subset : Items(endpoints, {"subsets"})) {
    for (const Json& addr : Items(subset, {"addresses"})) {
      const Json* ref = Member(addr, "targetRef");
      if (ref != nullptr && Str(*ref, {"kind"}) == "Pod") {
        out.push_back(Str(*ref, {"namespace"}) + "/" + Str(*ref, {"name"}));
      }
    }
  }
  return out;
}

KubernetesGroup EndpointsGroup(const Json& eps, const KubernetesLookup& find_pod,
                               const KubernetesLookup& find_service) {
  KubernetesGroup tg;
  tg.source = "endpoints/" + NamespacedName(eps);
  LabelSet labels{{std::string(kMeta) + "namespace", Str(eps, {"metadata", "namespace"})}};
  if (const Json* svc = find_service(NamespacedName(eps))) Merge(labels, ServiceLabels(*svc));
  AddObjectMetaLabels(labels, eps, "endpoints");
  tg.labels = ToPairs(labels);

  // The pods seen, in the order first seen (Prometheus walks a map), with
  // the endpoint ports that gave them a target.
  std::vector<std::pair<const Json*, std::vector<std::int64_t>>> seen_pods;
  const auto add = [&](const Json& addr, const Json& port, const char* ready) {
    const std::int64_t number = Int(port, "port");
    LabelSet t{{"__address__", JoinHostPort(Str(addr, {"ip"}), number)},
               {std::string(kMeta) + "endpoint_port_name", Str(port, {"name"})},
               {std::string(kMeta) + "endpoint_port_protocol", Str(port, {"protocol"})},
               {std::string(kMeta) + "endpoint_ready", ready}};
    const Json* ref = Member(addr, "targetRef");
    if (ref != nullptr && ref->is_object()) {
      t[std::string(kMeta) + "endpoint_address_target_kind"] = Str(*ref, {"kind"});
      t[std::string(kMeta) + "endpoint_address_target_name"] = Str(*ref, {"name"});
    }
    if (const Json* node = Member(addr, "nodeName"); node != nullptr && node->is_string()) {
      t[std::string(kMeta) + "endpoint_node_name"] = node->get<std::string>();
    }
    if (std::string host = Str(addr, {"hostname"}); !host.empty()) {
      t[std::string(kMeta) + "endpoint_hostname"] = std::move(host);
    }
    const Json* pod = nullptr;
    if (ref != nullptr && Str(*ref, {"kind"}) == "Pod") {
      pod = find_pod(Str(*ref, {"namespace"}) + "/" + Str(*ref, {"name"}));
    }
    if (pod == nullptr) {  // not a pod: no pod labels
      tg.targets.push_back(ToPairs(t));
      return;
    }
    auto entry = std::find_if(seen_pods.begin(), seen_pods.end(),
                              [&](const auto& e) { return e.first == pod; });
    if (entry == seen_pods.end()) entry = seen_pods.insert(seen_pods.end(), {pod, {}});
    Merge(t, PodLabels(*pod));
    // The container port the endpoint port is (the last container that
    // has it, as Go's break leaves only the port loop).
    for (const auto& [c, init] : Containers(*pod)) {
      for (const Json& cport : Items(*c, {"ports"})) {
        if (Int(cport, "containerPort") != number) continue;
        t[std::string(kMeta) + "pod_container_name"] = Str(*c, {"name"});
        t[std::string(kMeta) + "pod_container_image"] = Str(*c, {"image"});
        t[std::string(kMeta) + "pod_container_port_name"] = Str(cport, {"name"});
        t[std::string(kMeta) + "pod_container_port_number"] = std::to_string(number);
        t[std::string(kMeta) + "pod_container_port_protocol"] = Str(port, {"protocol"});
        t[std::string(kMeta) + "pod_container_init"] = Bool(init);
        break;
      }
    }
    entry->second.push_back(number);
    tg.targets.push_back(ToPairs(t));
  };
  for (const Json& subset : Items(eps, {"subsets"})) {
    for (const Json& port : Items(subset, {"ports"})) {
      for (const Json& addr : Items(subset, {"addresses"})) add(addr, port, "true");
      for (const Json& addr : Items(subset, {"notReadyAddresses"})) add(addr, port, "false");
    }
  }
  // The ports of those pods that no endpoint port covered.
  for (const auto& [pod, service_ports] : seen_pods) {
    const std::string ip = Str(*pod, {"status", "podIP"});
    if (ip.empty()) continue;
    for (const auto& [c, init] : Containers(*pod)) {
      for (const Json& cport : Items(*c, {"ports"})) {
        const std::int64_t number = Int(cport, "containerPort");
        if (std::find(service_ports.begin(), service_ports.end(), number) != service_ports.end()) {
          continue;
        }
        LabelSet t{{"__address__", JoinHostPort(ip, number)},
                   {std::string(kMeta) + "pod_container_name", Str(*c, {"name"})},
                   {std::string(kMeta) + "pod_container_image", Str(*c, {"image"})},
                   {std::string(kMeta) + "pod_container_port_name", Str(cport, {"name"})},
                   {std::string(kMeta) + "pod_container_port_number", std::to_string(number)},
                   {std::string(kMeta) + "pod_container_port_protocol", Str(cport, {"protocol"})},
                   {std::string(kMeta) + "pod_container_init", Bool(init)}};
        Merge(t, PodLabels(*pod));
        tg.targets.push_back(ToPairs(t));
      }
    }
  }
  return tg;
}

std::vector<TargetGroup> ToTargetGroups(const KubernetesGroup& group, std::string_view prefix) {
  std::vector<TargetGroup> out;
  out.reserve(group.targets.size());
  for (const LabelPairs& target : group.targets) {
    TargetGroup g;
    g.source = std::string(prefix) + " " + group.source;
    g.labels = group.labels;
    for (const auto& [name, value] : target) {
      if (name == "__address__") {
        if (!value.empty()) g.targets.push_back(value);
      } else {
        g.labels.emplace_back(name, value);
      }
    }
    if (!g.targets.empty()) out.push_back(std::move(g));
  }
  return out;
}

}  // namespace gpucanary::scrape
