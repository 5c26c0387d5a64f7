"""Does the semantic 1RSB solution at alpha = 1.5 fold over in x where the fixed-x solves stall
(issue 21; docs/stability.md, 'The smoothing width where the gap is tiny')?

With the converged smoothing width (1e-7) rule 0's fixed-x solves converge up to x ~ 2e4 and
stall beyond (run file ``...-alpha1.5-omega0.3-band24-split16-eps1e-7.json``), while q1 - q0
shrinks faster and faster along the way.  If the solution branch turns back in x (a fold), no
fixed-x solve beyond the turn has a root nearby, and stepping in x cannot pass it.  This study

1. continues rule 0 at fixed x, x = 20000, 20500, ..., from its profile point at x = 17320.5, with a
   secant predictor, until a solve stalls;
2. from the last converged point, holds D = q1 - q0 fixed instead and solves the same four
   equations (q0, q1, theta, V) for the common level, theta, V and x (``solve_one_step_rsb``
   with ``hold_gap``, as the search's continuation past a stall), with D lowered in steps
   of 1 % (a stalled step is halved, at most three times), until Sigma/e changes sign:
   x(D) that first rises and then falls as D shrinks is a fold in x; on the branch beyond
   it, Sigma/e.

Writes studies/data/one_step_rsb_fold.json.  Rerun: ``python studies/one_step_rsb_fold.py``
(about 15 minutes on one core, 8 GB for the 2^24 band).  The data was made with Newton's x
column stepped by 1e-6 x, before ``X_STEP`` (1e-4 x): its fixed-D stalls below
D = 1.8375e-8 were that column (docs/stability.md, same section; measured by a one-off study
since removed, see the git history of studies/one_step_rsb_fold_predictor.py), and a rerun
goes further.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from symattn.model.params import ModelParams
from symattn.numerics.one_step_rsb import OneStepRSBMap, solve_one_step_rsb
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_channel

ROOT = Path(__file__).resolve().parent
RUN = ROOT / "data" / "one_step_rsb_cli" / \
    "fixed-point-rsb1-semantic-alpha1.5-omega0.3-band24-split16-eps1e-7.json"
OUT = ROOT / "data" / "one_step_rsb_fold.json"
ALPHA, SEED, EPS, TOL = 1.5, 0, 1e-7, 1e-9
HALVINGS = 3                 # of a stalled fixed-D step, before the continuation stops


def band_rule(alpha: float, seed: int):
    """``(settings, channel, band)``: the semantic search's rule ``seed`` at ``alpha`` with the
    run files' settings from x = 1e4 on (2^24 band, split rule of 16, rules recentred), as
    this study uses it (8 GB and about a minute for the band)."""
    s = RSBSettings(log2n=10, band_log2n=24, split=16, recentre_from=1e4)
    t0 = time.perf_counter()
    ch, fp, band, used = rule_channel(ModelParams(), "semantic", alpha, seed, s)
    print(f"rule {seed}: band of {band.n_band} points ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    return s, ch, band


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--d-steps", type=int, default=120,
                    help="fixed-D solves at most (D lowered by 1 %% each)")
    args = ap.parse_args()
    s, ch, band = band_rule(ALPHA, SEED)
    rows = [r for r in json.loads(RUN.read_text())["rows"] if r["seed"] == SEED]
    start = next(r for r in rows if r["key"] == ["profile", 17320.508075688773])

    def fresh():
        # the rules recentred throughout, as the run's solves at x >= 1e4
        return OneStepRSBMap(ch, ALPHA, pin="m", eps=EPS, **s.inner_rules(s.recentre_from))

    def record(z, converged, residual, sigma, what):
        out = {"x": float(z[5]), "D": float(z[1] - z[0]), "q1": float(z[1]),
               "theta": float(z[3]), "V": float(z[4]), "converged": bool(converged),
               "residual": float(residual), "sigma_over_e": float(sigma), "what": what}
        print(f"  {what}: x = {out['x']:.1f}, D = {out['D']:.5e}, q1 = {out['q1']:.10f}, "
              f"Sigma/e = {sigma:+.3e}, residual {residual:.1e}"
              + ("" if converged else " (stalled)"), flush=True)
        return out

    # 1. fixed x, steps of 500
    along_x, z, prev = [], np.array(start["z"]), None
    for x in np.arange(20000.0, 30001.0, 500.0):
        zs = z.copy()
        zs[5] = x
        if prev is not None:
            zs[:5] = z[:5] + (z[:5] - prev[:5]) * (x - z[5]) / (z[5] - prev[5])
        pt = solve_one_step_rsb(fresh(), zs, hold_x=True, tol=TOL, max_iter=s.max_iter)
        along_x.append(record(pt.z, pt.converged, pt.residual, pt.sigma_over_e, "fixed x"))
        if not pt.converged:
            break
        prev, z = z, pt.z

    # 2. fixed D: unknowns (common level s, theta, V, x), the four equations
    def solve_fixed_d(z0, d):
        z = z0.copy()
        mid = (z[0] + z[1]) / 2
        z[0], z[1] = mid - d / 2, mid + d / 2
        pt = solve_one_step_rsb(fresh(), z, hold_gap=True, tol=TOL, max_iter=s.max_iter)
        return pt.z, pt.converged, pt.residual, pt.sigma_over_e

    along_d = []
    z = np.array(z)
    d, share, halvings = z[1] - z[0], 0.01, 0
    while len(along_d) < args.d_steps:
        zn, ok, r, sig = solve_fixed_d(z, d * (1 - share))
        along_d.append(record(zn, ok, r, sig, "fixed D"))
        if not ok:
            if halvings == HALVINGS:
                break
            # a stalled step: half as long from the last converged point
            share, halvings = share / 2, halvings + 1
            continue
        z, d, share, halvings = zn, zn[1] - zn[0], min(0.01, 2 * share), 0
        if sig <= 0:
            break           # Sigma/e changed sign on this branch
    args.out.write_text(json.dumps({
        "alpha": ALPHA, "seed": SEED, "eps": EPS, "band": band.as_dict(), "run": RUN.name,
        "start_x": start["x"], "fixed_x": along_x, "fixed_d": along_d}, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
