#pragma once
// The `actions:` section of the daemon's configuration (docs/actions.md):
// what the circuit breaker does when a live canary fails. A YAML list, each
// entry one action:
//
//   actions:
//     - kind: webhook
//       name: page-oncall
//       url: http://alerts.internal/hooks/gpucanary
//       bearer_token_file: /etc/gpucanary/webhook-token
//     - kind: isolate_node
//       command: [kubectl, cordon, "{node}"]
//
// Parsed strictly: unknown fields, missing required ones and fields that do
// not belong to the kind are errors "FILE:LINE:COL: actions[1].url: ...".

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "net/tls_options.h"

namespace gpucanary::actions {

enum class ActionKind : std::uint8_t {
  kWebhook,
  kArgoRolloutsAbort,
  kFlaggerRollback,
  kCommand,
  kTrafficShift,
  kIsolateNode,
  kDiagnosticBundle,
};
// "webhook", "argo_rollouts_abort", ... as written in YAML.
std::string_view ActionKindName(ActionKind kind);

// Which incidents an action runs for: those with at least one cause of the
// scope (`any`: every incident). Named as `when.scope` takes it: the
// vocabulary's "release" and "node" (vocab/vocab.h), or "any".
enum class ScopeFilter : std::uint8_t { kRelease, kNode, kAny };
std::string_view ScopeFilterName(ScopeFilter scope);

// The Kubernetes service account token mounted into every pod.
inline constexpr std::string_view kInClusterTokenFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/token";
// And the cluster's CA, which signs the API server's certificate: an
// argo_rollouts_abort's default tls_config.ca_file when the file exists.
inline constexpr std::string_view kInClusterCaFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

// How HTTP actions retry: after a connection error, a timeout, a 5xx or a
// 429, up to `retries` more times, waiting backoff_s, then twice that, ...
// Other statuses (2xx done, other 4xx failed) are final.
struct HttpPolicy {
  double timeout_s = 5.0;  // per attempt: connect, send, receive
  int retries = 3;         // attempts after the first
  double backoff_s = 0.5;  // before the first retry; doubles each time
  // `tls_config`, for https:// URLs (config/tls_config.h).
  net::TlsClientOptions tls{};
};

struct ActionConfig {
  std::string name;  // `name`, or the kind's name (made unique: "webhook#2")
  ActionKind kind = ActionKind::kWebhook;
  // when:
  ScopeFilter scope = ScopeFilter::kAny;
  std::vector<std::string> cause_kinds;  // when.causes: run only if one matches; empty: any

  // webhook: the full URL; traffic_shift / isolate_node: the control API's
  // base URL ("/traffic" and "/cordon" are appended).
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // webhook: extra headers
  std::string bearer_token_file;  // webhook; argo_rollouts_abort: `token_file`
  std::string bearer_token;       // webhook only: inline (prefer bearer_token_file)
  HttpPolicy http;

  // argo_rollouts_abort. `namespace` and `rollout` may use the templates
  // below ("{service}").
  std::string api_server;  // "http://127.0.0.1:8001" (kubectl proxy)
  std::string k8s_namespace = "default";
  std::string rollout;

  // command, isolate_node (instead of url): argv, no shell. Templates:
  // {node} (one run per node of a node-scoped cause), {release},
  // {service}, {canary}, {verdict}.
  std::vector<std::string> argv;
  double command_timeout_s = 60.0;

  // traffic_shift: the release to send traffic back to; "" means the
  // annotation's `previous`.
  std::string stable;

  // diagnostic_bundle: the folder bundles are written under.
  std::string dir;
};

// Reads the value of the `actions:` key (a list; null reads as no actions).
// `file` names the source in errors. Errors: kParseError
// "FILE:LINE:COL: actions[i].field: what".
Result<std::vector<ActionConfig>> ParseActions(const YAML::Node& actions, std::string_view file);

// The same from a YAML document whose top level is a map holding
// `actions:` (other keys ignored), for tests and tools.
Result<std::vector<ActionConfig>> ParseActionsYaml(std::string_view yaml_text,
                                                   std::string_view file);

}  // namespace gpucanary::actions
