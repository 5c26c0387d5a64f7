"""How big a step does Newton's x column need (issue 21; docs/stability.md, 'The smoothing
width where the gap is tiny')?

The search's continuation past a stalled profile (``--rsb-fold-steps``) holds q1 - q0 and
solves for x.  On the semantic alpha = 1.5 run at width 1e-7 (rule 0, run file
``...-alpha1.5-omega0.3-band24-split16-eps1e-7.json``) its first step, 1 % down in D from the
profile point at x = 17320.5, stalled at 5.2e-7, and at 1/8 % at 5.6e-8, with the Jacobian's
x column stepped by 1e-6 x.  From x = 1e4 on the inner rules are recentred on the tilted
measure's mode, found by six damped steps with an accept-or-shrink choice, so the rule's
nodes can jump as x moves.  This

1. forms the x column of the four equations (q0, q1, theta, V) at that start by forward
   differences of 1e-8 x ... 1e-3 x (and the column of the common level q0 + q1 at steps of
   1e-8 ... 1e-4, for comparison);
2. solves the step (gap held, x free) with the x column stepped by 1e-6 x and by 1e-4 x.

Writes studies/data/one_step_rsb_x_column.json.  Rerun: ``python studies/one_step_rsb_x_column.py``
(about 3 minutes on one core, 8 GB for the 2^24 band).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from symattn.numerics.one_step_rsb import OneStepRSBMap, solve_one_step_rsb
from one_step_rsb_fold import band_rule

ROOT = Path(__file__).resolve().parent
RUN = ROOT / "data" / "one_step_rsb_cli" / \
    "fixed-point-rsb1-semantic-alpha1.5-omega0.3-band24-split16-eps1e-7.json"
OUT = ROOT / "data" / "one_step_rsb_x_column.json"
ALPHA, SEED, EPS, TOL, SHARE = 1.5, 0, 1e-7, 1e-9, 0.01
EQS = [0, 1, 3, 4]           # the equations solved holding the gap: q0, q1, theta, V


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    s, ch, band = band_rule(ALPHA, SEED)
    rows = {tuple(r["key"]): r for r in json.loads(RUN.read_text())["rows"]
            if r["seed"] == SEED}
    last = np.array(rows[("profile", 17320.508075688773)]["z"])
    before = np.array(rows[("profile", 10000.0)]["z"])
    gap = last[1] - last[0]
    d = gap * (1 - SHARE)
    # the search's start: the line through the last two points, at the new gap
    z0 = last + (d - gap) / (gap - (before[1] - before[0])) * (last - before)
    mid = (z0[0] + z0[1]) / 2
    z0[0], z0[1] = mid - d / 2, mid + d / 2
    print(f"start: x = {z0[5]:.2f}, D = {d:.5e}", flush=True)

    def fmap():
        return OneStepRSBMap(ch, ALPHA, pin="m", eps=EPS, **s.inner_rules(z0[5]))

    # 1. the columns
    f = fmap()
    r0 = f.evaluate(z0)[0][EQS]
    columns = []
    for what, rel in [("x", h) for h in (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)] + \
                     [("q0 + q1", h) for h in (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)]:
        zp = z0.copy()
        if what == "x":
            h = rel * z0[5]
            zp[5] += h
        else:
            h = rel
            zp[0] += h
            zp[1] += h
        col = (f.evaluate(zp, warm=True)[0][EQS] - r0) / h
        columns.append({"column": what, "step": rel, "values": [float(v) for v in col]})
        print(f"  {what} column, step {rel:g}: " + ", ".join(f"{v:+.4e}" for v in col),
              flush=True)
    # 2. the step, gap held
    solves = []
    for x_step in (1e-6, 1e-4):
        t0 = time.perf_counter()
        pt = solve_one_step_rsb(fmap(), z0, hold_gap=True, x_step=x_step, tol=TOL,
                                max_iter=s.max_iter)
        solves.append({"x_step": x_step, "converged": bool(pt.converged),
                       "residual": pt.residual, "iterations": pt.iterations,
                       "x": float(pt.z[5]), "sigma_over_e": pt.sigma_over_e,
                       "message": pt.message, "wall": time.perf_counter() - t0})
        print(f"  x step {x_step:g} x: {pt.message} (residual {pt.residual:.1e}, "
              f"{pt.iterations} steps), x = {pt.z[5]:.2f}, Sigma/e = {pt.sigma_over_e:+.3e}",
              flush=True)
    args.out.write_text(json.dumps({
        "alpha": ALPHA, "seed": SEED, "eps": EPS, "band": band.as_dict(), "run": RUN.name,
        "start": [float(v) for v in z0], "residual_at_start": [float(v) for v in r0],
        "columns": columns, "solves": solves}, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
