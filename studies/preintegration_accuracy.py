"""The second route's integrator: E[M] by line preintegration against raw randomised QMC.

Question: how accurate is E[M] by line preintegration with a Gauss-Hermite outer rule, as a
function of the outer order, and how does its cost compare with raw randomised QMC?

How: at the positional and semantic points near alpha_c (``--x-pos``, ``--x-sem``): the
reference is the mean of ``--ref-rules`` scrambles of 2^``--ref-log2n`` raw Sobol points with its
standard error; then line preintegration in xi_1 with a Gauss-Hermite outer rule of each order
in ``--orders`` (``--cells`` cells per line), with the difference to the reference and the wall
time.  Also the number of located switching points.

Found (docs/numerics.md, 'The second route: line preintegration', "Convergence in the outer
order"; 2-core machine, 2026-11-30, commit 3c23016), E[M] minus raw RQMC on 8 x 2^20 points
(standard errors 6.4e-9 positional, 3.3e-9 semantic), positional and semantic: order 8 9.2e-7
and 6.7e-7 (1 s per branch), order 16 5.7e-8 and 5.3e-8 (10 s), order 24 -1.9e-8 and -7.0e-10
(36 s), order 28 9.8e-9 and -5.6e-9 (59 s).  The semantic branch "converges steadily"; the
positional one "is erratic at the 1e-8 level"; "at equal cost this route is about as accurate
for E[M] as raw RQMC."  The same section credits this study with "A Sobol outer rule ...
converges like about n^-1.15"; this script has only the Gauss-Hermite outer rule (it has had no
other since it was written, commit 3c23016), so that figure cannot be rerun with it.

Rerun (the docs' command; the order-28 row needs ``--orders 8,12,16,20,24,28``)::

    python studies/preintegration_accuracy.py

Options: ``[--orders 8,12,16,20,24] [--cells 56] [--ref-log2n 20] [--ref-rules 8]
[--x-pos q,m,theta,V] [--x-sem q,m,theta,V]``.
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
            st = ch.evaluate(x)
            e = st.E_M
            print(f"  {order:5d} {order**3:6d} {e:16.12f} {e - m:12.2e} "
                  f"{st.diagnostics['switches']:8d} {time.perf_counter() - t0:8.1f}", flush=True)


if __name__ == "__main__":
    main()
