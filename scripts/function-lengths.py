#!/usr/bin/env python3
"""Function-length distribution of C++ sources, from universal-ctags.

Usage: scripts/function-lengths.py [--no-tests] [--top N] [DIR ...]   (default DIR: src)

Every function definition ctags finds (kind "function", with its end line) counts
as end - start + 1 lines, the signature and the closing brace included; lambdas
count as part of the function that holds them. Prints the count, median, p90,
max and the N longest. Needs `universal-ctags` (apt-get install universal-ctags).
"""
import argparse
import json
import statistics
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-tests", action="store_true", help="leave out *_test.cc files")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("dirs", nargs="*", default=["src"])
    args = ap.parse_args()
    out = subprocess.run(
        ["ctags", "-R", "--languages=C++", "--kinds-C++=f", "--fields=+ne",
         "--output-format=json", "-f", "-", *args.dirs],
        check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("kind") != "function" or "end" not in tag:
            continue
        if args.no_tests and tag["path"].endswith("_test.cc"):
            continue
        name = tag["name"]
        scope = tag.get("scope", "").split("::")[-1]
        if scope and not scope.startswith("__anon"):
            name = scope + "::" + name
        rows.append((tag["end"] - tag["line"] + 1, f'{tag["path"]}:{tag["line"]}', name))
    if not rows:
        print("no functions found", file=sys.stderr)
        return 1
    lengths = sorted(r[0] for r in rows)
    p90 = lengths[min(len(lengths) - 1, int(round(0.9 * (len(lengths) - 1))))]
    over80 = sum(1 for n in lengths if n > 80)
    over40 = sum(1 for n in lengths if n > 40)
    print(f"functions {len(lengths)}  median {statistics.median(lengths):g}  p90 {p90}  "
          f"max {lengths[-1]}  over 40 lines {over40}  over 80 lines {over80}")
    for n, where, name in sorted(rows, reverse=True)[: args.top]:
        print(f"{n:5d}  {name}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
