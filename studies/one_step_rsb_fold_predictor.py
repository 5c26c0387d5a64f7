"""Where does a fixed-gap step of the 1RSB continuation start (issue 21; docs/stability.md,
'The smoothing width where the gap is tiny')?

``studies/one_step_rsb_fold.py`` follows rule 0's semantic solutions at alpha = 1.5 in
q1 - q0 past their fold in x, each fixed-D solve starting from the last point with only its
gap moved; it stalls below D = 1.8375e-8 at every step it tries, down to 1/8 %.  The search's
continuation (``--rsb-fold-steps``) starts a step from the line through the last two points
instead.  This takes the study's last two converged points and solves the next step, 1 % and
3 % down in D, four ways: from the last point (the study's start) at the width 1e-7; from
the line at 1e-7 (the search's); from the line through the ladder 1e-4, 1e-5, 1e-7; from
the line at 1e-6; each with Newton's x column stepped by 1e-6 x (before X_STEP) and by
1e-4 x (X_STEP, studies/one_step_rsb_x_column.py).

Writes studies/data/one_step_rsb_fold_predictor.json.  Rerun:
``python studies/one_step_rsb_fold_predictor.py`` (about 6 minutes on one core, 8 GB for the
2^24 band).
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import numpy as np

from symattn.numerics import one_step_rsb
from symattn.numerics.one_step_rsb import solve_ladder
from one_step_rsb_fold import band_rule

ROOT = Path(__file__).resolve().parent
FOLD = ROOT / "data" / "one_step_rsb_fold.json"
OUT = ROOT / "data" / "one_step_rsb_fold_predictor.json"
ALPHA, SEED, TOL = 1.5, 0, 1e-9
SHARES = (0.01, 0.03)
X_STEPS = (1e-6, 1e-4)
NEWTON = one_step_rsb.solve_one_step_rsb
#: (name, start, smoothing widths)
WAYS = (("last point, 1e-7", "point", (1e-7,)), ("line, 1e-7", "line", (1e-7,)),
        ("line, ladder 1e-4 1e-5 1e-7", "line", (1e-4, 1e-5, 1e-7)),
        ("line, 1e-6", "line", (1e-6,)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    s, ch, band = band_rule(ALPHA, SEED)       # the fold study's settings
    rows = [r for r in json.loads(FOLD.read_text())["fixed_d"] if r["converged"]]

    def z_of(r):
        return np.array([r["q1"] - r["D"], r["q1"], 0.0, r["theta"], r["V"], r["x"]])

    last, before = z_of(rows[-1]), z_of(rows[-2])
    gap = last[1] - last[0]
    print(f"from D = {gap:.5e}, x = {last[5]:.1f} (Sigma/e = {rows[-1]['sigma_over_e']:+.3e})",
          flush=True)
    out = []
    for share in SHARES:
        d = gap * (1 - share)
        line = last + (d - gap) / (gap - (before[1] - before[0])) * (last - before)
        for (name, start, eps), x_step in ((w, h) for w in WAYS for h in X_STEPS):
            z = (last if start == "point" else line).copy()
            mid = (z[0] + z[1]) / 2
            z[0], z[1] = mid - d / 2, mid + d / 2
            t0 = time.perf_counter()
            # solve_ladder's Newton with this x step (it looks the function up in its module)
            one_step_rsb.solve_one_step_rsb = functools.partial(NEWTON, x_step=x_step)
            try:
                pt = solve_ladder(ch, ALPHA, z, pin="m", **s.inner_rules(z[5]), eps_stages=eps,
                                  hold_gap=True, tol=TOL, max_iter=s.max_iter)
            finally:
                one_step_rsb.solve_one_step_rsb = NEWTON
            row = {"share": share, "way": name, "x_step": x_step, "D": d,
                   "converged": bool(pt.converged),
                   "eps": pt.eps, "residual": pt.residual, "x": float(pt.z[5]),
                   "sigma_over_e": pt.sigma_over_e, "message": pt.message,
                   "wall": time.perf_counter() - t0}
            out.append(row)
            done = "converged" if pt.converged else "stalled"
            print(f"  {share:.0%}, {name}, x step {x_step:g} x: {done} at "
                  f"{pt.residual:.1e}, x = {row['x']:.1f}, Sigma/e = {pt.sigma_over_e:+.3e} "
                  f"({row['wall']:.0f} s)", flush=True)
    args.out.write_text(json.dumps({"alpha": ALPHA, "seed": SEED, "band": band.as_dict(),
                                    "from": rows[-1], "before": rows[-2], "steps": out},
                                   indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
