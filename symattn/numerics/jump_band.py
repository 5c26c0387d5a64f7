r"""An outer rule adapted to the prox's jump surface, for the 1RSB point where the jump set is
light (docs: stability, 'Where the jump set is light').

Near RS the 1RSB solution is made by the outer nodes whose inner Gaussian, of width
:math:`\sqrt{q_1 - q_0}`, meets the surface where the global prox jumps.  At the semantic
:math:`\alpha_c` they are :math:`4\times10^{-5}` of the Gaussian measure (0.04 nodes of a
:math:`2^{10}`-point rule), so a plain rule has none of them, and its 1RSB equations have no
solution with :math:`q_0 < q_1` near the true one.  The rule here is **stratified**: the band
:math:`B` of outer points within ``reach`` inner standard deviations of a tie (at the RS point,
for :math:`q_1 - q_0 = D_{\rm band}`) is integrated with the points of a dense scrambled rule
that fall in it (weight :math:`2^{-\texttt{dense}}` each), the rest with the base rule's points
outside it (weight :math:`2^{-\texttt{log2n}}`).  Each part is an unbiased estimate of its
stratum's integral (independent scrambles), so the whole is one; only the band needs the
density, and it holds a few hundred dense points.

:math:`D_{\rm band}` is ``factor`` times the small-:math:`(q_1 - q_0)` theory's prediction from
the RS point alone (:func:`small_d_prediction`): :math:`D = \lambda_{\rm cont}D + C\sqrt D`, with
:math:`C = \alpha\,\rho(0)\,\mathbb E|\Delta|^3/(\sqrt\pi\,V)`, so
:math:`D^* = (C/(1 - \lambda_{\rm cont}))^2` (``studies/one_step_rsb_scaling.py`` checks
:math:`C` by direct inner integration).  The band is fixed by the RS point, not by the 1RSB point
being solved: the rule stays one rule (the map smooth), and ``reach`` leaves room for the
1RSB point's own :math:`q_0, V` and :math:`D` to differ from the RS ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["JumpBand", "gap_density", "small_d_prediction", "jump_band_rule",
           "GAP_WINDOWS", "BAND_SEED"]

#: gap windows for the density of the signed gap at zero (flat to the noise over 3e-4 ... 1e-2
#: at alpha = 1; the prediction averages the two)
GAP_WINDOWS = (1e-3, 3e-3)

#: the dense rule of base rule ``seed`` is scrambled with ``BAND_SEED + seed``: independent of
#: the base rules (seeds 0 ... 63) and of the studies' rules
BAND_SEED = 7919


def gap_density(weights, converged, gap, jump, power: int, window: float) -> float:
    r"""The density at zero of the signed gap between the two lowest Moreau minima, weighted by
    :math:`|\Delta|^{\rm power}`: the weighted mass of the nodes with gap below ``window``, over
    ``2 window`` (the gap is the absolute value of a signed one that crosses zero on the jump
    surface)."""
    tie = converged & (gap < window)
    return float(weights[tie] @ jump[tie] ** power) / (2 * window)


def small_d_prediction(alpha: float, V: float, rho3: float, replicon: float):
    r"""``(C, D*)`` of the small-:math:`(q_1 - q_0)` theory (module doc) from the
    :math:`|\Delta|^3`-weighted gap density ``rho3`` and the continuous replicon."""
    c = alpha * rho3 / (V * math.sqrt(math.pi))
    return c, (c / (1.0 - replicon)) ** 2


@dataclass(frozen=True)
class JumpBand:
    """A banded outer rule (module doc): ``nodes``; the theory's ``D_pred`` and the ``D_band``
    the band was drawn for; ``n_band`` dense points in the band, ``n_dropped`` base points in
    it (replaced), ``share`` the band's measure (the dense rule's estimate)."""

    nodes: object
    D_pred: float
    D_band: float
    reach: float
    n_band: int
    n_dropped: int
    share: float
    dense_log2n: int

    def as_dict(self) -> dict:
        return {"rule": self.nodes.label, "D_pred": self.D_pred, "D_band": self.D_band,
                "reach": self.reach, "n_band": self.n_band, "n_dropped": self.n_dropped,
                "share": self.share, "dense_log2n": self.dense_log2n}


def jump_band_rule(params, alpha: float, point, base, *, dense_log2n: int, seed: int,
                   reach: float = 8.0, factor: float = 4.0, gtol: float = 1e-13) -> JumpBand:
    r"""The base rule ``base`` (a :class:`~symattn.numerics.quadrature.NodeSet`) with the band
    around the jump surface at the RS point ``point = (q, m, theta, V)`` replaced by the points
    of a dense scrambled Sobol rule of ``2**dense_log2n`` points (scramble ``BAND_SEED + seed``)
    that fall in it (module doc).  The band: outer points whose two lowest Moreau minima are
    within ``reach`` times :math:`\sqrt{D_{\rm band}}\,|\Delta|/V` (what the gap changes over
    ``reach`` inner standard deviations), :math:`D_{\rm band}` = ``factor`` times the theory's
    :math:`D^*` on the dense rule."""
    from .channel import OutputChannel
    from .prox import prox
    from .quadrature import NodeSet, SobolRule
    from .stability import rs_stability

    if not (reach > 0 and factor > 0):
        raise ValueError(f"reach and factor must be positive, got {reach}, {factor}")
    q, m, theta, V = (float(v) for v in point)
    dense = OutputChannel(params, SobolRule(dense_log2n, BAND_SEED + seed).nodes(), gtol=gtol)
    coarse = OutputChannel(params, base, gtol=gtol)

    def minima(ch):
        w, t = ch.diagonal_nodes(q, m, theta)
        pr = prox(w, t, V, params.sigma, gtol=gtol)
        return pr, np.linalg.norm(pr.h - pr.h2, axis=1)

    pr, jump = minima(dense)
    wt = dense.nodes.weights
    rho3 = float(np.mean([gap_density(wt, pr.converged, pr.gap, jump, 3, d)
                          for d in GAP_WINDOWS]))
    replicon = rs_stability(dense, point, alpha, minima=pr).replicon
    _, d_pred = small_d_prediction(alpha, V, rho3, replicon)
    d_band = factor * d_pred

    def band(pr, jump):
        return pr.converged & np.isfinite(pr.gap) & (pr.gap < reach * math.sqrt(d_band)
                                                     * jump / V)

    in_dense = band(pr, jump)
    in_base = band(*minima(coarse))
    pts = np.concatenate([base.points[~in_base], dense.nodes.points[in_dense]])
    wts = np.concatenate([base.weights[~in_base], wt[in_dense]])
    label = (f"{base.label} with the jump band ({int(in_dense.sum())} points of "
             f"sobol(2^{dense_log2n}, seed={BAND_SEED + seed}))")
    return JumpBand(NodeSet(points=pts, weights=wts, label=label), D_pred=d_pred,
                    D_band=d_band, reach=reach, n_band=int(in_dense.sum()),
                    n_dropped=int(in_base.sum()), share=float(wt[in_dense].sum()),
                    dense_log2n=dense_log2n)
