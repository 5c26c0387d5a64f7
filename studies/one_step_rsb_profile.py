"""The 1RSB profile at fixed Parisi parameter x (issue 21, item 3, first measurement;
docs/stability.md, section 'One-step RSB: where it stands').

At the paper's parameters, alpha = 1, semantic branch (m pinned), one scrambled Sobol rule of
2^10 outer points and a 10 x 10 Gauss-Hermite inner rule: for each x the other five 1RSB
equations are solved (``symattn.numerics.one_step_rsb.solve_ladder``, hold_x, residual <= 1e-9)
from q_0 = 0.97 q_RS, q_1 = q_RS, and the report gives q_0, q_1, (q_1 - q_0)/q_1, eps_t = -Phi
against RS on the same rule, and Sigma/e = -x^2 dPhi/dx / |Phi| (the complexity relative to the
energy; the stationary x is where it vanishes).

Writes studies/data/one_step_rsb_profile.json.  Rerun: ``python studies/one_step_rsb_profile.py
[--log2n 10] [--inner 10] [--xs 1,3,10,30,100,300,1000]`` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


OUT = Path(__file__).resolve().parent / "data" / "one_step_rsb_profile.json"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--branch", default="semantic", choices=("semantic", "positional"))
    ap.add_argument("--log2n", type=int, default=10)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--xs", default="1,3,10,30,100,300,1000")
    args = ap.parse_args(argv)
    from symattn.model import ModelParams
    from symattn.numerics.branches import solve_branch
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.one_step_rsb import OneStepRSBMap, solve_ladder
    from symattn.numerics.quadrature import SobolRule
    p = ModelParams()
    ch = OutputChannel(p, SobolRule(args.log2n, 0).nodes())
    fp = solve_branch(p, args.branch, args.alpha, ch)
    pin = "m" if args.branch == "semantic" else "theta"
    print(f"RS on the same rule: q = {fp.q:.6f}, V = {fp.V:.4f}, eps_t = {fp.eps_t:.9f}")
    z = [0.97 * fp.q, fp.q, fp.m, fp.theta, fp.V, 1.0]
    rows = []
    for x in (float(v) for v in args.xs.split(",")):
        t0 = time.perf_counter()
        z[5] = x
        pt = solve_ladder(ch, args.alpha, z, pin=pin, inner=args.inner, hold_x=True)
        res, _, _ = OneStepRSBMap(ch, args.alpha, inner=args.inner, pin=pin,
                                  eps=1e-9).evaluate(pt.z)
        if pt.converged:
            z = list(pt.z)
        row = {**pt.as_dict(), "sigma_over_e": float(-res[5]), "eps_t_rs": fp.eps_t,
               "wall_time": time.perf_counter() - t0}
        rows.append(row)
        print(f"x = {x:g}: {'converged' if pt.converged else 'NOT converged'} "
              f"(residual {pt.residual:.1e}) q0 = {pt.z[0]:.6f} q1 = {pt.z[1]:.6f} "
              f"(q1-q0)/q1 = {(pt.z[1] - pt.z[0]) / pt.z[1]:.5f} V = {pt.z[4]:.4f} "
              f"eps_t = {pt.eps_t:.9f} (RS {fp.eps_t:.9f}) Sigma/e = {-res[5]:.3e}", flush=True)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps({"args": vars(args), "rs": {"q": fp.q, "theta": fp.theta,
                                   "m": fp.m, "V": fp.V, "eps_t": fp.eps_t},
                                   "rows": rows}, indent=1, default=float))


if __name__ == "__main__":
    main()
