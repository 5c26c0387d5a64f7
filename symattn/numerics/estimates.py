r"""A fixed point estimated over independent scrambles: mean, error bar and status.

:func:`fixed_point_estimate` solves one branch at one ``alpha`` on ``settings.rules``
scrambled Sobol rules (each warm-started from the previous one's solution) and returns a
:class:`FixedPointEstimate`: the mean and standard error over the rules of every order
parameter, conjugate, ``eps_t`` and ``eps_g`` (``fixed-point`` on the command line).

**Where the branch does not exist** the answer must come quickly and say why.  Each scramble
is solved by Newton for at most ``NEWTON_BUDGET`` map evaluations per start, then by the
overlap profile (:func:`~symattn.numerics.branches.profile_solve`): with ``q, V`` solved at a
fixed overlap (``theta``, resp. ``m``), the branch is the outermost root of the overlap
equation, bracketed on a walk from zero and located by Brent's method.  *The branch is not
found when that equation has no root on the walk*; the first scramble (solved cold) decides,
and the others are not solved then.

For the semantic branch a cheaper test comes first: the trivial point's ``theta`` eigenvalue
:math:`\lambda_\theta` (:func:`~symattn.numerics.bifurcation.trivial_stability`) on every
scramble.  Where :math:`\bar\lambda_\theta + 3\,\mathrm{se} < 1` (``END_MARGIN``) the branch is
reported not found at once: it leaves the trivial point where :math:`\lambda_\theta` crosses
one, from above (supercritical), as measured at omega = 0, 0.15, 0.3 and 0.45
(``studies/branch_ends.py``).  Were the bifurcation subcritical (not measured above omega =
0.45), a piece of the branch below that crossing would be missed; the profile is not used
there, because on small rules quadrature noise at small ``theta`` makes spurious roots.

The other scrambles start from the first one's solution (Newton, then the profile near it) and
run on ``executor`` (default: one process per core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..model.params import ModelParams, check_alpha
from ..results import Estimate, Status, format_estimate
from ..runs.executors import map_tasks, process_pool
from ..stats import mean_se
from .branches import NEWTON_BUDGET, BranchNotFound, solve_branch
from .channel import InvalidOrderParameters, OutputChannel
from .quadrature import SobolRule
from .settings import NumericalSettings

__all__ = ["FIXED_POINT_KEYS", "fixed_point_means", "FixedPointEstimate", "fixed_point_estimate",
           "semantic_end_check", "END_MARGIN"]

#: standard errors by which the mean theta eigenvalue must lie below one for "no semantic branch"
END_MARGIN = 3.0

#: The quantities of a fixed point that are averaged over scrambles (JSON keys, with ``_err``).
FIXED_POINT_KEYS = ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_t",
                    "eps_g")


def fixed_point_means(fps) -> dict:
    """Mean and standard error (``<key>_err``) over fixed points of independent rules."""
    out = {}
    for k in FIXED_POINT_KEYS:
        out[k], out[k + "_err"] = mean_se([getattr(fp, k) for fp in fps])
    return out


@dataclass
class FixedPointEstimate:
    """One branch's fixed point at one ``alpha``: mean +- standard error over the scrambles.

    ``fixed_points`` are the per-rule :class:`~symattn.numerics.saddle.FixedPoint`\\ s;
    :meth:`to_dict` is the JSON of ``symattn fixed-point --json``.
    """

    branch: str
    alpha: float
    params: ModelParams
    settings: NumericalSettings
    fixed_points: list = field(repr=False)
    #: the RS-stability report (:mod:`symattn.numerics.stability`), over the same scrambles
    stability: object = field(default=None, repr=False)

    @property
    def means(self) -> dict:
        return fixed_point_means(self.fixed_points)

    def __getitem__(self, key: str) -> Estimate:
        """``estimate["theta"]``: that quantity as an :class:`~symattn.results.Estimate`."""
        if key not in FIXED_POINT_KEYS:
            raise KeyError(f"{key!r}; one of {FIXED_POINT_KEYS}")
        m = self.means
        return Estimate(m[key], m[key + "_err"], self.status)

    @property
    def status(self) -> Status:
        fps = self.fixed_points
        bad = [fp.message for fp in fps if not fp.converged]
        return Status(converged=not bad, iterations=sum(fp.iterations for fp in fps),
                      residual=max(fp.residual for fp in fps),
                      message="; ".join(bad) if bad else "converged")

    def to_dict(self) -> dict:
        data = {"branch": self.branch, "alpha": self.alpha, **self.means}
        data["residual"] = self.status.residual
        data["converged"] = self.status.converged
        data["rules"] = len(self.fixed_points)
        data["log2n"] = self.settings.log2n
        data["params"] = self.params.as_dict()
        if self.stability is not None:
            data["rs_stability"] = self.stability.to_dict()
        return data

    def __repr__(self) -> str:
        m = self.means
        lines = [f"FixedPointEstimate({self.branch} branch, alpha = {self.alpha:g}; mean ± standard "
                 f"error over {len(self.fixed_points)} rules of 2^{self.settings.log2n} points)"]
        for k in FIXED_POINT_KEYS:
            lines.append(f"  {k:10s} {format_estimate(m[k], m[k + '_err'])}")
        lines.append(f"  {self.status!r}")
        if self.stability is not None:
            lines.append(f"  {self.stability!r}")
        return "\n".join(lines)


def _theta_eigenvalue(task) -> float:
    from .bifurcation import trivial_stability
    params, alpha, settings, seed = task
    ch = OutputChannel(params, SobolRule(settings.log2n, seed).nodes(), gtol=settings.prox_tol)
    try:
        with np.errstate(all="ignore"):
            return trivial_stability(params, alpha, ch, tol=settings.tol).eig_theta
    except (BranchNotFound, *_SOLVER_FAILURES):
        return math.nan   # no trivial point on this scramble: the check decides nothing


def semantic_end_check(params: ModelParams, alpha: float, settings: NumericalSettings,
                       executor=None) -> tuple[float, float, str | None]:
    """``(mean, se, why)``: the trivial point's ``theta`` eigenvalue over the scrambles and,
    if it is more than ``END_MARGIN`` standard errors below one, why no semantic branch is
    expected at ``alpha`` (module doc); ``why`` is None otherwise."""
    eig = map_tasks(_theta_eigenvalue, [(params, alpha, settings, s) for s in settings.seeds],
                    executor)
    mean, se = mean_se(eig)
    if not (math.isfinite(se) and mean + END_MARGIN * se < 1.0):
        return mean, se, None
    return mean, se, (
        f"the trivial point (theta = m = 0) is stable against a semantic perturbation, its "
        f"theta eigenvalue is {mean:.4f} +- {se:.1e} (mean +- standard error over {len(eig)} "
        f"scrambles), more than {END_MARGIN:g} standard errors below 1")


#: failures of the solver that mean "no fixed point found here" (order parameters leaving
#: their domain, a singular Jacobian, non-finite values at extreme parameters)
_SOLVER_FAILURES = (InvalidOrderParameters, ArithmeticError, np.linalg.LinAlgError, ValueError)


def _solve_rule(task):
    """One scramble's fixed point, or the reason there is none (a string)."""
    params, branch, alpha, settings, seed, x0, newton = task
    ch = OutputChannel(params, SobolRule(settings.log2n, seed).nodes(), gtol=settings.prox_tol)
    try:
        with np.errstate(all="ignore"):
            fp = solve_branch(params, branch, alpha, ch, x0=x0, tol=settings.tol,
                              max_evaluations=NEWTON_BUDGET, newton=newton)
    except BranchNotFound as exc:
        return str(exc).split(": ", 1)[-1]
    except _SOLVER_FAILURES as exc:
        return f"the solver failed, {type(exc).__name__}: {exc}"
    if fp.theta < 0:   # the mirror image (Q* -> -Q* leaves the teacher unchanged): the same
        fp.theta, fp.theta_hat = -fp.theta, -fp.theta_hat   # state; average theta >= 0
    return fp


def fixed_point_estimate(params: ModelParams, branch: str, alpha: float,
                         settings: NumericalSettings = NumericalSettings(), *,
                         executor=None) -> FixedPointEstimate:
    """Solve ``branch`` at ``alpha`` on each of ``settings.rules`` scrambles (module doc).

    Raises :class:`~symattn.numerics.branches.BranchNotFound` with the reason if the branch
    does not exist here (module doc: the eigenvalue criterion for the semantic branch) or a
    rule has no fixed point of this branch.
    """
    alpha = check_alpha(alpha)
    if executor is None and settings.rules > 1:
        with process_pool() as pool:
            return fixed_point_estimate(params, branch, alpha, settings, executor=pool)
    if branch == "semantic":
        absent = semantic_end_check(params, alpha, settings, executor)[2]
        if absent is not None:
            raise BranchNotFound(
                f"semantic branch not found at alpha = {alpha:g}: {absent}; the semantic branch "
                "leaves the trivial point where this eigenvalue crosses 1 from below as alpha "
                "grows (supercritically, studies/branch_ends.py), so it does not exist here")
    seeds = list(settings.seeds)
    first = _solve_rule((params, branch, alpha, settings, seeds[0], None, True))
    if isinstance(first, str):
        raise BranchNotFound(f"{branch} branch not found at alpha = {alpha:g}: {first} "
                             f"(scramble {seeds[0]} of 2^{settings.log2n} points)")
    rest = map_tasks(_solve_rule, [(params, branch, alpha, settings, s, first.x,
                                    first.solver == "newton") for s in seeds[1:]], executor)
    failed = [(s, r) for s, r in zip(seeds[1:], rest) if isinstance(r, str)]
    if failed:
        s, why = failed[0]
        raise BranchNotFound(
            f"{branch} branch found on {len(seeds) - len(failed)} of {len(seeds)} scrambles "
            f"at alpha = {alpha:g} but not on scramble{'s' if len(failed) > 1 else ''} "
            f"{', '.join(str(f[0]) for f in failed)}: at 2^{settings.log2n} points per rule its "
            f"existence here is not resolved (near a branch end the overlap equation is flat, "
            f"within the quadrature noise; more points, --log2n, may resolve it).  Scramble "
            f"{s}: {why}")
    fps = [first] + rest
    return FixedPointEstimate(branch, alpha, params, settings, fps,
                              stability=_stability(params, alpha, settings, seeds, fps))


def _stability(params, alpha, settings, seeds, fps):
    """The RS-stability report of each scramble's fixed point on its own rule, combined."""
    from .stability import combine_stability, rs_stability
    return combine_stability(
        rs_stability(OutputChannel(params, SobolRule(settings.log2n, s).nodes(),
                                   gtol=settings.prox_tol), fp.x, alpha)
        for s, fp in zip(seeds, fps))
