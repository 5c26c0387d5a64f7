"""symattn against the naive approach the field uses today, side by side (time and answer).

Naive (``benchmarks/naive.py``): single-start BFGS prox per node, recomputed for each hat
integral, on the nested 4x4 x 4x4 Gauss-Hermite cubature (degree 7 in each 2-D factor),
damped iteration to tolerance 1e-4.  symattn: global multi-start Newton prox shared by all
integrands, 8 scrambled Sobol rules of 2^13 points (the error bar), Newton on the saddle
point to 1e-10.  Both at the paper's defaults and alpha = 1.24, both branches.

    python benchmarks/bench_vs_naive.py [--alpha 1.24]
"""

from __future__ import annotations

import argparse
import time

from naive import POSITIONAL_INIT, SEMANTIC_INIT, naive_fixed_point
from symattn.model import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.thresholds import fixed_point_means

KEYS = ("q", "m", "theta", "V", "eps_t", "eps_g")


def ours(params, branch, alpha, log2n=13, rules=8):
    t0 = time.perf_counter()
    fps, x0 = [], None
    for k in range(rules):
        ch = OutputChannel(params, SobolRule(log2n, k).nodes())
        fp = solve_branch(params, branch, alpha, ch, x0=x0)
        fps.append(fp)
        x0 = fp.x
    dt = time.perf_counter() - t0
    out = fixed_point_means(fps)
    out["converged"] = all(fp.converged for fp in fps)
    out["residual"] = max(fp.residual for fp in fps)
    return out, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=1.24)
    ap.add_argument("--all", action="store_true",
                    help="also run the positional branch at damping 0.5 (it oscillates and runs "
                         "all 500 iterations: about 10 minutes)")
    args = ap.parse_args()
    params = ModelParams()
    rows = []
    runs = [("semantic", SEMANTIC_INIT, 0.5), ("positional", POSITIONAL_INIT, 0.2)]
    if args.all:
        runs.insert(1, ("positional", POSITIONAL_INIT, 0.5))
    for branch, init, damping in runs:
        r = naive_fixed_point(params, args.alpha, init, damping=damping)
        rows.append((f"naive {branch} (damping {damping})", r, r["wall_time"]))
        print(f"done: naive {branch} damping {damping}: {r['wall_time']:.1f} s, {r['message']}",
              flush=True)
    mine = {}
    for branch in ("semantic", "positional"):
        o, dt = ours(params, branch, args.alpha)
        mine[branch] = dt
        rows.append((f"symattn {branch}", o, dt))
    print(f"\nalpha = {args.alpha}, paper defaults")
    print(f"{'method':<34}" + "".join(f"{k:>12}" for k in KEYS) + f"{'residual':>10}{'conv':>6}"
          f"{'time[s]':>9}")
    for name, r, dt in rows:
        print(f"{name:<34}" + "".join(f"{r[k]:12.6g}" for k in KEYS)
              + f"{r['residual']:10.1e}{str(bool(r['converged'])):>6}{dt:9.1f}")
        if "q_err" in r:
            print(f"{'   +- (standard error, 8 rules)':<34}"
                  + "".join(f"{r[k + '_err']:12.1e}" for k in KEYS))
    naive_sem = rows[0][2]
    naive_pos = rows[len(runs) - 1][2]
    print(f"\ntime ratio naive / symattn: semantic {naive_sem / mine['semantic']:.0f}x, "
          f"positional (naive at damping 0.2) {naive_pos / mine['positional']:.0f}x")


if __name__ == "__main__":
    main()
