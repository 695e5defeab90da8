#!/usr/bin/env bash
# The deployment files, checked as far as this machine can (docs/deploy.md):
# deploy/kubernetes/gpucanary.yaml parses and carries what the docs promise
# (StatefulSet with a volume, probes on /-/ready and /-/healthy, non-root,
# the ConfigMap and Secret mounted where the configuration reads them, RBAC
# for the Argo abort and the cordon, Service, ServiceMonitor), and the
# ConfigMap's serve.yaml is accepted by the real binary: `gpucanary serve`
# starts on it (its paths moved into a scratch folder) and answers /-/ready.
# deploy/docker/Dockerfile is checked for its shape only (no container
# engine here).
#
#   scripts/test-deploy.sh [BUILD_DIR]      (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
GC=$BUILD/src/cli/gpucanary
TMP=$(mktemp -d -t gc-deploy.XXXXXX)
SERVE=
cleanup() {
  [[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

python3 - deploy/kubernetes/gpucanary.yaml "$TMP" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
def need(cond, what):
    if not cond:
        sys.exit("test-deploy: " + what)
for kind in ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service",
             "StatefulSet", "ServiceMonitor"]:
    need(kind in by_kind, "no " + kind)
sts = by_kind["StatefulSet"][0]["spec"]
pod = sts["template"]["spec"]
need(pod["securityContext"].get("runAsNonRoot") is True, "the pod may run as root")
need(sts.get("volumeClaimTemplates"), "no volume for the data directory")
gc = [c for c in pod["containers"] if c["name"] == "gpucanary"][0]
need(gc["readinessProbe"]["httpGet"]["path"] == "/-/ready", "readiness probe not on /-/ready")
need(gc["livenessProbe"]["httpGet"]["path"] == "/-/healthy", "liveness probe not on /-/healthy")
mounts = {m["name"]: m["mountPath"] for m in gc["volumeMounts"]}
need(mounts.get("data") == "/var/lib/gpucanary", "data volume not at /var/lib/gpucanary")
need(mounts.get("config") == "/etc/gpucanary/serve.yaml", "config not at /etc/gpucanary/serve.yaml")
need(gc["args"][-1] == "/etc/gpucanary/serve.yaml", "the daemon does not read the mounted config")
cm = by_kind["ConfigMap"][0]["data"]["serve.yaml"]
conf = yaml.safe_load(cm)
need(conf["storage"]["path"].startswith(mounts["data"]), "storage.path outside the data volume")
token = conf["auth"]["token_file"]
need(token.startswith(mounts["token"] + "/"), "auth.token_file not in the mounted Secret")
need(conf["listen"].endswith(":9464"), "listen port is not the Service's")
reads = [t for t in conf["auth"].get("tokens", []) if t["scope"] == "read"]
need(reads and reads[0]["token_file"].startswith(mounts["token"] + "/"), "no read token in the Secret")
sm = by_kind["ServiceMonitor"][0]["spec"]["endpoints"][0]
need(sm.get("authorization", {}).get("credentials", {}).get("key") ==
     reads[0]["token_file"].rsplit("/", 1)[1], "the ServiceMonitor does not send the read token")
rules = by_kind["ClusterRole"][0]["rules"]
def allowed(group, resource, verb):
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"]
               for r in rules)
need(allowed("argoproj.io", "rollouts/status", "patch"), "RBAC cannot abort a Rollout")
need(allowed("", "nodes", "patch"), "RBAC cannot cordon a node")
svc = by_kind["Service"][0]["spec"]
need(svc["ports"][0]["port"] == 9464, "Service port")
need(by_kind["ServiceMonitor"][0]["spec"]["endpoints"][0]["path"] == "/metrics", "ServiceMonitor path")
# The configuration for the real binary: paths into the scratch folder.
tmp = sys.argv[2]
conf["storage"]["path"] = tmp + "/data"
conf["auth"]["token_file"] = tmp + "/token"
for t in conf["auth"].get("tokens", []):
    t["token_file"] = tmp + "/" + t["token_file"].rsplit("/", 1)[1]
    open(t["token_file"], "w").write("read-t0ken-for-the-test\n")
conf["listen"] = "127.0.0.1:0"
for a in conf.get("actions", []):
    if a.get("kind") == "diagnostic_bundle":
        a["dir"] = tmp + "/bundles"
open(tmp + "/serve.yaml", "w").write(yaml.safe_dump(conf))
open(tmp + "/token", "w").write("t0ken-for-the-test\n")
print("test-deploy: %d manifests parse and carry what docs/deploy.md says" % len(docs))
EOF

"$GC" serve --config "$TMP/serve.yaml" --ready-file "$TMP/url" >"$TMP/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 1 100); do [[ -s $TMP/url ]] && break; sleep 0.2; done
[[ -s $TMP/url ]] || { cat "$TMP/serve.log"; echo "test-deploy: serve did not start on the ConfigMap's configuration" >&2; exit 1; }
url=$(tr -d '\n' <"$TMP/url")
curl -sf "$url/-/ready" >/dev/null || { cat "$TMP/serve.log"; exit 1; }
curl -sf "$url/-/healthy" >/dev/null || { cat "$TMP/serve.log"; exit 1; }
# What the ServiceMonitor's scrape sends: /metrics with the read token, and
# nothing without it.
curl -sf -H "Authorization: Bearer read-t0ken-for-the-test" "$url/metrics" >/dev/null ||
  { cat "$TMP/serve.log"; echo "test-deploy: /metrics refused the read token" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")
[[ $code == 401 ]] || { echo "test-deploy: /metrics without a token answered $code, not 401" >&2; exit 1; }
echo "test-deploy: gpucanary serve accepts the ConfigMap's serve.yaml (/-/ready, /-/healthy, /metrics with the read token only)"

df=deploy/docker/Dockerfile
[[ $(grep -c '^FROM ' "$df") -ge 2 ]] || { echo "test-deploy: Dockerfile is not multi-stage" >&2; exit 1; }
grep -q '^FROM debian:12-slim' "$df" || { echo "test-deploy: final stage is not debian:12-slim" >&2; exit 1; }
grep -Eq '^USER [1-9][0-9]*' "$df" || { echo "test-deploy: Dockerfile runs as root" >&2; exit 1; }
echo "test-deploy: Dockerfile: multi-stage, debian:12-slim, non-root (not built here)"
