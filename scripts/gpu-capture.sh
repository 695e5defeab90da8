#!/usr/bin/env bash
# The real-GPU check of docs/nvml.md, for a machine with an NVIDIA GPU, its
# driver, and PyTorch: builds gpucanary, runs `gpucanary exporter` for a
# minute while a matrix-multiply load runs from second 10 to 50, saves one
# scrape a second, a recording of them, the exporter's log and a summary, and
# checks that the SM clock and power rise under load and every value is
# plausible. It changes no GPU setting (clocks, power limits).
#
# Usage: scripts/gpu-capture.sh OUT_DIR        (exit 0 when every check holds)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-capture.sh OUT_DIR}
mkdir -p "$out/scrapes"

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >"$out/nvidia-smi.csv" || true
cmake --preset release -DGPUCANARY_BUILD_TESTS=OFF -DGPUCANARY_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/release -j "$(nproc)" --target gpucanary >/dev/null
bin=build/release/src/cli/gpucanary

"$bin" exporter --once >"$out/once.txt" 2>"$out/once.log"
"$bin" exporter --listen 127.0.0.1:0 --interval 1s --duration 62s --hostname "$(hostname)" \
  --ready-file "$out/url.txt" >"$out/exporter.out" 2>"$out/exporter.log" &
exporter=$!
for _ in $(seq 100); do [[ -s "$out/url.txt" ]] && break; sleep 0.1; done
url=$(cat "$out/url.txt")

python3 - <<'PY' >"$out/load.log" 2>&1 &
import time, torch
time.sleep(10)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end, n = time.time() + 40, 0
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
print(f"{n} matmuls of 8192x8192 bf16 in 40 s: {n * 2 * 8192**3 / 40 / 1e12:.1f} TFLOP/s")
PY
load=$!

for i in $(seq -w 0 59); do
  curl -s "$url/metrics" >"$out/scrapes/$i.txt"
  echo "$(date +%s%3N)" >"$out/scrapes/$i.time"
  sleep 1
done
wait "$load" || true
wait "$exporter" || true

# A recording (Prometheus text with millisecond timestamps, docs/contracts.md §4):
# every family's samples together, in time order.
awk 'FNR == 1 { getline t < (substr(FILENAME, 1, length(FILENAME) - 4) ".time") }
     /^# (HELP|TYPE) / { if (!(($2, $3) in had)) { had[$2, $3] = 1; meta[$3] = meta[$3] $0 "\n" }; next }
     /^[A-Za-z_]/ { name = $0; sub(/[{ ].*/, "", name); if (!(name in seen)) { seen[name] = 1; order[++n] = name }
                    lines[name] = lines[name] $0 " " t "\n" }
     END { for (i = 1; i <= n; i++) printf "%s%s", meta[order[i]], lines[order[i]] }' \
  "$out"/scrapes/*.txt >"$out/recording.prom"
"$bin" check "$out/recording.prom" | tee "$out/check.txt"
"$bin" summarize "$out/recording.prom" >"$out/summary-table.txt" || true

# Plausibility: clocks and power rise under load, values in range.
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, re, sys
out = sys.argv[1]
def values(path, name):
    v = {}
    for line in open(path):
        m = re.match(name + r'\{gpu="(\d+)".*\} (\S+)$', line)
        if m: v[int(m.group(1))] = float(m.group(2))
    return v
files = sorted(glob.glob(out + "/scrapes/*.txt"))
idle, busy = files[2:8], files[20:45]
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and cond
for gpu in sorted(values(files[0], "DCGM_FI_DEV_SM_CLOCK")):
    series = lambda name, fs: [values(f, name).get(gpu) for f in fs]
    clk_idle, clk_busy = series("DCGM_FI_DEV_SM_CLOCK", idle), series("DCGM_FI_DEV_SM_CLOCK", busy)
    pw_idle, pw_busy = series("DCGM_FI_DEV_POWER_USAGE", idle), series("DCGM_FI_DEV_POWER_USAGE", busy)
    print(f"GPU {gpu}: SM clock idle {min(clk_idle)}-{max(clk_idle)} MHz, under load {min(clk_busy)}-{max(clk_busy)} MHz; "
          f"power idle {min(pw_idle):.0f}-{max(pw_idle):.0f} W, under load {min(pw_busy):.0f}-{max(pw_busy):.0f} W")
    if gpu == 0:  # the load runs on cuda:0
        check(max(clk_busy) > max(clk_idle) or min(clk_idle) >= 1700, "GPU 0 SM clock high under load")
        check(sorted(pw_busy)[len(pw_busy) // 2] > max(pw_idle) + 50, "GPU 0 power rises under load")
        sm = series("DCGM_FI_PROF_SM_ACTIVE", busy)
        if all(x is not None for x in sm):
            check(sorted(sm)[len(sm) // 2] > 0.5, "GPU 0 SM active > 0.5 under load (GPM)")
    for name, lo, hi in [("DCGM_FI_DEV_GPU_TEMP", 10, 95), ("DCGM_FI_DEV_POWER_USAGE", 20, 1200),
                         ("DCGM_FI_DEV_MEM_CLOCK", 500, 4000), ("DCGM_FI_DEV_PCIE_LINK_WIDTH", 1, 16)]:
        vs = [v for v in series(name, files) if v is not None]
        check(bool(vs) and lo <= min(vs) and max(vs) <= hi, f"GPU {gpu} {name} within {lo}..{hi}")
sys.exit(0 if ok else 1)
PY
