r"""The positional, semantic and trivial fixed points (model page §5).

* **positional**: :math:`\theta = 0` exactly (the teacher is even in :math:`Q^*`), ``m != 0``;
  free variables ``(q, m, V)``.
* **trivial**: ``theta = m = 0`` (learns neither); free ``(q, V)``, both symmetries.
* **semantic**: ``theta != 0``, ``m = 0``; free ``(q, theta, V)``.  ``m = 0`` is an exact
  invariant for *any* row-stochastic ``A``: at ``m = 0`` the map ``(xi, eta) -> -(xi, eta)``
  flips ``w`` and ``h*``, leaves ``S`` and ``T`` unchanged, and flips ``f``, so
  ``m_hat = alpha E[f_1 - f_2] = 0`` (model page §5).  Whether this fixed point is the global
  minimum, or a mixed one with ``m != 0`` and ``theta != 0`` lies lower (as finite-size training
  suggests for a non-symmetric ``A``), is not settled by these pinned solves.

A branch exists only on part of the ``alpha`` axis.  A solve that lands on the trivial
point of the other family (``theta -> 0`` on the semantic branch, ``m -> 0`` on the
positional one) or does not converge is reported as "branch not found at this alpha",
never replaced by another branch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..model.params import ModelParams, check_alpha
from .channel import OutputChannel
from .observables import generalisation_error, teacher_mean_diagonal
from .saddle import FixedPoint, SaddlePointMap, solve_fixed_point

__all__ = ["BRANCHES", "Branch", "BranchNotFound", "solve_branch", "positional_excluded"]

#: normalised overlaps (cosines) below this mean the solve collapsed onto the trivial point:
#: theta/sqrt(q rho) on the semantic branch, m/sqrt(q) on the positional one.  Quadrature
#: noise gives cosines of order 1e-3 at the trivial point.  A branch's overlap does go to zero
#: where it leaves the trivial point (symattn.numerics.bifurcation), so close to that point a
#: solve may be reported as collapsed although the branch exists; the branch ends are
#: located by the bifurcation, not by this threshold.
COLLAPSE = 0.05


class BranchNotFound(RuntimeError):
    """The requested branch has no converged fixed point at this alpha (see ``fixed_point``)."""

    def __init__(self, message: str, fixed_point: FixedPoint | None = None):
        super().__init__(message)
        self.fixed_point = fixed_point


@dataclass(frozen=True)
class Branch:
    """A family of fixed points: which variables are pinned and where to start."""

    name: str
    x0s: tuple        #: cold starts (q, m, theta / sqrt(q rho), V), tried in order
    free: tuple
    symmetry: str | tuple

    def starts(self, params: ModelParams) -> list:
        """Cold starts; ``theta`` given as a fraction of ``sqrt(q rho)`` so any ``sigma`` works."""
        return [np.array([q, m, frac * np.sqrt(q * params.rho), V]) for q, m, frac, V in self.x0s]

    def collapsed(self, fp: FixedPoint, rho: float) -> bool:
        """True if the overlap defining this branch has (nearly) vanished (see COLLAPSE)."""
        if self.name == "semantic":
            return abs(fp.theta) < COLLAPSE * np.sqrt(fp.q * rho)
        if self.name == "positional":
            return abs(fp.m) < COLLAPSE * np.sqrt(fp.q)
        return False

    def check(self, fp: FixedPoint, rho: float) -> str | None:
        """Why ``fp`` is not a point of this branch, or None."""
        if not fp.converged:
            return f"no converged fixed point ({fp.message})"
        if self.collapsed(fp, rho):
            overlap = "theta" if self.name == "semantic" else "m"
            return (f"the solve collapsed to the trivial point ({overlap} = "
                    f"{getattr(fp, overlap):.1e}); no {self.name} fixed point found from the "
                    "branch's starts")
        return None


BRANCHES = {
    "positional": Branch("positional", ((0.05, 0.2, 0.0, 10.0), (0.1, 0.3, 0.0, 20.0)),
                         (0, 1, 3), "eta_flip"),
    "semantic": Branch("semantic", ((0.05, 0.0, 0.8, 10.0), (0.1, 0.0, 0.9, 20.0),
                                    (0.2, 0.0, 0.95, 10.0)), (0, 2, 3), "full_flip"),
    "trivial": Branch("trivial", ((0.05, 0.0, 0.0, 10.0), (0.1, 0.0, 0.0, 20.0)), (0, 3),
                      ("eta_flip", "full_flip")),
}


@functools.lru_cache(maxsize=64)
def positional_excluded(params: ModelParams) -> str | None:
    r"""Why this model has no positional branch, or ``None`` if nothing rules one out.

    With tied ``Q`` and encodings :math:`\pm p`, position can only raise the diagonal of
    ``S`` (:math:`S_{11} + S_{22} \ge 1` for every ``h``), so when the teacher's mean diagonal
    (:func:`~symattn.numerics.observables.teacher_mean_diagonal`) is below one half, attending by
    position cannot lower the loss and the semantic or trivial point is the minimum at every
    ``alpha`` (model page §5).  This is the model, not a solver failure; the paper's appendix
    matrix ``A = [[0.3, 0.7], [0.8, 0.2]]`` at ``omega = 0.3`` is such a case.
    """
    diag, err = teacher_mean_diagonal(params)
    if diag + err >= 0.5:
        return None
    return (f"no positional branch exists for this model: with tied Q and p_2 = -p_1, position "
            f"can only raise the diagonal of S (S_11 + S_22 >= 1 for every h), while this "
            f"teacher's mean diagonal is {diag:.4f} < 1/2, so attending by position cannot "
            "lower the loss; the semantic or trivial point is the minimum at every alpha")


def solve_branch(params: ModelParams, branch: str, alpha: float, channel: OutputChannel, *,
                 x0=None, tol: float = 1e-10, with_eps_g: bool = True) -> FixedPoint:
    """Fixed point of ``branch`` at ``alpha`` on the channel's node set.

    ``x0`` is a warm start (e.g. the neighbouring alpha's solution); the branch's cold start
    is used otherwise, and as a fallback if the warm start fails.  Raises
    :class:`BranchNotFound` if no fixed point of this branch is found.
    """
    alpha = check_alpha(alpha)
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {sorted(BRANCHES)}, got {branch!r}")
    B = BRANCHES[branch]
    F = SaddlePointMap(params, alpha, channel, symmetry=B.symmetry)
    starts = ([np.asarray(x0, float)] if x0 is not None else []) + B.starts(params)
    fp, why = None, None
    for s in starts:
        fp = solve_fixed_point(F, s, B.free, tol=tol)
        why = B.check(fp, params.rho)
        if why is None:
            break
    if why is not None:
        excluded = positional_excluded(params) if branch == "positional" else None
        if excluded is not None:
            why = f"{why}.  As expected: {excluded}"
        raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: {why}", fp)
    fp.branch = branch
    fp.n_map_evaluations = F.n_evaluations
    if with_eps_g:
        fp.eps_g, fp.eps_g_err = generalisation_error(params, fp.q, fp.m, fp.theta)
    return fp
