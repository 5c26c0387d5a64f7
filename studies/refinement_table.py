"""Refinement table for alpha_c and alpha_l at the paper's defaults.

Randomised QMC (``rules`` independent scrambles of 2**k Sobol points, k = --min..--max):
mean, one-standard-error bar, and wall time; then tensor Gauss-Hermite rules of increasing
order on the same solver as an independent cross-check of the integration (no error bar:
GH is deterministic; its convergence is read off the sequence).

    python studies/refinement_table.py [--min 10] [--max 15] [--rules 8]
                                          [--gh 6,8,10,12,14,16] [--omega 0.3]
"""

from __future__ import annotations

import argparse
import time

from symattn.model import ModelParams
from symattn.numerics.quadrature import GaussHermiteRule
from symattn.numerics.thresholds import (ThresholdSettings, compute_thresholds,
                                         thresholds_on_nodes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=int, default=10)
    ap.add_argument("--max", type=int, default=15)
    ap.add_argument("--rules", type=int, default=8)
    ap.add_argument("--gh", default="6,8,10,12,14,16")
    ap.add_argument("--omega", type=float, default=0.3)
    args = ap.parse_args()
    params = ModelParams(omega=args.omega)
    print(f"params: {params.as_dict()}")
    print(f"{'rule':>22} {'nodes/rule':>10} {'alpha_c':>12} {'err':>9} {'alpha_l':>12} "
          f"{'err':>9} {'time[s]':>8}", flush=True)
    for k in range(args.min, args.max + 1):
        t0 = time.perf_counter()
        th = compute_thresholds(params, ThresholdSettings(log2n=k, rules=args.rules))
        dt = time.perf_counter() - t0
        print(f"{f'sobol 2^{k} x {args.rules}':>22} {2**k:>10d} {th.alpha_c:12.7f} "
              f"{th.alpha_c_err:9.1e} {th.alpha_l:12.7f} {th.alpha_l_err:9.1e} {dt:8.1f}",
              flush=True)
    for order in [int(o) for o in args.gh.split(",") if o]:
        t0 = time.perf_counter()
        r = thresholds_on_nodes(params, GaussHermiteRule(order).nodes(), ThresholdSettings())
        dt = time.perf_counter() - t0
        print(f"{f'gauss-hermite {order}^4':>22} {order**4:>10d} {r.alpha_c:12.7f} {'-':>9} "
              f"{r.alpha_l:12.7f} {'-':>9} {dt:8.1f}", flush=True)


if __name__ == "__main__":
    main()
