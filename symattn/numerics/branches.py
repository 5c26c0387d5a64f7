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
import time
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..model.params import ModelParams, check_alpha
from .channel import OutputChannel
from .observables import generalisation_error, teacher_mean_diagonal
from .saddle import (NAMES, BudgetExhausted, FixedPoint, SaddlePointMap, fixed_point_record,
                     solve_fixed_point)

__all__ = ["BRANCHES", "Branch", "BranchNotFound", "solve_branch", "profile_solve",
           "positional_excluded", "NEWTON_BUDGET"]

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


#: map evaluations of one Newton solve before the overlap profile takes over (a regular solve
#: takes 20-40; where the equations are flat near a branch end, Newton wanders for hundreds)
NEWTON_BUDGET = 60
#: steps of the overlap profile, as a fraction of sqrt(q scale) (module doc of
#: :func:`profile_solve`), and the most steps taken
PROFILE_STEP = 0.08
PROFILE_STEPS = 40


class _InnerFailed(Exception):
    """The (q, V) solve at a fixed overlap did not converge."""


def _overlap_index(branch: str) -> int:
    return {"semantic": 2, "positional": 1}[branch]


def _inner(F: SaddlePointMap, x, k: int, v: float, tol: float, budget: int):
    """``(q, V)`` solved with the overlap ``x[k] = v`` held fixed; ``(fixed point, g)`` with
    ``g = F(x)[k] - v``, the overlap equation's residual there."""
    x = np.array(x, float)
    x[k] = v
    if k == 2 and v * v >= x[0] * F.params.rho:
        x[0] = 1.5 * v * v / F.params.rho          # keep theta^2 < q rho
    fp = solve_fixed_point(F, x, (0, 3), tol=tol, max_evaluations=budget)
    if not fp.converged:
        raise _InnerFailed(fp.message)
    state = F(fp.x, tol)
    return fp, float(state.Fx[k] - v)


def _walk_near(near, k, g_at, step, walked):
    """From the overlap of ``near``, step outwards (``g > 0``) or inwards until ``g`` changes
    sign; the bracket ``((v, g, x), (v, g, x))`` or None."""
    v = abs(float(near[k]))
    x, g = g_at(v, np.asarray(near, float))
    walked.append((v, g))
    direction = 1.0 if g > 0 else -1.0               # g > 0: the root lies further out
    for _ in range(PROFILE_STEPS):
        v_next = v + direction * step(x)
        if v_next <= 0:
            return None
        x_next, g_next = g_at(v_next, x)
        walked.append((v_next, g_next))
        if (g > 0) != (g_next > 0):
            return tuple(sorted(((v, g, x), (v_next, g_next, x_next)), key=lambda t: t[0]))
        v, x, g = v_next, x_next, g_next
    return None


def profile_solve(params: ModelParams, branch: str, alpha: float, channel: OutputChannel, *,
                  tol: float = 1e-10, near=None, budget: int = 60) -> FixedPoint:
    r"""The branch's fixed point as the outermost root of its overlap equation.

    With ``q`` and ``V`` solved at a fixed overlap ``v`` (``theta`` on the semantic branch,
    ``m`` on the positional one), the fixed points of the branch are the roots of the scalar
    ``g(v) = F_v(q, v, V) - v``.  Walking ``v`` up from near zero in steps of
    ``PROFILE_STEP sqrt(q scale)`` (``scale = rho`` for ``theta``, 1 for ``m``) until ``g`` is
    clearly negative, the branch is the outermost crossing of ``g`` from positive to negative
    (the continuation of the branch from large overlaps meets it first); Brent's method then
    locates it to ``tol``.  Where the equations are flat (near a branch end) Newton on all
    variables wanders, and quadrature noise adds spurious roots near ``v = 0``; a bracketed
    scalar root does neither.

    ``near``: a fixed point of the branch on another scramble; the walk then starts at its
    overlap and steps outwards (where ``g > 0``) or inwards until ``g`` changes sign, which is
    cheaper; if that fails, the walk from zero.  Raises
    :class:`BranchNotFound` if ``g`` has no crossing from positive to negative on the walk:
    "no root of the overlap equation", with the range walked.
    """
    B = BRANCHES[branch]
    k = _overlap_index(branch)
    scale = params.rho if branch == "semantic" else 1.0
    F = SaddlePointMap(params, alpha, channel, symmetry=B.symmetry)
    t0 = time.perf_counter()

    def g_at(v, x_warm):
        fp, g = _inner(F, x_warm, k, v, tol, budget)
        return fp.x, g

    def step(xv):
        return PROFILE_STEP * np.sqrt(xv[0] * scale)

    bracket = None
    walked = []
    if near is not None:
        try:
            bracket = _walk_near(near, k, g_at, step, walked)
        except (_InnerFailed, BudgetExhausted):
            bracket = None                           # walk from zero instead
    if bracket is None:
        try:
            x = np.array(B.starts(params)[0], float)
            v = 0.5 * PROFILE_STEP * np.sqrt(x[0] * scale)
            x, g = g_at(v, x)
        except (_InnerFailed, BudgetExhausted) as exc:
            raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: the "
                                 f"(q, V) solve at fixed {NAMES[k]} failed ({exc})") from None
        walked.append((v, g))
        points = [(v, g, x)]
        for _ in range(PROFILE_STEPS):
            v = v + PROFILE_STEP * np.sqrt(x[0] * scale)
            if k == 2 and v >= 0.97 * np.sqrt(x[0] * scale):
                break
            try:
                x, g = g_at(v, x)
            except (_InnerFailed, BudgetExhausted):
                break
            walked.append((v, g))
            points.append((v, g, x))
            if g < -0.5 * v:                         # clearly past every root
                break
        for lo, hi in zip(points[-2::-1], points[:0:-1]):
            if lo[1] > 0 >= hi[1]:
                bracket = (lo, hi)
                break
    if bracket is None:
        span = (f"{min(w[0] for w in walked):.3g} to {max(w[0] for w in walked):.3g}"
                if walked else "nothing")
        raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: its overlap "
                             f"equation (q, V solved at fixed {NAMES[k]}) has no root where it "
                             f"falls through zero for {NAMES[k]} from {span}")
    (v_lo, g_lo, x_lo), (v_hi, g_hi, x_hi) = bracket
    seen = {v_lo: x_lo, v_hi: x_hi}

    def g(v):
        """``g`` inside the bracket, warm-started from the nearest overlap solved so far (and
        from the bracket's ends, with a larger budget, if that fails)."""
        near_v = min(seen, key=lambda u: abs(u - v))
        try:
            xv, gv = g_at(v, seen[near_v])
        except (_InnerFailed, BudgetExhausted):
            for x_end in (x_lo, x_hi):
                try:
                    fp, gv = _inner(F, x_end, k, v, tol, 4 * budget)
                    xv = fp.x
                    break
                except (_InnerFailed, BudgetExhausted):
                    continue
            else:
                raise
        seen[v] = xv
        return gv

    try:
        root = optimize.brentq(g, v_lo, v_hi, xtol=tol * 1e-2, rtol=4 * np.finfo(float).eps)
        fp, _ = _inner(F, seen[min(seen, key=lambda u: abs(u - root))], k, root, tol,
                       4 * budget)
    except (_InnerFailed, BudgetExhausted) as exc:
        # the (q, V) solve fails somewhere inside the bracket (the prox's selection jumps
        # there): Newton on all the branch's variables from the interpolated crossing, with
        # the smoothing ladders of solve_fixed_point and a larger budget
        x_mid = x_lo + (x_hi - x_lo) * g_lo / (g_lo - g_hi)
        fp = solve_fixed_point(F, x_mid, B.free, tol=tol, max_evaluations=10 * budget)
        if not fp.converged:
            raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: the (q, V) "
                                 f"solve at fixed {NAMES[k]} failed inside the bracket "
                                 f"[{v_lo:.6g}, {v_hi:.6g}] ({exc}), and Newton from the "
                                 f"interpolated crossing did not converge ({fp.message})") \
                from None
    state = F(fp.x, tol)
    out = fixed_point_record(F, state, B.free, tol, tol, iterations=fp.iterations,
                             wall_time=time.perf_counter() - t0)
    out.n_map_evaluations = F.n_evaluations
    out.solver = "profile"
    return out


def solve_branch(params: ModelParams, branch: str, alpha: float, channel: OutputChannel, *,
                 x0=None, tol: float = 1e-10, with_eps_g: bool = True,
                 max_evaluations: int | None = None, newton: bool = True) -> FixedPoint:
    """Fixed point of ``branch`` at ``alpha`` on the channel's node set.

    Unbounded (``max_evaluations=None``; the threshold search, continuation, the phase
    diagram, where a failure near a branch end is what they look for): Newton from ``x0`` (a
    warm start, e.g. the neighbouring alpha's solution), then from each of the branch's cold
    starts; a failed Newton is the answer.

    Bounded (as ``symattn fixed-point`` solves): Newton from ``x0``, or without it from the
    first cold start, for at most ``max_evaluations`` evaluations of the map; then the overlap
    profile (:func:`profile_solve`, near ``x0`` if given); if that finds nothing, Newton from
    ``x0`` and every cold start with five times the budget.  ``newton=False`` goes to the
    profile at once (where Newton is known to wander, e.g. on another scramble).

    Raises :class:`BranchNotFound` if no fixed point of this branch is found, with the reason.
    """
    alpha = check_alpha(alpha)
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {sorted(BRANCHES)}, got {branch!r}")
    B = BRANCHES[branch]
    F = SaddlePointMap(params, alpha, channel, symmetry=B.symmetry)
    warm = [np.asarray(x0, float)] if x0 is not None else []
    bounded = max_evaluations is not None
    starts = (warm or B.starts(params)[:1]) if bounded else warm + B.starts(params)
    fp, why = None, "Newton skipped"
    for s in starts if newton else []:
        fp = solve_fixed_point(F, s, B.free, tol=tol, max_evaluations=max_evaluations)
        why = B.check(fp, params.rho)
        if why is None:
            break
    n_evaluations, profiled = F.n_evaluations, False
    if why is not None and bounded and branch != "trivial":
        profiled = True
        try:
            fp = profile_solve(params, branch, alpha, channel, tol=tol, near=x0)
            why = B.check(fp, params.rho)
        except BranchNotFound as exc:
            why = f"{why}; {str(exc).split(': ', 1)[1]}"
        if why is not None and newton:
            # last resort: every start, the cold ones too, for five times the budget
            for s in warm + B.starts(params):
                last = solve_fixed_point(F, s, B.free, tol=tol,
                                         max_evaluations=5 * max_evaluations)
                if B.check(last, params.rho) is None:
                    fp, why, profiled = last, None, False
                    n_evaluations = F.n_evaluations
                    break
    if why is not None:
        excluded = positional_excluded(params) if branch == "positional" else None
        if excluded is not None:
            why = f"{why}.  As expected: {excluded}"
        raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: {why}", fp)
    fp.branch = branch
    fp.n_map_evaluations = n_evaluations + (fp.n_map_evaluations if profiled else 0)
    if with_eps_g:
        fp.eps_g, fp.eps_g_err = generalisation_error(params, fp.q, fp.m, fp.theta)
    return fp
