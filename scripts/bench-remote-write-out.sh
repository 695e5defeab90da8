#!/bin/bash
# The daemon's CPU and memory on a simulated 1,000-GPU fleet scraped at 1 s
# (125 nodes x 8 H100s, ~41,900 samples/s), for 120 s after a 60 s warm-up,
# without and then with remote_write_out to a local Prometheus 2.42 started
# with --web.enable-remote-write-receiver (docs/performance.md, "remote_write
# out"). Prints one line per run: CPU seconds of `gpucanary serve`, samples
# stored and sent, RSS, and Prometheus's own CPU time.
#
#   cmake --build build/release --target gpucanary
#   scripts/bench-remote-write-out.sh [build/release/src/cli/gpucanary] [WORKDIR]
set -euo pipefail
BIN=$(realpath "${1:-build/release/src/cli/gpucanary}")
WORK=${2:-/tmp/gpucanary-rw-out-bench}
command -v prometheus >/dev/null || { echo "needs Debian's prometheus" >&2; exit 1; }
# Whatever this started goes when it ends, however it ends.
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT

metric() { curl -s "$1/metrics" | awk -v m="$2" 'index($0, m) == 1 && !f {print $NF; f = 1}'; }

run() {
  local mode=$1 dir="$WORK/$1" sim srv prom=""
  rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
  cat > fleet.yaml <<Y
seed: 3
duration: 3600s
fleet:
  - {nodes: "node-[1-125]", gpu: h100-sxm, gpus: 8, driver: "580.105.08"}
releases:
  stable: {profile: baseline}
traffic: {rps: 5000}
events:
  - {at: 0s, deploy: stable, nodes: all}
Y
  "$BIN" sim --scenario fleet.yaml --base-port 0 --control-port 0 --targets-file targets.json \
    > sim.log 2>&1 &
  sim=$!
  for _ in $(seq 60); do [ -f targets.json ] && break; sleep 1; done
  cat > serve.yaml <<Y
listen: 127.0.0.1:0
storage: {path: data}
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: fleet
    file_sd_configs: [{files: [targets.json]}]
Y
  if [ "$mode" = with ]; then
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    echo "global: {scrape_interval: 1h}" > prom.yml
    prometheus --config.file=prom.yml --storage.tsdb.path=prom \
      --web.listen-address="127.0.0.1:$port" --web.enable-remote-write-receiver > prom.log 2>&1 &
    prom=$!
    printf 'remote_write_out:\n  - {url: "http://127.0.0.1:%s/api/v1/write", name: prom}\n' \
      "$port" >> serve.yaml
  fi
  "$BIN" serve --config serve.yaml --ready-file url.txt > serve.log 2>&1 &
  srv=$!
  for _ in $(seq 60); do [ -f url.txt ] && break; sleep 1; done
  local url; url=$(cat url.txt)
  sleep 60
  local c0 s0 r0 c1 s1 r1
  c0=$(metric "$url" process_cpu_seconds_total)
  s0=$(metric "$url" gpucanary_store_samples_appended_total)
  r0=$(metric "$url" gpucanary_remote_write_out_samples_sent_total)
  sleep 120
  c1=$(metric "$url" process_cpu_seconds_total)
  s1=$(metric "$url" gpucanary_store_samples_appended_total)
  r1=$(metric "$url" gpucanary_remote_write_out_samples_sent_total)
  local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$srv/status")
  local pcpu=""; [ -n "$prom" ] && pcpu=$(ps -o cputime= -p "$prom")
  python3 - "$mode" "$c0" "$c1" "$s0" "$s1" "${r0:-0}" "${r1:-0}" "$rss" "$pcpu" <<'PY'
import sys
mode, c0, c1, s0, s1, r0, r1, rss, pcpu = sys.argv[1:]
cpu, stored, sent = float(c1) - float(c0), float(s1) - float(s0), float(r1) - float(r0)
print(f"{mode} remote_write_out: serve CPU {cpu:.2f} s over 120 s, {stored:.0f} samples stored "
      f"({cpu / stored * 1e6:.2f} us a sample), {sent:.0f} sent, RSS {int(rss) // 1024} MB"
      + (f", Prometheus CPU since start {pcpu.strip()}" if pcpu else ""))
PY
  kill "$srv"; wait "$srv" 2>/dev/null || true
  kill "$sim" $prom 2>/dev/null || true; wait 2>/dev/null || true
  cd - >/dev/null
}

run without
run with
