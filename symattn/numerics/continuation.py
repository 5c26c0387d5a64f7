r"""Following a branch of fixed points in ``alpha``, and locating where it ends (spinodals).

Pseudo-arclength continuation in :math:`y = (x_{\rm free}, \alpha)`, in scaled coordinates
:math:`z = y / s` (``s`` the magnitudes at the start, so ``q`` and ``V``, orders of magnitude
apart at the fixed points, weigh alike; measured: docs/numerics.md, section 'Against the
authors' scheme: time and answer'):

* **tangent** :math:`t`: the unit null vector of :math:`[\partial_z r]`, with
  :math:`r(x;\alpha) = F(x;\alpha) - x`, oriented like the previous one.  The Jacobian here
  is that of the map smoothed over a selection width ``eps_tangent = 1e-3``: with the tiny
  width used for the fixed points, the Jacobian between two switching nodes misses the
  *surface terms* (the motion of the switching surfaces, which the exact expectation's
  derivative contains); a width that covers many nodes restores them on average (a kernel
  estimate of the surface integral), which is what the branch's direction needs;
* **predictor** :math:`z_p = z_k + \Delta s\, t`;
* **corrector**: Newton on :math:`r(z) = 0,\ t\cdot(z - z_p) = 0` (the exact Jacobian of the
  smoothed quadrature map, see :mod:`symattn.numerics.saddle`), with the same continuation
  in the selection width ``eps`` when Newton stalls on a node switching minimiser;
* **step control**: the step grows after easy corrections and shrinks after hard or failed
  ones.

A **fold** (spinodal) is where the tangent's ``alpha`` component changes sign: the branch
turns back.  Its position is interpolated between the two points that bracket it, with the
cubic Hermite interpolant of :math:`\alpha(\sigma)` (values and slopes
:math:`d\alpha/d\sigma` from the tangents, :math:`\sigma` the arclength), and refined by
re-stepping from the last point before the fold with smaller steps; the error estimate is the
change of the fold between the last two refinements.
A branch may instead end by merging with the trivial point: the overlap that defines it
(``theta`` or ``m``) goes to zero continuously.  The merge is declared where the overlap
cosine (``theta / sqrt(q rho)``, resp. ``m / sqrt(q)``) falls below ``COLLAPSE = 0.05`` and is
bracketed by re-stepping with smaller steps (``merge_step`` in scaled arclength); the
bracket is reported.  This is a convention, not a sharp end, and at small overlap it is
biased: on a rule that is not symmetric under ``eta -> -eta`` the quadrature error acts as a
field on ``theta`` and the semantic branch tails off below its true end.  The sharp end is
where the branch leaves the trivial point (:mod:`symattn.numerics.bifurcation`), which is
what the phase diagram reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.params import ModelParams
from .branches import BRANCHES, COLLAPSE, solve_branch
from .channel import InvalidOrderParameters, OutputChannel
from .saddle import SLOW, SaddlePointMap, eps_stages, fixed_point_record

__all__ = ["Fold", "BranchCurve", "follow_branch"]


@dataclass
class Fold:
    """Where a branch turns back in ``alpha``: the spinodal."""

    alpha: float
    alpha_err: float
    x: np.ndarray
    refinements: list = field(default_factory=list)


@dataclass
class BranchCurve:
    """Fixed points along a branch, in continuation order, and how the branch ended."""

    branch: str
    points: list
    fold: Fold | None
    end: str
    merge: tuple | None = None   #: (alpha_lo, alpha_hi) bracketing a merge with the trivial point

    @property
    def alphas(self) -> np.ndarray:
        return np.array([p.alpha for p in self.points])


class _Follower:
    def __init__(self, params, branch, channel, tol, eps_tangent):
        self.params, self.channel, self.tol = params, channel, tol
        self.eps_tangent = eps_tangent
        self.B = BRANCHES[branch]
        self.free = list(self.B.free)

    # -- the augmented map ---------------------------------------------------------------
    def state(self, z, eps):
        y = z * self.scale
        x = self.x_template.copy()
        x[self.free] = y[:-1]
        F = SaddlePointMap(self.params, y[-1], self.channel, symmetry=self.B.symmetry)
        return F, F(x, eps)

    def jac(self, F, st):
        """``[dr/dz]``: ``k x (k+1)``."""
        J = F.jacobian(st, self.free)
        ra = F.alpha_derivative(st, self.free)
        return np.column_stack([J, ra]) * self.scale

    def tangent(self, F, st, t_prev):
        """Unit null vector of the *smoothed* Jacobian (see ``eps_tangent``), oriented."""
        A = self.jac(F, F(st.x, self.eps_tangent))
        M = np.vstack([A, t_prev])
        rhs = np.zeros(len(t_prev))
        rhs[-1] = 1.0
        t = np.linalg.solve(M, rhs)
        t /= np.linalg.norm(t)
        return t if np.dot(t, t_prev) > 0 else -t

    def _newton(self, z, zp, t, eps, max_iter=25):
        """Newton on [r(z); t.(z - zp)] at selection width eps; returns (z, F, st, ok, its)."""
        def G(F, st, z):
            return np.append(st.residual(self.free), np.dot(t, z - zp))
        try:
            F, st = self.state(z, eps)
        except InvalidOrderParameters:
            return z, None, None, False, 0
        g = G(F, st, z)
        res = float(np.max(np.abs(g)))
        slow = 0
        for it in range(1, max_iter + 1):
            if res <= self.tol:
                return z, F, st, True, it - 1
            M = np.vstack([self.jac(F, st), t])
            try:
                dz = np.linalg.solve(M, -g)
            except np.linalg.LinAlgError:
                return z, F, st, False, it
            new = None
            for _ in range(20):
                zn = z + dz
                try:
                    Tn, stn = self.state(zn, eps)
                    gn = G(Tn, stn, zn)
                    rn = float(np.max(np.abs(gn)))
                    if np.isfinite(rn) and rn < res:
                        new = (zn, Tn, stn, gn, rn)
                        break
                except InvalidOrderParameters:
                    pass
                dz = dz / 2
            if new is None:
                return z, F, st, False, it
            slow = slow + 1 if new[4] > SLOW * res else 0
            z, F, st, g, res = new
            if slow >= 2:
                return z, F, st, res <= self.tol, it
        return z, F, st, res <= self.tol, max_iter

    def correct(self, zp, t):
        """Corrector from the predictor ``zp``; the eps ladder if Newton stalls."""
        its = 0
        for stages in eps_stages(self.tol):
            z = zp.copy()
            ok = False
            F = st = None
            for e in stages:
                z, F, st, ok, k = self._newton(z, zp, t, e)
                its += k
                if F is None:
                    break
            if ok and F is not None:
                return z, F, st, its
        return None

    def record(self, F, st, its):
        return fixed_point_record(F, st, self.free, self.tol, self.tol, iterations=its)


def _hermite_extremum(s0, a0, d0, s1, a1, d1):
    """Extremum of the cubic Hermite interpolant of ``alpha(sigma)`` on ``[s0, s1]``."""
    h = s1 - s0
    # cubic a(u) on u in [0, 1]: coefficients from values and slopes (times h)
    c0, c1 = a0, d0 * h
    c2 = 3 * (a1 - a0) - (2 * d0 + d1) * h
    c3 = 2 * (a0 - a1) + (d0 + d1) * h
    roots = np.roots([3 * c3, 2 * c2, c1]) if abs(c3) > 0 or abs(c2) > 0 else np.array([])
    roots = [r.real for r in np.atleast_1d(roots) if abs(r.imag) < 1e-12 and -1e-9 <= r.real <= 1 + 1e-9]
    if not roots:
        u = 0.5
    else:
        u = min(roots, key=lambda r: abs(r - 0.5))
    return c0 + c1 * u + c2 * u**2 + c3 * u**3, u


def follow_branch(params: ModelParams, branch: str, channel: OutputChannel, alpha0: float,
                  alpha_stop: float, *, x0=None, tol: float = 1e-10, ds: float = 0.05,
                  ds_min: float = 1e-5, ds_max: float = 0.25, max_steps: int = 300,
                  fold_tol: float = 1e-7, max_refinements: int = 4,
                  eps_tangent: float = 1e-3, merge_step: float = 2e-3) -> BranchCurve:
    """Follow ``branch`` from ``alpha0`` towards ``alpha_stop`` (either direction).

    Stops at ``alpha_stop``, at a fold (located, see the module doc), when the branch merges
    with the trivial point, or when the corrector fails at the smallest step (reported in
    ``end``).  Raises :class:`BranchNotFound` if there is no fixed point at ``alpha0``.
    """
    f = _Follower(params, branch, channel, tol, eps_tangent)
    fp0 = solve_branch(params, branch, alpha0, channel, x0=x0, tol=tol, with_eps_g=False)
    direction = 1.0 if alpha_stop > alpha0 else -1.0
    f.x_template = fp0.x.copy()
    y0 = np.append(fp0.x[f.free], alpha0)
    f.scale = np.maximum(np.abs(y0), 1e-2)
    z = y0 / f.scale
    F, st = f.state(z, tol)
    t_prev = np.zeros_like(z)
    t_prev[-1] = direction
    t = f.tangent(F, st, t_prev)
    points = [fp0]
    sigma = 0.0            # arclength (scaled) of the last accepted point
    end = f"reached alpha = {alpha_stop:g}"
    fold = None
    merge = None
    refinements = []
    step = ds
    k = 0
    while k < max_steps:
        k += 1
        zp = z + step * t
        got = f.correct(zp, t)
        if got is None:
            step /= 2
            if step < ds_min:
                end = (f"corrector failed at alpha = {z[-1] * f.scale[-1]:.6g} with the smallest "
                       f"step; the branch could not be followed further")
                break
            continue
        zn, Tn, stn, its = got
        fp = f.record(Tn, stn, its)
        tn = f.tangent(Tn, stn, t)
        if fp.converged and BRANCHES[branch].collapsed(fp, params.rho):
            # bracket the merging point between the last point of the branch and this one
            if step > merge_step:
                step = max(step / 4, merge_step)
                continue
            a_last = points[-1].alpha
            merge = (min(a_last, fp.alpha), max(a_last, fp.alpha))
            end = (f"merges with the trivial point (overlap cosine < {COLLAPSE:g}) between "
                   f"alpha = {merge[0]:.6g} and {merge[1]:.6g}")
            break
        s_new = sigma + float(np.linalg.norm(zn - z))
        # fold: the alpha component of the tangent changes sign
        if np.sign(tn[-1]) != np.sign(t[-1]) and t[-1] != 0:
            sa = f.scale[-1]
            a_fold, u = _hermite_extremum(sigma, z[-1] * sa, t[-1] * sa,
                                          s_new, zn[-1] * sa, tn[-1] * sa)
            refinements.append(a_fold)
            if len(refinements) >= 2 and abs(refinements[-1] - refinements[-2]) < fold_tol \
                    or len(refinements) > max_refinements:
                x_fold = points[-1].x + u * (fp.x - points[-1].x)
                err = (abs(refinements[-1] - refinements[-2]) if len(refinements) >= 2
                       else abs(zn[-1] - z[-1]) * sa)
                fold = Fold(alpha=float(a_fold), alpha_err=float(err), x=x_fold,
                            refinements=list(refinements))
                points.append(fp)
                end = f"fold (spinodal) at alpha = {a_fold:.8g}"
                break
            # refine: re-step from the last point before the fold with a quarter of the step
            step = max(float(np.linalg.norm(zn - z)) / 4, ds_min)
            continue
        points.append(fp)
        z, t, sigma = zn, tn, s_new
        alpha_now = z[-1] * f.scale[-1]
        if (alpha_now - alpha_stop) * direction >= 0:
            break
        step = min(step * 1.5, ds_max) if its <= 3 else (max(step * 0.7, ds_min) if its > 6
                                                         else step)
        # near a fold (small alpha component) keep steps small so the fold is bracketed tightly
        if abs(t[-1]) < 0.2:
            step = min(step, ds / 2)
    else:
        end = f"stopped after {max_steps} steps"
    return BranchCurve(branch=branch, points=points, fold=fold, end=end, merge=merge)
