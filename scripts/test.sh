#!/usr/bin/env bash
# The second README command: installs what is needed, checks formatting,
# builds gpucanary with AddressSanitizer + UndefinedBehaviorSanitizer, runs the
# whole test suite (unit, conformance, integration, fuzz-corpus replay,
# benchmark smoke runs), runs clang-tidy, then fuzzes each fuzz target with
# libFuzzer for a short while.
# Exit status is non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

# Formatting is part of the suite: .clang-format (Google, 100 columns).
git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror
echo "clang-format: all sources formatted"

jobs=$(nproc)
cmake --preset asan
cmake --build build/asan -j "$jobs"

ctest --preset asan -j "$jobs"

# Static analysis (.clang-tidy, warnings are errors). It ran beside the tests
# for one CI run: the tests went from 386 s to 658 s, a browser test hit a
# race under the load, and nothing was saved; so it runs after them.
bash scripts/lint.sh 2>&1 | grep -v 'warnings generated' || exit 1

# libFuzzer runs (clang), one per fuzz target: new inputs go to a scratch
# directory, never into the repo. A crash makes libFuzzer exit non-zero (and
# this script with it); the input is left in the scratch dir and its bytes are
# printed, to be added to fuzz/corpus/<target>.
fuzz_seconds=${GPUCANARY_FUZZ_SECONDS:-10}
if ((fuzz_seconds > 0)); then
  cmake --preset fuzz
  cmake --build build/fuzz -j "$jobs" --target exposition_fuzz csv_import_fuzz scenario_fuzz \
    remote_write_fuzz store_fuzz scrape_config_fuzz release_fuzz
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  for target in exposition csv_import scenario remote_write store scrape_config release; do
    mkdir -p "$scratch/$target"
    build/fuzz/fuzz/${target}_fuzz -max_total_time="$fuzz_seconds" -print_final_stats=1 \
      -artifact_prefix="$scratch/$target/" "$scratch/$target" "fuzz/corpus/$target" \
      > "$scratch/$target.log" 2>&1 || { tail -n 40 "$scratch/$target.log"; exit 1; }
    echo "libFuzzer ${target}_fuzz: ${fuzz_seconds}s without a crash ($(grep -o 'cov: [0-9]*' "$scratch/$target.log" | tail -n 1) edges)"
  done
fi
