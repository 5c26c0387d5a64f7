"""A fixed point estimated over independent scrambles: mean, error bar and status.

:func:`fixed_point_estimate` solves one branch at one ``alpha`` on ``settings.rules``
scrambled Sobol rules (each warm-started from the previous one's solution) and returns a
:class:`FixedPointEstimate`: the mean and standard error over the rules of every order
parameter, conjugate, ``eps_t`` and ``eps_g`` (``fixed-point`` on the command line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.params import ModelParams, check_alpha
from ..results import Estimate, Status, format_estimate
from ..stats import mean_se
from .branches import solve_branch
from .channel import OutputChannel
from .quadrature import SobolRule
from .settings import NumericalSettings

__all__ = ["FIXED_POINT_KEYS", "fixed_point_means", "FixedPointEstimate", "fixed_point_estimate"]

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
        return data

    def __repr__(self) -> str:
        m = self.means
        lines = [f"FixedPointEstimate({self.branch} branch, alpha = {self.alpha:g}; mean ± standard "
                 f"error over {len(self.fixed_points)} rules of 2^{self.settings.log2n} points)"]
        for k in FIXED_POINT_KEYS:
            lines.append(f"  {k:10s} {format_estimate(m[k], m[k + '_err'])}")
        lines.append(f"  {self.status!r}")
        return "\n".join(lines)


def fixed_point_estimate(params: ModelParams, branch: str, alpha: float,
                         settings: NumericalSettings = NumericalSettings()) -> FixedPointEstimate:
    """Solve ``branch`` at ``alpha`` on each of ``settings.rules`` scrambles (module doc).

    Raises :class:`~symattn.numerics.branches.BranchNotFound` if a rule has no fixed point of
    this branch.
    """
    alpha = check_alpha(alpha)
    fps, x0 = [], None
    for seed in settings.seeds:
        ch = OutputChannel(params, SobolRule(settings.log2n, seed).nodes(), gtol=settings.prox_tol)
        fp = solve_branch(params, branch, alpha, ch, x0=x0, tol=settings.tol)
        fps.append(fp)
        x0 = fp.x
    return FixedPointEstimate(branch, alpha, params, settings, fps)
