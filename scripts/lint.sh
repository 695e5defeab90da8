#!/usr/bin/env bash
# Static analysis: clang-tidy with .clang-tidy (warnings are errors) over the
# library and CLI sources (not tests), with the debug preset's compile commands.
# Usage: scripts/lint.sh [FILE...]; exit status non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset debug >/dev/null
# Generated sources (protoc output) that our files include must exist before
# clang-tidy reads them.
cmake --build build/debug --target gpucanary_generated >/dev/null
if (($# == 0)); then
  mapfile -t files < <(git ls-files 'src/*.cc' | grep -v '_test\.cc$')
else
  files=("$@")
fi
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy -p build/debug --quiet
echo "clang-tidy: ${#files[@]} files clean"
