"""The appendix matrix at omega = 0.14 (issue 20, validation (c)): every replica-symmetric fixed
point found, against the minima that training finds.

Theory: ``studies/data/general_validation/theory_appendix.json`` (the search of
:func:`symattn.numerics.general_search.find_fixed_points` from every start, on two scrambles of
``2^12`` points; here the first scramble's distinct points, the sign copies ``Q -> -Q`` merged,
with the spread over both scrambles of the global minimum's ``eps_t``).  Training:
``studies/data/general_validation/appendix.json`` (``general_validation_runs.py``: per instance
three L-BFGS minimisations on the same data, from the teacher, along the encodings and at
random); per ``d`` the lowest minimum and the minimum reached from the positional start, each as
mean ± standard error over the instances of ``|theta|``, ``|m|`` (``m = M_1 = -M_2``) and
``eps_t``; the positional start's only over the instances where it stops above the lowest
(relative ``1e-6``; elsewhere it reached the lowest minimum itself), with their number.

Prints a Markdown table (docs/numerics.md, 'The general model').  Rerun:
``python studies/general_appendix_table.py [--d 1000 2000 4000]``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "general_validation"


def mean_se(v):
    v = np.asarray(v, float)
    return v.mean(), (v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan)


def fmt(v, digits=4):
    m, s = mean_se(v)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def theory_rows(entry):
    """Distinct fixed points of the first scramble, sign copies merged (the lower kept)."""
    out = []
    for f in entry["rules"][0]["fixed_points"]:
        th, m = abs(f["theta"][0][0]), abs(f["M"][0][0])
        if any(r["character"] == f["character"] and abs(r["theta"] - th) < 5e-3
               and abs(r["m"] - m) < 5e-3 for r in out):
            continue
        out.append({"character": f["character"], "theta": th, "m": m, "eps_t": f["eps_t"],
                    "global": f["global_minimum"]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", nargs="+", type=int, default=[1000, 2000, 4000])
    args = ap.parse_args(argv)
    theory = json.loads((DATA / "theory_appendix.json").read_text())["omega0.14"]["alphas"]
    runs = json.loads((DATA / "appendix.json").read_text())["runs"]
    train = defaultdict(list)
    for r in runs:
        train[(round(r["alpha"], 6), r["d"])].append(r)
    print("| alpha | source | character | abs(theta) | abs(m) | eps_t |")
    print("|---|---|---|---|---|---|")
    for a, entry in theory.items():
        alpha = float(a)
        spread = entry["global"]["eps_t_err"]
        for row in theory_rows(entry):
            tag = "RS fixed point" + (" (global)" if row["global"] else "")
            err = f" ± {spread:.1e}" if row["global"] else ""
            print(f"| {alpha:g} | {tag} | {row['character']} | {row['theta']:.4f} | "
                  f"{row['m']:.4f} | {row['eps_t']:.6f}{err} |")
        for d in args.d:
            rs = train.get((round(alpha, 6), d), [])
            if len(rs) < 2:
                continue
            low = [r["starts"][r["lowest"]] for r in rs]
            pos = [r["starts"]["positional"] for r in rs]
            above = [p for p, lo in zip(pos, low) if p["eps_t"] > lo["eps_t"] * (1 + 1e-6)]
            for label, sts in (("lowest", low),
                               (f"positional start, where above the lowest ({len(above)} of "
                                f"{len(rs)})", above)):
                if len(sts) < 2:
                    continue
                th = [abs(s["theta"][0][0]) for s in sts]
                m = [abs(s["M"][0][0]) for s in sts]
                et = [s["eps_t"] for s in sts]
                print(f"| {alpha:g} | training d = {d}, {label} | | {fmt(th)} | "
                      f"{fmt(m)} | {fmt(et, 6)} |")


if __name__ == "__main__":
    main()
