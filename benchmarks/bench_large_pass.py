"""One pass of the high-precision route's channel over a large folded rule, cold and warm.

    python benchmarks/bench_large_pass.py [--log2n 20] [--threads 1]

A large scramble (seed 1000, folded for the semantic branch) at the semantic fixed point near
alpha_c: a cold pass (the default starts) and a warm one (every node from its minima of the
cold pass, order parameters moved by 1e-4), as :class:`symattn.refine.precise.ChunkedChannel`
makes them.  ``--threads 1`` as in the process pool's workers.  Run from another checkout's
root (``cd /tmp/old && python /path/to/this/script``) to time that checkout: the script
imports ``symattn`` from the working directory.

Measured (2 cores, 2026-12-02, 2^20 nodes, one thread): the numpy path of 71aeaed cold
6.69 s, warm 1.71 s; the fused compiled pass (``OutputChannel.means``) cold 3.81 s, warm
0.75 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())

from symattn.model.params import ModelParams  # noqa: E402
from symattn.numerics.quadrature import SobolRule  # noqa: E402
from symattn.refine.precise import ChunkedChannel  # noqa: E402

#: the semantic fixed point near alpha_c (q, m, theta, V)
X = np.array((0.08164738, 0.0, 0.1179633, 18.31522))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    try:
        import numba
        numba.set_num_threads(args.threads)
    except ImportError:        # a checkout before the compiled kernels
        pass
    params = ModelParams()
    ChunkedChannel(params, SobolRule(10, 0).nodes()).evaluate(X)   # compile / load outside
    ch = ChunkedChannel(params, SobolRule(args.log2n, 1000).nodes(fold="full_flip+token_swap"),
                        warm=True)
    t = time.perf_counter()
    ch.evaluate(X)
    cold = time.perf_counter() - t
    t = time.perf_counter()
    ch.evaluate(X * (1 + 1e-4))
    warm = time.perf_counter() - t
    print(f"2^{args.log2n} folded, {args.threads} thread(s): cold {cold:.2f} s, warm {warm:.2f} s "
          f"(warm used: {ch.last_warm})")


if __name__ == "__main__":
    main()
