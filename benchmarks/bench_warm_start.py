"""Warm-started prox passes on a large rule (``ChunkedChannel(warm=True)``, used by
``symattn thresholds --precision high``) against the default multi-start.

At the positional and semantic points near alpha_c, on one scramble of 2^``--log2n`` points:
the wall time of a cold pass (default starts at every node) and of a warm pass (each node
starts from its own minima at an ``x`` moved by ``--move``, relative), their ratio, and the
largest difference of the averages between the warm pass and a cold pass at the same ``x``.

    python benchmarks/bench_warm_start.py [--log2n 20] [--move 1e-4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symattn.model import ModelParams
from symattn.refine.precise import ChunkedChannel
from symattn.numerics.quadrature import SobolRule

POINTS = {"positional": [0.04714992, 0.25225507, 0.0, 14.92349097],
          "semantic": [0.08173869, 0.0, 0.11820496, 18.2508151]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--move", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()
    params = ModelParams()
    nodes = SobolRule(args.log2n, args.seed).nodes()
    print(f"2^{args.log2n} nodes, scramble {args.seed}, move {args.move:g} (relative)")
    print(f"{'branch':>10} {'cold [s]':>9} {'warm [s]':>9} {'ratio':>6} {'max |d means|':>14}")
    for name, x in POINTS.items():
        x = np.array(x)
        ch = ChunkedChannel(params, nodes, warm=True)
        ch.evaluate(x)                      # kernels compiled, minima stored
        x1 = x * (1 + args.move * np.array([1.0, -0.7, 0.5, 0.3]))
        t0 = time.perf_counter()
        warm = ch.evaluate(x1)
        t_warm = time.perf_counter() - t0
        assert ch.last_warm
        ch.warm = False
        t0 = time.perf_counter()
        cold = ch.evaluate(x1)
        t_cold = time.perf_counter() - t0
        diff = np.max(np.abs(warm.means - cold.means))
        print(f"{name:>10} {t_cold:9.2f} {t_warm:9.2f} {t_cold / t_warm:6.1f} {diff:14.1e}",
              flush=True)


if __name__ == "__main__":
    main()
