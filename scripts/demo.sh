#!/usr/bin/env bash
# The first README command: installs what is needed, builds gpucanary (release)
# and runs the main job on real data from ../shared/data: checking and
# summarising real dcgm-exporter scrapes, and importing a real DCGM trace into
# a recorded telemetry file that shows which GPUs were power-capped; then a
# simulated fleet with a bad release, recorded offline with its ground truth.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build build/release -j "$(nproc)" --target gpucanary

shared=${GPUCANARY_SHARED_DIR:-../shared}
bin=build/release/src/cli/gpucanary

echo
echo "== gpucanary check: validate real dcgm-exporter scrapes =="
"$bin" check "$shared"/data/dcgm-samples/*.txt
echo
echo "== gpucanary summarize: 8x H100 node running vLLM (GPU Operator scrape) =="
"$bin" summarize "$shared/data/dcgm-samples/h100x8-gpu-operator-k8s-aicr.txt"
echo
echo "== gpucanary summarize: L4 with the default counters =="
"$bin" summarize "$shared/data/dcgm-samples/l4-default-counters-kops.txt"
echo
echo "== what the throttle bitmask and XIDs mean =="
"$bin" explain-throttle 0x88
"$bin" explain-xid 79

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo
echo "== gpucanary import: a real 10 Hz DCGM trace of 8x H100 (inference on GPUs 0-3, training on 4-7) =="
"$bin" import dcgm-csv "$shared/data/gpu-traces/atharvanihalani-gpu-telemetry-exploration/e2_telemetry.csv" \
  -o "$out/e2.om.gz" --hostname h100-node
"$bin" check "$out/e2.om.gz"
echo
echo "== gpucanary summarize: which GPUs were held back, and by what =="
"$bin" summarize "$out/e2.om.gz"
echo
echo "== gpucanary sim: a simulated 8-node H100 fleet; release fp8-kernel trips the power brake on node-4 =="
"$bin" sim --scenario scenarios/power-brake.yaml --offline "$out/sim" --gzip
echo
echo "== what the fleet's telemetry shows (node-4 held at the brake floor since the release) =="
"$bin" summarize "$out/sim/telemetry.om.gz" | grep -E "^(GPU|node-[345]/[0-3]) "
echo
echo "== the ground truth the simulator wrote: what it caused, where, since when =="
grep '"type":"fault"' "$out/sim/truth.jsonl"
