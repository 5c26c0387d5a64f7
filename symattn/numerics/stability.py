r"""Is the replica-symmetric fixed point stable?  The replicon eigenvalue at the paper's shape
(model page §8; derived in :mod:`symattn.symbolic.replicon`).

At inverse temperature :math:`\beta` and zero temperature:

.. math::

    \lambda_R(\beta) = \alpha\,\mathbb E\Big\lVert\frac\beta V C - I\Big\rVert_F^2,
    \qquad
    \lambda_R(\infty) = \lambda_R^{\rm cont} + s\,\beta,\quad
    \lambda_R^{\rm cont} = \alpha\,\mathbb E\lVert J - I\rVert_F^2,\quad
    s = \frac{\alpha}{12\,\delta V^2}\mathbb E\big[|\Delta|^4\,\mathbb 1(\mathrm{gap}<\delta)\big]

with ``C`` the Gibbs covariance of the pre-activations at a node, :math:`J = (V\nabla^2\mathcal
G)^{-1}` the prox's Jacobian at the global minimum, :math:`\Delta` the jump of the prox between
the two lowest minima and ``gap`` their difference in value.  RS is stable where
:math:`\lambda_R < 1`.  At zero temperature that needs ``s = 0``: the prox must not jump on a
set of positive surface measure.  Where it does, :math:`\lambda_R` grows like :math:`s\beta` and
RS is unstable however small ``s`` is; ``s`` and the measure of the nodes near a tie say how
strongly.

:func:`rs_stability` computes, on a channel's rule at an order-parameter point, the terms above
and a verdict (:class:`RSStability`); :func:`replicon_at_beta` evaluates
:math:`\lambda_R(\beta)` from the Gibbs moments (:mod:`symattn.numerics.finite_temperature`), the independent
route the tests compare the zero-temperature formula with.  The general model's report (any
``L``, ranks ``r``, ``r_t``) is :mod:`symattn.numerics.general_stability`'s, with this class and
verdict.

**Verdict.** ``"unstable"`` when the prox jumps, i.e. some node's two lowest minima lie within
``delta`` (default ``1e-3``) of each other (``s > 0``), or when :math:`\lambda_R^{\rm cont} \ge 1`;
``"stable"`` when no node lies within ``10 delta`` of a tie and :math:`\lambda_R^{\rm cont} < 1` --
with the caveat, in the report, that a jump set of Gaussian weight below about ``1/n`` per
``10 delta`` of gap is not resolved by ``n`` nodes; ``"undecided"`` otherwise (near-ties within
``10 delta`` but none within ``delta``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..results import format_estimate
from .finite_temperature import _hessian, gibbs_moments
from .prox import prox

__all__ = ["RSStability", "rs_stability", "stability_report", "replicon_at_beta",
           "combine_stability", "stability_at", "DEFAULT_DELTA"]

#: the gap below which two minima count as tied, for the jump coefficient ``s``
DEFAULT_DELTA = 1e-3


@functools.lru_cache(maxsize=None)
def _replicon_kernels(L: int = 2):
    """The derived ``lambda_R`` integrands for ``L`` tokens (:func:`~symattn.symbolic.replicon.
    derive_replicon`), lambdified: ``(zero_t(*J, alpha), finite_beta(*C, V, beta, alpha),
    per_slab(|Delta|, V, delta))`` with ``J``, ``C`` the upper triangles of the symmetric
    ``L x L`` matrices, row by row (``L = 2``: ``J11, J12, J22``)."""
    import sympy as sp

    from ..model.symbols import V, alpha
    from ..symbolic.finite_temperature import beta
    from ..symbolic.replicon import derive_replicon
    eq = derive_replicon(L)
    iu = list(zip(*np.triu_indices(L)))
    J = [eq.J[i, j] for i, j in iu]
    C = [eq.C[i, j] for i, j in iu]
    zero_t = sp.lambdify((*J, alpha), eq.zero_temperature, "numpy")
    fin = sp.lambdify((*C, V, beta, alpha), eq.finite_beta, "numpy")
    syms = {s.name: s for s in eq.jump_per_slab.free_symbols}
    Dn, delta = syms["|Delta|"], syms["delta"]
    per_slab = sp.lambdify((Dn, V, delta), eq.jump_per_slab, "numpy")
    return zero_t, fin, per_slab


@dataclass
class RSStability:
    """The RS-stability report of one fixed point (module doc).

    ``replicon`` is :math:`\\lambda_R^{\\rm cont}`, ``growth`` the coefficient ``s`` of
    :math:`\\beta` (``0`` where no node is within ``delta`` of a tie), ``two_minima`` the
    Gaussian weight of the nodes with a second local minimum, ``near_tie`` the weights within
    ``delta`` and ``10 delta`` of a tie, ``jump`` the mean :math:`|\\Delta|` there; ``_err`` are
    standard errors (over scrambles when combined, else from the node counts).  Where a term is
    not computed it is ``nan`` and ``replicon_note`` says why (the general model at rank
    ``r > 1``, :mod:`symattn.numerics.general_stability`)."""

    alpha: float
    replicon: float
    replicon_err: float
    growth: float
    growth_err: float
    two_minima: float
    near_tie: float
    near_tie_10: float
    jump: float
    n_nodes: int
    delta: float
    verdict: str
    reason: str
    per_rule: list = field(default_factory=list, repr=False)
    #: why ``replicon`` (and then ``growth``) is ``nan``, if it is; "" otherwise
    replicon_note: str = field(default="", repr=False)

    @property
    def beta_star(self) -> float:
        r"""The inverse temperature at which :math:`\lambda_{\rm cont} + s\beta` reaches one:
        the zero-temperature instability shows at :math:`\beta \gtrsim \beta^*` (``inf``
        where ``s = 0``, ``0`` where the continuous part alone exceeds one, ``nan`` where
        either term is not computed)."""
        if math.isnan(self.replicon) or math.isnan(self.growth):
            return math.nan
        if self.replicon >= 1:
            return 0.0
        return (1 - self.replicon) / self.growth if self.growth > 0 else math.inf

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "verdict", "reason", "replicon", "replicon_err", "growth", "growth_err",
            "two_minima", "near_tie", "near_tie_10", "jump", "n_nodes", "delta")}
        out["beta_star"] = self.beta_star if math.isfinite(self.beta_star) else None
        return out

    def __repr__(self) -> str:
        bs = (f"{self.beta_star:.3g}" if math.isfinite(self.beta_star)
              else "unknown" if math.isnan(self.beta_star) else "inf")
        return (f"RSStability({self.verdict}: replicon {format_estimate(self.replicon, self.replicon_err)}"
                f" + beta x {format_estimate(self.growth, self.growth_err)} (reaches 1 at beta "
                f"= {bs}); prox near a tie on {self.near_tie:.2e} of the measure (gap < "
                f"{self.delta:g}); {self.reason})")


def _verdict(replicon, replicon_err, n_tie, n_tie_10, delta, n, missing: str = ""):
    """``(verdict, reason)`` (module doc).  A ``nan`` replicon (not computed: ``missing`` says
    why) decides nothing: unstable if the prox jumps, else undecided, never stable."""
    if n_tie > 0:
        return "unstable", (f"the prox jumps: {n_tie} of {n} nodes have their two lowest minima "
                            f"within {delta:g}, so the replicon grows like beta at zero "
                            f"temperature")
    if math.isnan(replicon):
        return "undecided", (f"{missing or 'the replicon is not available'}; no node within "
                             f"{delta:g} of a tie among {n} ({n_tie_10} within {10 * delta:g})")
    if replicon - 2 * replicon_err >= 1:
        return "unstable", "the replicon of the continuous prox exceeds 1"
    if n_tie_10 == 0 and replicon + 2 * replicon_err < 1:
        return "stable", (f"replicon below 1 and no node within {10 * delta:g} of a tie among "
                          f"{n} (a jump set lighter than ~1/{n} of the measure per "
                          f"{10 * delta:g} of gap is not resolved)")
    return "undecided", (f"{n_tie_10} nodes within {10 * delta:g} of a tie, none within "
                         f"{delta:g}; a finer rule decides")


def rs_stability(channel, x, alpha: float, *, delta: float = DEFAULT_DELTA,
                 minima=None) -> RSStability:
    """The RS-stability report at ``x = (q, m, theta, V)`` on ``channel``'s rule
    (an :class:`~symattn.numerics.channel.OutputChannel`; module doc).  ``minima``: the
    :class:`~symattn.numerics.prox.ProxResult` at ``x`` if already computed."""
    q, m, theta, V = (float(v) for v in x)
    p = channel.params
    w, t = channel.diagonal_nodes(q, m, theta)
    pr = minima if minima is not None else prox(w, t, V, p.sigma, gtol=channel.gtol)
    zero_t = _replicon_kernels()[0]
    J = np.linalg.inv(V * _hessian(pr.h, w, t, V, p.sigma))
    cont = zero_t(J[:, 0, 0], J[:, 0, 1], J[:, 1, 1], alpha)
    return stability_report(alpha, channel.nodes.weights, pr.converged, pr.gap,
                            np.linalg.norm(pr.h - pr.h2, axis=1), cont=cont, V=V, delta=delta)


def stability_report(alpha: float, wt, converged, gap, jump, *, cont=None, V=None,
                     delta: float = DEFAULT_DELTA, L: int = 2, note: str = "") -> RSStability:
    r"""The report from node values (module doc), for the paper's shape and the general model:
    weights ``wt``, prox ``converged``, ``gap`` between the two lowest minima (``inf`` without a
    second), ``jump`` :math:`|\Delta|`; ``cont`` the replicon integrand and ``V`` the scalar
    response, or ``None`` where they are not derived (then replicon and growth are ``nan`` and
    ``note`` says why)."""
    ok = converged & (np.isfinite(cont) if cont is not None else True)
    n = int(ok.sum())
    if cont is not None and n:
        replicon = float(wt[ok] @ cont[ok] / wt[ok].sum())
        replicon_err = float(np.std(cont[ok]) / math.sqrt(n))   # i.i.d. bound; RQMC is tighter
    else:
        replicon = replicon_err = math.nan
    tie = ok & (gap < delta)
    tie10 = ok & (gap < 10 * delta)
    n_tie, n_tie_10 = int(tie.sum()), int(tie10.sum())
    if V is not None:
        per_slab = _replicon_kernels(L)[2]
        contrib = np.where(tie, alpha * per_slab(np.where(tie, jump, 0.0), V, delta), 0.0)
        growth = float(wt @ contrib)
        growth_err = growth / math.sqrt(n_tie) if n_tie else 0.0
    else:
        growth = growth_err = math.nan
    verdict, reason = _verdict(replicon, replicon_err, n_tie, n_tie_10, delta, n, note)
    return RSStability(alpha=alpha, replicon=replicon, replicon_err=replicon_err,
                       growth=growth, growth_err=growth_err,
                       two_minima=float(wt[ok & np.isfinite(gap)].sum()),
                       near_tie=float(wt[tie].sum()), near_tie_10=float(wt[tie10].sum()),
                       jump=float(jump[tie].mean()) if n_tie else math.nan, n_nodes=n,
                       delta=delta, verdict=verdict, reason=reason, replicon_note=note)


def combine_stability(reports) -> RSStability:
    """One report from the reports of independent scrambles: means, standard errors over them,
    node counts pooled for the verdict."""
    from ..stats import mean_se
    reports = list(reports)
    if len(reports) == 1:
        return reports[0]
    r0 = reports[0]
    mean = {k: mean_se([getattr(r, k) for r in reports]) for k in ("replicon", "growth")}
    n = sum(r.n_nodes for r in reports)
    n_tie = sum(round(r.near_tie * r.n_nodes) for r in reports)
    n_tie_10 = sum(round(r.near_tie_10 * r.n_nodes) for r in reports)
    jumps = [r.jump for r in reports if math.isfinite(r.jump)]
    verdict, reason = _verdict(*mean["replicon"], n_tie, n_tie_10, r0.delta, n, r0.replicon_note)
    return RSStability(alpha=r0.alpha, replicon=mean["replicon"][0],
                       replicon_err=mean["replicon"][1], growth=mean["growth"][0],
                       growth_err=mean["growth"][1],
                       two_minima=float(np.mean([r.two_minima for r in reports])),
                       near_tie=float(np.mean([r.near_tie for r in reports])),
                       near_tie_10=float(np.mean([r.near_tie_10 for r in reports])),
                       jump=float(np.mean(jumps)) if jumps else math.nan, n_nodes=n,
                       delta=r0.delta, verdict=verdict, reason=reason, per_rule=reports,
                       replicon_note=r0.replicon_note)


def replicon_at_beta(channel, x, alpha: float, beta: float, *, order: int = 24,
                     minima=None) -> float:
    r""":math:`\lambda_R(\beta) = \alpha\,\mathbb E\lVert\beta C/V - I\rVert_F^2` at ``x`` with the
    Gibbs covariance of :func:`~symattn.numerics.finite_temperature.gibbs_moments` (the order
    parameters held at ``x``: the finite-temperature fixed point moves by ``O(1/beta)``)."""
    q, m, theta, V = (float(v) for v in x)
    p = channel.params
    w, t = channel.diagonal_nodes(q, m, theta)
    g = gibbs_moments(w, t, V, beta, p.sigma, order=order, minima=minima)
    _, fin, _ = _replicon_kernels()
    vals = fin(g.cov[:, 0, 0], g.cov[:, 0, 1], g.cov[:, 1, 1], V, beta, alpha)
    return float(channel.nodes.weights @ vals)


def stability_at(params, alpha: float, x, *, log2n: int = 14, rules: int = 4,
                 seed0: int = 1000, gtol: float = 1e-13,
                 delta: float = DEFAULT_DELTA) -> RSStability:
    """The RS-stability report at a known fixed point ``x`` (e.g. a mean over scrambles) from
    ``rules`` fresh scrambles of ``2**log2n`` points (seeds from ``seed0``), combined
    (:func:`combine_stability`).  No fixed point is solved: the report integrates at ``x``."""
    from .channel import OutputChannel
    from .quadrature import SobolRule
    reports = [rs_stability(OutputChannel(params, SobolRule(log2n, seed0 + k).nodes(),
                                          gtol=gtol), x, alpha, delta=delta)
               for k in range(rules)]
    return combine_stability(reports)
