"""Wall time of the default main job (``symattn``) and time per fixed point.

    python benchmarks/bench_main.py [--repeat 1]

The main job runs in a subprocess exactly as a user runs it (console script), so the figure
includes start-up and the symbolic derivation.  Time per fixed point: one rule of 2^13
points at alpha = 1.3, cold start and warm start (from the solution at alpha = 1.29).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time

from symattn.model import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import SobolRule


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    exe = shutil.which("symattn") or f"{sys.executable} -m symattn.cli"
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            subprocess.run(exe.split(), cwd=d, check=True, capture_output=True)
            print(f"main job (symattn, defaults): {time.perf_counter() - t0:.1f} s wall")
    params = ModelParams()
    ch = OutputChannel(params, SobolRule(13, 0).nodes())
    solve_branch(params, "semantic", 1.3, ch)  # compile kernels outside the timing
    for branch in ("positional", "semantic"):
        t0 = time.perf_counter()
        fp = solve_branch(params, branch, 1.29, ch)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        fp2 = solve_branch(params, branch, 1.3, ch, x0=fp.x)
        warm = time.perf_counter() - t0
        print(f"fixed point, {branch:10s} 2^13 nodes: cold {cold:.2f} s "
              f"({fp.n_map_evaluations} map evaluations), warm {warm:.2f} s "
              f"({fp2.n_map_evaluations} evaluations), residual {fp2.residual:.1e}")


if __name__ == "__main__":
    main()
