"""Plain-text tables of the finite-size validation runs of the general model.

Reads the JSON files written by ``studies/general_validation_runs.py`` (one per case,
``studies/data/general_validation/<case>.json``; see that script for what each run holds) and
prints, per case, omega, alpha and d (mean +- standard error over the seeds present, standard
error = std(ddof=1)/sqrt(n)):

1. **Lowest minimum found** (per seed, the start with the lowest ``eps_t``): its ``eps_t`` and
   ``eps_g``, the baseline ``eps_lin``, a few order parameters, and for each start how often it is
   the strict lowest and how often it is within a relative ``1e-6`` of it (``tied``: the same
   minimum reached from several starts; a strict "lowest" among tied starts is rounding noise).
   ``NC`` counts solves not converged (``max|grad R| > gtol``).
2. **Each start**: ``eps_t`` and ``eps_g`` of the semantic, positional and random starts, and the
   largest relative spread of ``eps_t`` across the three starts over the seeds.
3. **Appendix case, mixed minima?** (model page §5: ``m ~ 0.08``, ``theta ~ 0.02`` at
   ``alpha ~ 1.2``).  For the lowest minimum and for each start:

   * ``literal``: the signed ``m = M[0][0]`` and ``theta`` in the simulator's gauge
     (:func:`symattn.simulation.general.fix_gauge`: the sign making the largest raw overlap
     positive); "mixed" when both means are more than 3 standard errors from zero.  Caveat: the
     data are invariant under ``Q* -> -Q*`` (the teacher is even), so the sign of ``theta``
     relative to ``m`` is a fair coin over instances; whichever of ``m``, ``theta`` does not set
     the gauge averages to zero, and this test can miss mixing;
   * ``sign-free``: ``|m|`` and ``|theta|`` against their values for a direction unrelated to
     the positions / to the teacher, ``E|m|_0 = sqrt(2 q / (pi d)) / sigma`` and
     ``E|theta|_0 = sigma sqrt(2 q / (pi d))`` (a ``Q`` of the same norm in a random direction);
     "mixed" when both means exceed these by more than 3 standard errors.  The null is a
     heuristic (a trained ``Q`` is not independent of ``Q*``): look at the trend in ``d`` too
     (genuine mixing keeps ``|theta|`` finite as ``d`` grows; noise falls like ``1/sqrt(d)``).

Run::

    python studies/general_validation_summary.py [--dir studies/data/general_validation]
                                                 [--cases rank2 L3 appendix]

Inputs: the JSON files only (no solves).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "studies" / "data" / "general_validation"
STARTS = ("semantic", "positional", "random")
ABBR = {"semantic": "sem", "positional": "pos", "random": "rnd"}


def mse(x):
    x = np.asarray([v for v in x if v is not None], dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    return float(x.mean()), (float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan)


def fmt(x, digits=6):
    m, s = mse(x)
    if math.isnan(m):
        return "-"
    return f"{m:.{digits}f}" + (f"±{s:.{digits}f}" if not math.isnan(s) else "±nan")


def table(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(str(h).rjust(w) for h, w in zip(header, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def lowest_row(run):
    return run["starts"][run["lowest"]]


def groups(doc):
    g = defaultdict(list)
    for r in doc["runs"]:
        g[(float(r["omega"]), float(r["alpha"]), int(r["d"]))].append(r)
    return dict(sorted(g.items()))


def op_columns(case, rows):
    """A few order parameters of the lowest minimum (gauge-invariant where it matters)."""
    if case == "rank2":
        return [fmt([x["Tr_q"] for x in rows], 4),
                fmt([x["q_eigs"][0] for x in rows], 4),
                fmt([math.sqrt(max(x["MM"][0][0], 0.0)) for x in rows], 4),
                fmt([math.sqrt(max(x["thth"][0][0], 0.0)) for x in rows], 4)]
    return [fmt([x["q"][0][0] for x in rows], 4),
            fmt([math.sqrt(max(x["MM"][0][0], 0.0)) for x in rows], 4),
            fmt([abs(x["theta"][0][0]) for x in rows], 4)]


def summary_lowest(case, doc):
    hdr = ["omega", "alpha", "d", "n", "eps_t(low)", "eps_g(low)", "eps_lin"]
    hdr += (["Tr_q", "q_min", "|M_1|", "|theta|"] if case == "rank2" else ["q", "|M_1|", "|theta|"])
    hdr += [f"{ABBR[s]} low(tied)" for s in STARTS] + ["NC"]
    rows = []
    for (w, al, d), runs in groups(doc).items():
        low = [lowest_row(r) for r in runs]
        n = len(runs)
        row = [f"{w:g}", f"{al:g}", d, n, fmt([x["eps_t"] for x in low]),
               fmt([x["eps_g"] for x in low]), fmt([x["eps_lin"] for x in low])]
        row += op_columns(case, low)
        for s in STARTS:
            strict = sum(r["lowest"] == s for r in runs)
            tied = sum(s in r["tied"] for r in runs)
            row.append(f"{strict}/{n} ({tied}/{n})")
        row.append(sum(not r["starts"][s]["converged"] for r in runs for s in STARTS))
        rows.append(row)
    return table(hdr, rows)


def summary_starts(doc):
    hdr = ["omega", "alpha", "d", "n"]
    for s in STARTS:
        hdr += [f"eps_t({ABBR[s]})", f"eps_g({ABBR[s]})"]
    hdr += ["all tied", "max spread"]
    rows = []
    for (w, al, d), runs in groups(doc).items():
        row = [f"{w:g}", f"{al:g}", d, len(runs)]
        for s in STARTS:
            row += [fmt([r["starts"][s]["eps_t"] for r in runs]),
                    fmt([r["starts"][s]["eps_g"] for r in runs])]
        spread = [(max(r["starts"][s]["eps_t"] for s in STARTS)
                   - min(r["starts"][s]["eps_t"] for s in STARTS)) / r["starts"][r["lowest"]]["eps_t"]
                  for r in runs]
        row += [f"{sum(len(r['tied']) == len(STARTS) for r in runs)}/{len(runs)}",
                f"{max(spread):.2e}"]
        rows.append(row)
    return table(hdr, rows)


def summary_mixed(doc):
    sigma = float(doc["meta"]["sigma"])
    hdr = ["alpha", "d", "which", "n", "m (gauge)", "theta (gauge)", "literal",
           "|m|", "E|m|_0", "|theta|", "E|theta|_0", "sign-free", "theta*m"]
    rows = []
    for (w, al, d), runs in groups(doc).items():
        for which in ("lowest",) + STARTS:
            xs = [lowest_row(r) if which == "lowest" else r["starts"][which] for r in runs]
            m = [x["M"][0][0] for x in xs]
            th = [x["theta"][0][0] for x in xs]
            q = [x["q"][0][0] for x in xs]
            (mm, ms), (tm, ts) = mse(m), mse(th)
            literal = abs(mm) > 3 * ms and abs(tm) > 3 * ts
            am, ams = mse(np.abs(m))
            at, ats = mse(np.abs(th))
            m0 = float(np.mean([math.sqrt(2 * qq / (math.pi * d)) / sigma for qq in q]))
            t0 = float(np.mean([sigma * math.sqrt(2 * qq / (math.pi * d)) for qq in q]))
            free = am - m0 > 3 * ams and at - t0 > 3 * ats
            rows.append([f"{al:g}", d, which, len(runs), fmt(m, 4), fmt(th, 4),
                         "MIXED" if literal else "no", fmt(np.abs(m), 4), f"{m0:.4f}",
                         fmt(np.abs(th), 4), f"{t0:.4f}", "MIXED" if free else "no",
                         fmt([x["thM"][0][0] for x in xs], 5)])
    return table(hdr, rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Tables of the general-model validation runs.")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--cases", nargs="+", default=["rank2", "L3", "appendix"])
    a = ap.parse_args(argv)
    for case in a.cases:
        path = a.dir / f"{case}.json"
        if not path.exists():
            print(f"== {case}: {path} not found\n")
            continue
        with open(path) as f:
            doc = json.load(f)
        meta = doc["meta"]
        wall = sum(r["wall_time"] for r in doc["runs"])
        print(f"== {case}  ({path}; {len(doc['runs'])} instances, {wall:.0f} s of runs; "
              f"n_test = {meta['n_test']}, gtol = {meta['gtol']:g})")
        for w, p in meta["params"].items():
            print(f"   omega = {w}: A = {p['A']}, Pi = {p['Pi']}, r = {p['r']}, r_t = {p['r_t']}, "
                  f"sigma = {p['sigma']}, lam = {p['lam']}")
        nc = [(r["omega"], r["d"], r["alpha"], r["seed"], s, r["starts"][s]["grad_norm"])
              for r in doc["runs"] for s in STARTS if not r["starts"][s]["converged"]]
        print(f"   non-converged solves: {len(nc)}"
              + "".join(f"\n     omega={o:g} d={d} alpha={al:g} seed={sd} {s}: max|grad|={g:.2e}"
                        for o, d, al, sd, s, g in nc))
        print("\n-- lowest minimum found per seed (mean ± s.e. over seeds); "
              "start columns: strict lowest (within 1e-6 rel. of lowest)\n")
        print(summary_lowest(case, doc))
        print("\n-- each start (mean ± s.e. over seeds); max spread = max over seeds of "
              "(max - min eps_t over starts) / lowest\n")
        print(summary_starts(doc))
        if case == "appendix":
            print("\n-- mixed minima? m = M[0][0], theta (r = r_t = 1); literal: both signed means "
                  "> 3 s.e. from 0 in the simulator's gauge; sign-free: both |.| above the "
                  "random-direction level E|.|_0 by > 3 s.e.\n")
            print(summary_mixed(doc))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
