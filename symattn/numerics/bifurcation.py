r"""Where the branches leave the trivial fixed point: exact linear stability by likelihood ratios.

At the trivial fixed point (``theta = m = 0``) the saddle-point map is block diagonal: ``theta``
is odd under :math:`\eta \to -\eta` and, for a swap-symmetric ``A`` (``A_11 = A_22``), ``m`` is
odd under the token swap, while ``q`` and ``V`` are even.  So the eigenvalues of the map's
Jacobian in the ``theta`` and ``m`` directions are the diagonal entries

.. math::

    \lambda_\theta = \frac{\sigma^2\rho}{\lambda + \hat V\sigma^2}\,
                     \frac{\partial\hat\theta}{\partial\theta}, \qquad
    \lambda_m = \frac{1}{\lambda + \hat V\sigma^2}\,\frac{\partial\hat m}{\partial m},

and a branch bifurcates from the trivial one where its eigenvalue crosses one.

The derivatives cannot be taken node by node: :math:`f` jumps where the global minimiser of the
Moreau objective switches, and a pathwise (node-by-node) derivative misses the surface terms of
those jumps, which are large here.  Instead the order parameter is moved into the Gaussian
weight.  Per token, :math:`(w_l - s_l m, h^*_l)` is centred Gaussian with covariance
:math:`\begin{pmatrix} q & \theta \\ \theta & \rho \end{pmatrix}`, so for any integrand
:math:`g(w, h^*)`, jumps included,

.. math::

    \partial_\theta \mathbb{E}[g]\big|_{\theta=0} = \mathbb{E}\Big[g \sum_l \frac{\xi_l\eta_l}{\sqrt{q\rho}}\Big],
    \qquad
    \partial_m \mathbb{E}[g] = \mathbb{E}\Big[g \sum_l \frac{s_l \xi_l}{\sqrt{q}}\Big]

(the score of the Gaussian density).  With :math:`\hat\theta = \alpha\,\mathbb{E}[\eta\cdot f]/\sqrt{\rho - \theta^2/q}`
and :math:`\eta_l = (h^*_l - \theta\xi_l/\sqrt q)/\sqrt{\rho-\theta^2/q}` (which itself depends
on ``theta`` at fixed ``(w, h*)``),

.. math::

    \frac{\partial\hat\theta}{\partial\theta}\Big|_{\theta=0}
      = \frac{\alpha}{\sqrt\rho}\left(\mathbb{E}\Big[(\eta\cdot f)\sum_l\frac{\xi_l\eta_l}{\sqrt{q\rho}}\Big]
        - \frac{\mathbb{E}[\xi\cdot f]}{\sqrt{q\rho}}\right),
    \qquad
    \frac{\partial\hat m}{\partial m} = \alpha\,\mathbb{E}\Big[(f_1 - f_2)\frac{\xi_1 - \xi_2}{\sqrt q}\Big].

Both are plain averages over the nodes of one prox solve, so they carry the quadrature's own
error bar (spread over independent scrambles) and no smoothing bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from ..model.params import ModelParams
from ..results import Estimate, Status
from .branches import solve_branch
from .channel import OutputChannel
from .saddle import FixedPoint

__all__ = ["BranchEnd", "TrivialStability", "score_derivatives", "trivial_bifurcation",
           "trivial_stability"]


@dataclass(frozen=True)
class TrivialStability:
    """Eigenvalues of the map at the trivial fixed point ``fp`` (``alpha = fp.alpha``)."""

    fp: FixedPoint
    eig_theta: float
    eig_m: float


def score_derivatives(channel: OutputChannel, x, f) -> tuple[float, float]:
    r"""``(d theta_hat/d theta / alpha, d m_hat/d m / alpha)`` at ``x = (q, 0, 0, V)``.

    ``f`` is ``(n, 2)``: the output function at the channel's nodes (global minimiser).
    """
    q = x[0]
    rho = channel.params.rho
    xi, eta = channel.nodes.xi, channel.nodes.eta
    s = np.sqrt(q * rho)
    score_theta = (xi * eta).sum(axis=1) / s
    score_m = (xi[:, 0] - xi[:, 1]) / np.sqrt(q)
    rows = np.stack([(eta * f).sum(axis=1) * score_theta - (xi * f).sum(axis=1) / s,
                     (f[:, 0] - f[:, 1]) * score_m], axis=-1)
    d_theta, d_m = channel.nodes.expect(rows)
    return float(d_theta / np.sqrt(rho)), float(d_m)


def trivial_stability(params: ModelParams, alpha: float, channel: OutputChannel, *,
                      x0=None, tol: float = 1e-10) -> TrivialStability:
    """Solve the trivial fixed point at ``alpha`` and its ``theta`` and ``m`` eigenvalues.

    ``eig_theta`` is the ``theta`` eigenvalue for any ``A``; ``eig_m`` is the ``m`` eigenvalue
    only for ``A_11 = A_22`` (see the module doc).  Raises
    :class:`~symattn.numerics.branches.BranchNotFound` if the trivial point does not converge.
    """
    fp = solve_branch(params, "trivial", alpha, channel, x0=x0, tol=tol, with_eps_g=False)
    x = fp.x
    state = channel.evaluate(x)
    f = (state.prox.h - state.w) / x[3]
    d_theta, d_m = score_derivatives(channel, x, f)
    den = params.lam + fp.V_hat * params.sigma**2
    return TrivialStability(fp=fp, eig_theta=alpha * params.sigma**2 * params.rho * d_theta / den,
                            eig_m=alpha * d_m / den)


@dataclass
class BranchEnd:
    """Where a branch leaves the trivial point: ``alpha`` with its error bar and status.

    ``alpha`` is ``nan`` and ``status.converged`` False when the eigenvalue does not cross one
    on the scanned grid (``status.message`` says whether it was above one already at the first
    grid point); ``error`` is Brent's tolerance on ``alpha`` (one rule: no integration error
    here, that comes from comparing rules); ``scanned`` are the grid points visited.
    """

    direction: str
    alpha: float
    error: float
    status: Status
    scanned: list = field(repr=False, default_factory=list)

    @property
    def estimate(self) -> Estimate:
        return Estimate(self.alpha, self.error, self.status)

    def __repr__(self) -> str:
        return f"BranchEnd({self.direction}: alpha_b = {self.estimate!r}, {self.status!r})"


def trivial_bifurcation(params: ModelParams, channel: OutputChannel, direction: str,
                        alphas, *, tol: float = 1e-10, xtol: float = 1e-7) -> BranchEnd:
    """``alpha`` where the ``direction`` (``"theta"`` or ``"m"``) eigenvalue of the trivial point
    first crosses one, bracketed on the grid ``alphas`` (increasing, scanned in order up to the
    first crossing, warm-started) and refined by Brent's method.

    Returns a :class:`BranchEnd` whose ``scanned`` are the :class:`TrivialStability` of the grid
    points visited.  The ``m`` direction needs ``A_11 = A_22`` (otherwise ``m`` couples to
    ``q, V`` at the trivial point).
    """
    if direction not in ("theta", "m"):
        raise ValueError(f"direction must be 'theta' or 'm', got {direction!r}")
    if direction == "m" and params.A[0][0] != params.A[1][1]:
        raise ValueError("the m eigenvalue decouples only for a swap-symmetric A (A_11 = A_22)")
    key = "eig_" + direction
    scanned, x0 = [], None
    for k, a in enumerate(alphas):   # scanned in order, up to the first crossing
        st = trivial_stability(params, a, channel, x0=x0, tol=tol)
        scanned.append(st)
        x0 = st.fp.x
        if k and (getattr(scanned[k - 1], key) - 1.0) * (getattr(st, key) - 1.0) <= 0:
            warm = [scanned[k - 1].fp.x]   # each Brent step starts from the previous one's point

            def g(a, warm=warm):
                st = trivial_stability(params, a, channel, x0=warm[0], tol=tol)
                warm[0] = st.fp.x
                return getattr(st, key) - 1.0
            root, info = brentq(g, alphas[k - 1], alphas[k], xtol=xtol, full_output=True,
                                disp=False)
            status = Status(bool(info.converged), iterations=info.iterations,
                            message="bifurcation" if info.converged else info.flag)
            return BranchEnd(direction, root, xtol, status, scanned)
    first = getattr(scanned[0], key) if scanned else math.nan
    why = ("unstable at the first grid point" if first > 1 else
           "the eigenvalue stays below one on the grid")
    return BranchEnd(direction, math.nan, math.nan, Status(False, message=why), scanned)
