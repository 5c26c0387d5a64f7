"""The second route's integrator: E[M] by line preintegration against raw randomised QMC.

At the positional and semantic points near alpha_c (``--x-pos``, ``--x-sem``): the reference is
the mean of ``--ref-rules`` scrambles of 2^``--ref-log2n`` raw Sobol points with its standard
error; then line preintegration in xi_1 with a Gauss-Hermite outer rule of each order in
``--orders`` (``--cells`` cells per line), with the difference to the reference and the wall
time.  Also the number of located switching points.

    python studies/preintegration_accuracy.py [--orders 8,12,16,20,24] [--cells 56]
                                              [--ref-log2n 20] [--ref-rules 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symattn.model import ModelParams
from symattn.refine.precise import ChunkedChannel
from symattn.refine.preintegration import (
    LineRule,
    PreintegratedChannel,
    gauss_hermite_outer,
)
from symattn.numerics.quadrature import SobolRule


def _vec(text):
    return np.array([float(v) for v in text.split(",")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--orders", default="8,12,16,20,24")
    ap.add_argument("--cells", type=int, default=56)
    ap.add_argument("--ref-log2n", type=int, default=20)
    ap.add_argument("--ref-rules", type=int, default=8)
    ap.add_argument("--x-pos", type=_vec, default=_vec("0.04714992,0.25225507,0,14.92349097"))
    ap.add_argument("--x-sem", type=_vec, default=_vec("0.08173869,0,0.11820496,18.2508151"))
    args = ap.parse_args()
    params = ModelParams()
    for name, x in (("positional", args.x_pos), ("semantic", args.x_sem)):
        t0 = time.perf_counter()
        ref = np.array([ChunkedChannel(params, SobolRule(args.ref_log2n, 8000 + s).nodes())
                        .evaluate(x).E_M for s in range(args.ref_rules)])
        m, se = ref.mean(), ref.std(ddof=1) / np.sqrt(len(ref))
        print(f"\n{name} x = {x.tolist()}")
        print(f"  raw RQMC {args.ref_rules} x 2^{args.ref_log2n}: E[M] = {m:.12f} +- {se:.1e} "
              f"({time.perf_counter() - t0:.0f} s)")
        print(f"  {'order':>5} {'lines':>6} {'E[M]':>16} {'- reference':>12} {'switches':>8} "
              f"{'time[s]':>8}")
        for order in (int(v) for v in args.orders.split(",")):
            t0 = time.perf_counter()
            ch = PreintegratedChannel(params, LineRule(cells=args.cells),
                                      outer=gauss_hermite_outer(order), chunk=256)
            e = ch.evaluate(x).E_M
            print(f"  {order:5d} {order**3:6d} {e:16.12f} {e - m:12.2e} "
                  f"{ch.last_stats['switches']:8d} {time.perf_counter() - t0:8.1f}", flush=True)


if __name__ == "__main__":
    main()
