"""Time per fixed point of the general model (issue 20: target <= 30 s for L = 3, r = 1 on
2 cores).

For each shape, the semantic fixed point at alpha = 1.5 (paper's sigma, lambda, omega = 0.3)
on one rule of ``2^log2n`` points, from the same start, solved twice: the first run includes
the kernels' compilation on an empty cache, the second is the time per fixed point.  Prints
the residual, Newton steps and both times.

Rerun: ``python benchmarks/bench_general_fixed_point.py [--log2n 14]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.general import GeneralChannel, OrderParameters, nodes_for, solve_general

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
A4 = tuple(tuple(0.4 if i == j else 0.2 for j in range(4)) for i in range(4))


def cases():
    return [("L = 3, r = 1, simplex", ModelParams(A=A3, Pi="simplex")),
            ("L = 2, r = 2, r_t = 1", ModelParams(r=2)),
            ("L = 4, r = 1, simplex", ModelParams(A=A4, Pi="simplex"))]


def start(p: ModelParams) -> OrderParameters:
    L, r, rt = p.L, p.r, p.r_t
    th = np.zeros((rt, r))
    th[0, 0] = 0.1
    return OrderParameters(0.1 * np.eye(r), np.zeros((L, r)), th, 15.0 * np.eye(r))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=14)
    ap.add_argument("--alpha", type=float, default=1.5)
    args = ap.parse_args(argv)
    for label, p in cases():
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            ch = GeneralChannel(p, nodes_for(p, args.log2n, 0))
            fp = solve_general(ch, args.alpha, start(p))
            times.append(time.perf_counter() - t0)
        print(f"{label:24s} 2^{args.log2n}: converged {fp.converged}, residual "
              f"{fp.residual:.1e}, {fp.iterations} Newton steps; first run {times[0]:.1f} s, "
              f"per fixed point {times[1]:.1f} s", flush=True)


if __name__ == "__main__":
    main()
