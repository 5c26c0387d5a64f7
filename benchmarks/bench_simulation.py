"""Benchmark of the finite-size simulator (symattn.simulation).

Default: wall time of one L-BFGS-B solve at d = 1000, alpha = 1.5 from each warm start
(one data set; the best of ``--repeat`` solves is printed, plus iterations and evaluations).

``--big``: one solve at d = 10^4, alpha = 2 (n = 2 * 10^4 sentences) with peak memory:
tracemalloc peaks (numpy reports its buffers to tracemalloc) during data generation and during
the solve, and the process's peak resident set size.

    python benchmarks/bench_simulation.py [--repeat 3] [--big] [--start semantic] [--dtype auto]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from symattn import ModelParams
from symattn.simulation import (STARTS, linear_baseline, make_dataset, minimise, order_parameters,
                                paper_order_parameters, risk_and_grad, warm_start)


def _mb(x: float) -> str:
    return f"{x / 2**20:8.1f} MiB"


def bench_small(d: int, alpha: float, repeat: int) -> None:
    params = ModelParams()
    data = make_dataset(params, d, alpha, seed=0)
    Q = data.Q_star.copy()
    t = min(_timeit(lambda: risk_and_grad(Q, data)) for _ in range(10))
    print(f"d = {d}, alpha = {alpha}, n = {data.n}: one risk+gradient evaluation {1e3 * t:.2f} ms")
    for start in STARTS:
        times, mn = [], None
        for _ in range(repeat):
            Q0 = warm_start(data, start)
            t0 = time.perf_counter()
            mn = minimise(data, Q0)
            times.append(time.perf_counter() - t0)
        op = paper_order_parameters(order_parameters(mn.Q, data))
        print(f"  {start:>10s}: {min(times):6.3f} s (best of {repeat}), {mn.iterations:4d} iterations, "
              f"{mn.n_evaluations:4d} evaluations, |grad|_inf = {mn.grad_norm:.1e}, converged = {mn.converged}, "
              f"eps_t = {mn.R / d:.6f}, m = {op['m']:.4f}, theta = {op['theta']:.4f}")


def _timeit(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def bench_big(d: int, alpha: float, start: str, dtype: str) -> None:
    params = ModelParams()
    tracemalloc.start()
    t0 = time.perf_counter()
    data = make_dataset(params, d, alpha, seed=0, dtype=dtype)
    t_data = time.perf_counter() - t0
    _, peak_data = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    mn = minimise(data, warm_start(data, start))
    _, peak_solve = tracemalloc.get_traced_memory()
    B = linear_baseline(data)
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    op = paper_order_parameters(order_parameters(mn.Q, data))
    print(f"d = {d}, alpha = {alpha}, n = {data.n}, Z stored as {data.Z.dtype} ({_mb(data.Z.nbytes)})")
    print(f"  data generation: {t_data:.1f} s, tracemalloc peak {_mb(peak_data)}")
    print(f"  solve from {start!r}: {mn.wall_time:.1f} s, {mn.iterations} iterations, {mn.n_evaluations} "
          f"evaluations ({mn.wall_time / mn.n_evaluations:.3f} s each), |grad|_inf = {mn.grad_norm:.1e}, "
          f"converged = {mn.converged} ({mn.message})")
    print(f"  solve memory beyond the data: tracemalloc peak {_mb(peak_solve - base)}")
    print(f"  peak resident set size of the process: {_mb(rss)}")
    print(f"  eps_t = {mn.R / d:.6f}, m = {op['m']:.4f}, theta = {op['theta']:.4f}, q = {op['q']:.4f}, "
          f"B = {np.round(B, 4).tolist()}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=1.5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", action="store_true", help="also run d = 10^4, alpha = 2 with peak memory")
    ap.add_argument("--start", default="semantic", choices=STARTS, help="start of the --big run")
    ap.add_argument("--dtype", default="auto", help="storage of Z in the --big run (auto, float32, float64)")
    args = ap.parse_args(argv)
    bench_small(args.d, args.alpha, args.repeat)
    if args.big:
        bench_big(10_000, 2.0, args.start, args.dtype)


if __name__ == "__main__":
    main()
