"""Convergence and cost of eps_g's tensor Gauss-Hermite rule in its order, at the fixed points
the large rules evaluate it at (both branches at alpha_c, the semantic one at alpha_l), for
the choice of :data:`symattn.refine.precise.EPS_G_ORDERS`.

    python benchmarks/eps_g_orders.py [--omega 0.3]

Prints, per fixed point and order, the difference to order 64 and the time of one
evaluation (its rule already built)."""

from __future__ import annotations

import argparse
import time

import symattn.compile.generated  # noqa: F401  (numba's threading layer chosen first)
from symattn.model.params import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.observables import _eps_g, _eps_g_rule
from symattn.numerics.quadrature import SobolRule

ORDERS = (12, 16, 20, 24, 32, 40, 48)
REFERENCE = 64


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, default=0.3)
    args = ap.parse_args()
    params = ModelParams(omega=args.omega)
    ch = OutputChannel(params, SobolRule(12, 0).nodes())
    # alpha_c and alpha_l of the paper's defaults (to 1e-3 is enough here)
    points = [("positional", 1.2515), ("semantic", 1.2515), ("semantic", 1.4923)]
    for o in ORDERS + (REFERENCE,):
        _eps_g_rule(o)
    print(f"{'point':>22s} {'order':>5s} {'eps_g':>22s} {'- order 64':>10s} {'ms':>7s}")
    for branch, alpha in points:
        fp = solve_branch(params, branch, alpha, ch, with_eps_g=False)
        q, m, theta = fp.x[:3]
        ref = _eps_g(params, q, m, theta, REFERENCE)
        for o in ORDERS:
            t0 = time.perf_counter()
            v = _eps_g(params, q, m, theta, o)
            ms = 1e3 * (time.perf_counter() - t0)
            print(f"{branch + ' ' + format(alpha, '.4f'):>22s} {o:5d} {v:22.16f} "
                  f"{v - ref:10.1e} {ms:7.1f}")


if __name__ == "__main__":
    main()
