#!/usr/bin/env bash
# `gpucanary correlate` over a day of a 1,000-GPU fleet (issue 19, "Scale" and
# "Sensitivity"; docs/performance.md, "Correlating a day"): the simulator's
# fleet of NODES x 8 H100 for HOURS at 15 s scrapes, written once into the
# embedded store (`gpucanary backfill`) and into Prometheus blocks (`promtool
# tsdb create-blocks-from openmetrics`), then correlated from both:
#   store:      the daemon on that store, GET /api/v1/correlate over the range;
#   prometheus: `gpucanary correlate --prometheus` (folded on the server).
# Prints wall time, CPU and peak memory of each, and the regressions found.
#
#   scripts/bench-correlate-day.sh [BUILD_DIR]      (default build/release)
#
# Environment: NODES (125), HOURS (24), SLOWDOWN (1.005: the staged release's
# per-token slowdown), DATA (a folder to keep the generated fleet in and reuse
# on the next run; default a temp dir removed at exit), SKIP_PROM (1: the
# store only).
# The fleet: `stable` everywhere, `tokenizer-fix` (harmless) on the upper half
# at 25% of the range, `kernel-slow` (SLOWDOWN) staged to every node in four
# waves 8 minutes apart (D/180) from 42% (its annotation names every node, as
# a staged rollout's plan does), diurnal load (+-30%, period 24 h) and
# bursts, one node's GPUs 0-1 losing cooling at 75%. Kept series: the ones
# correlate reads plus four of dcgm-exporter's defaults (GPU_UTIL, MEM_CLOCK,
# FB_USED, energy): about 5,000 samples per GPU-hour, 122 M for the default
# day. Generating it takes about 25 minutes on 2 cores.
# Needs: gpucanary built, /usr/bin/prometheus and promtool, curl, mawk, python3;
# about 30 GB free while generating (2-hour parts are removed once loaded).
set -euo pipefail

BUILD=${1:-build/release}
GC=$(cd "$(dirname "$BUILD/src/cli/gpucanary")" && pwd)/gpucanary
NODES=${NODES:-125}
HOURS=${HOURS:-24}
SLOWDOWN=${SLOWDOWN:-1.005}
SKIP_PROM=${SKIP_PROM:-0}

for f in "$GC" /usr/bin/prometheus /usr/bin/promtool; do
  [[ -x $f ]] || { echo "missing $f" >&2; exit 2; }
done
command -v mawk >/dev/null || { echo "missing mawk" >&2; exit 2; }

PIDS=()
if [[ -n ${DATA:-} ]]; then
  mkdir -p "$DATA"
  TMP=$(mktemp -d -t gc-day.XXXXXX)
else
  TMP=$(mktemp -d -t gc-day.XXXXXX)
  DATA=$TMP/data
  mkdir -p "$DATA"
fi
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "[day] $*" >&2; }

D=$((HOURS * 3600))
START=1764680000  # the simulator's t = 0

generate() {
  local half=$((NODES / 2)) q=$((NODES / 4))
  {
    cat <<EOF
seed: 7
duration: ${D}s
fleet:
  - {nodes: "node-[1-$NODES]", gpu: h100-sxm, gpus: 8}
releases:
  stable: {profile: baseline}
  tokenizer-fix: {profile: baseline}
  kernel-slow: {profile: baseline, slowdown: $SLOWDOWN}
traffic: {rps: $((NODES * 45)), diurnal: {amplitude: 0.3, period: 24h}, bursts: {rate: 1/10m}}
events:
  - {at: 0s, deploy: stable, nodes: all}
  - {at: $((D * 25 / 100))s, deploy: tokenizer-fix, nodes: "node-[$((half + 1))-$NODES]"}
EOF
    for w in 0 1 2 3; do
      local a=$((w * q + 1)) b=$(((w + 1) * q))
      ((w == 3)) && b=$NODES
      echo "  - {at: $((D * 42 / 100 + w * D / 180))s, deploy: kernel-slow, nodes: \"node-[$a-$b]\"}"
    done
    echo "  - {at: $((D * 75 / 100))s, fault: thermal, nodes: [node-$NODES], gpus: \"0-1\", params: {cooling_factor: 2}}"
  } >"$DATA/day.yaml"
  rm -rf "$DATA/sim" "$DATA/store" "$DATA/prom" "$DATA/parts"
  mkdir -p "$DATA/sim" "$DATA/parts" "$DATA/prom"
  mkfifo "$DATA/sim/telemetry.om"
  log "simulating $NODES nodes x 8 GPUs for $HOURS h at 15 s"
  # A simulator that fails opens the pipe once so that its reader ends.
  (
    "$GC" sim --scenario "$DATA/day.yaml" --offline "$DATA/sim" --scrape-interval 15 \
      >"$DATA/sim.log" 2>&1 || { touch "$DATA/sim.failed"; : >"$DATA/sim/telemetry.om"; }
  ) &
  local sim=$!
  # Each finished 2-hour part: into the store, into Prometheus blocks, removed.
  (
    i=0
    while :; do
      if [[ -e $DATA/parts/$i.done ]]; then
        "$GC" backfill --data "$DATA/store" "$DATA/parts/$i.om" >>"$DATA/backfill.log" 2>&1
        if [[ $SKIP_PROM != 1 ]]; then
          promtool tsdb create-blocks-from openmetrics "$DATA/parts/$i.om" "$DATA/prom" \
            >>"$DATA/promtool.log" 2>&1
        fi
        rm -f "$DATA/parts/$i.om"
        i=$((i + 1))
      elif [[ -e $DATA/parts/end ]]; then
        break
      else
        sleep 2
      fi
    done
  ) &
  local consumer=$!
  local keep='^(# (HELP|TYPE) (DCGM|vllm:(generation|inter_token|e2e|num_requests_running))|# EOF|'
  keep+='DCGM_FI_DEV_(SM_CLOCK|MEM_CLOCK|POWER_USAGE|GPU_TEMP|CLOCK_THROTTLE_REASONS|PCIE_LINK_WIDTH|'
  keep+='PCIE_LINK_GEN|PCIE_REPLAY_COUNTER|XID_ERRORS|ECC_SBE_VOL_TOTAL|ECC_DBE_VOL_TOTAL|GPU_UTIL|'
  keep+='FB_USED|TOTAL_ENERGY_CONSUMPTION)\{|DCGM_FI_PROF_(DRAM_ACTIVE|PIPE_TENSOR_ACTIVE|'
  keep+='SM_OCCUPANCY)\{|vllm:(generation_tokens_total|inter_token_latency_seconds_(sum|count|bucket)|'
  keep+='e2e_request_latency_seconds_(sum|count|bucket)|num_requests_running)\{)'
  # Parts of 2 hours, each with the metadata seen so far and "# EOF".
  grep -E "$keep" <"$DATA/sim/telemetry.om" |
    mawk -v dir="$DATA/parts" 'BEGIN { n = 0; cur = -1; f = "" }
      /^#/ { if ($0 != "# EOF") { hdr = hdr $0 "\n"; if (f != "") print > f } next }
      { p = int($NF / 7200)
        if (p != cur) {
          if (f != "") { print "# EOF" > f; close(f); system("touch " dir "/" n ".done"); n++ }
          cur = p; f = dir "/" n ".om"; printf "%s", hdr > f
        }
        print > f }
      END { if (f != "") { print "# EOF" > f; close(f); system("touch " dir "/" n ".done") }
            system("touch " dir "/end") }'
  wait "$sim"
  wait "$consumer"
  if [[ -e $DATA/sim.failed ]]; then
    cat "$DATA/sim.log" >&2
    exit 1
  fi
  python3 - "$DATA/sim/releases.jsonl" "$NODES" >"$DATA/releases.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["id"] == "kernel-slow":
        r["targets"] = ["node-%d" % i for i in range(1, int(sys.argv[2]) + 1)]
    print(json.dumps(r))
EOF
  rm -rf "$DATA/sim"
  grep -o ': [0-9]* samples,' "$DATA/backfill.log" | awk '{s += $2} END {print s}' >"$DATA/samples"
  touch "$DATA/complete"
}

if [[ ! -e $DATA/complete ]]; then generate; fi
SAMPLES=$(cat "$DATA/samples")
log "$SAMPLES samples; store $(du -sh "$DATA/store" | cut -f1), Prometheus $(du -sh "$DATA/prom" | cut -f1)"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
  for _ in $(seq 1 300); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
summary() {
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d = d.get("data", d)
print(f"  {d['gpus']} GPUs, {d['nodes']} nodes, {d['resolution_s']} s buckets, "
      f"{len(d['regressions'])} regressions")
for r in d["regressions"]:
    print("   -", r["summary"][:300])
EOF
}
FROM=$START
TO=$((START + D))

# The store, through the daemon.
P=$(port)
cp -r "$DATA/store" "$TMP/store"
printf 'listen: 127.0.0.1:%s\nstorage: {path: %s, retention: 100y}\n' "$P" "$TMP/store" \
  >"$TMP/serve.yaml"
"$GC" serve --config "$TMP/serve.yaml" >"$TMP/serve.log" 2>&1 &
SERVE=$!
PIDS+=("$SERVE")
wait_ready "http://127.0.0.1:$P/-/ready" || { cat "$TMP/serve.log"; exit 1; }
while read -r line; do
  curl -sf -XPOST -H 'Content-Type: application/json' --data "$line" \
    "http://127.0.0.1:$P/api/v1/releases" >/dev/null
done <"$DATA/releases.jsonl"
rss0=$(awk '/VmRSS/ {print $2}' "/proc/$SERVE/status")
cpu0=$(awk '{print ($14 + $15) / 100}' "/proc/$SERVE/stat")
t0=$(date +%s.%N)
curl -sf "http://127.0.0.1:$P/api/v1/correlate?from=$FROM&to=$TO" -o "$TMP/store.json"
t1=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVE/status")
cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$SERVE/stat")
kill "$SERVE"
wait "$SERVE" 2>/dev/null || true
echo "store: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s wall for $SAMPLES samples," \
  "daemon $(python3 -c "print(f'{$cpu - $cpu0:.1f}')") s CPU, peak RSS $((hwm / 1024)) MB ($((rss0 / 1024)) MB before)"
summary "$TMP/store.json"

if [[ $SKIP_PROM != 1 ]]; then
  P=$(port)
  echo "global: {}" >"$TMP/prom.yml"
  prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$DATA/prom" \
    --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$P" \
    >"$TMP/prom.log" 2>&1 &
  PROM=$!
  PIDS+=("$PROM")
  wait_ready "http://127.0.0.1:$P/-/ready" || { cat "$TMP/prom.log"; exit 1; }
  pcpu0=$(awk '{print $14 + $15}' "/proc/$PROM/stat")
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/time" "$GC" correlate --prometheus "http://127.0.0.1:$P" \
    --releases "$DATA/releases.jsonl" --from "$FROM" --to "$TO" >"$TMP/prom.json"
  pcpu1=$(awk '{print $14 + $15}' "/proc/$PROM/stat")
  read -r wall user sys kb <"$TMP/time"
  echo "prometheus (folded): $wall s wall; gpucanary $(python3 -c "print(f'{$user + $sys:.1f}')") s CPU," \
    "peak RSS $((kb / 1024)) MB; Prometheus $(python3 -c "print(f'{($pcpu1 - $pcpu0) / 100:.1f}')") s CPU"
  summary "$TMP/prom.json"
fi
