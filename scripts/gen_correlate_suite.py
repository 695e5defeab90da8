#!/usr/bin/env python3
"""Writes the labelled simulator suite of `gpucanary correlate` (docs/contracts.md §7):
scenarios/correlate/*.yaml and scenarios/correlate/labels.yaml (see
scenarios/correlate/README.md).

Every case is a fleet that takes 3-5 overlapping releases after `stable`, one
or none of them bad, with confounders; its label says which release a correct
correlate names (or that it names none). The files are generated so that they
stay consistent with each other and with their labels; edit this script, not
the YAML, and rerun it:

    python3 scripts/gen_correlate_suite.py
    python3 scripts/gen_correlate_suite.py --check build/release/src/cli/gpucanary

`--check GPUCANARY` writes nothing: it verifies that the files on disk are what
this script writes, then simulates every case (`GPUCANARY sim --scenario F
--offline TMP`, one temporary directory at a time, removed after) and checks
that its truth.jsonl and releases.jsonl agree with its label. Exit status 1 on
any mismatch.

Deterministic: the layouts (node sets, deploy times, release ids, parameters)
come from one random.Random(SEED); the same script writes the same files.
"""

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "correlate")

SEED = 20261203
START_UNIX = 1764680000  # the engine's start (OfflineOptions::start_ms), Unix seconds
RESTART_S = 10           # the engine's model-server restart per node (a rolling update)
STABLE = "stable"
DEPLOY_MIN, DEPLOY_MAX = 300, 900  # when the releases are deployed (s from the start)
RPS_PER_NODE = (32, 38)            # even routing; a node's capacity is ~67 req/s

# Release ids: what CI/CD pipelines announce (docs/contracts.md §5). Any YAML key the
# scenario parser accepts is a release name; these all are.
RELEASE_IDS = [
    "chat-2026.12.01-1", "chat-2026.12.02-3", "vllm-0.6.4-rc1", "vllm-0.6.4", "vllm-0.6.3.post1",
    "ckpt-18000-fp8", "ckpt-17500", "cuda-12.6", "cuda-12.4.1", "driver-580.126.09",
    "nccl-2.23.4", "torch-2.5.1", "flashinfer-0.2.0", "triton-3.1.0", "router-v41",
    "sampler-2026.11.30-2", "tokenizer-fix-7", "spec-decode-ngram", "prefix-cache-2",
    "kv-offload-2", "llama3-70b-2026.12.02.1", "awq-int4-r3", "chunked-prefill-512",
    "cublas-12.6.4", "guardrails-1.9", "lora-adapters-2026w49", "max-seqs-384",
]

# docs/contracts.md §6 cause kinds a release causes here, and how (docs/simulator.md,
# "The engine": kernel-profile fields; thermal_throttle is an injected fault
# with `scope: release`, since no kernel profile overheats a GPU).
KIND_HOW = {
    "power_brake": "`power_spikiness` >= 2: di/dt spikes trip the node's power brake under load "
                   "(0x88, SM clock at the 1050 MHz brake floor, throughput and tokens/s down)",
    "power_cap": "1 < `power_spikiness` < 2: more switching power runs into the 700 W limit "
                 "(SW power cap 0x4, SM clock down)",
    "memory_thrash": "`dram_thrash` > 1: more DRAM bytes per token (DRAM active up, tensor "
                     "active and throughput down)",
    "low_occupancy": "`occupancy_factor` < 1: SM occupancy x factor, throughput x (0.5 + 0.5 "
                     "factor)",
    "software_regression": "`slowdown` > 1: work per token x slowdown, no hardware signature "
                           "(time per output token and latency up)",
    "xid_errors": "`xid` and `xid_per_s`: that XID recurs on every GPU of its nodes",
    "pcie_downtrain": "`pcie_gen` / `pcie_width` below the GPU's maximum (Gen5 x16): the "
                      "release's driver trains the link lower",
    "thermal_throttle": "not a kernel-profile field: a `thermal` fault (cooling x{cf}) with "
                        "`scope: release` injected on each of its nodes 1 s after that node "
                        "starts serving it (the GPUs heat past 87 C: SW thermal slowdown 0x20)",
}

NODE_FAULT = {  # confounder tag -> (scenario fault kind, params, gpus, truth kind, what)
    "node_power_brake": ("power_brake", {}, None, "power_brake",
                         "its PSU asserts the power brake (0x88) on all its GPUs"),
    "node_pcie_downtrain": ("pcie_downtrain", {"width": 8}, "1", "pcie_downtrain",
                            "GPU 1's link retrains at x8 (a marginal link, replaying)"),
    "node_xid79": ("xid_errors", {"xid": 79, "per_s": 1}, "0", "xid_errors",
                   "GPU 0 falls off the bus (XID 79): the node stops serving, its load "
                   "moves to the others"),
    "node_ecc": ("ecc_errors", {"sbe_per_s": 2}, None, "ecc_errors",
                 "its GPUs log 2 correctable ECC errors/s"),
    "node_thermal": ("thermal", {"cooling_factor": 2.0}, None, "thermal_throttle",
                     "its fans fail (cooling x2.0): its GPUs heat past 87 C"),
    "node_hw_slowdown": ("hw_slowdown", {}, None, "hw_slowdown",
                         "its GPUs go into HW slowdown (0x8)"),
}


def fmt(v):
    return f"{v:g}"


def flow(pairs):
    """A YAML flow map from (key, value-text) pairs."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


def node_list(nodes):
    return "[" + ", ".join(nodes) + "]"


class Release:
    def __init__(self, name, at, nodes, fields=(), kind=None, note=""):
        self.name = name
        self.at = at            # s from the start: the deploy event (annotation started_at)
        self.nodes = nodes      # hostnames, in fleet order (the order the engine restarts them)
        self.fields = list(fields)
        self.kind = kind        # the cause kind when guilty; None when harmless
        self.note = note        # what a harmless release changes, if anything

    def serving_at(self, node):
        """When `node` serves this release: the deploy restarts its nodes one after
        another in fleet order, RESTART_S each (every node already runs something)."""
        return self.at + RESTART_S * (self.nodes.index(node) + 1)

    def done_at(self):
        return self.at + RESTART_S * len(self.nodes)


class Case:
    def __init__(self, name, category, seed, fleet, duration, rps, releases, guilty=None,
                 diurnal=None, bursts=None, events=(), confounders=(), conf_text=(),
                 expected_node_faults=(), thermal_cf=None):
        self.name = name
        self.category = category
        self.seed = seed
        self.fleet = fleet              # [(first, last, gpu)] node-[first-last]
        self.duration = duration
        self.rps = rps
        self.releases = releases        # deploy order, `stable` excluded
        self.guilty = guilty            # a Release of `releases`, or None
        self.diurnal = diurnal          # (amplitude, period text)
        self.bursts = bursts            # rate text
        self.events = list(events)      # (at_s, flow pairs)
        self.confounders = list(confounders)
        self.conf_text = list(conf_text)
        self.expected_node_faults = list(expected_node_faults)  # [(truth kind, node)]
        self.thermal_cf = thermal_cf

    @property
    def hosts(self):
        return [f"node-{i}" for first, last, _ in self.fleet for i in range(first, last + 1)]

    def gpu_of(self, host):
        i = int(host.split("-")[1])
        return next(g for first, last, g in self.fleet if first <= i <= last)

    def onset(self):
        return self.guilty.serving_at(self.guilty.nodes[0]) if self.guilty else None

    def all_events(self):
        events = [(0, [("deploy", STABLE), ("nodes", "all")])]
        for r in self.releases:
            events.append((r.at, [("deploy", r.name), ("nodes", node_list(r.nodes))]))
        events += self.events
        events.sort(key=lambda e: e[0])  # stable: same-time events keep their order
        return events

    def comment(self):
        g = self.guilty
        n = len(self.hosts)
        skus = ", ".join(f"node-[{a}-{b}] {gpu}" for a, b, gpu in self.fleet)
        head = {"guilty": "Guilty", "none": "None guilty", "mixed": "Guilty with confounders"}
        out = [f"{head[self.category]}: {self.describe()}.",
               f"Fleet: {n} nodes x 2 GPUs ({skus}), `{STABLE}` on all from 0 s; "
               f"{fmt(self.rps)} req/s routed evenly per serving node"
               + (f", diurnal (amplitude {fmt(self.diurnal[0])}, period {self.diurnal[1]})"
                  if self.diurnal else "")
               + (f", bursts {self.bursts}" if self.bursts else "") + f"; {self.duration} s.",
               "Releases, in deploy order (rolling restart, 10 s per node, in fleet order; "
               "a node serves the release when its restart ends):"]
        for r in self.releases:
            serve = ", ".join(f"{h} {r.serving_at(h)}s" for h in r.nodes)
            if r is g:
                params = ", ".join(f"{k} {v}" for k, v in r.fields) or \
                    f"injected cooling x{fmt(self.thermal_cf)}"
                what = f"GUILTY ({params}), {r.kind}: " + \
                    KIND_HOW[r.kind].format(cf=fmt(self.thermal_cf or 0))
                for h in r.nodes:
                    later = [q for q in self.releases if q.at > r.at and h in q.nodes]
                    if later:
                        what += (f"; {h} takes {later[0].name} at {later[0].serving_at(h)}s, "
                                 f"which ends the effect there")
            else:
                what = "harmless, " + (r.note or "the baseline profile")
            out.append(f"- {r.name} at {r.at}s on {', '.join(r.nodes)} (serving {serve}): {what}.")
        if self.conf_text:
            out.append("Confounders: " + "; ".join(self.conf_text) + ".")
        if g:
            expect = ("A correct `gpucanary correlate` finds the regression on "
                      f"{', '.join(g.nodes)} (from {self.onset()} s, Unix "
                      f"{START_UNIX + self.onset()}) and names {g.name} its top suspect, "
                      f"cause {g.kind} scope release; no other release is the top suspect "
                      "of any regression.")
            if self.conf_text:
                expect += (" The confounders are explained by no release (a node fault is "
                           "scope node; fleet-wide heat and load changes hit nodes whatever "
                           "they run).")
        else:
            expect = ("A correct `gpucanary correlate` names no suspect: no release changed "
                      "how its nodes behave. Whatever regressions it finds come from the "
                      "confounders, which no release explains (a node fault is scope node; "
                      "fleet-wide heat and load changes hit nodes whatever they run).")
        out.append(expect)
        return out

    def describe(self):
        g = self.guilty
        parts = []
        if g:
            i = self.releases.index(g)
            parts.append(f"{g.kind} from {g.name} ({ordinal(i + 1)} of {len(self.releases)}) "
                         f"on {len(g.nodes)} nodes")
        else:
            parts.append(f"{len(self.releases)} harmless releases")
        if self.confounders:
            parts.append("with " + ", ".join(self.confounders))
        return " ".join(parts)

    def yaml(self):
        lines = []
        for para in self.comment():
            lines += [f"# {w}" for w in textwrap.wrap(para, 76, subsequent_indent="  "
                                                       if para.startswith("- ") else "")]
        lines.append(f"seed: {self.seed}")
        lines.append(f"duration: {self.duration}s")
        lines.append("fleet:")
        for a, b, gpu in self.fleet:
            lines.append(f'  - {{nodes: "node-[{a}-{b}]", gpu: {gpu}, gpus: 2}}')
        lines.append("releases:")
        lines.append(f"  {STABLE}: " + flow([("profile", "baseline")]))
        for r in self.releases:
            lines.append(f"  {r.name}: " + flow([("profile", "baseline")] + r.fields))
        traffic = [("rps", fmt(self.rps))]
        if self.diurnal:
            traffic.append(("diurnal", flow([("amplitude", fmt(self.diurnal[0])),
                                             ("period", self.diurnal[1])])))
        if self.bursts:
            traffic.append(("bursts", flow([("rate", self.bursts)])))
        lines.append("traffic: " + flow(traffic))
        lines.append("events:")
        for at, pairs in self.all_events():
            lines.append("  - " + flow([("at", fmt(at) + "s")] + pairs))
        return "\n".join(lines) + "\n"

    def label(self):
        out = [f"  - file: {self.name}.yaml",
               f"    category: {self.category}"]
        if self.guilty:
            out.append(f"    guilty: {self.guilty.name}")
            out.append(f"    kind: {self.guilty.kind}")
        out.append("    releases: " + node_list([STABLE] + [r.name for r in self.releases]))
        if self.guilty:
            out.append(f"    onset_s: {self.onset()}")
        out.append("    confounders: " + node_list(self.confounders))
        out.append(f'    description: "{self.describe()}"')
        return "\n".join(out)


def ordinal(i):
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(i, f"{i}th")


# ---------------------------------------------------------------------------
# Layouts: deploy times and node sets.

def layout(rng, hosts, k, gpos, gsize, overwrite=False):
    """Deploy times and node sets for k releases on `hosts`; the guilty one (index
    gpos, None for none) on gsize nodes. Rules:
    - times in DEPLOY_MIN..DEPLOY_MAX, consecutive gaps 30-90 s (close) or 100-230 s;
    - a node takes a later release only once its earlier restart is over (else the
      engine would replace the pending release and the first would never serve there);
    - node sets overlap (some node takes one release, later another) and some
      deploys are close in time, with the guilty release in both, so that neither
      time alone nor space alone decides;
    - the guilty node set differs from every harmless one (identifiable);
    - no later release lands on a guilty node, except, with `overwrite`, exactly one
      (the guilty release on >= 3 nodes: its effect ends there, stays on the others);
    - at least 2 nodes keep `stable` throughout (clean controls)."""
    n = len(hosts)
    for _ in range(200000):
        times = [rng.randrange(DEPLOY_MIN, 461, 10)]
        for _ in range(1, k):
            close = rng.random() < 0.55
            times.append(times[-1] + (rng.randrange(30, 91, 10) if close
                                      else rng.randrange(100, 231, 10)))
        if times[-1] > DEPLOY_MAX:
            continue
        sizes = [rng.choice([2, 3, 3, 4, 4, 5, 6]) for _ in range(k)]
        if gpos is not None:
            sizes[gpos] = gsize
        sets = []
        for i in range(k):
            busy = {x for j in range(i) for x in sets[j]
                    if times[i] < times[j] + RESTART_S * len(sets[j]) + 5}
            protected = set(sets[gpos]) if (gpos is not None and gpos < i and not overwrite) \
                else set()
            eligible = [x for x in range(n) if x not in busy and x not in protected]
            earlier = [x for x in eligible if any(x in s for s in sets)]
            pick = set()
            if earlier and rng.random() < 0.75:
                pick.update(rng.sample(earlier, min(len(earlier), rng.choice([1, 1, 2]),
                                                    sizes[i])))
            rest = [x for x in eligible if x not in pick]
            if len(rest) < sizes[i] - len(pick):
                break
            pick.update(rng.sample(rest, sizes[i] - len(pick)))
            sets.append(sorted(pick))
        if len(sets) < k:
            continue
        if len(set().union(*sets)) > n - 2:
            continue
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        if not any(set(sets[i]) & set(sets[j]) for i, j in pairs):
            continue
        if not any(times[i + 1] - times[i] <= 90 for i in range(k - 1)):
            continue
        if gpos is not None:
            g = set(sets[gpos])
            harmless = [i for i in range(k) if i != gpos]
            if any(set(sets[i]) == g for i in harmless):
                continue
            if not any(abs(times[i] - times[gpos]) <= 90 for i in harmless):
                continue
            later_on_g = [x for i in harmless if i > gpos for x in sets[i] if x in g]
            if overwrite and (len(later_on_g) != 1 or gsize < 3):
                continue
            if not any(set(sets[i]) & g for i in harmless) and not (gpos == 0 and not overwrite):
                continue
        return times, [[hosts[x] for x in s] for s in sets]
    raise RuntimeError("no layout found")


# ---------------------------------------------------------------------------
# Releases: the guilty kind's fields and harmless variants.

def guilty_fields(rng, kind, variant):
    if kind == "power_brake":
        return [("power_spikiness", rng.choice(["2.5", "2.75", "3"]))], None
    if kind == "power_cap":
        return [("power_spikiness", rng.choice(["1.65", "1.7", "1.75", "1.8"]))], None
    if kind == "memory_thrash":
        return [("dram_thrash", rng.choice(["1.5", "1.6", "1.7", "1.8"]))], None
    if kind == "low_occupancy":
        return [("occupancy_factor", rng.choice(["0.4", "0.5", "0.6"]))], None
    if kind == "software_regression":
        return [("slowdown", rng.choice(["1.15", "1.2", "1.25", "1.3", "1.4"]))], None
    if kind == "xid_errors":
        return [("xid", str(variant or 13)), ("xid_per_s", "0.2")], None
    if kind == "pcie_downtrain":
        return {"gen4": [("pcie_gen", "4")], "x8": [("pcie_width", "8")],
                "gen4x8": [("pcie_gen", "4"), ("pcie_width", "8")]}[variant or "gen4"], None
    if kind == "thermal_throttle":
        return [], rng.choice([1.9, 2.0, 2.2])
    raise ValueError(kind)


# Harmless variants: (fields, note). None of them makes the engine write truth
# (docs/simulator.md, "The engine": no cause threshold is crossed).
HARMLESS = [([], "the baseline profile")] * 9 + [
    ([("pcie_gen", "5"), ("pcie_width", "16")],
     "the baseline profile; its driver trains links at Gen5 x16, the GPU's maximum (no change)"),
    ([("power_spikiness", "1"), ("slowdown", "1")],
     "the baseline profile written out (spikiness 1, slowdown 1: no change)"),
    ([("fb_used_mib", "64000")],
     "the baseline profile with a larger KV-cache reservation (FB used 64000 MiB instead of "
     "60000): a footprint change, not a regression"),
    ([("slowdown", "0.93")],
     "7% FASTER per token (slowdown 0.93): an improvement, not a regression"),
]


def harmless_release(rng, name, at, nodes):
    fields, note = rng.choice(HARMLESS)
    return Release(name, at, nodes, fields, None, note)


def make_fleet(kind, n):
    if kind == "h200":
        return [(1, n, "h200")]
    if kind == "mixed":
        return [(1, n - 3, "h100-sxm"), (n - 2, n, "h200")]
    return [(1, n, "h100-sxm")]


# ---------------------------------------------------------------------------
# Confounders: events, tags, text and the node-scoped truth they cause.

class Conf:
    def __init__(self):
        self.events = []
        self.tags = []
        self.text = []
        self.node_faults = []
        self.diurnal = None
        self.bursts = None
        self.heat_clear_ok = True


def add_diurnal(c, period):
    c.diurnal = (0.2, period)
    c.tags.append("diurnal")


def add_bursts(c, rate):
    c.bursts = rate
    c.tags.append("bursts")


def add_heat(rng, c, hosts, t0, clear=True):
    cf = rng.choice([1.3, 1.4, 1.5, 1.6])
    c.events.append((t0, [("fault", "thermal"), ("nodes", "all"),
                          ("params", flow([("cooling_factor", fmt(cf))]))]))
    text = f"a fleet-wide heat wave (cooling x{fmt(cf)} on every GPU of every node) from {t0}s"
    if clear:
        t1 = t0 + rng.randrange(240, 361, 20)
        c.events.append((t1, [("clear_fault", "thermal"), ("nodes", "all")]))
        text += f" to {t1}s"
    c.text.append(text)
    c.tags.append("heat")
    c.node_faults += [("thermal_throttle", h) for h in hosts]


def add_load_shift(rng, c, rps, t):
    factor = rng.choice([0.7, 0.75, 1.25, 1.3])
    new = round(rps * factor)
    c.events.append((t, [("rps", fmt(new))]))
    c.text.append(f"a load shift from {fmt(rps)} to {new} req/s at {t}s")
    c.tags.append("load_shift")


def add_node_fault(c, tag, node, t, why):
    kind, params, gpus, truth_kind, what = NODE_FAULT[tag]
    pairs = [("fault", kind), ("nodes", node_list([node]))]
    if gpus is not None:
        pairs.append(("gpus", f'"{gpus}"'))
    if params:
        pairs.append(("params", flow([(k, fmt(v)) for k, v in params.items()])))
    c.events.append((t, pairs))
    c.text.append(f"{node} ({why}): at {t}s {what}, a hardware fault (scope node)")
    c.tags.append(tag)
    c.node_faults.append((truth_kind, node))
    if kind == "thermal":
        c.heat_clear_ok = False  # a fleet-wide clear_fault thermal would clear it too


def add_cordon(c, node, t, why):
    c.events.append((t, [("cordon", node)]))
    c.text.append(f"{node} ({why}) cordoned at {t}s: its load moves to the other nodes")
    c.tags.append("cordon")


# ---------------------------------------------------------------------------
# The cases.

KIND_FILE = {"power_brake": "power-brake", "power_cap": "power-cap",
             "memory_thrash": "memory-thrash", "low_occupancy": "low-occupancy",
             "software_regression": "software-regression", "xid_errors": "xid-errors",
             "pcie_downtrain": "pcie-downtrain", "thermal_throttle": "thermal"}

# (kind, position, guilty nodes, releases, nodes, fleet, variant, overwrite, traffic)
# position: first | middle | last in deploy order; traffic: "" | "d" (diurnal 1h) |
# "d30" (diurnal 30 min) | "b" (bursts 1/5m) | "db".
GUILTY = [
    ("power_brake", "first", 3, 3, 10, "h100", None, True, ""),
    ("power_brake", "middle", 6, 5, 12, "h100", None, False, "d"),
    ("power_brake", "last", 2, 4, 10, "h100", None, False, "b"),
    ("power_brake", "middle", 4, 4, 11, "h200", None, False, ""),
    ("power_cap", "last", 5, 3, 11, "h100", None, False, ""),
    ("power_cap", "first", 2, 4, 10, "h100", None, False, "d30"),
    ("power_cap", "middle", 3, 5, 12, "mixed", None, False, "b"),
    ("memory_thrash", "middle", 2, 3, 10, "h100", None, False, ""),
    ("memory_thrash", "last", 6, 4, 12, "h100", None, False, "db"),
    ("memory_thrash", "first", 4, 5, 11, "h100", None, True, ""),
    ("memory_thrash", "middle", 5, 4, 10, "mixed", None, False, "d"),
    ("low_occupancy", "first", 6, 4, 12, "h100", None, False, ""),
    ("low_occupancy", "middle", 3, 3, 10, "h100", None, False, "b"),
    ("low_occupancy", "last", 4, 5, 11, "h200", None, False, "d30"),
    ("software_regression", "last", 3, 4, 10, "h100", None, False, ""),
    ("software_regression", "first", 5, 3, 11, "h100", None, True, "d"),
    ("software_regression", "middle", 2, 5, 12, "h100", None, False, "b"),
    ("software_regression", "middle", 6, 4, 12, "h200", None, False, ""),
    ("xid_errors", "middle", 4, 4, 10, "h100", 13, False, ""),
    ("xid_errors", "last", 2, 3, 11, "h100", 31, False, "d"),
    ("xid_errors", "first", 3, 5, 10, "mixed", 13, False, "b"),
    ("pcie_downtrain", "first", 2, 3, 10, "h100", "gen4", False, ""),
    ("pcie_downtrain", "middle", 5, 4, 11, "h100", "gen4x8", False, "db"),
    ("pcie_downtrain", "last", 6, 5, 12, "h100", "x8", False, ""),
    ("pcie_downtrain", "middle", 3, 4, 10, "h200", "gen4", True, "d30"),
    ("thermal_throttle", "last", 3, 4, 10, "h100", None, False, ""),
    ("thermal_throttle", "middle", 2, 3, 11, "h100", None, False, "b"),
    ("thermal_throttle", "first", 5, 5, 12, "h100", None, False, "d"),
]

# (confounders, releases, nodes, fleet); node faults land on a node that has just
# started serving a harmless release (the classic "bad node, not bad release").
NONE = [
    (["heat"], 4, 10, "h100"),
    (["heat", "diurnal"], 3, 11, "h100"),
    (["load_shift"], 4, 10, "h100"),
    (["load_shift", "bursts"], 5, 12, "h100"),
    (["diurnal30"], 3, 10, "h100"),
    (["diurnal", "bursts2"], 4, 11, "h200"),
    (["node_power_brake"], 4, 10, "h100"),
    (["node_pcie_downtrain"], 3, 10, "h100"),
    (["node_xid79"], 5, 11, "h100"),
    (["node_ecc", "diurnal"], 4, 10, "mixed"),
    (["cordon", "bursts"], 4, 12, "h100"),
    (["node_thermal"], 3, 10, "h100"),
    (["heat", "node_power_brake", "load_shift"], 5, 12, "h100"),
    (["load_shift", "heat"], 4, 10, "h200"),
]

# (kind, position, guilty nodes, releases, nodes, fleet, variant, confounders)
MIXED = [
    ("power_brake", "middle", 3, 4, 10, "h100", None, ["node_power_brake"]),
    ("software_regression", "last", 4, 4, 11, "h100", None, ["heat"]),
    ("memory_thrash", "first", 3, 3, 10, "h100", None, ["load_shift"]),
    ("thermal_throttle", "middle", 3, 4, 12, "h100", None, ["heat"]),
    ("pcie_downtrain", "last", 2, 5, 10, "h100", "gen4", ["node_pcie_downtrain"]),
    ("low_occupancy", "middle", 4, 4, 11, "h100", None, ["node_xid79", "diurnal"]),
]


def pick_pos(rng, position, k):
    return {"first": 0, "last": k - 1}.get(position) if position != "middle" \
        else rng.randrange(1, k - 1)


def build_releases(rng, hosts, k, gpos, gsize, kind, variant, overwrite):
    times, sets = layout(rng, hosts, k, gpos, gsize, overwrite)
    names = rng.sample(RELEASE_IDS, k)
    releases, cf = [], None
    for i in range(k):
        if i == gpos:
            fields, cf = guilty_fields(rng, kind, variant)
            releases.append(Release(names[i], times[i], sets[i], fields, kind))
        else:
            releases.append(harmless_release(rng, names[i], times[i], sets[i]))
    return releases, cf


def release_tags(releases):
    """Confounder tags that harmless releases bring: a visible change that is no
    regression (docs: HARMLESS)."""
    tags = []
    for r in releases:
        if r.kind is None and ("slowdown", "0.93") in r.fields and "faster_release" not in tags:
            tags.append("faster_release")
        if r.kind is None and any(k == "fb_used_mib" for k, _ in r.fields) \
                and "footprint" not in tags:
            tags.append("footprint")
    return tags


def duration_for(releases):
    # >= 240 s of telemetry after the last rollout; 1200 s keeps a case cheap.
    end = max(r.done_at() for r in releases) + 240
    return max(1200, -(-end // 60) * 60)


def thermal_events(g, cf):
    return [(g.serving_at(h) + 1, [("fault", "thermal"), ("nodes", node_list([h])),
                                   ("params", flow([("cooling_factor", fmt(cf))])),
                                   ("scope", "release")]) for h in g.nodes]


def traffic_conf(c, code):
    if "d30" in code:
        add_diurnal(c, "30m")
    elif "d" in code:
        add_diurnal(c, "1h")
    if "b" in code:
        add_bursts(c, "1/5m")


def guilty_cases(rng):
    cases, count = [], {}
    for i, (kind, position, gsize, k, n, fleet, variant, ow, traffic) in enumerate(GUILTY):
        count[kind] = count.get(kind, 0) + 1
        fleet = make_fleet(fleet, n)
        hosts = [f"node-{j}" for j in range(1, n + 1)]
        gpos = pick_pos(rng, position, k)
        releases, cf = build_releases(rng, hosts, k, gpos, gsize, kind, variant, ow)
        g = releases[gpos]
        c = Conf()
        traffic_conf(c, traffic)
        events = thermal_events(g, cf) if kind == "thermal_throttle" else []
        rps = n * rng.randint(*RPS_PER_NODE)
        cases.append(Case(f"guilty-{KIND_FILE[kind]}-{count[kind]}", "guilty", 1001 + i,
                          fleet, duration_for(releases), rps, releases, g, c.diurnal, c.bursts,
                          events, c.tags + release_tags(releases), [], [], cf))
    return cases


def decoy_nodes(releases, exclude=()):
    """(harmless release, one of its nodes that keeps it to the end)."""
    later = lambda r, h: any(q.at > r.at and h in q.nodes for q in releases)
    return [(r, h) for r in releases if r.kind is None for h in r.nodes
            if not later(r, h) and h not in exclude]


def decoy_node(rng, releases, exclude=()):
    return rng.choice(decoy_nodes(releases, exclude))


def apply_confounders(rng, c, tags, hosts, releases, rps, guilty=None):
    """Confounders timed against the releases: right after a harmless release
    (none cases) or near the guilty one's onset (mixed cases)."""
    gnodes = guilty.nodes if guilty else []
    for tag in tags:
        if tag == "diurnal":
            add_diurnal(c, "1h")
        elif tag == "diurnal30":
            add_diurnal(c, "30m")
        elif tag == "bursts":
            add_bursts(c, "1/5m")
        elif tag == "bursts2":
            add_bursts(c, "1/2m")
        elif tag == "heat":
            anchor = guilty or rng.choice(releases)
            t0 = anchor.serving_at(anchor.nodes[0]) + rng.randrange(10, 41, 5)
            add_heat(rng, c, hosts, t0, clear=c.heat_clear_ok and
                     not (guilty and guilty.kind == "thermal_throttle"))
        elif tag == "load_shift":
            anchor = guilty or rng.choice(releases)
            add_load_shift(rng, c, rps, anchor.at + rng.randrange(20, 61, 5))
        elif tag in NODE_FAULT and guilty:
            # Near the guilty onset, on a node the guilty release is not on: one
            # that has just taken a harmless release if there is one, else a
            # node still on `stable`.
            onset = guilty.serving_at(guilty.nodes[0])
            t = onset + rng.randrange(-30, 61, 10)
            near = [(r, h) for r, h in decoy_nodes(releases, gnodes)
                    if t - 60 <= r.serving_at(h) <= t - 15]
            if near:
                r, h = rng.choice(near)
                why = f"it serves {r.name} since {r.serving_at(h)}s"
            else:
                touched = {h for r in releases for h in r.nodes}
                h = rng.choice([x for x in hosts if x not in touched])
                why = f"still on {STABLE}"
            add_node_fault(c, tag, h, t, why)
        elif tag in NODE_FAULT:
            r, h = decoy_node(rng, releases, exclude=gnodes)
            t = r.serving_at(h) + rng.randrange(15, 61, 5)
            add_node_fault(c, tag, h, t, f"it serves {r.name} since {r.serving_at(h)}s")
        elif tag == "cordon":
            r, h = decoy_node(rng, releases, exclude=gnodes)
            add_cordon(c, h, r.serving_at(h) + rng.randrange(30, 91, 10),
                       f"it serves {r.name} since {r.serving_at(h)}s")
        else:
            raise ValueError(tag)


def none_cases(rng):
    cases = []
    for i, (tags, k, n, fleet) in enumerate(NONE):
        fleet = make_fleet(fleet, n)
        hosts = [f"node-{j}" for j in range(1, n + 1)]
        releases, _ = build_releases(rng, hosts, k, None, None, None, None, False)
        rps = n * rng.randint(*RPS_PER_NODE)
        c = Conf()
        # Node faults first: a node thermal fault forbids clearing a heat wave.
        order = sorted(tags, key=lambda t: t != "node_thermal")
        apply_confounders(rng, c, order, hosts, releases, rps)
        cases.append(Case(f"none-{i + 1:02d}", "none", 2001 + i, fleet, duration_for(releases),
                          rps, releases, None, c.diurnal, c.bursts, c.events,
                          c.tags + release_tags(releases), c.text, c.node_faults))
    return cases


def mixed_cases(rng):
    cases = []
    for i, (kind, position, gsize, k, n, fleet, variant, tags) in enumerate(MIXED):
        fleet = make_fleet(fleet, n)
        hosts = [f"node-{j}" for j in range(1, n + 1)]
        gpos = pick_pos(rng, position, k)
        releases, cf = build_releases(rng, hosts, k, gpos, gsize, kind, variant, False)
        g = releases[gpos]
        rps = n * rng.randint(*RPS_PER_NODE)
        c = Conf()
        apply_confounders(rng, c, tags, hosts, releases, rps, guilty=g)
        events = c.events + (thermal_events(g, cf) if kind == "thermal_throttle" else [])
        name = f"mixed-{KIND_FILE[kind]}-" + "-".join(
            t.replace("node_", "node-").replace("_", "-") for t in tags)
        cases.append(Case(name, "mixed", 3001 + i, fleet, duration_for(releases), rps,
                          releases, g, c.diurnal, c.bursts, events,
                          c.tags + release_tags(releases), c.text, c.node_faults, cf))
    return cases


def all_cases():
    rng = random.Random(SEED)
    return guilty_cases(rng) + none_cases(rng) + mixed_cases(rng)


LABELS_HEAD = """# Labels of the correlation suite (scenarios/correlate/README.md). Written by
# scripts/gen_correlate_suite.py with the scenario files. Per case:
#   file         the scenario, relative to this file
#   category     guilty (one bad release) | none (all harmless, confounders) |
#                mixed (one bad release and confounders)
#   guilty       the release a correct `gpucanary correlate` names top suspect (absent: none)
#   kind         its cause kind, docs/contracts.md §6 vocabulary (absent for none)
#   releases     every release, in deploy order (`stable` on all nodes at 0 s first);
#                each is deployed once, onto its whole node set (releases.jsonl targets)
#   onset_s      guilty: seconds from the start when its first node starts serving it
#                (deploy + 10 s); the engine starts at Unix 1764680000
#   confounders  tags (README.md): what a naive detector would blame on a release
#   description  one line
"""


def write(cases):
    os.makedirs(SUITE, exist_ok=True)
    for old in os.listdir(SUITE):
        if old.endswith(".yaml"):
            os.remove(os.path.join(SUITE, old))
    for c in cases:
        with open(os.path.join(SUITE, c.name + ".yaml"), "w") as f:
            f.write(c.yaml())
    with open(os.path.join(SUITE, "labels.yaml"), "w") as f:
        f.write(labels_text(cases))


def labels_text(cases):
    return LABELS_HEAD + "cases:\n" + "\n".join(c.label() for c in cases) + "\n"


def summary(cases):
    counts, kinds = {}, {}
    for c in cases:
        counts[c.category] = counts.get(c.category, 0) + 1
        if c.guilty:
            kinds[c.guilty.kind] = kinds.get(c.guilty.kind, 0) + 1
    return (f"{len(cases)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.items())
            + "; guilty kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))


# ---------------------------------------------------------------------------
# --check: simulate every case and compare its truth with its label.

def check_case(c, truth, annotations):
    errors = []
    close = lambda a, b: abs(a - b) < 1e-6
    # releases.jsonl: one annotation per release, at its (only) deploy.
    want = [(STABLE, 0, c.hosts)] + [(r.name, r.at, r.nodes) for r in c.releases]
    got = [(a["id"], a["started_at"] - START_UNIX, a.get("targets")) for a in annotations]
    if [(n, t) for n, t, _ in got] != [(n, float(t)) for n, t, _ in want] or \
            [x[2] for x in got] != [x[2] for x in want]:
        errors.append(f"releases.jsonl {got} != {want}")
    # Deploys: every node serves each of its releases when its restart ends.
    deploys = {(d["node"], d["release"]): d["since"] - START_UNIX
               for d in truth if d["type"] == "deploy"}
    n_deploys = sum(1 for d in truth if d["type"] == "deploy")
    if n_deploys != len(c.hosts) + sum(len(r.nodes) for r in c.releases):
        errors.append(f"{n_deploys} deploy records")
    for r in c.releases:
        for h in r.nodes:
            if not close(deploys.get((h, r.name), -1), r.serving_at(h)):
                errors.append(f"{r.name} serving on {h} at {deploys.get((h, r.name))}, "
                              f"want {r.serving_at(h)}")
    faults = [t for t in truth if t["type"] == "fault"]
    rel = [t for t in faults if t["scope"] == "release"]
    if c.guilty is None:
        if rel:
            errors.append(f"release-scoped truth in a none case: {rel[0]}")
    else:
        g = c.guilty
        thermal = g.kind == "thermal_throttle"
        bad = [t for t in rel if t["release"] != g.name or t["kind"] != g.kind]
        if bad:
            errors.append(f"release-scoped truth other than {g.name}/{g.kind}: {bad[0]}")
        by_node = {}
        for t in rel:
            by_node.setdefault(t["node"], []).append(t)
        if sorted(by_node) != sorted(g.nodes):
            errors.append(f"{g.kind} truth on {sorted(by_node)}, want {sorted(g.nodes)}")
        for h, ts in by_node.items():
            if h not in g.nodes:
                continue
            since = min(t["since"] for t in ts) - START_UNIX
            if not close(since, g.serving_at(h) + (1 if thermal else 0)):
                errors.append(f"{g.kind} on {h} since {since}, want {g.serving_at(h)}")
            if len(ts[0]["gpus"]) != 2:
                errors.append(f"{g.kind} on {h}: GPUs {ts[0]['gpus']}")
        if rel:
            first = min(t["since"] for t in rel) - START_UNIX
            if not (c.onset() <= first <= c.onset() + 1):
                errors.append(f"first {g.kind} at {first}, label onset {c.onset()}")
        if g.kind == "software_regression" and not any(
                k == "slowdown" and float(v) > 1 for k, v in g.fields):
            errors.append("software regression without slowdown > 1")
        if thermal and any(t["source"] != "scenario" for t in rel):
            errors.append("thermal truth not from the scenario's injected fault")
    node = sorted((t["kind"], t["node"]) for t in faults if t["scope"] == "node")
    if node != sorted(c.expected_node_faults):
        errors.append(f"node-scoped truth {node} != expected {sorted(c.expected_node_faults)}")
    # Cordons and load shifts: exactly the confounders'.
    want = sorted((at, dict(p).get("cordon"), float(dict(p)["rps"]) if "rps" in dict(p) else None)
                  for at, p in c.events if "cordon" in dict(p) or "rps" in dict(p))
    got = sorted((t["since"] - START_UNIX, t.get("node"), t.get("rps"))
                 for t in truth if t["type"] in ("cordon", "load"))
    if got != want:
        errors.append(f"cordon/load truth {got} != expected {want}")
    return errors


def read(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


def check(gpucanary, cases):
    stale = []
    for c in cases:
        path = os.path.join(SUITE, c.name + ".yaml")
        if read(path) != c.yaml():
            stale.append(c.name)
    lpath = os.path.join(SUITE, "labels.yaml")
    if read(lpath) != labels_text(cases):
        stale.append("labels.yaml")
    on_disk = sorted(f[:-5] for f in os.listdir(SUITE) if f.endswith(".yaml") and
                     f != "labels.yaml")
    if on_disk != sorted(c.name for c in cases):
        stale.append("(the set of files)")
    if stale:
        print("stale files (rerun the generator): " + ", ".join(stale), file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="correlate-suite-")
    failed, walls, cpus = 0, [], []
    try:
        for c in cases:
            out = os.path.join(tmp, c.name)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            try:
                p = subprocess.run([gpucanary, "sim", "--scenario",
                                    os.path.join(SUITE, c.name + ".yaml"), "--offline", out],
                                   capture_output=True, text=True)
            except OSError as e:
                print(f"cannot run {gpucanary}: {e}", file=sys.stderr)
                return 2
            wall = time.monotonic() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if p.returncode != 0:
                errors = [f"sim exited {p.returncode}: {p.stderr.strip()}"]
            else:
                with open(os.path.join(out, "truth.jsonl")) as f:
                    truth = [json.loads(line) for line in f if line.strip()]
                with open(os.path.join(out, "releases.jsonl")) as f:
                    annotations = [json.loads(line) for line in f if line.strip()]
                errors = check_case(c, truth, annotations)
            shutil.rmtree(out, ignore_errors=True)
            walls.append(wall)
            cpus.append(cpu)
            status = "ok  " if not errors else "FAIL"
            print(f"{status} {c.name:45s} {wall:5.2f} s wall {cpu:5.2f} s cpu", flush=True)
            for e in errors:
                print(f"       {e}")
            failed += bool(errors)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases) - failed}/{len(cases)} cases agree with their labels; sim per case: "
          f"wall mean {sum(walls) / len(walls):.2f} s, max {max(walls):.2f} s; "
          f"cpu mean {sum(cpus) / len(cpus):.2f} s, max {max(cpus):.2f} s, "
          f"total {sum(walls):.1f} s wall")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", metavar="GPUCANARY",
                    help="simulate every case with this gpucanary binary and check its truth "
                         "against its label (writes nothing)")
    args = ap.parse_args()
    cases = all_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate case names"
    if args.check:
        sys.exit(check(args.check, cases))
    write(cases)
    print(summary(cases), file=sys.stderr)


if __name__ == "__main__":
    main()
