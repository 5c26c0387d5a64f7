r"""The output (loss) channel: the expectation atoms of the hat equations on a node set.

At order parameters ``(q, m, theta, V)`` every node ``(xi, eta)`` of a :class:`NodeSet` is
mapped to (model page §4)

.. math::

    w_l = \sqrt q\,\xi_l + s_l m, \qquad
    h^*_l = \frac{\theta}{\sqrt q}\xi_l + \sqrt{\rho-\theta^2/q}\,\eta_l, \qquad
    T_{ll} = (1-\omega)\,\mathrm{logistic}(h^{*2}_l - h^*_1h^*_2) + \omega A_{ll},

the prox is solved once per node, and every integrand (the atoms ``E[f_l]``, ``E[f_l^2]``,
``E[xi_l f_l]``, ``E[eta_l f_l]`` of :func:`symattn.compile.kernels.atom_list`, the envelope
``E[M]`` and ``E[loss(prox)]``) is averaged from that one solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scipy import special

from ..compile.generated import shape_kernels
from ..compile.kernels import SETTING, channel_module, channel_rows_kernel, n_atoms
from ..model.params import ModelParams
from ..results import Status
from .prox import ProxResult, prox
from .quadrature import NodeSet

__all__ = ["OutputChannel", "ChannelState", "ChannelMeans", "MeansView",
           "InvalidOrderParameters"]


class InvalidOrderParameters(ValueError):
    """``(q, m, theta, V)`` outside the domain ``q > 0, V > 0, theta^2 < q rho``."""


def tie_candidates(gap, eps):
    """Nodes whose runner-up minimum is close enough to matter in the smoothed selection."""
    return np.isfinite(gap) & (gap < 800.0 * eps)


class MeansView:
    """Named views of ``means`` (the atoms, then ``E[M]``, then ``E[loss(prox)]``)."""

    means: np.ndarray
    n_atoms: int

    @property
    def atoms(self) -> np.ndarray:
        return self.means[: self.n_atoms]

    @property
    def E_M(self) -> float:
        return float(self.means[self.n_atoms])

    @property
    def E_loss(self) -> float:
        return float(self.means[self.n_atoms + 1])

    @property
    def status(self) -> Status:
        """Whether every node's prox converged (the averages are trustworthy only then)."""
        n = getattr(self, "n_failed", 0)
        return Status(converged=n == 0, message="converged" if n == 0 else
                      f"{n} prox solves did not converge")


@dataclass
class ChannelMeans(MeansView):
    """The averages of :class:`ChannelState` without per-node arrays (large or preintegrated
    node sets, which have no Jacobian).

    ``error_estimate``: the integrator's own estimate of its error in the average it was
    steered by (``nan`` if it has none); ``diagnostics``: counts of the evaluation (e.g.
    ``switches`` located, ``lines`` integrated), documented by the channel that fills them.
    """

    x: np.ndarray
    eps: float
    means: np.ndarray
    n_atoms: int
    n_failed: int
    n_ties: int
    error_estimate: float = math.nan
    diagnostics: dict = field(default_factory=dict)


@dataclass
class ChannelState(MeansView):
    r"""Output-channel averages at ``x = (q, m, theta, V)``, with what the Jacobian needs.

    The selection between the best and the runner-up local minimum at each node is smoothed:
    the best gets weight :math:`p = \mathrm{logistic}(\Delta G/\varepsilon)`,
    :math:`\Delta G = G_{\rm 2nd} - G_{\rm best} \ge 0`, the runner-up :math:`1-p`.  For
    :math:`\Delta G \gg \varepsilon` this is the hard global minimum; the smoothing makes the
    quadrature map continuous in ``x`` (a node crossing a switching surface no longer makes the
    map jump), at a bias of order :math:`\varepsilon^2` times the density of ties.

    ``means`` holds the averaged rows: the atoms (order of
    :func:`symattn.compile.kernels.atom_list`), then ``E[M]``, then ``E[loss(prox)]``.
    """

    x: np.ndarray
    eps: float
    w: np.ndarray
    t: np.ndarray
    prox: ProxResult
    p: np.ndarray
    rows_best: np.ndarray
    rows_second: np.ndarray
    means: np.ndarray
    n_atoms: int

    @property
    def n_failed(self) -> int:
        return self.prox.n_failed

    @property
    def n_ties(self) -> int:
        """Nodes where the smoothing mixes two minima (``1 - p > 1e-12``)."""
        return int(np.count_nonzero(1 - self.p > 1e-12))


class OutputChannel:
    """Evaluate the output channel of ``params`` on ``nodes``.

    Parameters
    ----------
    params : ModelParams
    nodes : NodeSet
    gtol : float
        Gradient tolerance of the prox Newton solves.
    """

    def __init__(self, params: ModelParams, nodes: NodeSet, gtol: float = 1e-13):
        self.params = params.require_paper_shape("the paper's output channel")
        self.nodes = nodes
        self.gtol = gtol
        self._signs = np.array(SETTING.signs, float)
        self._n_atoms = n_atoms()

    def _check_domain(self, q, theta, V=1.0):
        if not V > 0:
            raise InvalidOrderParameters(f"need V > 0; got V={V}")
        if not (q > 0 and theta**2 < q * self.params.rho):
            raise InvalidOrderParameters(f"need q > 0 and theta^2 < q rho; got q={q}, theta={theta}")

    def node_map(self, q, m, theta):
        """``(w, hs)``, each ``(n, 2)``."""
        p = self.params
        self._check_domain(q, theta)
        xi, eta = self.nodes.xi, self.nodes.eta
        w = np.sqrt(q) * xi + self._signs * m
        hs = theta / np.sqrt(q) * xi + np.sqrt(p.rho - theta**2 / q) * eta
        return w, hs

    def targets(self, hs):
        """The teacher's target matrices ``T(h*)``, ``(n, 2, 2)``."""
        p = self.params
        T = np.empty((hs.shape[0], 2, 2))
        shape_kernels().teacher_nodes(np.ascontiguousarray(hs), float(p.omega), p.A_array, T)
        return T

    def diagonal_nodes(self, q, m, theta):
        """``(w, t)``: the student's mean pre-activations and the diagonal of the teacher's
        targets, each ``(n, 2)`` (what :func:`~symattn.numerics.prox.prox` takes at the
        paper's shape)."""
        w, hs = self.node_map(q, m, theta)
        return w, np.diagonal(self.targets(hs), axis1=1, axis2=2).copy()

    def _setup(self, x):
        q, m, theta, V = x
        self._check_domain(q, theta, V)
        w, hs = self.node_map(q, m, theta)
        return w, self.targets(hs)

    def _rows(self, idx, w, t, h, G, V):
        """Integrand rows ``(n, n_atoms + 2)`` at nodes ``idx`` with prox ``h`` and value ``G``:
        the atoms, ``M = G`` and ``loss(h)``."""
        xi = np.ascontiguousarray(self.nodes.xi[idx])
        eta = np.ascontiguousarray(self.nodes.eta[idx])
        na = self._n_atoms
        out = np.empty((len(xi), na + 1))
        channel_rows_kernel()(xi, eta, np.ascontiguousarray(h), np.ascontiguousarray(w),
                              np.ascontiguousarray(t), float(V), float(self.params.sigma), out)
        rows = np.empty((len(xi), na + 2))
        rows[:, :na] = out[:, :na]
        rows[:, na] = G
        rows[:, na + 1] = out[:, na]
        return rows

    def _prox(self, w, t, V, starts):
        """The global prox: multi-start, or (``starts`` given, ``(n, k, 2)``) Newton from
        ``starts`` only, with the default starts added at the nodes where that fails."""
        sig = self.params.sigma
        if starts is None:
            return prox(w, t, V, sig, gtol=self.gtol)
        pr = prox(w, t, V, sig, gtol=self.gtol, extra_starts=starts, include_default=False)
        bad = np.flatnonzero(~pr.converged)
        if bad.size:
            redo = prox(w[bad], t[bad], V, sig, gtol=self.gtol, extra_starts=starts[bad])
            for name in ("h", "value", "converged", "h2", "value2"):
                getattr(pr, name)[bad] = getattr(redo, name)
        return pr

    def evaluate(self, x, eps: float = 1e-10, starts=None) -> ChannelState:
        """Global multi-start prox at every node and the smoothed averages at ``x``.

        ``starts`` (``(n, k, 2)``, optional) replaces the default starts by warm ones, e.g.
        the local minima of every node at a nearby ``x``: Newton then converges in a few
        steps.  The minima followed from a nearby ``x`` are the global ones unless a new
        minimum became global in between; a minimum born at a fold starts no lower than the
        minimum its saddle connects it to, so for small moves that is rare (measured:
        docs/numerics.md, section 'The method, per large scramble'), and callers check
        (:class:`~symattn.refine.precise.ChunkedChannel`).
        """
        x = np.asarray(x, float)
        w, t = self._setup(x)
        V = x[3]
        pr = self._prox(w, t, V, starts)
        n = w.shape[0]
        allidx = np.arange(n)
        rows_best = self._rows(allidx, w, t, pr.h, pr.value, V)
        rows_second = np.full_like(rows_best, np.nan)
        gap = pr.gap
        p = np.ones(n)
        cand = tie_candidates(gap, eps)
        if cand.any():
            idx = np.flatnonzero(cand)
            rows_second[idx] = self._rows(idx, w[idx], t[idx], pr.h2[idx], pr.value2[idx], V)
            p[idx] = special.expit(gap[idx] / eps)
        mixed = np.where(cand[:, None], p[:, None] * rows_best + (1 - p[:, None]) * rows_second,
                         rows_best)
        means = self.nodes.expect(mixed)
        return ChannelState(x=x, eps=eps, w=w, t=t, prox=pr, p=p, rows_best=rows_best,
                            rows_second=rows_second, means=means, n_atoms=self._n_atoms)

    #: chunks of the fused kernel's sums: fixed, so the sums do not depend on the threads
    FUSED_CHUNKS = 1024

    def means(self, x, eps: float = 1e-10, starts=None, keep: bool = False):
        """The averages of :meth:`evaluate` without per-node arrays, by one compiled pass
        (:mod:`symattn.compile.channel_driver`): ``(ChannelMeans, minima)``.

        The same numbers as ``evaluate(x, eps, starts).means`` up to the order of summation.
        ``minima``: with ``keep``, every node's best and runner-up minimum ``(h, h2)``, each
        ``(n, 2)`` (warm starts for a nearby ``x``), else ``None``.
        """
        x = np.asarray(x, float)
        q, m, theta, V = (float(v) for v in x)
        p = self.params
        self._check_domain(q, theta, V)
        if not hasattr(self, "_xi_eta"):
            self._xi_eta = (np.ascontiguousarray(self.nodes.xi),
                            np.ascontiguousarray(self.nodes.eta),
                            np.ascontiguousarray(self.nodes.weights, float))
        xi, eta, wts = self._xi_eta
        n = len(wts)
        chunks = max(1, min(n, self.FUSED_CHUNKS))
        sums = np.zeros((chunks, self._n_atoms + 2))
        counts = np.zeros((chunks, 2), np.int64)
        given = starts is not None
        S = (np.ascontiguousarray(starts, float) if given else np.empty((n, 0, 2)))
        h, h2 = (np.empty((n, 2)), np.empty((n, 2))) if keep else (np.empty((0, 2)),) * 2
        channel_module().channel_sums(xi, eta, wts, q, m, theta, V, float(p.sigma),
                                      float(p.omega), p.A_array, float(p.rho), float(eps), S,
                                      given, float(self.gtol), 100, keep, h, h2, sums, counts)
        failed, ties = (int(v) for v in counts.sum(axis=0))
        out = ChannelMeans(x=x, eps=eps, means=sums.sum(axis=0), n_atoms=self._n_atoms,
                           n_failed=failed, n_ties=ties)
        return out, ((h, h2) if keep else None)

    def derivative(self, state: ChannelState, j: int, step: float) -> np.ndarray:
        r""":math:`\partial\,\mathrm{means}/\partial x_j` of the smoothed averages.

        Each local minimum is followed by Newton from its position at ``x`` (a smooth
        function of ``x``; forward difference of size ``step``); the smoothing weight is
        differentiated analytically, :math:`\partial p = p(1-p)\,\partial\Delta G/\varepsilon`,
        which captures the motion of the switching surfaces exactly.
        """
        x = state.x.copy()
        x[j] += step
        w, t = self._setup(x)
        V = x[3]
        sig = self.params.sigma
        pr = prox(w, t, V, sig, gtol=self.gtol, extra_starts=state.prox.h[:, None, :],
                  include_default=False)
        n = w.shape[0]
        d_best = (self._rows(np.arange(n), w, t, pr.h, pr.value, V) - state.rows_best) / step
        p = state.p
        d_mixed = d_best
        cand = tie_candidates(state.prox.gap, state.eps)
        if cand.any():
            idx = np.flatnonzero(cand)
            pr2 = prox(w[idx], t[idx], V, sig, gtol=self.gtol,
                       extra_starts=state.prox.h2[idx][:, None, :], include_default=False)
            rows2 = self._rows(idx, w[idx], t[idx], pr2.h, pr2.value, V)
            d_second = (rows2 - state.rows_second[idx]) / step
            d_gap = ((pr2.value - pr.value[idx]) - state.prox.gap[idx]) / step
            pi = p[idx][:, None]
            dp = (p[idx] * (1 - p[idx]) * d_gap / state.eps)[:, None]
            d_mixed = d_best.copy()
            d_mixed[idx] = (pi * d_best[idx] + (1 - pi) * d_second
                            + dp * (state.rows_best[idx] - state.rows_second[idx]))
        return self.nodes.expect(d_mixed)
