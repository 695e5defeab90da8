#!/usr/bin/env bash
# The second README command: installs what is needed, builds gpucanary with
# AddressSanitizer + UndefinedBehaviorSanitizer, runs the whole test suite
# (unit, conformance, integration, fuzz-corpus replay, benchmark smoke runs),
# then fuzzes the exposition parser with libFuzzer for a short while.
# Exit status is non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

jobs=$(nproc)
cmake --preset asan
cmake --build build/asan -j "$jobs"
ctest --preset asan -j "$jobs"

# libFuzzer run (clang): new inputs go to a scratch directory, never into the repo.
fuzz_seconds=${GPUCANARY_FUZZ_SECONDS:-30}
if ((fuzz_seconds > 0)); then
  cmake --preset fuzz
  cmake --build build/fuzz -j "$jobs" --target exposition_fuzz
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  # A crash makes libFuzzer exit non-zero (and this script with it); the input
  # is left in $scratch/crash-* and printed, to be added to fuzz/corpus.
  build/fuzz/fuzz/exposition_fuzz -max_total_time="$fuzz_seconds" -print_final_stats=1 \
    -artifact_prefix="$scratch/" "$scratch" fuzz/corpus/exposition > "$scratch/fuzz.log" 2>&1 ||
    { tail -n 40 "$scratch/fuzz.log"; exit 1; }
  tail -n 8 "$scratch/fuzz.log"
  echo "libFuzzer: ${fuzz_seconds}s without a crash"
fi
