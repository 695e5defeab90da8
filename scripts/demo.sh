#!/usr/bin/env bash
# The first README command: installs what is needed, builds gpucanary
# (release) and runs `gpucanary demo` on its embedded defaults (docs/demo.md):
# a simulated fleet and the daemon on loopback, a healthy release rolled out
# and promoted, then a faulty one halted by the circuit breaker.
# From a terminal the demo keeps the dashboard up until Ctrl-C; without one
# (a script, CI) it ends after the verdict, exit status 0 when the verdicts,
# causes and actions are the expected ones. Extra arguments go to the demo
# (e.g. --scenario bad-node; --list-scenarios).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build build/release -j "$(nproc)" --target gpucanary

bin=build/release/src/cli/gpucanary
if [[ -t 0 ]]; then
  exec "$bin" demo "$@"
else
  exec "$bin" demo --exit "$@"
fi
