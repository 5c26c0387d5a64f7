"""Where the branches leave the trivial fixed point, and the semantic branch near its end.

Question: at which alpha do the semantic and positional branches leave the trivial fixed point
(theta = m = 0), and does the semantic branch meet that point from above (supercritical) or
fold below it (subcritical)?

How:

1. The ``theta`` and ``m`` eigenvalues of the trivial point (likelihood ratios, exact surface
   terms; :mod:`symattn.numerics.bifurcation`) cross one at ``alpha_b``: per rule by Brent's
   method, then the mean and standard error over independent scrambles.
2. ``--scan``: the semantic branch parametrised by ``theta`` (``q, V`` solved at fixed ``theta``,
   ``alpha`` by Brent on ``T_theta / theta = 1``), on each rule symmetrised under both node flips
   so that ``T_theta`` is exactly odd in ``theta``.  A fold (spinodal) would show as a minimum of
   ``alpha(theta)`` below ``alpha_b``.
3. ``--criticality``: on each flip-symmetrised rule, ``alpha_b`` of that rule, then
   ``Lambda = T_theta / theta`` at ``alpha = alpha_b`` with ``q, V`` solved at a few fixed
   ``theta``.  ``Lambda - 1 > 0`` (a semantic solution below ``alpha_b``) means the bifurcation
   is subcritical, so the branch folds below ``alpha_b``; ``< 0`` supercritical.

Found (docs/numerics.md, 'Branches, their ends, and the phase diagram'; 2-core machine,
2026-11-30, commits c241082 and 92bfae9), at omega = 0.3: the theta eigenvalue crosses one at
alpha_b = 0.7201 +- 0.0017 (6 rules of 2^14), the m eigenvalue at
alpha_b(m) = 0.05732 +- 0.00004 (4 rules of 2^14).  ``--criticality`` over 6 rules of 2^14:
Lambda - 1 = -0.0150 +- 0.0024, -0.0025 +- 0.0027 and +0.005 +- 0.007 at theta = 0.03, 0.02
and 0.01 (cosines ~0.26, ~0.17, ~0.09): "The branch meets it from above (supercritical)."  At
omega = 0, 0.15 and 0.45 (4 rules of 2^13) "every value is at or below zero within one to two
standard errors"; a weak subcriticality at cosines below 0.1 "could still put the fold up to
about 0.03 below alpha_b (two standard errors)".  ``--scan``: not recorded in docs/numerics.md.

Rerun (the docs name ``python studies/branch_ends.py`` and ``--criticality``; these settings
give the rule counts they state)::

    python studies/branch_ends.py --log2n 14 --rules 4
    python studies/branch_ends.py --log2n 14 --rules 6 --criticality
    python studies/branch_ends.py --omega 0.15 --log2n 13 --rules 4 --criticality
    python studies/branch_ends.py --log2n 12 --rules 2 --scan --out studies/data/branch_ends.json

(the third also with ``--omega 0`` and ``--omega 0.45``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from symattn.model.params import ModelParams
from symattn.numerics.bifurcation import trivial_bifurcation
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import NodeSet, SobolRule
from symattn.numerics.saddle import SaddlePointMap, solve_fixed_point
from symattn.experiments.phase_diagram import M_GRID, THETA_GRID
from symattn.stats import mean_se

#: fixed theta (cosine theta / sqrt(q rho) ~ 0.09, 0.17, 0.26 at alpha_b) for --criticality
CRIT_THETAS = (0.01, 0.02, 0.03)
THETAS = (0.06, 0.045, 0.035, 0.028, 0.022, 0.017, 0.013, 0.01, 0.007, 0.005, 0.003)


def _alpha_b(P: ModelParams, ch: OutputChannel, direction: str, grid) -> float | None:
    """``alpha_b`` of one rule, or None where the eigenvalue does not cross one on ``grid``."""
    end = trivial_bifurcation(P, ch, direction, grid)
    return end.alpha if end.status.converged else None


def flip_symmetrised(nodes: NodeSet) -> NodeSet:
    """The rule and its images under eta -> -eta and (xi, eta) -> -(xi, eta)."""
    p = nodes.points
    images = [p, p * [1, 1, -1, -1], -p, p * [-1, -1, 1, 1]]
    return NodeSet(np.concatenate(images), np.concatenate([nodes.weights / 4] * 4),
                   nodes.label + " (flip-symmetrised)")


class SemanticRatio:
    """``Lambda(alpha, theta) - 1 = T_theta / theta - 1`` with ``q, V`` solved at fixed ``theta``
    (``m = 0``), warm-started from the previous call; nan if the solve fails."""

    def __init__(self, P: ModelParams, ch: OutputChannel, tol: float = 1e-11):
        self.P, self.ch, self.tol = P, ch, tol
        self.warm = np.array([0.05, 0.0, 0.0, 30.0])

    def __call__(self, alpha, theta):
        T = SaddlePointMap(self.P, alpha, self.ch, symmetry="full_flip")
        for x0 in (self.warm, np.array([0.05, 0.0, 0.0, 30.0])):
            fp = solve_fixed_point(T, np.array([x0[0], 0.0, theta, x0[3]]), (0, 3), tol=self.tol)
            if fp.converged:
                self.warm = fp.x
                return (T(fp.x).Fx[2] - theta) / theta
        return np.nan


def scan_semantic(P: ModelParams, ch: OutputChannel, alpha_start: float, tol: float = 1e-11):
    """``[(theta, alpha roots, q)]`` along the semantic branch, theta decreasing."""
    ratio = SemanticRatio(P, ch, tol)

    rows, a_prev = [], alpha_start
    for theta in THETAS:
        grid = np.linspace(a_prev - 0.1, a_prev + 0.06, 5)
        vals = [ratio(a, theta) for a in grid]
        roots = []
        for k in range(len(grid) - 1):
            if np.isfinite(vals[k]) and np.isfinite(vals[k + 1]) and vals[k] * vals[k + 1] <= 0:
                try:
                    roots.append(brentq(ratio, grid[k], grid[k + 1], args=(theta,), xtol=1e-6))
                except ValueError:   # an inner solve failed inside the bracket
                    pass
        if roots:
            a_prev = roots[0]
        rows.append({"theta": theta, "alphas": roots, "q": float(ratio.warm[0])})
        print(f"    theta = {theta:.4f}: alpha = {np.round(roots, 4)}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--log2n", type=int, default=14)
    ap.add_argument("--rules", type=int, default=4)
    ap.add_argument("--scan", action="store_true", help="also scan alpha(theta) near the end")
    ap.add_argument("--criticality", action="store_true",
                    help="Lambda - 1 at alpha_b for a few fixed theta (sign: sub/supercritical)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    P = ModelParams(omega=args.omega)
    out = {"omega": args.omega, "log2n": args.log2n, "rules": args.rules, "theta": [], "m": [], "scan": [],
           "criticality": []}
    t0 = time.time()
    for seed in range(args.rules):
        ch = OutputChannel(P, SobolRule(args.log2n, seed=seed).nodes(4))
        for direction, grid in (("theta", THETA_GRID), ("m", M_GRID)):
            a_b = _alpha_b(P, ch, direction, grid)
            out[direction].append(a_b)
            print(f"rule {seed}: alpha_b({direction}) = "
                  + ("not bracketed" if a_b is None else f"{a_b:.5f}")
                  + f"  ({time.time() - t0:.0f} s)", flush=True)
        if args.criticality:
            sym = OutputChannel(P, flip_symmetrised(ch.nodes))
            a_b = _alpha_b(P, sym, "theta", THETA_GRID)
            ratio = SemanticRatio(P, sym)
            row = {"alpha_b": a_b, "lambda_minus_1": [ratio(a_b, th) for th in CRIT_THETAS]}
            out["criticality"].append(row)
            print(f"  rule {seed} (flip-symmetrised): alpha_b = {a_b:.5f}, Lambda - 1 at theta = "
                  f"{CRIT_THETAS}: {np.round(row['lambda_minus_1'], 4)}", flush=True)
        if args.scan:
            print(f"  rule {seed}: semantic branch at fixed theta (flip-symmetrised rule)")
            sym = OutputChannel(P, flip_symmetrised(ch.nodes))
            out["scan"].append(scan_semantic(P, sym, alpha_start=0.8))
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(out, fh, indent=1)
    for direction in ("theta", "m"):
        found = [a for a in out[direction] if a is not None]
        mu, se = mean_se(found)
        print(f"alpha_b({direction}) = {mu:.5f} +- {se:.1e}  (mean +- standard error over "
              f"{len(found)} of {args.rules} rules of 2^{args.log2n})")
    if args.criticality:
        vals = np.array([r["lambda_minus_1"] for r in out["criticality"]], float)
        for k, th in enumerate(CRIT_THETAS):
            mu, se = mean_se(vals[np.isfinite(vals[:, k]), k])
            print(f"Lambda - 1 at alpha_b, theta = {th}: {mu:+.4f} +- {se:.4f}  "
                  "(> 0: subcritical, a semantic solution below alpha_b)")
    print(f"wall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
