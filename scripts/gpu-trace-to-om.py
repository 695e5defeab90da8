#!/usr/bin/env python3
"""Real DCGM traces (8x H100 SXM5 at 10 Hz, shared/data/gpu-traces/
atharvanihalani-gpu-telemetry-exploration/*_telemetry.csv) as a gpucanary
recording (OpenMetrics text with timestamps, time-blocked, "# EOF"), the way a
1 s dcgm-exporter scrape would have stored them: one row per GPU per whole
second (the first row at or after the second), dcgm-exporter's field names and
labels, INT64 fields as integers, DOUBLE fields rounded to "%f"'s 6 decimals.

Each input file becomes one node (Hostname = the file's stem); all files start
at the same second so the nodes run side by side.

  scripts/gpu-trace-to-om.py OUT.om FILE.csv...

Used by scripts/bench-vs-prometheus.sh for the bytes-per-sample comparison on
real data. The traces have no license: read them in place, never copy them
into the repository.
"""
import csv
import math
import os
import sys

# CSV column -> (dcgm-exporter field, is DOUBLE, OpenMetrics type)
FIELDS = [
    ("power_w", "DCGM_FI_DEV_POWER_USAGE", True, "gauge"),
    ("temp_c", "DCGM_FI_DEV_GPU_TEMP", False, "gauge"),
    ("mem_used_mib", "DCGM_FI_DEV_FB_USED", False, "gauge"),
    ("mem_free_mib", "DCGM_FI_DEV_FB_FREE", False, "gauge"),
    ("gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL", False, "gauge"),
    ("mem_util_pct", "DCGM_FI_DEV_MEM_COPY_UTIL", False, "gauge"),
    ("energy_mj", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", False, "unknown"),
    ("throttle_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", False, "gauge"),
    ("sm_active", "DCGM_FI_PROF_SM_ACTIVE", True, "gauge"),
    ("tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", True, "gauge"),
    ("dram_active", "DCGM_FI_PROF_DRAM_ACTIVE", True, "gauge"),
    ("fp16_active", "DCGM_FI_PROF_PIPE_FP16_ACTIVE", True, "gauge"),
    ("pcie_tx_bytes_s", "DCGM_FI_PROF_PCIE_TX_BYTES", False, "gauge"),
    ("pcie_rx_bytes_s", "DCGM_FI_PROF_PCIE_RX_BYTES", False, "gauge"),
    ("nvlink_tx_bytes_s", "DCGM_FI_PROF_NVLINK_TX_BYTES", False, "gauge"),
    ("nvlink_rx_bytes_s", "DCGM_FI_PROF_NVLINK_RX_BYTES", False, "gauge"),
]


def exporter_text(value, is_double):
    if is_double:
        return repr(float("%f" % value))  # what a scraper parses back from %f
    return str(int(round(value)))


def load(path):
    """{second offset: {gpu: row}} with the first row at or after each second."""
    ticks = {}
    t0 = None
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                t = float(row["timestamp"])
                gpu = int(row["gpu"])
                row["mem_free_mib"] = str(float(row["mem_total_mib"]) - float(row["mem_used_mib"]))
            except (KeyError, ValueError) as e:
                sys.exit(f"{path}:{line}: bad row: {e}")
            if t0 is None:
                t0 = math.ceil(t)
            if t < t0:
                continue
            second = int(math.floor(t)) - t0
            ticks.setdefault(second, {}).setdefault(gpu, row)
    return ticks


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out_path, inputs = sys.argv[1], sys.argv[2:]
    nodes = [(os.path.basename(p).split("_")[0], load(p)) for p in inputs]
    base = 1775000000
    declared = set()
    samples = 0
    with open(out_path, "w") as out:
        last = max(max(t) for _, t in nodes)
        for second in range(last + 1):
            for col, name, is_double, kind in FIELDS:
                for host, ticks in nodes:
                    for gpu, row in sorted(ticks.get(second, {}).items()):
                        text = row.get(col, "")
                        if text == "":
                            continue  # no data, never a zero
                        if name not in declared:
                            out.write(f"# TYPE {name} {kind}\n")
                            declared.add(name)
                        value = exporter_text(float(text), is_double)
                        model = row["gpu_model"]
                        out.write(f'{name}{{gpu="{gpu}",modelName="{model}",Hostname="{host}"}} '
                                  f"{value} {base + second}.000\n")
                        samples += 1
        out.write("# EOF\n")
    print(f"{out_path}: {samples} samples from {len(inputs)} trace(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
