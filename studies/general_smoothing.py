"""Why the general solver smooths the minimiser selection (symattn/numerics/general.py,
solve_general; docs/numerics.md, 'Newton with a smooth Jacobian').

The case: the rank-2 student at omega = 0.1, alpha = 0.3, pinned positional branch, on 2^12
points (seed 0), where the phase diagram's threshold search failed.  Steps:

1. the hard-choice solve (``eps_max = tol``) from the search's start: where it stalls, the
   prox's closest ties;
2. the hard-choice map along each free coordinate through that point (41 points over
   +-1e-3 relative): the largest jump of the residual between neighbours, against the median;
   the same with the selection smoothed over ``1e-4``;
3. the continuation in the smoothing width, stage by stage, by factors of 10 from 1e-4: each
   stage's convergence and eps_t.

Rerun: ``python studies/general_smoothing.py`` (3 minutes).  Measured 2026-12-03: the hard
solve stalls at a residual 7e-4 with one node's two minima 6e-11 apart; the hard map jumps by
2.5e-3 at that point along every coordinate (medians 8e-7 to 1.4e-3 per step), smoothed over
1e-4 it has no jump (largest step = median); the stages converge down to 1e-8 (2, 3, 4, 4 and
58 Newton steps) with eps_t 8.13102163e-4, 8.13077956e-4, 8.13077597e-4, 8.13077671e-4,
8.13077678e-4 at 1e-4 ... 1e-8, and stall at 1e-9 (the forward-difference Jacobian, step
1e-7 relative, no longer resolves the selection ramp).
"""

from __future__ import annotations

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.general import (GeneralChannel, OrderParameters, _free_mask,
                                      gauge_rotation, nodes_for, solve_general)
from symattn.numerics.general_search import search_starts

ALPHA, PIN = 0.3, ("theta",)


def main():
    p = ModelParams(r=2, omega=0.1)
    ch = GeneralChannel(p, nodes_for(p, 12, 0))
    x0 = next(x for label, x, _ in search_starts(p) if label == "positional-0-pinned")
    hard = solve_general(ch, ALPHA, x0, pin=PIN, eps_max=1e-10)
    st = ch.evaluate(hard.x, ALPHA, pin=PIN)
    print(f"1. hard solve: converged {hard.converged}, {hard.message}")
    print(f"   closest ties (G2 - G): {np.sort(st.gap)[:4]}")
    mask = _free_mask(p.L, p.r, p.r_t, PIN, gauge=True)
    xv = hard.x.flat()

    def g(v, eps):
        Fx, _ = ch.step(OrderParameters.from_flat(v, p.L, p.r, p.r_t), ALPHA, pin=PIN, eps=eps)
        d = Fx.rotated(gauge_rotation(Fx, use_theta=False)).flat() - v
        d[~mask] = 0.0
        return d

    for eps in (0.0, 1e-4):
        print(f"2. the map along each free coordinate, eps = {eps:g}: largest jump / median")
        for k in np.flatnonzero(mask):
            ts = np.linspace(-1, 1, 41) * 1e-3 * max(abs(xv[k]), 1e-2)
            G = np.array([g(xv + np.eye(len(xv))[k] * t, eps) for t in ts])
            dG = np.abs(np.diff(G, axis=0)).max(axis=1)
            print(f"   coordinate {k:2d}: {dG.max():.3g} / {np.median(dG):.3g}")
    print("3. the continuation, stage by stage")
    x = hard.x
    for eps in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9):
        fp = solve_general(ch, ALPHA, x, pin=PIN, eps=eps, eps_max=eps)
        print(f"   eps = {eps:g}: converged {fp.converged}, eps_t {fp.eps_t:.9e}, "
              f"{fp.iterations} Newton steps {fp.message[:80]}")
        if not fp.converged:
            break
        x = fp.x


if __name__ == "__main__":
    main()
