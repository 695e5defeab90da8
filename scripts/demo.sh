#!/usr/bin/env bash
# The first README command: installs what is needed, builds gpucanary (release)
# and runs the main job on real data: checking and summarising real
# dcgm-exporter scrapes from ../shared/data.
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
if "$bin" explain-throttle --help >/dev/null 2>&1; then
  echo
  echo "== what the throttle bitmask and XIDs mean =="
  "$bin" explain-throttle 0x88
  "$bin" explain-xid 79
fi
