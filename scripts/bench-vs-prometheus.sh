#!/usr/bin/env bash
# gpucanary against Debian's Prometheus (/usr/bin/prometheus, /usr/bin/promtool)
# on the same data; prints a Markdown table (docs/performance.md, "The store and
# the scraper against Prometheus").
#
#   scripts/bench-vs-prometheus.sh [BUILD_DIR]      (default build/release)
#
# Environment: NODES (sim nodes of 8 GPUs, 32), WARMUP (s before the measured
# window, 20), WINDOW (measured seconds per scraper, 60), RUNS (scrape runs per
# scraper, medians reported, 1), SIM_SECONDS (offline recording, 1800), TRACES
# (the real H100 DCGM traces, default ../shared/data/gpu-traces/...), SCRAPE
# (0: the disk comparison only).
# Needs: the gpucanary and store_bench targets built, curl, python3.
# Everything lives in a temp dir; ports are ephemeral; children die on exit.
set -euo pipefail

BUILD=${1:-build/release}
GC=$BUILD/src/cli/gpucanary
SB=$BUILD/bench/store_bench
NODES=${NODES:-32}
WARMUP=${WARMUP:-20}
WINDOW=${WINDOW:-60}
RUNS=${RUNS:-1}
SIM_SECONDS=${SIM_SECONDS:-1800}
REPO=$(cd "$(dirname "$0")/.." && pwd)

for f in "$GC" "$SB" /usr/bin/prometheus /usr/bin/promtool; do
  [[ -x $f ]] || { echo "missing $f" >&2; exit 2; }
done

TMP=$(mktemp -d -t gc-vs-prom.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
log() { echo "[bench] $*" >&2; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# Sum of a metric's samples in a /metrics body: metric_sum URL NAME
metric_sum() {
  curl -fsS "$1" | python3 -c '
import sys
name = sys.argv[1]; total = 0.0
for line in sys.stdin:
    if line.startswith(name) and (line[len(name)] in " {"):
        rest = line.rsplit("}", 1)[1] if "{" in line else line[len(name):]
        total += float(rest.split()[0])
print(int(total))' "$2"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
wait_for() {  # wait_for FILE SECONDS
  for _ in $(seq 1 $(($2 * 10))); do [[ -s $1 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
div() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.${3:-3}f}')" "$1" "$2"; }
du_b() { du -sbc "$@" | tail -1 | cut -f1; }
TICK=$(getconf CLK_TCK)

# ---- 1a. bytes per sample: the synthetic dcgm mix --------------------------------
log "store_bench SyntheticMix"
"$SB" --benchmark_filter=SyntheticMix --write_om="$TMP/mix.om" --benchmark_format=json \
  >"$TMP/mix.json" 2>/dev/null
MIX_GC_BENCH=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["benchmarks"][0]["segment_bytes_per_sample"])' "$TMP/mix.json")

# disk_compare NAME FILE: backfills FILE into gpucanary and promtool, prints a row pair.
disk_compare() {
  local name=$1 file=$2
  log "$name: gpucanary backfill"
  "$GC" backfill --data "$TMP/gc-$name" "$file" >"$TMP/bf-$name.txt"
  local samples gc_chunks gc_total
  samples=$(sed -n 's/.*: \([0-9]*\) samples,.*/\1/p' "$TMP/bf-$name.txt" | head -1)
  gc_chunks=$(du_b "$TMP/gc-$name"/chunks)
  gc_total=$(du_b "$TMP/gc-$name")
  log "$name: promtool tsdb create-blocks-from openmetrics"
  promtool tsdb create-blocks-from openmetrics "$file" "$TMP/prom-$name" >/dev/null
  local p_samples p_chunks p_total
  p_samples=$(promtool tsdb list "$TMP/prom-$name" | awk 'NR>1 {s+=$5} END {print s}')
  p_chunks=$(du_b "$TMP/prom-$name"/*/chunks)
  p_total=$(du_b "$TMP/prom-$name")
  echo "| $name | gpucanary | $samples | $gc_chunks | $(div "$gc_chunks" "$samples") | $gc_total | $(div "$gc_total" "$samples") |"
  echo "| $name | Prometheus 2.42 | $p_samples | $p_chunks | $(div "$p_chunks" "$p_samples") | $p_total | $(div "$p_total" "$p_samples") |"
}

# ---- 1b. bytes per sample: a realistic recording ----------------------------------
log "sim --offline power-brake, $SIM_SECONDS s"
"$GC" sim --scenario "$REPO/scenarios/power-brake.yaml" --offline "$TMP/rec" \
  --duration "$SIM_SECONDS" >/dev/null

DISK_ROWS=$(disk_compare synthetic-mix "$TMP/mix.om"; disk_compare power-brake "$TMP/rec/telemetry.om")

# ---- 1c. bytes per sample: real H100 telemetry ----------------------------------
# shared/data/gpu-traces: DCGM at 10 Hz on 8x H100 SXM5 under five workloads,
# taken at 1 s and printed as dcgm-exporter prints it (scripts/gpu-trace-to-om.py).
TRACES=${TRACES:-$REPO/../shared/data/gpu-traces/atharvanihalani-gpu-telemetry-exploration}
if compgen -G "$TRACES/*_telemetry.csv" >/dev/null; then
  log "real H100 traces from $TRACES"
  python3 "$REPO/scripts/gpu-trace-to-om.py" "$TMP/h100.om" "$TRACES"/*_telemetry.csv
  DISK_ROWS+=$'\n'$(disk_compare h100-traces "$TMP/h100.om")
else
  log "no H100 traces at $TRACES (set TRACES=DIR); that row is skipped"
fi

# ---- 2. scrape CPU and memory ----------------------------------------------------
if [[ ${SCRAPE:-1} == 1 ]]; then
cat >"$TMP/fleet.yaml" <<EOF
seed: 7
duration: 24h
fleet:
  - {nodes: "node-[1-$NODES]", gpu: h100-sxm, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
traffic: {rps: 320}
events:
  - {at: 0s, deploy: stable, nodes: all}
EOF
log "sim live: $NODES nodes"
"$GC" sim --scenario "$TMP/fleet.yaml" --host 127.0.0.1 --base-port 0 --control-port 0 \
  --targets-file "$TMP/targets.json" >"$TMP/sim.log" 2>&1 &
PIDS+=($!)
SIM_PID=$!
wait_for "$TMP/targets.json" 60
TARGETS=$(python3 -c 'import json,sys; print(sum(len(g["targets"]) for g in json.load(open(sys.argv[1]))))' "$TMP/targets.json")

# measure KIND RUN: starts one scraper, waits WARMUP, measures WINDOW, stops it.
# Prints "cpu_s samples series rss_bytes hwm_bytes".
measure() {
  local kind=$1 run=$2 dir=$TMP/$1-$2 pid url samples_metric series_metric
  mkdir -p "$dir"
  if [[ $kind == gpucanary ]]; then
    cat >"$dir/serve.yaml" <<EOF
listen: 127.0.0.1:0
storage: {path: $dir/data}
global: {scrape_interval: 1s, scrape_timeout: 1s, fast_interval: 1s}
scrape_configs:
  - job_name: sim
    file_sd_configs: [{files: ['$TMP/targets.json'], refresh_interval: 1m}]
EOF
    "$GC" serve --config "$dir/serve.yaml" --ready-file "$dir/ready" >"$dir/log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_for "$dir/ready" 60
    url="$(cat "$dir/ready")/metrics"
    samples_metric=gpucanary_scrape_samples_total
    series_metric=gpucanary_store_head_series
  else
    local port
    port=$(free_port)
    cat >"$dir/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: sim
    file_sd_configs: [{files: ['$TMP/targets.json'], refresh_interval: 1m}]
EOF
    /usr/bin/prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
      --web.listen-address="127.0.0.1:$port" >"$dir/log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    url="http://127.0.0.1:$port/metrics"
    for _ in $(seq 1 600); do curl -fs "http://127.0.0.1:$port/-/ready" >/dev/null && break; sleep 0.1; done
    samples_metric=prometheus_tsdb_head_samples_appended_total
    series_metric=prometheus_tsdb_head_series
  fi
  sleep "$WARMUP"
  local c0 s0 c1 s1 series rss hwm
  c0=$(cpu_ticks "$pid"); s0=$(metric_sum "$url" "$samples_metric")
  sleep "$WINDOW"
  c1=$(cpu_ticks "$pid"); s1=$(metric_sum "$url" "$samples_metric")
  series=$(metric_sum "$url" "$series_metric")
  rss=$(($(status_kb "$pid" VmRSS) * 1024)); hwm=$(($(status_kb "$pid" VmHWM) * 1024))
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$(div $((c1 - c0)) "$TICK" 2) $((s1 - s0)) $series $rss $hwm"
}

SCRAPE_ROWS=""
for kind in gpucanary prometheus; do
  : >"$TMP/$kind.runs"
  for run in $(seq 1 "$RUNS"); do
    log "$kind run $run: ${WARMUP}s warm-up, ${WINDOW}s measured"
    measure "$kind" "$run" | tee -a "$TMP/$kind.runs" >&2
  done
  col() { awk -v c="$1" '{print $c}' "$TMP/$kind.runs" | median; }
  cpu=$(col 1); samples=$(col 2); series=$(col 3); rss=$(col 4); hwm=$(col 5)
  cpu_per_m=$(div "$cpu" "$(div "$samples" 1000000 6)")
  rss_per_series=$(div "$rss" "$series" 0)
  printf -v "${kind}_cpu_per_m" '%s' "$cpu_per_m"
  printf -v "${kind}_rss_per_series" '%s' "$rss_per_series"
  SCRAPE_ROWS+="| $kind | $cpu | $samples | $cpu_per_m | $series | $rss | $hwm | $rss_per_series |"$'\n'
done

fi

echo "Disk (chunks = chunk segments / block chunks dirs; total = whole data directory):"
echo
echo "| data | store | samples | chunk bytes | chunk B/sample | total bytes | total B/sample |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
echo "$DISK_ROWS"
echo
echo "store_bench BM_SyntheticMix segment_bytes_per_sample: $MIX_GC_BENCH"
echo
if [[ ${SCRAPE:-1} == 1 ]]; then
echo "Scraping $TARGETS targets ($NODES nodes x 8 GPUs, dcgm + vLLM endpoints) at 1 s;" \
  "${WINDOW} s window after ${WARMUP} s warm-up; median of $RUNS run(s) each:"
echo
echo "| scraper | CPU s | samples | CPU s / M samples | active series | RSS end (B) | peak RSS (B) | RSS B / series |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s' "$SCRAPE_ROWS"
echo
echo "Ratio Prometheus / gpucanary: CPU per sample $(div "$prometheus_cpu_per_m" "$gpucanary_cpu_per_m" 2)x," \
  "RSS per series $(div "$prometheus_rss_per_series" "$gpucanary_rss_per_series" 2)x"
kill "$SIM_PID" 2>/dev/null || true
fi
