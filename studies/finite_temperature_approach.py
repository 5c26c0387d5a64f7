"""How does the finite-temperature fixed point approach the zero-temperature one?  (issue 21,
item 2's "behaviour as beta grows"; model page §8.)

The semantic branch of the paper's model at alpha = 1 (the prox jumps on 2.9 % of the measure)
and 1.5 (it does not), on one rule of ``2^--log2n`` points (seed 3): the zero-temperature fixed
point ``x_0`` by the paper's solver, the finite-temperature one ``x_beta`` by
:func:`symattn.numerics.finite_temperature.solve_finite_temperature` (``m`` pinned, Newton to
``1e-9``: the Gibbs moments are good to about ``1e-9`` at large beta), and ``beta (x_beta - x_0)``,
constant if the approach is like ``1/beta``.

Measured 2026-12-04 (``--log2n 10``): at alpha = 1.5, ``beta (x_beta - x_0)`` in ``(q, theta,
V)`` is ``(-8.33, -5.79, -144)``, ``(-8.64, -5.64, -141)``, ``(-8.73, -5.59, -140)`` at beta =
1024, 4096, 16384: ``1/beta``.  At alpha = 1 it is ``(-9.31, -3.70, -829)``, ``(-9.40, +1.79,
-1899)``, ``(-9.95, +5.56, -2573)``: ``V`` approaches ``V_0`` more slowly than ``1/beta``
(``V_beta - V_0 = -0.81, -0.46, -0.16``) and ``theta``'s correction changes sign.  On one rule
of 2^10 points the jump set is a few dozen nodes, so the rate is a property of that rule as much
as of the model; larger rules are needed to say whether it is ``beta^-1/2`` or a crossover.

Rerun: ``python studies/finite_temperature_approach.py [--log2n 10] [--betas 1024 4096 16384]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.finite_temperature import FiniteTemperatureMap, solve_finite_temperature
from symattn.numerics.quadrature import SobolRule


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=10)
    ap.add_argument("--alphas", type=float, nargs="+", default=[1.0, 1.5])
    ap.add_argument("--betas", type=float, nargs="+", default=[1024.0, 4096.0, 16384.0])
    args = ap.parse_args(argv)
    p = ModelParams()
    ch = OutputChannel(p, SobolRule(log2n=args.log2n, seed=3).nodes(dim=4))
    for alpha in args.alphas:
        fp = solve_branch(p, "semantic", alpha, ch, with_eps_g=False)
        x0 = np.array([fp.q, fp.m, fp.theta, fp.V])
        print(f"alpha = {alpha:g}: x_0 = (q, m, theta, V) = {np.round(x0, 8).tolist()}")
        for beta in args.betas:
            t0 = time.perf_counter()
            x, res, it = solve_finite_temperature(FiniteTemperatureMap(ch, beta), alpha, x0,
                                                  pin_m=True, tol=1e-9)
            s = beta * (x - x0)
            print(f"  beta = {beta:7g}: x - x_0 = ({x[0] - x0[0]:+.3e}, {x[2] - x0[2]:+.3e}, "
                  f"{x[3] - x0[3]:+.3e}); beta (x - x_0) = ({s[0]:.2f}, {s[2]:.2f}, {s[3]:.0f}); "
                  f"residual {res:.1e}, {it} Newton steps, {time.perf_counter() - t0:.0f} s",
                  flush=True)


if __name__ == "__main__":
    main()
