#!/usr/bin/env python3
"""Golden vectors for eval/kayenta (docs/kayenta-baseline.md).

Regenerates eval/kayenta/testdata/mann_whitney.json from fixed numpy
seeds. CI does not run this; the C++ test (analysis_kayenta_test) reads the
checked-in JSON and compares to 1e-9 relative.

Reference implementation, independent of the C++ one:
- U and the p-value: scipy.stats.mannwhitneyu(x, y, alternative="two-sided",
  method="asymptotic", use_continuity=True) - the tie- and continuity-corrected
  normal approximation of R's wilcox.test(exact = FALSE, correct = TRUE).
- The confidence interval: R's wilcox.test.R inversion ported literally
  (wdiff() ranks c(x - d, y) with scipy.stats.rankdata, root() checks the two
  end points first), with the root located by bisection over the sorted
  distinct pairwise differences (all n*m of them formed with numpy): W is a
  step function, so R's uniroot(tol = 1e-4) and Kayenta's Brent solver converge
  to the difference where it crosses the quantile. For the continuous cases the
  script also checks that scipy.optimize.brentq on the same wdiff (xtol 1e-12)
  lands on that difference.
- The estimate: Hodges-Lehmann, numpy.median of the pairwise differences.

Debian's python3-scipy cannot be installed next to our Boost; unpack it
instead (scipy.stats imports scipy.optimize, which needs liblbfgsb0 too):

  apt-get download python3-scipy python3-numpy python3-decorator liblbfgsb0
  for f in *.deb; do dpkg -x "$f" root; done
  LD_LIBRARY_PATH=$PWD/root/usr/lib/x86_64-linux-gnu \
  PYTHONPATH=$PWD/root/usr/lib/python3/dist-packages /usr/bin/python3 scripts/golden/kayenta.py
"""
import json
import math
import pathlib

import numpy as np
from scipy import optimize, special, stats

OUT = pathlib.Path(__file__).resolve().parents[2] / "eval/kayenta/testdata"


def wdiff(x, y, d, zq):
    """R's wdiff(d, zq) with correct = TRUE, alternative = "two.sided"."""
    nx, ny = float(len(x)), float(len(y))
    dr = stats.rankdata(np.concatenate([x - d, y]))  # average ranks
    _, nties = np.unique(dr, return_counts=True)
    nties = nties.astype(np.float64)
    dz = dr[: len(x)].sum() - nx * (nx + 1) / 2 - nx * ny / 2
    correction = np.sign(dz) * 0.5
    sigma = math.sqrt((nx * ny / 12) * ((nx + ny + 1)
                                        - (nties**3 - nties).sum() / ((nx + ny) * (nx + ny - 1))))
    if sigma == 0:
        raise ValueError("cannot compute confidence interval when all observations are tied")
    return (dz - correction) / sigma - zq


def root(x, y, zq, e):
    """R's root(zq); e: the sorted distinct pairwise differences."""
    if wdiff(x, y, e[0], zq) <= 0:
        return float(e[0])
    if wdiff(x, y, e[-1], zq) >= 0:
        return float(e[-1])
    # Smallest interval index k (between e[k] and e[k+1]) where W - zq <= 0;
    # len(e) - 1 when none: then the crossing is at the last difference.
    lo, hi = 0, len(e) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if wdiff(x, y, 0.5 * (e[mid] + e[mid + 1]), zq) <= 0:
            hi = mid
        else:
            lo = mid + 1
    if lo < len(e) - 1:
        mid = 0.5 * (e[lo] + e[lo + 1])
        if wdiff(x, y, mid, zq) == 0:
            return float(mid)
    return float(e[lo])


def reference(name, x, y, conf_level, continuous):
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mw = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic",
                            use_continuity=True)
    diffs = np.subtract.outer(x, y).ravel()
    e = np.unique(diffs)
    alpha = 1 - conf_level
    z_low = float(special.ndtri(alpha / 2))
    lower = root(x, y, -z_low, e)
    upper = root(x, y, z_low, e)
    if continuous:
        for zq, ours in ((-z_low, lower), (z_low, upper)):
            if wdiff(x, y, e[0], zq) > 0 and wdiff(x, y, e[-1], zq) < 0:
                br = optimize.brentq(lambda d: wdiff(x, y, d, zq), e[0], e[-1], xtol=1e-12,
                                     rtol=4 * np.finfo(float).eps, maxiter=500)
                assert abs(br - ours) <= 1e-9 * max(1.0, abs(ours)), (name, zq, br, ours)
    return {"name": name, "conf_level": conf_level, "x": [float(v) for v in x],
            "y": [float(v) for v in y], "u": float(mw.statistic), "p_value": float(mw.pvalue),
            "ci_lower": lower, "ci_upper": upper, "estimate": float(np.median(diffs))}


def cases():
    out = []
    rng = np.random.default_rng
    # Kayenta's own unit test (MannWhitneySuite): CI [6, 39], estimate 22.5.
    out.append(reference("kayenta_suite", [10.0, 20.0, 30.0, 40.0], [1.0, 2.0, 3.0, 4.0], 0.95,
                         False))
    g = rng(101)
    out.append(reference("small_5_7", g.normal(1.0, 1.0, 5), g.normal(0.0, 1.0, 7), 0.98, True))
    g = rng(102)
    out.append(reference("shift_50_60", g.normal(0.3, 1.0, 50), g.normal(0.0, 1.0, 60), 0.98,
                         True))
    g = rng(103)
    out.append(reference("null_200", g.normal(0.0, 1.0, 200), g.normal(0.0, 1.0, 200), 0.98, True))
    g = rng(104)
    out.append(reference("latency_rounded_ties", np.round(g.gamma(4.0, 5.0, 100) * 2) / 2,
                         np.round(g.gamma(4.0, 4.8, 120) * 2) / 2, 0.98, False))
    g = rng(105)
    out.append(reference("zero_inflated_counts", g.poisson(0.5, 200).astype(float),
                         g.poisson(0.2, 200).astype(float), 0.98, False))
    g = rng(106)
    out.append(reference("full_separation", g.uniform(10, 11, 8), g.uniform(0, 1, 8), 0.98, True))
    out.append(reference("tiny_2_3", [1.5, 2.5], [0.5, 1.0, 3.0], 0.98, True))
    g = rng(107)
    out.append(reference("lognormal_600_shift2pct", 1.02 * g.lognormal(3.0, 0.3, 600),
                         g.lognormal(3.0, 0.3, 600), 0.98, True))
    g = rng(108)
    out.append(reference("unequal_600_150", g.normal(100.0, 5.0, 600), g.normal(101.0, 5.0, 150),
                         0.98, True))
    g = rng(109)
    out.append(reference("negative_offset_1e6", -1e6 + g.normal(0.0, 1e-3, 80),
                         -1e6 + g.normal(2e-4, 1e-3, 90), 0.98, True))
    g = rng(110)
    out.append(reference("one_vs_20", [0.4], g.normal(0.0, 1.0, 20), 0.98, True))
    g = rng(111)
    out.append(reference("integers_0_4_300", g.integers(0, 5, 300).astype(float),
                         g.integers(0, 5, 300).astype(float), 0.98, False))
    g = rng(112)
    out.append(reference("tight_clock_2pct", 1410.0 * 0.98 + g.normal(0.0, 0.5, 300),
                         1410.0 + g.normal(0.0, 0.5, 300), 0.98, True))
    g = rng(113)
    out.append(reference("conf_095_80", g.normal(0.2, 1.0, 80), g.normal(0.0, 1.0, 80), 0.95, True))
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "mann_whitney.json", "w") as f:
        json.dump({"cases": cases()}, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
