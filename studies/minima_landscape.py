"""Distinct minima of the empirical risk at alpha = 1 and 1.5 (omega = 0.3): how many, how far
apart in training loss, and how overlapping, as d grows.

Question: finite-size training (L-BFGS) at alpha = 1 misses the replica-symmetric (RS) theory by a
few percent, a gap that does not shrink with d, while at alpha = 1.5 it agrees
(studies/alpha1_discrepancy.py, docs/numerics.md).  Is the landscape at alpha = 1 glassy
(replica-symmetry breaking: many distinct minima whose number grows with d, close in loss, with
overlaps below the self-overlap) and the one at alpha = 1.5 not?

How: per instance (teacher + training set, drawn by ``seed``; ``ModelParams(omega=0.3)``) the
empirical risk is minimised with L-BFGS-B (gtol 1e-9 on |grad R|_inf) from the start set of
``alpha1_discrepancy.run_instance`` (its ``Instance`` and ``classify`` are imported, not copied),
in this order: ``positional`` (Q = 1), ``pos_m0.5`` (Q = 0.5), ``semantic`` (Q = Q*), ``--n-random``
random starts (g, 0.4 g, 0.25 + 0.4 g in turn), then ``--n-perturb`` basin hops around the lowest
positional minimum, then as many around the lowest semantic one; 23 solves per instance by
default.  No test errors are computed.  Two solutions are the same minimum when
``min |Q_a -+ Q_b| / |Q_b| < 1e-3`` (the ``Instance`` rule); each distinct minimum keeps its class,
eps_t = R/d, q, m, theta, grad norm, convergence flag and the number of runs that landed on it.
For every pair (a, b) of distinct minima of the same class: ``q_ab = sigma^2 |Q_a . Q_b| / d``,
``q_a = sigma^2 |Q_a|^2 / d``, ``r_ab = q_ab / sqrt(q_a q_b)`` and the loss difference.  The
summary gives, per (alpha, d, class), mean +- standard error over instances
(``symattn.stats.mean_se``) of: the number of distinct minima, the relative loss spread
``(eps_max - eps_min) / eps_min``, the relative gap between the two lowest, the mean pairwise
``1 - r_ab`` and that of the two lowest, the mean ``q_a`` and ``q_ab``, the fraction of the runs of
the class that reach its lowest minimum; and the "running best" (lowest eps_t of the class after
the first k starts, relative to the final lowest, mean over instances).  Extras: the number of
minima within 1 % of the lowest, the start index at which the lowest was first found, and the
loss on the straight segment between the two lowest minima of a class (11 points; a barrier above
both ends shows they are separated along it).

Writes studies/data/minima_landscape.json (rewritten atomically after every instance; a rerun
skips the (alpha, d, seed) already there; every run, every distinct minimum, every same-class
pair, the summary and the running-best curves) and docs/figures/minima_landscape.png.
``--summary-only`` re-prints and redraws from the JSON.

Cost (2-core machine shared with other work, one BLAS thread, commit 2394ceb, 2026-12-05; one
instance = 23 solves; mean wall per instance in the full run, alpha = 1 / 1.5): d = 500: 1.3 s /
2.4 s; d = 1000: 4.5 s / 8.0 s; d = 2000: 31 s / 62 s; d = 4000: 187 s / 331 s (single solves at
alpha = 1, d = 4000: 5-50 s, the random starts the slowest).  Default seeds per d: 40, 24, 12, 4
(seeds 0..K-1), i.e. 3636 s of solves.

Found (full default run; mean +- s.e. over instances; "near" = the two lowest minima of a class):

* semantic class, alpha = 1: a cluster of nearly degenerate minima that tightens with d.  Gap
  between the two lowest 5.8e-2 +- 1.7e-2, 1.1e-3 +- 3e-4, 1.2e-4 +- 6e-5, 1.25e-5 +- 6e-6 and
  1 - r_ab between them 0.27 +- 0.07, 0.011 +- 0.002, 0.003 +- 0.002, 0.0015 +- 0.0004 at d = 500,
  1000, 2000, 4000 (instances with >= 2 semantic minima: 13/40, 9/24, 2/12, 3/4); q_ab = 0.0666
  vs q_a = 0.0667 at d = 4000; the two lowest are separated by a loss barrier on the straight
  segment between them in every such instance (barrier 2.3e-5 eps_t at d = 4000).  These
  minima are found by the semantic hops: the warm start misses the lowest semantic minimum in
  12 %, 33 %, 17 %, 50 % of the instances, by 4.6e-4, 3.5e-4, 2.1e-5, 6.8e-5 in relative eps_t
  (mean over instances), and at d = 4000 the LAST hop still lowered it in 2 of 4 instances; the
  fraction of semantic runs reaching the lowest falls to 0.55 +- 0.21 at d = 4000.  The near
  minima differ little in theta (spread within 1 % of the lowest: 0.1-0.9 %), far less than the
  +4.5 % theta offset of studies/alpha1_discrepancy.py.
* semantic class, alpha = 1.5: exactly one semantic minimum within 1 % of the lowest for
  d >= 1000 (1.07 +- 0.04 at d = 500), always the one of the semantic warm start (first found at
  k = 3; no hop ever lowered it for d >= 1000); the other semantic minima are far (gap 0.16-0.20,
  1 - r_ab 0.4-0.5, theta 0.3-0.7 of the lowest's, median 0.4) and disappear with d (2.15 -> 1.0 distinct minima per
  instance; at d = 4000 one in all 4 instances).  Fraction of runs reaching the lowest 0.83-1.
* positional class, glassy at BOTH alphas: 8.8 -> 10.2 (alpha = 1) and 6.6 -> 9.5 (alpha = 1.5)
  distinct minima per instance from d = 500 to 4000, of which within 1 % of the lowest 2.6 -> 5.8
  and 3.0 -> 6.8; gap of the two lowest 5.3e-3 -> 3.0e-4 and 6.6e-3 -> 2.1e-4, their 1 - r_ab
  0.088 -> 0.006 and 0.097 -> 0.016; relative spread 0.15-0.20 and 0.09-0.13 (dominated by high
  minima from random starts).  At alpha = 1, d = 4000 the lowest positional minimum (the global
  one at alpha = 1) was first found by a hop in 3/4 instances, only 2.8 % of non-hop runs reach it,
  and the positional warm start stops 5.6 % high in q.
* "mixed" minima (random starts only) are far above (1 - r_ab ~ 0.9, barrier ~ 0.25 eps_t).
* 62 of 3680 solves end with |grad|_inf in (1e-9, 4.3e-9] (flagged ``converged = False``); the
  closest two distinct minima anywhere are 0.03 apart (relative), 30 times the 1e-3 rule.

Rerun (60 min 49 s wall on one core of the shared 2-core machine)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/minima_landscape.py
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.alpha1_discrepancy import Instance, classify, parse_seeds  # noqa: E402

from symattn import ModelParams  # noqa: E402
from symattn.runs import atomic_write_text  # noqa: E402
from symattn.simulation import risk, warm_start  # noqa: E402
from symattn.stats import mean_se  # noqa: E402

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "data" / "minima_landscape.json"
FIGURE = ROOT.parent / "docs" / "figures" / "minima_landscape.png"
CLASSES = ("positional", "semantic", "mixed", "trivial")
#: summary quantities, in print order (key, header)
QUANTITIES = (("n_distinct", "n_distinct"), ("n_1pct", "n within 1%"), ("spread", "rel spread"),
              ("gap12", "rel gap 1-2"),
              ("omr_mean", "mean 1-r_ab"), ("omr_12", "1-r_ab (1,2)"), ("q_a", "q_a"),
              ("q_ab", "q_ab"), ("frac_lowest", "frac->lowest"), ("frac_lowest_nohop", "frac(no hop)"))


class LandscapeInstance(Instance):
    """:class:`alpha1_discrepancy.Instance` plus the tables of distinct minima and their overlaps."""

    def minima_table(self) -> list:
        """One dict per distinct minimum (its lowest landing run's record) with the landing count."""
        s2 = self.data.params.sigma ** 2
        table = []
        for j, (Q, rec) in enumerate(self.minima):
            landed = [r["start"] for r in self.runs if r["min_id"] == j]
            table.append({"id": j, "cls": classify(rec), "eps_t": rec["eps_t"], "q": rec["q"], "m": rec["m"],
                          "theta": rec["theta"], "q_a": float(s2 * (Q @ Q) / self.d),
                          "grad_norm": rec["grad_norm"], "converged": rec["converged"],
                          "iterations": rec["iterations"], "start": rec["start"], "n_runs": len(landed),
                          "starts": landed})
        return table

    def pair_table(self, table: list) -> dict:
        """Per class, every pair (a, b) of distinct minima, ordered so that eps_t(a) <= eps_t(b)."""
        s2 = self.data.params.sigma ** 2
        out = {}
        for cls in CLASSES:
            ids = sorted((t["id"] for t in table if t["cls"] == cls), key=lambda j: table[j]["eps_t"])
            rows = []
            for i, a in enumerate(ids):
                for b in ids[i + 1:]:
                    Qa, Qb = self.minima[a][0], self.minima[b][0]
                    qab = float(s2 * abs(Qa @ Qb) / self.d)
                    qa, qb = table[a]["q_a"], table[b]["q_a"]
                    dist = min(np.linalg.norm(Qa - Qb), np.linalg.norm(Qa + Qb)) / np.linalg.norm(Qa)
                    rows.append({"a": a, "b": b, "q_ab": qab, "r_ab": qab / math.sqrt(qa * qb),
                                 "d_eps_t": table[b]["eps_t"] - table[a]["eps_t"], "dist": float(dist)})
            if len(ids) > 1:
                rows[0]["line"] = self.line_profile(ids[0], ids[1])
            if ids:
                out[cls] = rows
        return out


    def line_profile(self, a: int, b: int, n: int = 10) -> list:
        """eps_t = R/d on the straight segment from minimum ``a`` to minimum ``b`` (``b`` sign-aligned),
        at t = 0, 1/n, ..., 1: a barrier (max above both ends) says the two are separated along it."""
        Qa, Qb = self.minima[a][0], self.minima[b][0]
        Qb = Qb if Qa @ Qb >= 0 else -Qb
        return [risk((1 - t) * Qa + t * Qb, self.data) / self.d for t in np.linspace(0.0, 1.0, n + 1)]


def run_instance(params, d, alpha, seed, args) -> dict:
    """The start set of ``alpha1_discrepancy.run_instance`` (all classes) without test errors."""
    t0 = time.perf_counter()
    inst = LandscapeInstance(params, d, alpha, seed, args.gtol, args.maxiter)
    data = inst.data
    inst.solve("positional", warm_start(data, "positional"))
    inst.solve("pos_m0.5", 0.5 * np.ones(d))
    inst.solve("semantic", warm_start(data, "semantic"))
    for k in range(args.n_random):
        g = inst.rng.standard_normal(d)
        inst.solve(f"rand{k}", (g, 0.4 * g, 0.25 + 0.4 * g)[k % 3])
    for cls in ("positional", "semantic"):
        for k in range(args.n_perturb):
            Qb, _ = inst.best(cls)
            if Qb is None:
                break
            s = args.perturb[k % len(args.perturb)]
            inst.solve(f"hop{cls[:3]}{s:g}_{k}",
                       Qb + s * np.linalg.norm(Qb) / math.sqrt(d) * inst.rng.standard_normal(d))
    table = inst.minima_table()
    keep = ("start", "cls", "eps_t", "q", "m", "theta", "grad_norm", "converged", "iterations", "wall", "min_id")
    return {"alpha": alpha, "d": d, "seed": seed, "tnorm": inst.tnorm,
            "runs": [{k: r[k] for k in keep} for r in inst.runs], "minima": table,
            "pairs": inst.pair_table(table), "wall": time.perf_counter() - t0}


# ----------------------------------------------------------------------------------------------
# summary
# ----------------------------------------------------------------------------------------------

def _nanmean(x):
    x = [v for v in x if not math.isnan(v)]
    return float(np.mean(x)) if x else math.nan


def instance_stats(r: dict, cls: str) -> dict | None:
    """Per-instance landscape statistics of one class (``None`` if the class was not reached)."""
    mins = sorted((t for t in r["minima"] if t["cls"] == cls), key=lambda t: t["eps_t"])
    if not mins:
        return None
    pairs = {(p["a"], p["b"]): p for p in r["pairs"].get(cls, [])}
    e0 = mins[0]["eps_t"]
    two = len(mins) > 1
    p12 = pairs[(mins[0]["id"], mins[1]["id"])] if two else None
    cls_of = {t["id"]: t["cls"] for t in r["minima"]}
    runs = [x for x in r["runs"] if cls_of[x["min_id"]] == cls]
    nohop = [x for x in runs if not x["start"].startswith("hop")]
    low = mins[0]["id"]
    line = p12.get("line") if two else None
    return {"n_distinct": len(mins), "n_1pct": sum(t["eps_t"] <= 1.01 * e0 for t in mins),
            "spread": (mins[-1]["eps_t"] - e0) / e0,
            "barrier12": (max(line) - max(line[0], line[-1])) / e0 if line else math.nan,
            "gap12": (mins[1]["eps_t"] - e0) / e0 if two else math.nan,
            "omr_mean": _nanmean([1 - p["r_ab"] for p in pairs.values()]),
            "omr_12": 1 - p12["r_ab"] if two else math.nan,
            "omr_min": min((1 - p["r_ab"] for p in pairs.values()), default=math.nan),
            "q_a": float(np.mean([t["q_a"] for t in mins])),
            "q_ab": _nanmean([p["q_ab"] for p in pairs.values()]),
            "frac_lowest": sum(x["min_id"] == low for x in runs) / len(runs),
            "frac_lowest_nohop": (sum(x["min_id"] == low for x in nohop) / len(nohop)) if nohop else math.nan,
            "first_found": next(i for i, x in enumerate(r["runs"]) if x["min_id"] == low) + 1,
            "lowest_start": r["runs"][next(i for i, x in enumerate(r["runs"]) if x["min_id"] == low)]["start"],
            "n_unconverged": sum(not t["converged"] for t in mins)}


def running_best(r: dict, cls: str | None) -> list:
    """Lowest eps_t after the first k starts (k = 1..N) relative to the final lowest, for the runs
    whose minimum is of class ``cls`` (all runs if ``None``); nan while the class is not reached."""
    cls_of = {t["id"]: t["cls"] for t in r["minima"]}
    low = {t["id"]: t["eps_t"] for t in r["minima"]}     # a minimum's eps_t is that of its lowest landing
    eps = [low[x["min_id"]] if cls is None or cls_of[x["min_id"]] == cls else math.inf for x in r["runs"]]
    final = min(eps)
    if math.isinf(final):
        return [math.nan] * len(eps)
    best = np.minimum.accumulate(eps)
    return [float(b / final - 1) if np.isfinite(b) else math.nan for b in best]


def summarise(results: list) -> dict:
    rows, curves = [], []
    keys = sorted({(r["alpha"], r["d"]) for r in results})
    for alpha, d in keys:
        inst = sorted((r for r in results if r["alpha"] == alpha and r["d"] == d), key=lambda r: r["seed"])
        longest = max(inst, key=lambda r: len(r["runs"]))
        labels = [x["start"] for x in longest["runs"]]
        for cls in CLASSES:
            stats = [s for s in (instance_stats(r, cls) for r in inst) if s is not None]
            if not stats:
                continue
            row = {"alpha": alpha, "d": d, "cls": cls, "K": len(inst), "K_with_class": len(stats),
                   "K_two_or_more": sum(s["n_distinct"] > 1 for s in stats),
                   "n_unconverged_minima": sum(s["n_unconverged"] for s in stats),
                   "first_found_hop": sum(s["lowest_start"].startswith("hop") for s in stats),
                   "K_barrier12": sum(s["barrier12"] > 0 for s in stats if not math.isnan(s["barrier12"]))}
            for k, _ in QUANTITIES + (("omr_min", ""), ("first_found", ""), ("barrier12", "")):
                row[k] = mean_se([s[k] for s in stats if not math.isnan(s[k])])
            rows.append(row)
        for cls in (None, "positional", "semantic"):
            # (an instance with fewer runs, hops skipped for lack of a class, is padded with its last value)
            rb = np.array([(c + c[-1:] * (len(labels) - len(c))) for c in (running_best(r, cls) for r in inst)])
            with np.errstate(all="ignore"):
                mean = [float(np.nanmean(c)) if np.isfinite(c).any() else math.nan for c in rb.T]
                frac = [float(np.mean(c > 0)) for c in np.nan_to_num(rb, nan=np.inf).T]
            curves.append({"alpha": alpha, "d": d, "cls": cls or "all", "labels": labels,
                           "mean_rel_excess": mean, "frac_not_yet_lowest": frac})
    return {"rows": rows, "running_best": curves}


def _fmt(v):
    mu, se = v
    if isinstance(mu, float) and math.isnan(mu):
        return "—"
    if math.isnan(se):
        return f"{mu:.3g}"
    return f"{mu:.3g}+-{se:.2g}"


def print_summary(summary: dict, results: list, file=sys.stdout):
    print("\nper (alpha, d, class), mean +- s.e. over instances (K: instances, K2: with >= 2 distinct minima)",
          file=file)
    head = f"{'alpha':>5} {'d':>5} {'class':>10} {'K':>3} {'K2':>3} " + " ".join(f"{h:>18}" for _, h in QUANTITIES)
    print(head, file=file)
    for row in summary["rows"]:
        print(f"{row['alpha']:5g} {row['d']:5d} {row['cls']:>10} {row['K_with_class']:3d} {row['K_two_or_more']:3d} "
              + " ".join(f"{_fmt(row[k]):>18}" for k, _ in QUANTITIES), file=file)
    print("\nlowest minimum of the class first found at start k (mean); instances where a hop found it; "
          "min over pairs of 1-r_ab (mean); barrier on the segment between the two lowest, relative to "
          "eps_min (mean; instances with a barrier > 0 / with >= 2 minima); unconverged distinct minima", file=file)
    for row in summary["rows"]:
        print(f"{row['alpha']:5g} {row['d']:5d} {row['cls']:>10}  k={_fmt(row['first_found']):>12}  "
              f"hop: {row['first_found_hop']}/{row['K_with_class']}  min 1-r: {_fmt(row['omr_min']):>18}  "
              f"barrier: {_fmt(row['barrier12']):>18} ({row['K_barrier12']}/{row['K_two_or_more']})  "
              f"unconverged: {row['n_unconverged_minima']}", file=file)
    print("\nrunning best: (lowest eps_t after k starts)/(final lowest) - 1, mean over instances "
          "[fraction of instances not yet at the final lowest]", file=file)
    for c in summary["running_best"]:
        labels = c["labels"]
        ks = sorted({3, 9, 15, len(labels)} | {i + 1 for i, lab in enumerate(labels)
                                                if lab.startswith("hop") and (i + 1 == len(labels)
                                                                              or labels[i + 1][:6] != lab[:6])})
        ks = [k for k in ks if k <= len(labels)]
        cells = [f"k={k}({labels[k - 1]}): {c['mean_rel_excess'][k - 1]:.2e} [{c['frac_not_yet_lowest'][k - 1]:.2f}]"
                 for k in ks]
        print(f"{c['alpha']:5g} {c['d']:5d} {c['cls']:>10}  " + "  ".join(cells), file=file)
    runs = [x for r in results for x in r["runs"]]
    bad = [x for x in runs if not x["converged"]]
    print(f"\nsolves: {len(runs)}, not converged (|grad|_inf > gtol): {len(bad)}"
          + (f", max |grad|_inf {max(x['grad_norm'] for x in bad):.2e}" if bad else "")
          + f"; total instance wall time {sum(r['wall'] for r in results):.0f} s", file=file)


def figure(summary: dict, path: Path):
    """Rows 1-3: landscape statistics vs d (solid: all distinct minima of the class; dashed: the
    part near the lowest); row 4: running best vs number of starts."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = (("n_distinct", "n_1pct", "distinct minima per instance", "all", "within 1% of lowest", False),
              ("spread", "gap12", "relative loss difference", r"spread $(\epsilon_{\max}-\epsilon_{\min})/\epsilon_{\min}$",
               "gap of the two lowest", True),
              ("omr_mean", "omr_12", r"$1 - r_{ab}$", "mean over pairs", "two lowest", True))
    rows_all = summary["rows"]
    alphas = sorted({r["alpha"] for r in rows_all})
    ds = sorted({r["d"] for r in rows_all})
    colours = {a: f"C{3 if a == 1.0 else 0 if a == 1.5 else k + 4}" for k, a in enumerate(alphas)}
    fig, axes = plt.subplots(len(panels) + 1, 2, figsize=(11, 15))
    for j, cls in enumerate(("positional", "semantic")):
        for i, (key, key2, ylabel, lab1, lab2, logy) in enumerate(panels):
            ax = axes[i, j]
            for alpha in alphas:
                rows = sorted((r for r in rows_all if r["alpha"] == alpha and r["cls"] == cls), key=lambda r: r["d"])
                for k, ls, lab, shift in ((key, "-", lab1, 0.97), (key2, "--", lab2, 1.03)):
                    pts = [(r["d"] * shift, *r[k]) for r in rows
                           if not math.isnan(r[k][0]) and (not logy or r[k][0] > 0)]
                    if logy and ls == "-":     # no second minimum in any instance: mark at the bottom
                        for r in rows:
                            if r["K_two_or_more"] == 0:
                                ax.plot([r["d"] * shift], [0.03], marker="v", color=colours[alpha], ms=7,
                                        transform=ax.get_xaxis_transform(), clip_on=False)
                    if not pts:
                        continue
                    x, y, e = (np.array(v, float) for v in zip(*pts))
                    ax.errorbar(x, y, yerr=np.nan_to_num(e), marker="o" if ls == "-" else "s", ms=5, capsize=3,
                                ls=ls, color=colours[alpha], mfc=colours[alpha] if ls == "-" else "white",
                                label=rf"$\alpha={alpha:g}$, {lab}")
            ax.set_xscale("log")
            ax.set_yscale("log" if logy else "linear")
            if not logy:
                ax.set_ylim(bottom=0)
            ax.set_xticks(ds)
            ax.set_xticklabels([str(v) for v in ds])
            ax.minorticks_off()
            if logy:
                ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(numticks=12))
            ax.grid(alpha=0.3)
            ax.set_title(f"{cls} class" if i == 0 else "", fontsize=11)
            ax.set_ylabel(ylabel + ("\n(triangle at bottom: a single minimum in every instance)" if logy and i == 1 else ""))
            ax.set_xlabel("d")
            ax.legend(fontsize=7.5, loc="best")
        # running best: fraction of instances whose lowest minimum of the class is not yet found after k starts
        ax = axes[-1, j]
        curves = [c for c in summary["running_best"] if c["cls"] == cls]
        for c in curves:
            k = np.arange(1, len(c["labels"]) + 1)
            ax.plot(k, c["frac_not_yet_lowest"], color=colours[c["alpha"]], ls="-" if c["alpha"] == alphas[0] else "--",
                    lw=0.8 + 0.5 * ds.index(c["d"]), alpha=0.9, label=rf"$\alpha={c['alpha']:g}$, d={c['d']}")
        if curves:
            labels = curves[0]["labels"]
            for b in (3, 3 + sum(lab.startswith("rand") for lab in labels),
                      len(labels) - sum(lab.startswith("hopsem") for lab in labels)):
                ax.axvline(b + 0.5, color="grey", lw=0.6, ls=":")
            ax.text(2, 1.03, "warm", ha="center", fontsize=8)
            ax.text(3 + sum(lab.startswith("rand") for lab in labels) / 2 + 0.5, 1.03, "random", ha="center", fontsize=8)
            ax.text(len(labels) - sum(lab.startswith("hop") for lab in labels) / 2 + 0.5, 1.03, "hops pos | sem",
                    ha="center", fontsize=8)
        ax.set_ylim(-0.02, 1.1)
        ax.set_xlabel("number of starts k (fixed order)")
        ax.set_ylabel("fraction of instances with the class's\nlowest minimum not yet found")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="center left")
    fig.suptitle(r"Distinct L-BFGS minima of the empirical risk, $\omega = 0.3$ (mean $\pm$ s.e. over instances)",
                 fontsize=12)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def seeds_per_d(specs: list, ds: list) -> list:
    seeds = [parse_seeds(s) for s in specs]
    if len(seeds) == 1:
        seeds = seeds * len(ds)
    if len(seeds) != len(ds):
        raise SystemExit("--seeds: give one spec for all d or one per --ds")
    return seeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0, 1.5])
    ap.add_argument("--ds", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--seeds", nargs="+", default=["40", "24", "12", "4"],
                    help="per d (one spec per --ds, or one for all): a count K (seeds 0..K-1) or a range a-b")
    ap.add_argument("--n-random", type=int, default=12)
    ap.add_argument("--n-perturb", type=int, default=4, help="basin-hopping solves per class")
    ap.add_argument("--perturb", type=float, nargs="+", default=[0.3, 1.0],
                    help="relative perturbation sizes of the hops, used in turn")
    ap.add_argument("--gtol", type=float, default=1e-9)
    ap.add_argument("--maxiter", type=int, default=20000)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--figure", type=Path, default=FIGURE)
    ap.add_argument("--summary-only", action="store_true", help="re-print the summary and redraw the figure")
    args = ap.parse_args(argv)
    params = ModelParams(omega=0.3)
    store = json.loads(args.out.read_text()) if args.out.exists() else {}
    results = store.get("instances", [])
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    if args.summary_only and "args" in store:
        meta = store["args"]

    def save():
        summary = summarise(results)
        atomic_write_text(args.out, json.dumps({"args": meta, "instances": results, "summary": summary}))
        return summary

    if not args.summary_only:
        t_start = time.perf_counter()
        for alpha in args.alphas:
            for d, sl in zip(args.ds, seeds_per_d(args.seeds, args.ds)):
                for seed in sl:
                    if any(r["alpha"] == alpha and r["d"] == d and r["seed"] == seed for r in results):
                        continue
                    r = run_instance(params, d, alpha, seed, args)
                    results.append(r)
                    save()
                    counts = {c: sum(t["cls"] == c for t in r["minima"]) for c in CLASSES}
                    print(f"alpha={alpha:g} d={d} seed={seed} {r['wall']:.1f}s (total {time.perf_counter() - t_start:.0f}s) "
                          f"distinct minima: " + " ".join(f"{c}={n}" for c, n in counts.items() if n)
                          + f"; unconverged runs {sum(not x['converged'] for x in r['runs'])}",
                          file=sys.stderr, flush=True)
    if not results:
        raise SystemExit(f"no results in {args.out}")
    summary = save()
    print_summary(summary, results)
    figure(summary, args.figure)
    print(f"\nwrote {args.out} and {args.figure}")


if __name__ == "__main__":
    main()
