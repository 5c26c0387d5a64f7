"""The compiled kernels against the numpy path they replaced (issue 19), in one run.

    python benchmarks/bench_kernels.py [--log2n 16] [--first-run]

* **Per-node prox**, at the semantic and the positional fixed point near alpha_c on one Sobol
  rule: the old lock-step numpy prox (``benchmarks/numpy_prox.py``) and the compiled one
  (``symattn.numerics.prox``) on 1 and on 2 threads; cold (the default starts ``w, +-h0``) and
  warm (one start per node, the solution at order parameters moved by 1e-7, as in the
  solver's Jacobian).  Microseconds per node, best of 3, and the ratio old / new.
* **Per channel evaluation** (the prox, the targets, the integrands and their averages) on
  the compiled path, to show what besides the prox costs.
* ``--first-run``: a fresh process with an empty kernel cache (generation by SymPy and
  compilation by numba), then a second process that loads the cache: the seconds to the
  first channel evaluation in each.

Figures, not assertions: the machine is shared; run twice and read both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numba  # noqa: E402
import numpy_prox  # noqa: E402  (the old path)

from symattn.model.params import ModelParams  # noqa: E402
from symattn.numerics.channel import OutputChannel  # noqa: E402
from symattn.numerics.prox import prox  # noqa: E402
from symattn.numerics.quadrature import SobolRule  # noqa: E402

#: order parameters (q, m, theta, V) near alpha_c (the main job's fixed points)
POINTS = {"semantic": (0.08164738, 0.0, 0.1179633, 18.31522),
          "positional": (0.04705195, 0.2525654, 0.0, 14.87689)}


def best_of(f, repeat=3):
    f()
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def prox_table(log2n):
    params = ModelParams()
    ch = OutputChannel(params, SobolRule(log2n, 0).nodes())
    print(f"per-node prox, Sobol 2^{log2n}, us per node (best of 3)")
    print(f"{'point':>10s} {'starts':>6s} {'numpy':>8s} {'new 1 thr':>10s} {'new 2 thr':>10s} "
          f"{'ratio':>6s}")
    for name, x in POINTS.items():
        x = np.array(x)
        w, T = ch._setup(x)
        t_diag = T[:, [0, 1], [0, 1]]
        n, V, sig = len(w), x[3], params.sigma
        x2 = x * (1 + 1e-7)
        w2, T2 = ch._setup(x2)
        warm = prox(w, T, V, sig).h[:, None, :]
        cases = {
            "cold": (lambda: numpy_prox.prox(w, t_diag, V, sig), lambda: prox(w, T, V, sig)),
            "warm": (lambda: numpy_prox.prox(w2, T2[:, [0, 1], [0, 1]], x2[3], sig,
                                             extra_starts=warm, include_default=False),
                     lambda: prox(w2, T2, x2[3], sig, extra_starts=warm,
                                  include_default=False)),
        }
        for label, (old, new) in cases.items():
            t_old = best_of(old)
            t_new = {}
            for threads in (1, 2):
                numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                t_new[threads] = best_of(new)
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            us = 1e6 / n
            print(f"{name:>10s} {label:>6s} {t_old * us:8.3f} {t_new[1] * us:10.3f} "
                  f"{t_new[2] * us:10.3f} {t_old / t_new[2]:6.1f}")


def channel_table(log2n):
    params = ModelParams()
    ch = OutputChannel(params, SobolRule(log2n, 0).nodes())
    print(f"\nchannel evaluation (compiled path), Sobol 2^{log2n}, us per node")
    for name, x in POINTS.items():
        x = np.array(x)
        t_eval = best_of(lambda: ch.evaluate(x))
        st = ch.evaluate(x)
        t_der = best_of(lambda: ch.derivative(st, 0, 1e-7 * x[0]))
        print(f"{name:>10s} evaluate {t_eval / ch.nodes.size * 1e6:7.3f}   "
              f"derivative {t_der / ch.nodes.size * 1e6:7.3f}")


FIRST = """
import time, numpy as np
t0 = time.perf_counter()
from symattn.model.params import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import SobolRule
OutputChannel(ModelParams(), SobolRule(10, 0).nodes()).evaluate(np.array([0.08, 0.0, 0.11, 18.0]))
print(time.perf_counter() - t0)
"""


def first_run():
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "SYMATTN_CACHE_DIR": d}
        out = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", FIRST], env=env, capture_output=True,
                               text=True, check=True)
            out.append(float(r.stdout))
    print(f"\nfirst channel evaluation in a new process: empty cache {out[0]:.1f} s, "
          f"cached {out[1]:.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=16)
    ap.add_argument("--first-run", action="store_true")
    args = ap.parse_args()
    print(f"numba {numba.__version__}, threading layer chosen by symattn, "
          f"{numba.config.NUMBA_NUM_THREADS} threads available")
    prox_table(args.log2n)
    channel_table(args.log2n)
    if args.first_run:
        first_run()


if __name__ == "__main__":
    main()
