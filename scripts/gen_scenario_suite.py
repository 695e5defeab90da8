#!/usr/bin/env python3
"""Writes the judge's labelled scenario suite: scenarios/suite/*.yaml and
scenarios/suite/labels.yaml (see scenarios/suite/README.md).

The suite is generated so that its ~80 files stay consistent with each other
and with their labels; edit this script, not the YAML, and rerun it:

    python3 scripts/gen_scenario_suite.py

Deterministic: the same script writes the same files (no randomness here;
every seed is written out).
"""

import os
import sys
import textwrap

SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "suite")

CANARY = ["node-2", "node-5"]
RELEASE_START = 60  # s: the deploy event
RESTART_S = 10      # the engine's model-server restart per node (a rolling update)
DURATION = 400

# Faults in the failure vocabulary (docs/contracts.md §6) and the scenario fault kind
# that produces each when injected.
FAULT_FOR_CAUSE = {
    "thermal_throttle": "thermal",
    "power_brake": "power_brake",
    "power_cap": "power_cap",
    "hw_slowdown": "hw_slowdown",
    "pcie_downtrain": "pcie_downtrain",
    "pcie_errors": "pcie_errors",
    "memory_thrash": "memory_thrash",
    "low_occupancy": "low_occupancy",
    "xid_errors": "xid_errors",
    "ecc_errors": "ecc_errors",
}


def serving_at(node, release_start=RELEASE_START, canary=CANARY):
    """When `node` starts serving a release deployed on `canary` at release_start:
    the canary nodes restart one after another, RESTART_S each."""
    return release_start + RESTART_S * (canary.index(node) + 1)


def fmt_s(t):
    return f"{t:g}s"


def flow(d):
    """A YAML flow map from a list of (key, value-text) pairs."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in d) + "}"


class Case:
    def __init__(self, name, category, seed, description, comment, verdict, causes=(),
                 onset=None, gpu="h100-sxm", gpus=4, nodes=6, rps=210, diurnal=None,
                 bursts=None, release_fields=(), stable_fields=(), events=(), tags=(),
                 release_start=RELEASE_START, canary=None, fleet=None):
        self.name = name
        self.category = category
        self.seed = seed
        self.description = description
        self.comment = comment
        self.verdict = verdict
        self.causes = list(causes)
        self.onset = onset
        self.gpu = gpu
        self.gpus = gpus
        self.nodes = nodes
        self.rps = rps
        self.diurnal = diurnal
        self.bursts = bursts
        self.release_fields = list(release_fields)
        self.stable_fields = list(stable_fields)
        self.events = list(events)  # (at_s, flow pairs)
        self.tags = list(tags)
        self.release_start = release_start
        self.canary = canary or list(CANARY)
        self.fleet = fleet

    def yaml(self):
        lines = []
        for line in self.comment.strip().split("\n"):
            lines += [f"# {w}" for w in textwrap.wrap(line, 76)] or ["#"]
        lines.append(f"seed: {self.seed}")
        lines.append(f"duration: {DURATION}s")
        lines.append("fleet:")
        if self.fleet:
            lines += [f"  - {g}" for g in self.fleet]
        else:
            lines.append(f'  - {{nodes: "node-[1-{self.nodes}]", gpu: {self.gpu}, gpus: {self.gpus}}}')
        lines.append("releases:")
        lines.append("  stable: " + flow([("profile", "baseline")] + self.stable_fields))
        lines.append("  next: " + flow([("profile", "baseline")] + self.release_fields))
        traffic = [("rps", f"{self.rps:g}")]
        if self.diurnal:
            traffic.append(("diurnal", flow([("amplitude", f"{self.diurnal[0]:g}"),
                                             ("period", self.diurnal[1])])))
        if self.bursts:
            traffic.append(("bursts", flow([("rate", self.bursts)])))
        lines.append("traffic: " + flow(traffic))
        lines.append("events:")
        events = [(0, [("deploy", "stable"), ("nodes", "all")])]
        events.append((self.release_start,
                       [("deploy", "next"), ("nodes", "[" + ", ".join(self.canary) + "]")]))
        events += self.events
        events.sort(key=lambda e: e[0])  # stable: same-time events keep their order
        for at, pairs in events:
            lines.append("  - " + flow([("at", fmt_s(at))] + pairs))
        return "\n".join(lines) + "\n"

    def label(self):
        out = [f"  - file: {self.name}.yaml",
               f"    category: {self.category}",
               "    release: next",
               "    canary_nodes: [" + ", ".join(self.canary) + "]",
               f"    release_start: {self.release_start:g}",
               f"    verdict: {self.verdict}"]
        if self.causes:
            out.append("    causes:")
            for c in self.causes:
                out.append("      - " + flow(list(c.items())))
        else:
            out.append("    causes: []")
        if self.onset is not None:
            out.append(f"    onset_s: {self.onset:g}")
        if self.tags:
            out.append("    tags: [" + ", ".join(self.tags) + "]")
        out.append(f'    description: "{self.description}"')
        return "\n".join(out)


def fault(kind, nodes, gpus=None, params=None, scope=None):
    pairs = [("fault", kind), ("nodes", nodes if nodes == "all" else "[" + ", ".join(nodes) + "]")]
    if gpus is not None:
        pairs.append(("gpus", f'"{gpus}"'))
    if params:
        pairs.append(("params", flow([(k, f"{v:g}") for k, v in params.items()])))
    if scope:
        pairs.append(("scope", scope))
    return pairs


def clear(kind, nodes, gpus=None):
    pairs = [("clear_fault", kind), ("nodes", "[" + ", ".join(nodes) + "]")]
    if gpus is not None:
        pairs.append(("gpus", f'"{gpus}"'))
    return pairs


def blip(kind, t, node, gpu, seconds):
    """A brief board signal on one GPU: on at t, off `seconds` later. At a 1 s
    scrape a blip of d <= 2.5 s shows in at most ceil(d) consecutive samples,
    never the 4 that make a "more than 3 s" streak."""
    assert seconds <= 2.5
    return [(t, fault(kind, [node], str(gpu))), (t + seconds, clear(kind, [node], str(gpu)))]


def heat(t0, t1, cooling_factor):
    """A fleet-wide heat event: every GPU's cooling degraded by `cooling_factor`
    from t0 to t1 (None: to the end)."""
    on = (t0, [("fault", "thermal"), ("nodes", "all"),
               ("params", flow([("cooling_factor", f"{cooling_factor:g}")]))])
    off = (t1, [("clear_fault", "thermal"), ("nodes", "all")])
    return [on] if t1 is None else [on, off]


def rps(t, value):
    return (t, [("rps", f"{value:g}")])


AA_COMMENT = """A/A: the canary release `next` is the baseline profile (identical code),
deployed on node-2 and node-5 at {rs}s; traffic is even per node. Nothing
the release does differs from `stable`, so the judge must pass it.
Confounders: {conf}."""


def aa_cases():
    """At least 30 healthy rollouts with confounders that must not fail them."""
    specs = [
        # (seed, gpu, rps, diurnal, bursts, confounder events, tags, confounder text)
        (101, "h100-sxm", 210, (0.2, "1h"), "1/5m", [], ["diurnal", "bursts"],
         "diurnal traffic and bursts only"),
        (102, "h100-sxm", 240, None, None, [], ["steady"], "none (steady Poisson traffic)"),
        (103, "h100-sxm", 180, (0.3, "20m"), None, [], ["diurnal"],
         "a steep diurnal ramp (amplitude 0.3, period 20 min)"),
        (104, "h100-sxm", 210, None, "1/2m", [], ["bursts"], "frequent bursts (1 per 2 min)"),
        (105, "h100-sxm", 210, (0.2, "1h"), None,
         blip("power_brake", 150, "node-2", 1, 2.5), ["blip"],
         "a 2.5 s power-brake blip on canary GPU node-2/1 at 150 s"),
        (106, "h100-sxm", 210, None, "1/5m",
         blip("power_brake", 120, "node-5", 0, 1) + blip("power_brake", 260, "node-5", 3, 2),
         ["blip", "bursts"], "power-brake blips of 1 s and 2 s on canary GPUs node-5/0 and node-5/3"),
        (107, "h100-sxm", 230, None, None,
         blip("hw_slowdown", 200, "node-2", 2, 2.5), ["blip"],
         "a 2.5 s HW-slowdown blip on canary GPU node-2/2 at 200 s"),
        (108, "h100-sxm", 210, None, None,
         blip("power_brake", 140, "node-2", 0, 1.5) + blip("power_brake", 145, "node-2", 0, 1.5),
         ["blip"], "two 1.5 s power-brake blips 5 s apart on canary GPU node-2/0"),
        (109, "h100-sxm", 210, (0.2, "1h"), "1/5m", [rps(200, 300)], ["load_shift"],
         "a load shift from 210 to 300 req/s at 200 s, on both arms"),
        (110, "h100-sxm", 240, None, None, [rps(180, 150)], ["load_shift"],
         "a load drop from 240 to 150 req/s at 180 s"),
        (111, "h100-sxm", 200, None, "1/5m", [rps(150, 290), rps(280, 200)], ["load_shift", "bursts"],
         "a load surge to 290 req/s from 150 s to 280 s"),
        (112, "h100-sxm", 210, None, None, heat(120, 320, 1.3), ["heat"],
         "a fleet-wide heat event (cooling x1.3 on every GPU) from 120 s to 320 s"),
        (113, "h100-sxm", 240, (0.2, "1h"), None, heat(100, None, 1.5), ["heat", "diurnal"],
         "a fleet-wide heat event (cooling x1.5) from 100 s on"),
        (114, "h100-sxm", 210, None, "1/5m",
         heat(90, 300, 1.4) + blip("power_brake", 220, "node-5", 2, 2.5), ["heat", "blip", "bursts"],
         "fleet-wide heat (x1.4) plus a 2.5 s power-brake blip on node-5/2"),
        (115, "h200", 210, (0.2, "1h"), "1/5m", [], ["h200", "diurnal", "bursts"],
         "H200 fleet; diurnal traffic and bursts"),
        (116, "h200", 250, None, None, [rps(200, 320)], ["h200", "load_shift"],
         "H200 fleet; a load shift from 250 to 320 req/s at 200 s"),
        (117, "h200", 210, None, None,
         heat(150, 350, 1.35) + blip("hw_slowdown", 250, "node-2", 3, 2), ["h200", "heat", "blip"],
         "H200 fleet; fleet-wide heat (x1.35) and a 2 s HW-slowdown blip on node-2/3"),
        (118, "a100-sxm", 200, (0.2, "1h"), None, [], ["a100", "diurnal", "power_capped_fleet"],
         "A100 fleet, every GPU at its 400 W cap on both arms (SW power cap 0x4 everywhere)"),
        (119, "a100-sxm", 210, None, "1/5m",
         blip("power_brake", 160, "node-5", 1, 2.5), ["a100", "blip", "bursts", "power_capped_fleet"],
         "A100 fleet at its power cap; a 2.5 s power-brake blip on node-5/1"),
        (120, "h100-sxm", 210, None, None,
         blip("power_brake", 100, "node-3", 0, 2.5) + blip("power_brake", 101, "node-2", 1, 2),
         ["blip"], "coincident power-brake blips on a baseline GPU and a canary GPU"),
        (121, "h100-sxm", 210, None, "1/3m", [(200, [("cordon", "node-4")])], ["cordon", "bursts"],
         "baseline node-4 cordoned at 200 s: its load moves to the other five nodes"),
        (122, "h100-sxm", 270, None, None, [], ["high_load"], "high steady load (45 req/s per node)"),
        (123, "h100-sxm", 120, (0.2, "1h"), None, [], ["low_load"], "low load (20 req/s per node)"),
        (124, "h100-sxm", 210, None, "1/5m",
         [rps(130, 260)] + blip("power_brake", 240, "node-2", 2, 2), ["load_shift", "blip", "bursts"],
         "a load shift to 260 req/s at 130 s and a 2 s power-brake blip on node-2/2"),
        (125, "h100-sxm", 220, (0.25, "30m"), None, heat(200, None, 1.45), ["heat", "diurnal"],
         "a diurnal ramp with fleet-wide heat (x1.45) from 200 s"),
        (126, "h100-sxm", 210, None, None,
         blip("hw_slowdown", 110, "node-5", 0, 1) + blip("hw_slowdown", 190, "node-5", 1, 1)
         + blip("hw_slowdown", 300, "node-2", 0, 1), ["blip"],
         "three 1 s HW-slowdown blips on canary GPUs"),
        (127, "h100-sxm", 200, None, "1/2m", [rps(250, 140)], ["bursts", "load_shift"],
         "frequent bursts and a load drop to 140 req/s at 250 s"),
        (128, "h100-sxm", 210, (0.2, "1h"), "1/5m", [], ["diurnal", "bursts"],
         "diurnal traffic and bursts (another seed)"),
        (129, "h100-sxm", 240, None, None, [], ["steady"], "none (another seed)"),
        (130, "h200", 230, (0.2, "1h"), None,
         heat(80, None, 1.3) + [rps(220, 300)], ["h200", "heat", "load_shift"],
         "H200 fleet; fleet-wide heat (x1.3) from 80 s and a load shift to 300 req/s at 220 s"),
        (131, "h100-sxm", 210, None, "1/5m",
         blip("power_brake", 130, "node-1", 3, 2.5) + blip("power_brake", 170, "node-6", 0, 2.5),
         ["blip", "bursts"], "power-brake blips on baseline GPUs only"),
        (132, "h100-sxm", 180, (0.3, "20m"), "1/4m",
         [rps(160, 260)] + heat(220, None, 1.4) + blip("power_brake", 300, "node-5", 2, 2.5),
         ["diurnal", "bursts", "load_shift", "heat", "blip"],
         "everything at once: ramp, bursts, load shift, fleet-wide heat and a brake blip"),
    ]
    cases = []
    for i, (seed, gpu, r, diurnal, bursts, events, tags, conf) in enumerate(specs, 1):
        cases.append(Case(
            f"aa-{i:02d}", "aa", seed, "A/A: " + conf,
            AA_COMMENT.format(rs=RELEASE_START, conf=conf), "pass", gpu=gpu, rps=r,
            diurnal=diurnal, bursts=bursts, events=events, tags=tags))
    # Fleet-wide events strong enough to throttle every node (issue 18: held-out
    # scenarios of this class failed healthy releases). A heat event that
    # makes the canary, a little hotter where it sits, slower too cannot pass
    # (the release cannot be shown not worse) and must not fail.
    others = [n for n in (f"node-{i}" for i in range(1, 7)) if n not in CANARY]
    fleet_events = [
        (133, 260, "not_fail", ["heat"],
         [(90, fault("thermal", others, params={"cooling_factor": 2.2})),
          (90, fault("thermal", list(CANARY), params={"cooling_factor": 2.3}))],
         "a data-centre heat event throttles every node (SW/HW thermal) from 90 s, "
         "the canary nodes a little hotter (cooling x2.3 against x2.2)"),
        (134, 260, "pass", ["power_cap"],
         [(90, fault("power_cap", "all", params={"limit_w": 450}))],
         "facility power capping lowers every GPU's limit to 450 W from 90 s"),
    ]
    for seed, r, verdict, tags, events, conf in fleet_events:
        cases.append(Case(
            f"aa-{len(cases) + 1:02d}", "aa", seed, "A/A: " + conf,
            AA_COMMENT.format(rs=RELEASE_START, conf=conf), verdict, rps=r, events=events,
            tags=tags))
    return cases


def release_scoped(kind, params=None, gpus=None):
    """A release effect the kernel profile does not model, injected on every GPU
    of each canary node at the moment that node starts serving the release."""
    return [(serving_at(n), fault(kind, [n], gpus, params, scope="release")) for n in CANARY]


RELEASE_PROFILE = "It is a release parameter: the engine applies it on every GPU that serves the release."
RELEASE_INJECTED = ("Not a release parameter: no kernel profile in the simulator causes it, so a\n"
                    "`{fault}` fault with `scope: release` is injected on every GPU of each canary\n"
                    "node at the moment that node starts serving the release (node-2 at {t2}s,\n"
                    "node-5 at {t5}s, after their restarts); the truth records it as the release's.")


def release_cases():
    """Every cause in the vocabulary, caused by a release on all canary nodes."""
    t2, t5 = serving_at("node-2"), serving_at("node-5")
    inj = lambda f: RELEASE_INJECTED.format(fault=f, t2=t2, t5=t5)
    specs = [
        # (name, cause, seed, gpu, fields, events, how, what, extra)
        ("release-power-brake-1", "power_brake", 201, "h100-sxm", [("power_spikiness", "2.5")], [],
         RELEASE_PROFILE, "an fp8 kernel whose di/dt spikes (spikiness 2.5) trip the power brake", {}),
        ("release-power-brake-2", "power_brake", 202, "h200", [("power_spikiness", "3")], [],
         RELEASE_PROFILE, "H200; spikiness 3 trips the power brake, with bursts",
         {"bursts": "1/5m"}),
        ("release-power-cap-1", "power_cap", 203, "h100-sxm", [("power_spikiness", "1.8")], [],
         RELEASE_PROFILE, "an unfused kernel drawing 1.8x dynamic power into the 700 W cap", {}),
        ("release-power-cap-2", "power_cap", 204, "h100-sxm", [("power_spikiness", "1.65")], [],
         RELEASE_PROFILE, "1.65x dynamic power into the cap, with diurnal traffic",
         {"diurnal": (0.2, "1h")}),
        ("release-thermal-1", "thermal_throttle", 205, "h100-sxm", [],
         release_scoped("thermal", {"cooling_factor": 2.0}),
         inj("thermal") + "\nCooling x2.0: the canary GPUs heat past 87 C within about a minute.",
         "canary GPUs overheat (injected with the release, cooling x2.0)", {}),
        ("release-thermal-2", "thermal_throttle", 206, "h100-sxm", [("dynamic_power_w", "680")],
         heat(0, None, 1.55),
         "Physical: the whole hall runs warm (every GPU's cooling x1.55 from 0 s, a\n"
         "node fault on all nodes; the baseline settles at about 76 C) and the release's\n"
         "kernels switch more (dynamic power 680 W instead of 500 W, still under the\n"
         "700 W cap), which pushes only the canary GPUs past 87 C. No bursts or\n"
         "diurnal, so the baseline stays below the threshold.",
         "hotter kernels (dynamic power 680 W) on a warm fleet push only canary GPUs past 87 C",
         {"rps": 200}),
        ("release-hw-slowdown-1", "hw_slowdown", 207, "h100-sxm", [], release_scoped("hw_slowdown"),
         inj("hw_slowdown"), "HW slowdown (0x8 alone) on every canary GPU with the release", {}),
        ("release-hw-slowdown-2", "hw_slowdown", 208, "h200", [], release_scoped("hw_slowdown"),
         inj("hw_slowdown"), "H200; HW slowdown on every canary GPU with the release, with bursts",
         {"bursts": "1/5m"}),
        ("release-pcie-downtrain-1", "pcie_downtrain", 209, "h100-sxm", [("pcie_gen", "4")], [],
         RELEASE_PROFILE + "\nA driver release that trains every link at Gen4 (max Gen5).",
         "a driver release trains the PCIe links at Gen4 x16 (max Gen5 x16)", {}),
        ("release-pcie-downtrain-2", "pcie_downtrain", 210, "h100-sxm",
         [("pcie_gen", "4"), ("pcie_width", "8"), ("pcie_rx_bytes_s", "6.0e10"),
          ("pcie_tx_bytes_s", "2.0e10")], [],
         RELEASE_PROFILE + "\nA driver release that trains links at Gen4 x8; both releases stream KV\n"
         "cache over PCIe (offload), so the canary's PCIe bytes/s fall with the link.",
         "Gen4 x8 links under KV offload: PCIe bytes/s fall on the canary",
         {"stable_fields": [("pcie_rx_bytes_s", "6.0e10"), ("pcie_tx_bytes_s", "2.0e10")]}),
        ("release-pcie-errors-1", "pcie_errors", 211, "h100-sxm", [],
         release_scoped("pcie_errors", {"replays_per_s": 50}), inj("pcie_errors"),
         "PCIe replays at 50/s on every canary GPU with the release", {}),
        ("release-pcie-errors-2", "pcie_errors", 212, "h100-sxm", [],
         release_scoped("pcie_errors", {"replays_per_s": 10}), inj("pcie_errors"),
         "PCIe replays at 10/s on every canary GPU with the release, diurnal traffic",
         {"diurnal": (0.2, "1h")}),
        ("release-memory-thrash-1", "memory_thrash", 213, "h100-sxm", [("dram_thrash", "1.8")], [],
         RELEASE_PROFILE, "paged attention v2 moves 1.8x DRAM bytes per token", {}),
        ("release-memory-thrash-2", "memory_thrash", 214, "h200", [("dram_thrash", "1.5")], [],
         RELEASE_PROFILE, "H200; 1.5x DRAM bytes per token, with bursts", {"bursts": "1/5m"}),
        ("release-low-occupancy-1", "low_occupancy", 215, "h100-sxm",
         [("occupancy_factor", "0.4")], [], RELEASE_PROFILE,
         "a register-allocation change cuts SM occupancy to 0.4x", {}),
        ("release-low-occupancy-2", "low_occupancy", 216, "h100-sxm",
         [("occupancy_factor", "0.6")], [], RELEASE_PROFILE,
         "occupancy 0.6x, with a load shift on both arms", {"events": [rps(220, 280)]}),
        ("release-xid-1", "xid_errors", 217, "h100-sxm", [("xid", "31"), ("xid_per_s", "0.2")], [],
         RELEASE_PROFILE + "\nXID 31 (MMU fault) is not in the critical set: a rate increase.",
         "a CUDA-graph bug makes XID 31 recur (0.2/s) on every canary GPU", {}),
        ("release-xid-2", "xid_errors", 218, "h100-sxm", [("xid", "119"), ("xid_per_s", "0.05")], [],
         RELEASE_PROFILE + "\nXID 119 (GSP RPC timeout) is critical: one is enough.",
         "a driver release makes XID 119 (GSP timeout, critical) appear", {}),
        ("release-ecc-1", "ecc_errors", 219, "h100-sxm", [],
         release_scoped("ecc_errors", {"sbe_per_s": 2}), inj("ecc_errors"),
         "correctable ECC errors at 2/s on every canary GPU with the release", {}),
        ("release-ecc-2", "ecc_errors", 220, "a100-sxm", [],
         release_scoped("ecc_errors", {"sbe_per_s": 0.5, "dbe_per_s": 0.02}), inj("ecc_errors"),
         "A100; SBEs at 0.5/s and a DBE every ~50 s on every canary GPU", {"rps": 150}),
        ("release-software-1", "software_regression", 221, "h100-sxm", [("slowdown", "1.4")], [],
         RELEASE_PROFILE + "\nNo hardware signature: clocks, reasons, PCIe, DRAM efficiency unchanged.",
         "a framework release 40% slower per token, no hardware signature", {}),
        ("release-software-2", "software_regression", 222, "h200", [("slowdown", "1.25")], [],
         RELEASE_PROFILE + "\nNo hardware signature.",
         "H200; 25% slower per token, with diurnal traffic and bursts",
         {"diurnal": (0.2, "1h"), "bursts": "1/5m"}),
    ]
    cases = []
    for name, cause, seed, gpu, fields, events, how, what, extra in specs:
        events = list(events) + list(extra.get("events", []))
        comment = (f"Release cause {cause}: {what}.\n"
                   f"Deployed on the canary nodes node-2 and node-5 at {RELEASE_START}s (serving at\n"
                   f"{t2}s and {t5}s after rolling restarts).\n" + how)
        cases.append(Case(
            name, "release", seed, what, comment, "fail",
            causes=[{"kind": cause, "scope": "release"}], onset=t2, gpu=gpu,
            rps=extra.get("rps", 210), diurnal=extra.get("diurnal"), bursts=extra.get("bursts"),
            release_fields=fields, stable_fields=extra.get("stable_fields", []), events=events,
            tags=[cause] + ([gpu.split("-")[0]] if gpu != "h100-sxm" else [])))
    return cases


NODE_COMMENT = """Node fault with a healthy release: `next` is the baseline profile. {what}.
Expected: not fail (pass or inconclusive), the cause named with scope node on {node}."""


HALT_COMMENT = """Node fault with a healthy release: `next` is the baseline profile. {what}.
Expected: fail. The seed's rule: a throttle streak of more than 3 s on a canary
GPU after its release halts the canary (unless the GPU had it before the
release, or the baseline shows it too); the judge names the GPUs."""


def node_cases():
    t2, t5 = serving_at("node-2"), serving_at("node-5")
    specs = [
        # (name, seed, gpu, gpus, events, cause, node, gpu_list, onset, what, extra)
        ("node-canary-brake-after", 301, "h100-sxm", 4,
         [(150, fault("power_brake", ["node-5"]))], "power_brake", "node-5", None, 150,
         "canary node-5's PSU asserts the power brake on all its GPUs at 150 s, after the release; "
         "canary node-2 stays clean", {}),
        ("node-canary-thermal-after", 302, "h100-sxm", 4,
         [(120, fault("thermal", ["node-2"], params={"cooling_factor": 2.0}))],
         "thermal_throttle", "node-2", None, 120,
         "canary node-2's fans fail at 120 s (cooling x2.0); canary node-5 stays cool", {}),
        ("node-canary-gpus-brake-after", 303, "h100-sxm", 4,
         [(140, fault("power_brake", ["node-2"], "0-1"))], "power_brake", "node-2",
         ["node-2/0", "node-2/1"], 140,
         "GPUs 0-1 of canary node-2 brake at 140 s (a subset of the node's GPUs)", {}),
        ("node-canary-hws-before", 304, "h100-sxm", 4,
         [(20, fault("hw_slowdown", ["node-5"]))], "hw_slowdown", "node-5", None, 20,
         "canary node-5 is in HW slowdown from 20 s, before the release (in its history)", {}),
        ("node-canary-pcie-before", 305, "h100-sxm", 4,
         [(10, fault("pcie_downtrain", ["node-2"], "1", {"width": 8, "gen": 4}))],
         "pcie_downtrain", "node-2", ["node-2/1"], 10,
         "canary GPU node-2/1 trained at x8 Gen4 from 10 s, before the release", {}),
        ("node-canary-ecc-before", 306, "a100-sxm", 4,
         [(30, fault("ecc_errors", ["node-5"], "2", {"sbe_per_s": 2}))],
         "ecc_errors", "node-5", ["node-5/2"], 30,
         "A100; canary GPU node-5/2 logs 2 SBE/s from 30 s, before the release", {"rps": 150}),
        ("node-canary-xid-after", 307, "h100-sxm", 4,
         [(160, fault("xid_errors", ["node-2"], "0", {"xid": 13, "per_s": 0.2}))],
         "xid_errors", "node-2", ["node-2/0"], 160,
         "canary GPU node-2/0 starts logging XID 13 at 160 s (node-5 clean)", {}),
        ("node-canary-one-of-eight", 308, "h100-sxm", 8,
         [(150, fault("thermal", ["node-5"], "6", {"cooling_factor": 2.2}))],
         "thermal_throttle", "node-5", ["node-5/6"], 150,
         "8-GPU nodes; one GPU of eight (node-5/6) overheats at 150 s", {}),
        ("node-canary-one-of-eight-pcie", 309, "h100-sxm", 8,
         [(130, fault("pcie_errors", ["node-2"], "3", {"replays_per_s": 50}))],
         "pcie_errors", "node-2", ["node-2/3"], 130,
         "8-GPU nodes; one GPU of eight (node-2/3) replays PCIe at 50/s from 130 s", {}),
        ("node-canary-powercap-after", 310, "h100-sxm", 4,
         [(180, fault("power_cap", ["node-5"], params={"limit_w": 420}))],
         "power_cap", "node-5", None, 180,
         "canary node-5's power limit is lowered to 420 W at 180 s (a BMC policy)", {}),
        ("node-baseline-brake", 311, "h100-sxm", 4,
         [(100, fault("power_brake", ["node-3"]))], "power_brake", "node-3", None, 100,
         "baseline node-3 brakes at 100 s; the canary is healthy", {}),
        ("node-baseline-thermal", 312, "h100-sxm", 4,
         [(90, fault("thermal", ["node-6"], "0-1", {"cooling_factor": 2.0}))],
         "thermal_throttle", "node-6", ["node-6/0", "node-6/1"], 90,
         "baseline GPUs node-6/0-1 overheat from 90 s", {}),
        ("node-baseline-xid79", 313, "h100-sxm", 4,
         [(200, fault("xid_errors", ["node-4"], "1", {"xid": 79, "per_s": 1}))],
         "xid_errors", "node-4", ["node-4/1"], 200,
         "baseline GPU node-4/1 falls off the bus at 200 s: node-4 stops serving and its load "
         "moves to the other nodes, canary included", {}),
        ("node-baseline-ecc", 314, "h100-sxm", 4,
         [(60, fault("ecc_errors", ["node-1"], "3", {"sbe_per_s": 1, "dbe_per_s": 0.01}))],
         "ecc_errors", "node-1", ["node-1/3"], 60,
         "baseline GPU node-1/3 logs SBEs and a DBE every ~100 s from 60 s", {}),
    ]
    cases = []
    for name, seed, gpu, gpus, events, cause, node, gpu_list, onset, what, extra in specs:
        c = {"kind": cause, "scope": "node", "node": node}
        if gpu_list:
            c["gpus"] = "[" + ", ".join(gpu_list) + "]"
        comment = NODE_COMMENT.format(what=what[0].upper() + what[1:], node=node)
        verdict = "not_fail"
        tags = [cause, "canary_node" if node in CANARY else "baseline_node"]
        # The seed's rule (issue 18): a throttle streak on a canary GPU after
        # its release halts the canary, whatever the node; the judge cannot
        # tell it from the release on a node that ran it, and halting is cheap.
        if node in CANARY and name.endswith("-after") or name == "node-canary-one-of-eight":
            if cause in ("power_brake", "thermal_throttle", "hw_slowdown", "power_cap"):
                verdict = "fail"
                c = {"kind": cause, "scope": "release", "node": node}
                if gpu_list:
                    c["gpus"] = "[" + ", ".join(gpu_list) + "]"
                tags.append("halt")
                comment = HALT_COMMENT.format(what=what[0].upper() + what[1:])
        cases.append(Case(
            name, "node", seed, what, comment, verdict, causes=[c], onset=onset, gpu=gpu,
            gpus=gpus, rps=extra.get("rps", 210), bursts="1/5m", events=events,
            tags=tags
            + (["before_release"] if onset < RELEASE_START else [])))
    return cases


def regression_cases():
    t2 = serving_at("node-2")
    cases = []
    for pct, seeds in ((5, (401, 402, 403, 404)), (10, (411, 412, 413, 414))):
        for k, seed in enumerate(seeds, 1):
            slowdown = 1 + pct / 100
            diurnal = (0.2, "1h") if k % 2 == 0 else None
            bursts = "1/5m" if k >= 3 else None
            conf = ", ".join(x for x in ("diurnal" if diurnal else "", "bursts" if bursts else "") if x)
            what = f"a release {pct}% slower per token (slowdown {slowdown:g})" + (
                f", with {conf}" if conf else "")
            comment = (f"Subtle software regression: {what}.\n"
                       "No hardware signature. Below capacity tokens/s follow the offered load, so\n"
                       "it shows as time per output token (vllm:time_per_output_token_seconds)\n"
                       f"about {pct}% higher on the canary, and longer e2e latency.")
            cases.append(Case(
                f"regression-{pct:02d}pct-{k}", "regression", seed, what, comment, "fail",
                causes=[{"kind": "software_regression", "scope": "release"}], onset=t2,
                rps=210, diurnal=diurnal, bursts=bursts,
                release_fields=[("slowdown", f"{slowdown:g}")],
                tags=[f"slowdown_{pct}pct"] + ([x for x in ("diurnal", "bursts") if x in conf])))
    return cases


LABELS_HEAD = """# Labels of the judge's scenario suite (scenarios/suite/README.md). Written by
# scripts/gen_scenario_suite.py with the scenario files; loaded by
# eval/suite (LoadSuite). Per case:
#   file           the scenario, relative to this file
#   category       aa | release | node | regression
#   release        the release under test, deployed on canary_nodes at release_start
#   canary_nodes   the nodes whose telemetry is the canary (canary.om); the rest is the baseline
#   release_start  seconds from the scenario start: the deploy (annotation started_at)
#   verdict        pass | fail | not_fail (pass or inconclusive are both right)
#   causes         [{kind, scope, node?, gpus?}] the judge should name (docs/contracts.md §6)
#   onset_s        seconds from the scenario start when the fault begins (absent: none)
#   tags           confounders and features, for slicing results
#   description    one line
"""


def main():
    cases = aa_cases() + release_cases() + node_cases() + regression_cases()
    os.makedirs(SUITE, exist_ok=True)
    for old in os.listdir(SUITE):
        if old.endswith(".yaml"):
            os.remove(os.path.join(SUITE, old))
    for c in cases:
        with open(os.path.join(SUITE, c.name + ".yaml"), "w") as f:
            f.write(c.yaml())
    with open(os.path.join(SUITE, "labels.yaml"), "w") as f:
        f.write(LABELS_HEAD + "cases:\n" + "\n".join(c.label() for c in cases) + "\n")
    counts = {}
    for c in cases:
        counts[c.category] = counts.get(c.category, 0) + 1
    print(f"{len(cases)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
