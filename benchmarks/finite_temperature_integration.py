"""How fast does the finite-temperature output channel integrate, against the zero-temperature
one?  (issue 21, item 1; model page §8.)

At the paper's semantic fixed points of alpha = 1 (the prox jumps on 2.9 % of the measure) and
alpha = 1.5 (it does not), the q_hat atom E[f_1^2 + f_2^2] and the V_hat atom E[xi_1 f_1 + xi_2
f_2] are integrated by randomised QMC with ``f`` the zero-temperature one, (prox - w)/V, and the
Gibbs one at several beta (symattn.numerics.finite_temperature.gibbs_moments, order 24): the
spread (standard deviation) over ``--scrambles`` scrambles at each rule size is the integration
error, and its slope in the rule size the rate (``n^-1/2`` for an integrand with jumps on a
surface in the worst case, faster for a smooth one).  Also the time per node of each.

Rerun: ``python benchmarks/finite_temperature_integration.py [--log2n 8 10 12] [--scrambles 8]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.finite_temperature import gibbs_moments
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import SobolRule

#: semantic fixed points (q, m, theta, V) on 2^12 points, seed 3 (solve_branch), alpha = 1, 1.5
POINTS = {1.0: (0.06826407, 0.0, 0.09530722, 21.46487477),
          1.5: (0.08923, 0.0, 0.12853, 16.8)}


def atoms(ch, x, beta, order):
    q, m, theta, V = x
    w, hs = ch.node_map(q, m, theta)
    t = np.diagonal(ch.targets(hs), axis1=1, axis2=2).copy()
    t0 = time.perf_counter()
    pr = prox(w, t, V, 0.5)
    if beta is None:
        f = (pr.h - w) / V
    else:
        f = gibbs_moments(w, t, V, beta, 0.5, order=order, minima=pr).f
    dt = time.perf_counter() - t0
    wts = ch.nodes.weights
    return (float(wts @ (f**2).sum(axis=1)), float(wts @ (ch.nodes.xi * f).sum(axis=1)),
            dt / len(wts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, nargs="+", default=[8, 10, 12])
    ap.add_argument("--scrambles", type=int, default=8)
    ap.add_argument("--betas", type=float, nargs="+", default=[16.0, 64.0, 256.0])
    ap.add_argument("--order", type=int, default=24)
    args = ap.parse_args(argv)
    p = ModelParams()
    for alpha, x in POINTS.items():
        print(f"== semantic point of alpha = {alpha}: (q, m, theta, V) = {x}")
        for beta in [None, *args.betas]:
            label = "zero T" if beta is None else f"beta = {beta:g}"
            cells = []
            for k in args.log2n:
                vals = []
                per_node = []
                for s in range(args.scrambles):
                    ch = OutputChannel(p, SobolRule(log2n=k, seed=100 + s).nodes(dim=4))
                    a, b, dt = atoms(ch, x, beta, args.order)
                    vals.append((a, b))
                    per_node.append(dt)
                vals = np.array(vals)
                sd = vals.std(axis=0, ddof=1)
                cells.append(f"2^{k}: sd {sd[0]:.1e} / {sd[1]:.1e} "
                             f"({np.median(per_node) * 1e6:.0f} us/node)")
            print(f"  {label:<12} " + "   ".join(cells), flush=True)


if __name__ == "__main__":
    main()
