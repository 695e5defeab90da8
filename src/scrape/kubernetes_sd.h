#pragma once
// Kubernetes service discovery (one kubernetes_sd_configs entry,
// scrape/kubernetes_sd_config.h): the pods, nodes or endpoints of a cluster
// as target groups with Prometheus's __meta_kubernetes_* labels
// (scrape/kubernetes_sd_labels.h), kept current the way client-go's
// informers keep Prometheus's: LIST, then WATCH from the list's
// resourceVersion.
//
// The API (https://kubernetes.io/docs/reference/using-api/api-concepts/):
//
//   GET /api/v1/pods?limit=500[&labelSelector=..][&fieldSelector=..]
//       (or /api/v1/namespaces/<ns>/pods; nodes, endpoints, services alike)
//     -> {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"41",
//         "continue":"..."},"items":[...]}       (pages followed by `continue`)
//   GET /api/v1/pods?allowWatchBookmarks=true&resourceVersion=41&timeoutSeconds=N&watch=true
//     -> a stream of lines {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}
//
// A watch that ends (the server's timeoutSeconds, 5-10 minutes as client-go
// picks it) is opened again from the last resourceVersion seen; an ERROR
// event or a 410 answer (the resourceVersion expired), a stream broken
// midway or a bad event re-lists. Failures (the API unreachable, 401, 403,
// an answer that is not JSON) keep the objects last listed, and so the
// targets, and are retried after a backoff of 800 ms doubling to 30 s
// (client-go's reflector); the error, naming the URL and what was wrong,
// stays in state().error until a list succeeds again. A watch event changes
// the targets at once (on_change), not at the next poll.
//
// Which objects update which targets is Prometheus's: a pod's or node's own
// events; for endpoints, the Endpoints object's events, its service's, and a
// pod's phase change (a pod's other changes show at the next change of its
// Endpoints, as in Prometheus). Nothing is built before every resource of
// a role (endpoints: endpoints, services and pods of a namespace) has been
// listed once.
//
// Without api_server the pod's service account is used, as client-go's
// rest.InClusterConfig does: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
// the CA and token files of /var/run/secrets/kubernetes.io/serviceaccount
// (the token read again for every request, so a rotated one is used),
// and its `namespace` file for own_namespace.
//
// One io thread per KubernetesSd runs every request; Thread-safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "scrape/config.h"
#include "scrape/target.h"

namespace gpucanary::scrape {

class KubernetesSd {
 public:
  // Where the in-cluster configuration comes from (injectable for tests).
  struct InCluster {
    // "" reads the variable of the same name from the environment at Start.
    std::string service_host;  // KUBERNETES_SERVICE_HOST
    std::string service_port;  // KUBERNETES_SERVICE_PORT
    std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
    std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
    std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
  };

  struct Options {
    InCluster in_cluster;
    int request_timeout_ms = 30'000;  // one LIST page; a watch's connection and head
    // A watch asks the server to end it after timeoutSeconds, picked in
    // [min, 2·min) as client-go's reflector does (5 min); the client gives
    // up 30 s after that.
    int watch_timeout_min_s = 300;
    int backoff_initial_ms = 800;
    int backoff_max_ms = 30'000;
    int list_page_size = 500;                // `limit` of each LIST page
    std::size_t max_list_bytes = 256 << 20;  // one LIST page, decompressed
    std::size_t max_event_bytes = 16 << 20;  // one watch event (line)
    // Called on the discovery's io thread after the targets or the error
    // changed; must be quick and must not call back into this object.
    std::function<void()> on_change;
  };

  // What state() returns. A value type.
  struct State {
    std::vector<TargetGroup> groups;  // one per target (Prometheus's labels per target)
    std::uint64_t generation = 0;     // bumped whenever `groups` change
    std::string error;                // "" while every resource is listed and watched
    std::uint64_t failures = 0;       // failed requests so far (a new one: a new error)
    std::int64_t last_update_ms = 0;  // clock time of the last list or event; 0: none yet
  };

  // `name` names this source in errors and groups ("dcgm
  // kubernetes_sd_configs[0]"); `clock` (for last_update_ms) must outlive
  // this object.
  KubernetesSd(KubernetesSdConfig config, std::string name, Clock& clock, Options options);
  ~KubernetesSd();  // Stop()
  KubernetesSd(const KubernetesSd&) = delete;
  KubernetesSd& operator=(const KubernetesSd&) = delete;

  // Starts listing and watching on a new thread; idempotent, and nothing
  // after Stop.
  void Start();
  // Stops every request and joins the thread; idempotent.
  void Stop();
  // Blocks until every resource's first LIST has finished (or failed), or
  // a configuration error stopped discovery, or `timeout` passed; returns
  // whether it has. REQUIRES: Start() called.
  bool WaitFirstSync(std::chrono::milliseconds timeout);

  State state() const;
  // The API server and what is read: "https://10.96.0.1:443 role=pod
  // namespaces=gpu-operator".
  std::string Describe() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucanary::scrape
