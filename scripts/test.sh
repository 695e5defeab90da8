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

# Static analysis (.clang-tidy, warnings are errors) runs beside the tests at
# the lowest CPU priority (nice 19), so it takes only the CPU the tests leave
# idle while they wait on real time (about a quarter of it), and finishes
# after them. Run beside them at normal priority it once slowed the tests
# from 386 s to 658 s and made a browser test race; niced, it leaves their
# CPU share alone. Its findings are printed after the tests' results.
# Only what changed is linted: the sources touched by the last
# GPUCANARY_LINT_COMMITS commits (default 30, more than a landing holds);
# every source when the history is shorter (a shallow clone) or when
# GPUCANARY_LINT_COMMITS=all. `bash scripts/lint.sh` lints everything.
lint_commits=${GPUCANARY_LINT_COMMITS:-30}
lint_files=()
if [[ $lint_commits != all ]] && git rev-parse -q --verify "HEAD~$lint_commits^{commit}" >/dev/null; then
  while IFS= read -r f; do
    [[ -f $f ]] && lint_files+=("$f")
  done < <(git diff --name-only "HEAD~$lint_commits" -- 'src/*.cc' 'eval/*.cc' | grep -v '_test\.cc$' || true)
  echo "clang-tidy: ${#lint_files[@]} sources changed in the last $lint_commits commits"
  ((${#lint_files[@]} > 0)) || lint_files=(--none)
fi
lint_log=$(mktemp)
if [[ ${lint_files[0]:-} == --none ]]; then
  (exit 0) &
else
  nice -n 19 bash scripts/lint.sh "${lint_files[@]}" >"$lint_log" 2>&1 &
fi
lint_pid=$!
ctest_status=0
ctest --preset asan -j "$jobs" || ctest_status=$?
lint_status=0
wait "$lint_pid" || lint_status=$?
grep -v 'warnings generated' "$lint_log" || true
rm -f "$lint_log"
((ctest_status == 0)) || exit "$ctest_status"
((lint_status == 0)) || exit 1

# libFuzzer runs (clang), one per fuzz target: new inputs go to a scratch
# directory, never into the repo. A crash makes libFuzzer exit non-zero (and
# this script with it); the input is left in the scratch dir and its bytes are
# printed, to be added to fuzz/corpus/<target>.
fuzz_seconds=${GPUCANARY_FUZZ_SECONDS:-10}
if ((fuzz_seconds > 0)); then
  cmake --preset fuzz
  cmake --build build/fuzz -j "$jobs" --target exposition_fuzz csv_import_fuzz scenario_fuzz \
    remote_write_fuzz store_fuzz scrape_config_fuzz release_fuzz http_request_fuzz
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  for target in exposition csv_import scenario remote_write store scrape_config release http_request; do
    mkdir -p "$scratch/$target"
    build/fuzz/fuzz/${target}_fuzz -max_total_time="$fuzz_seconds" -print_final_stats=1 \
      -artifact_prefix="$scratch/$target/" "$scratch/$target" "fuzz/corpus/$target" \
      > "$scratch/$target.log" 2>&1 || { tail -n 40 "$scratch/$target.log"; exit 1; }
    echo "libFuzzer ${target}_fuzz: ${fuzz_seconds}s without a crash ($(grep -o 'cov: [0-9]*' "$scratch/$target.log" | tail -n 1) edges)"
  done
fi
