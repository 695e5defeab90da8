#pragma once
// The Kubernetes API server as kubernetes_sd.cc talks to it: where it is and
// how to authenticate (api_server and the entry's own settings, or the pod's
// service account as client-go's rest.InClusterConfig reads it), the paths
// and queries of core/v1 lists and watches, and the words of a failed
// answer. Internal to src/scrape.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "scrape/kubernetes_sd.h"
#include "scrape/kubernetes_sd_config.h"

namespace gpucanary::net {
struct ClientTls;  // net/tls_context.h
}  // namespace gpucanary::net

namespace gpucanary::scrape {

// A value type; thread-compatible.
struct KubernetesApi {
  std::string url;     // "https://10.96.0.1:443[/prefix]": api_server, or in-cluster
  std::string origin;  // "https://10.96.0.1:443": a request's URL is this and its target
  std::string host;
  std::uint16_t port = 0;
  std::string prefix;                         // the URL's path, no trailing '/'; "" for none
  std::shared_ptr<const net::ClientTls> tls;  // https only
  std::string authorization_type = "Bearer";
  std::string credentials;              // inline (authorization.credentials)
  std::string credentials_file;         // read for each request; "" none
  std::vector<std::string> namespaces;  // to read; {""}: all (and always for nodes)

  // The Authorization header's value for the next request ("" for none):
  // the credentials file is read again each time (the kubelet rotates the
  // service account's token). Errors: kNotFound / kInvalidArgument naming
  // the file (unreadable, empty).
  Result<std::string> Authorization() const;
};

// Resolves `config`: its api_server with its tls_config and authorization,
// or, without one, `in_cluster` (the environment's KUBERNETES_SERVICE_HOST
// and _PORT where it leaves them empty; the CA file if it exists, else the
// system's CAs; the token file). own_namespace reads in_cluster's namespace
// file. Errors: kInvalidArgument "<name>: why" (Prometheus's words where it
// has them: "unable to load in-cluster configuration, ...", "could not
// determine the pod's namespace: ...").
Result<KubernetesApi> ResolveKubernetesApi(const KubernetesSdConfig& config,
                                           const KubernetesSd::InCluster& in_cluster,
                                           std::string_view name);

// "/api/v1/pods", "/api/v1/namespaces/<ns>/endpoints", "/api/v1/nodes"
// (without the API's prefix).
std::string KubernetesResourcePath(KubernetesKind kind, const std::string& ns);

// "?a=1&b=x%20y": sorted by name, as Go's url.Values.Encode writes them.
std::string KubernetesQuery(const std::map<std::string, std::string>& params);

// Why a non-200 answer failed: "HTTP status 403: <the message of the
// Kubernetes Status it carries>", else the start of the body.
std::string DescribeKubernetesStatus(int status, std::string_view body);

}  // namespace gpucanary::scrape
