"""How far the 1RSB points move when the smoothing width of near-tied minima is lowered below
the search's last one, 1e-5 (issue 21; docs/stability.md, 'The smoothing width where the gap
is tiny').

The 1RSB map blends, at every inner point whose two lowest minima are within a few ``eps``, the
global minimiser with its runner-up (weight ``expit(gap/eps)``), so that Newton meets a smooth
map; the search lowers ``eps`` in stages and reports the last.  The blend is negligible where
the gap changes by much more than ``eps`` over one inner standard deviation,
``sqrt(q1 - q0) |Delta| / V``.  That holds at the semantic alpha_c (q1 - q0 ~ 1e-5: about
1.5e-4 per standard deviation) but not at the semantic alpha_l and 1.5 (q1 - q0 ~ 5e-8:
about 1e-5, the width itself).

For each case (a committed run file, a rule, one of its solves) this re-solves the point at
fixed x on a map classified afresh there, at widths 1e-5, 1e-6, 1e-7 and 1e-9 in turn (each
from the last), at a stationary point then the six equations with x free at the last width,
and prints the stored point and each solve: Sigma/e, q1 - q0, the shifts of q1
and theta from the rule's reference point, eps_t, and the paired shift of eps_g of one state.

Writes studies/data/one_step_rsb_smoothing.json (cases merged by name).  Rerun:
``python studies/one_step_rsb_smoothing.py [--cases alpha_c,alpha_1.5]`` (alpha_c: 4 minutes
and 0.5 GB; alpha_1.5: 3 minutes and 8 GB for its 2^24 band).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from symattn.model.params import ModelParams
from symattn.numerics.observables import generalisation_error
from symattn.numerics.one_step_rsb import OneStepRSBMap, solve_one_step_rsb
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_channel

ROOT = Path(__file__).resolve().parent
RUNS = ROOT / "data" / "one_step_rsb_cli"
OUT = ROOT / "data" / "one_step_rsb_smoothing.json"
WIDTHS = (1e-5, 1e-6, 1e-7, 1e-9)
#: name: (run file, rule, key of the solve) -- the semantic alpha_c's two stationary points,
#: and at alpha = 1.5 the profile point of rule 2 at x = 260000 (the run as of de7f3c4)
CASES = {
    "alpha_c rule 0": ("fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20-split16.json",
                       0, None),
    "alpha_c rule 1": ("fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20-split16.json",
                       1, None),
    "alpha_1.5 rule 2": ("fixed-point-rsb1-semantic-alpha1.5-omega0.3-band24-split16.json", 2,
                         ["profile", 260000.0]),
}
GROUPS = {"alpha_c": ("alpha_c rule 0", "alpha_c rule 1"), "alpha_1.5": ("alpha_1.5 rule 2",)}


def case(name, params):
    run, seed, key = CASES[name]
    data = json.loads((RUNS / run).read_text())
    head, rsb = data["header"], data["header"]["rsb"]
    alpha = head["alpha"]
    rows = [r for r in data["rows"] if r["seed"] == seed]
    if key is None:
        rule = next(r for r in data["result"]["per_rule"] if r["seed"] == seed)
        x_star = rule["x_star"]
        point = min((r for r in rows if r["converged"]), key=lambda r: abs(r["x"] - x_star))
    else:
        point = next(r for r in rows if r["key"] == key)
    ref = next(r for r in rows if r["key"][0] == "ref" and r["converged"])
    s = RSBSettings(log2n=rsb["log2n"], band_log2n=rsb.get("band_log2n"),
                    split=rsb.get("split"), recentre_from=rsb.get("recentre_from"))
    t0 = time.perf_counter()
    ch, fp, band, used = rule_channel(params, head["branch"], alpha, seed, s)
    print(f"{name}: {run}, rule {seed}, x = {point['x']:g} (band of {band.n_band} points, "
          f"{time.perf_counter() - t0:.0f} s)", flush=True)
    g0 = generalisation_error(params, ref["q1"], ref["m"], ref["theta"], coarse=0)[0]

    def row(what, z, sigma, eps_t, **kw):
        g = generalisation_error(params, z[1], z[2], z[3], coarse=0)[0]
        out = {"what": what, "sigma_over_e": sigma, "D": z[1] - z[0], "d_q1": z[1] - ref["q1"],
               "d_theta": z[3] - ref["theta"], "eps_t": eps_t, "d_eps_g": g - g0, **kw}
        print(f"  {what:>14}: Sigma/e {sigma:+.3e}, D {out['D']:.4e}, d q1 {out['d_q1']:+.3e}, "
              f"d theta {out['d_theta']:+.3e}, eps_t {eps_t:.10f}, d eps_g {out['d_eps_g']:+.3e}"
              + (f" ({kw['message']}, {kw['wall']:.0f} s)" if "message" in kw else ""),
              flush=True)
        return out

    out = [row("stored", point["z"], point["sigma_over_e"], point["eps_t"])]
    z, rough = np.array(point["z"]), None
    for eps in WIDTHS:
        fmap = OneStepRSBMap(ch, alpha, pin="m" if head["branch"] == "semantic" else "theta",
                             eps=eps, rough=rough, **s.inner_rules(point["x"]))
        t0 = time.perf_counter()
        pt = solve_one_step_rsb(fmap, z, hold_x=True, tol=s.tol, max_iter=s.max_iter)
        rough = fmap.rough
        out.append(row(f"eps {eps:g}", pt.z, pt.sigma_over_e, pt.eps_t, converged=pt.converged,
                       message=pt.message, residual=pt.residual,
                       wall=time.perf_counter() - t0))
        if pt.converged:
            z = pt.z
    if key is None:
        # a stationary point: the six equations again at the finest width, x free
        t0 = time.perf_counter()
        pt = solve_one_step_rsb(fmap, z, tol=s.tol, max_iter=s.max_iter)
        out.append(row(f"x* at {WIDTHS[-1]:g}", pt.z, pt.sigma_over_e, pt.eps_t,
                       converged=pt.converged, message=pt.message, residual=pt.residual,
                       x=float(pt.z[5]), wall=time.perf_counter() - t0))
    return {"run": run, "seed": seed, "x": point["x"], "key": point["key"], "rows": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(GROUPS),
                    help=f"comma-separated groups of {sorted(GROUPS)}")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    names = [n for g in args.cases.split(",") for n in GROUPS[g.strip()]]
    params = ModelParams()
    done = json.loads(args.out.read_text()) if args.out.exists() else {}
    for name in names:
        done[name] = case(name, params)
        args.out.write_text(json.dumps(done, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
