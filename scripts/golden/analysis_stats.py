#!/usr/bin/env python3
"""Golden vectors for src/analysis/stats (docs/analysis-method.md).

Regenerates src/analysis/stats/testdata/*.json from fixed numpy seeds with
SciPy/NumPy as the reference implementation. CI does not run this; the C++
tests (analysis_stats_test) read the checked-in JSON and compare to 1e-9.

  python3 scripts/golden/analysis_stats.py      # needs numpy and scipy
"""
import json
import math
import pathlib

import numpy as np
from scipy import special

OUT = pathlib.Path(__file__).resolve().parents[2] / "src/analysis/stats/testdata"


def rho_for_target(n_star, alpha, sigma=1.0):
    two_log = -2.0 * math.log(alpha)
    return math.sqrt((two_log + math.log(two_log + 1.0)) / n_star) / sigma


def cs_half(n, var, rho, alpha, scale):
    # Waudby-Smith et al. 2021, Theorem 2.2 ("paper") and the authors'
    # standardised form ("standardized"): sigma * unit-variance boundary.
    if scale == "paper":
        v = n * var * rho**2 + 1.0
        return math.sqrt(2.0 * v / (n**2 * rho**2) * math.log(math.sqrt(v) / alpha))
    v = n * rho**2 + 1.0
    return math.sqrt(var) * math.sqrt(2.0 * v / (n**2 * rho**2) * math.log(math.sqrt(v) / alpha))


def cs_cases():
    cases = []
    specs = [  # seed, mean, sd, length, n_star, alpha, sigma for rho
        (1, 0.0, 1.0, 120, 30.0, 0.05, 1.0),
        (2, 0.3, 2.0, 120, 100.0, 0.01, 1.0),
        (3, -0.02, 0.02, 100, 30.0, 0.01, 0.02),
        (4, 1e6, 1e-3, 50, 10.0, 0.1, 1.0),  # large offset: Welford must not cancel
    ]
    for seed, mu, sd, length, n_star, alpha, sigma in specs:
        x = np.random.default_rng(seed).normal(mu, sd, length)
        rho = rho_for_target(n_star, alpha, sigma)
        checks = []
        for n in (2, 3, 5, 10, 30, 50, 100, 120):
            if n > length:
                continue
            xs = x[:n]
            mean = float(np.mean(xs))
            var = float(np.var(xs, ddof=1))
            z = float(special.ndtri(1.0 - alpha / 2.0))
            fixed = z * math.sqrt(var / n)
            row = {"n": n, "mean": mean, "variance": var,
                   "fixed_lo": mean - fixed, "fixed_hi": mean + fixed}
            for scale in ("paper", "standardized"):
                h = cs_half(n, var, rho, alpha, scale)
                row[scale + "_lo"] = mean - h
                row[scale + "_hi"] = mean + h
            checks.append(row)
        cases.append({"seed": seed, "n_star": n_star, "alpha": alpha, "sigma": sigma,
                      "rho": rho, "x": [float(v) for v in x], "checks": checks})
    return {"cases": cases}


def normal_cases():
    p = [1e-300, 1e-20, 1e-10, 1e-5, 0.001, 0.0125, 0.025, 0.05, 0.0749, 0.075, 0.1, 0.3,
         0.5, 0.55, 0.7, 0.9, 0.925, 0.95, 0.975, 0.995, 0.999, 0.99999]
    x = [-37.0, -20.0, -8.0, -5.0, -3.0, -1.959963984540054, -1.0, -0.1, 0.0, 0.25, 1.0, 1.6449,
         2.5, 4.0, 6.0]
    return {"quantile": [{"p": v, "z": float(special.ndtri(v))} for v in p],
            "cdf": [{"x": v, "phi": float(special.ndtr(v))} for v in x]}


def count_cases():
    cases = []
    specs = [  # seed, ticks, rate per tick, p0 mode, true canary share multiplier, prior
        (10, 30, 3.0, "const", 1.0, (1.0, 1.0)),
        (11, 30, 3.0, "const", 2.0, (1.0, 1.0)),
        (12, 40, 5.0, "varying", 1.5, (0.5, 2.0)),
        (13, 20, 200.0, "small", 1.0, (1.0, 1.0)),
    ]
    for seed, n_ticks, rate, mode, mult, (a0, b0) in specs:
        rng = np.random.default_rng(seed)
        ticks = []
        a = b = 0
        log_null = 0.0
        mh_num = mh_den = 0.0
        for t in range(n_ticks):
            if mode == "const":
                p0 = 0.3
            elif mode == "varying":
                p0 = float(0.2 + 0.3 * (t % 7) / 6.0)
            else:
                p0 = 0.01
            theta = mult * p0 / (mult * p0 + 1.0 - p0)
            k = int(rng.poisson(rate))
            ca = int(rng.binomial(k, theta))
            cb = k - ca
            a += ca
            b += cb
            log_null += ca * math.log(p0) + cb * math.log1p(-p0)
            mh_num += ca * (1.0 - p0)
            mh_den += cb * p0
            log_e = float(special.betaln(a0 + a, b0 + b) - special.betaln(a0, b0)) - log_null
            rr = (mh_num / mh_den) if mh_den > 0 else (math.inf if a + b > 0 else math.nan)
            ticks.append({"canary": ca, "baseline": cb, "p0": p0, "log_e": log_e,
                          "rate_ratio": rr if math.isfinite(rr) else None})
        cases.append({"seed": seed, "prior_a": a0, "prior_b": b0, "ticks": ticks})
    return {"cases": cases}


def block_cases():
    rng = np.random.default_rng(20)
    block_s, min_fraction, origin = 10, 0.5, 1000
    ticks = []
    for t in range(origin, origin + 95):
        c = float(rng.normal(100.0, 5.0)) if rng.random() > 0.3 else None
        bvals = [float(rng.normal(98.0, 5.0)) for _ in range(2)] if rng.random() > 0.2 else []
        if 1040 <= t < 1047:
            c = None  # a gap: block 4 must be skipped (3 canary seconds < 5)
        ticks.append({"tick": t, "canary": c, "baseline": bvals})
    blocks = []
    n_blocks = (95 + block_s - 1) // block_s
    for k in range(n_blocks):
        lo, hi = origin + k * block_s, origin + (k + 1) * block_s
        cs = [e["canary"] for e in ticks if lo <= e["tick"] < hi and e["canary"] is not None]
        bs = [v for e in ticks if lo <= e["tick"] < hi for v in e["baseline"]]
        b_secs = sum(1 for e in ticks if lo <= e["tick"] < hi and e["baseline"])
        if len(cs) >= min_fraction * block_s and b_secs >= min_fraction * block_s:
            blocks.append({"index": k, "start_tick": lo, "canary_mean": float(np.mean(cs)),
                           "baseline_mean": float(np.mean(bs)), "canary_seconds": len(cs),
                           "baseline_seconds": b_secs})
    # An AR(1) series for the autocorrelation helpers.
    ar_rng = np.random.default_rng(21)
    x = np.zeros(200)
    for i in range(1, 200):
        x[i] = 0.6 * x[i - 1] + ar_rng.normal()
    m = x.mean()
    r1 = float(np.sum((x[:-1] - m) * (x[1:] - m)) / np.sum((x - m) ** 2))
    return {"block_s": block_s, "min_fraction": min_fraction, "origin": origin, "ticks": ticks,
            "blocks": blocks, "ar1": {"x": [float(v) for v in x], "r1": r1,
                                      "n_eff": 200 * (1 - r1) / (1 + r1)}}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in (("confidence_sequence.json", cs_cases()), ("normal.json", normal_cases()),
                       ("count_test.json", count_cases()), ("blocks.json", block_cases())):
        with open(OUT / name, "w") as f:
            json.dump(data, f, separators=(",", ":"), allow_nan=False)
            f.write("\n")


if __name__ == "__main__":
    main()
