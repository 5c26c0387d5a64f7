r"""The output (loss) channel of every shape: the expectation atoms of the hat equations on a
node set, in the solver's coordinates.

At order parameters ``x`` (:class:`~symattn.numerics.coordinates.Coordinates`: ``q``,
``M = P m``, ``theta``, ``V``) every node of a :class:`NodeSet` (``xi`` and ``eta`` per token)
is mapped to the student's means :math:`w_l = M_l + K\xi_l` and the teacher's
pre-activations :math:`h^*_l = \theta K^{-\top}\xi_l + B\eta_l` (model page §7; at the
paper's shape :math:`w_l = \sqrt q\,\xi_l + s_l m`,
:math:`h^*_l = \theta\xi_l/\sqrt q + \sqrt{\rho-\theta^2/q}\,\eta_l`, §4), the prox is
solved once per node from the instance's start set, and every integrand -- the atoms of the
generated equations (:mod:`symattn.compile.general_equations`, in its order, named by
``ATOM_KEYS``), the envelope ``E[M]`` and ``E[loss(prox)]`` -- is averaged from that one
solve.  The work is one fused compiled pass per shape
(:class:`~symattn.numerics.general.GeneralChannel`, :mod:`symattn.compile.general_channel`).

The methods taking scalar ``(q, m, theta)`` (:meth:`OutputChannel.node_map`,
:meth:`~OutputChannel.diagonal_nodes`, ...) serve the paper's numpy-prox consumers
(stability, 1RSB, preintegration) and refuse other shapes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scipy import special

from ..compile.generated import shape_kernels
from ..compile.kernels import SETTING
from ..model.params import ModelParams
from ..results import Status
from .coordinates import Coordinates, InvalidOrderParameters
from .general import GeneralChannel, tie_candidates
from .prox import ProxResult
from .quadrature import NodeSet

__all__ = ["OutputChannel", "ChannelState", "ChannelMeans", "MeansView", "InvalidOrderParameters"]


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
    r"""Output-channel averages at ``x``, with what the Jacobian needs.

    The selection between the best and the runner-up local minimum at each node is smoothed:
    the best gets weight :math:`p = \mathrm{logistic}(\Delta G/\varepsilon)`,
    :math:`\Delta G = G_{\rm 2nd} - G_{\rm best} \ge 0`, the runner-up :math:`1-p`.  For
    :math:`\Delta G \gg \varepsilon` this is the hard global minimum; the smoothing makes the
    quadrature map continuous in ``x`` (a node crossing a switching surface no longer makes the
    map jump), at a bias of order :math:`\varepsilon^2` times the density of ties.

    ``means`` holds the averaged rows: the atoms (the generated equations' order,
    :attr:`~symattn.numerics.coordinates.Coordinates.atom_keys`), then ``E[M]``, then
    ``E[loss(prox)]``.  Per node (``n`` nodes): the student's means ``w`` ``(n, L r)`` and
    the minima in ``prox`` (``h``, ``h2`` ``(n, L r)``).
    """

    x: np.ndarray
    eps: float
    w: np.ndarray
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
    """Evaluate the output channel of ``params`` on ``nodes`` in the solver's coordinates
    (module doc; :class:`~symattn.numerics.coordinates.Coordinates`).

    Parameters
    ----------
    params : ModelParams
    nodes : NodeSet
        In ``L (r + r_t)`` Gaussian dimensions (:func:`~symattn.numerics.general.nodes_for`).
    gtol : float
        Gradient tolerance of the prox Newton solves.
    coordinates : Coordinates, optional
        The coordinates ``x`` is given in (default: ``Coordinates(params)``).
    general : GeneralChannel, optional
        The fused pass on ``nodes`` to use (default: a new one).
    """

    def __init__(self, params: ModelParams, nodes: NodeSet, gtol: float = 1e-13,
                 coordinates: Coordinates | None = None, general: GeneralChannel | None = None):
        self.params = params
        self.nodes = nodes
        self.gtol = gtol
        self.coordinates = coordinates or Coordinates(params)
        self._n_atoms = self.coordinates.n_atoms
        self._general = general or GeneralChannel(self.params, nodes, gtol=gtol)

    def order_parameters(self, x):
        """The matrices of ``x`` (:meth:`Coordinates.order_parameters`), checked to lie in
        the domain (:class:`InvalidOrderParameters` if not)."""
        self.coordinates.factors(x)
        return self.coordinates.order_parameters(x)

    # -- the paper's scalar node map, for the paper's numpy-prox consumers -------------------
    def _paper(self):
        self.params.require_paper_shape("this method of the output channel")
        return np.array(SETTING.signs, float)

    def _check_domain(self, q, theta, V=1.0):
        if not V > 0:
            raise InvalidOrderParameters(f"need V > 0; got V={V}")
        if not (q > 0 and theta**2 < q * self.params.rho):
            raise InvalidOrderParameters(f"need q > 0 and theta^2 < q rho; got q={q}, theta={theta}")

    def node_map(self, q, m, theta):
        """``(w, hs)``, each ``(n, 2)`` (the paper's shape)."""
        signs = self._paper()
        p = self.params
        self._check_domain(q, theta)
        xi, eta = self.nodes.xi, self.nodes.eta
        w = np.sqrt(q) * xi + signs * m
        hs = theta / np.sqrt(q) * xi + np.sqrt(p.rho - theta**2 / q) * eta
        return w, hs

    def targets(self, hs):
        """The teacher's target matrices ``T(h*)``, ``(n, 2, 2)`` (the paper's shape)."""
        self._paper()
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
        """``(w, T)`` at ``x = (q, m, theta, V)``: the node map and the targets ``(n, 2, 2)``
        (for callers that solve the prox themselves, e.g. along preintegration lines)."""
        q, m, theta, V = x
        self._check_domain(q, theta, V)
        w, hs = self.node_map(q, m, theta)
        return w, self.targets(hs)

    def _rows(self, idx, w, t, h, G, V):
        """Integrand rows ``(n, n_atoms + 2)`` at nodes ``idx`` with prox ``h`` and value ``G``
        (the paper's shape): the atoms, ``M = G`` and ``loss(h)``.  ``w``, ``t`` are those of
        the nodes (the node map at the point the rows are wanted for, which they determine
        with ``V``)."""
        self._paper()
        w = np.asarray(w, float)
        T = np.asarray(t, float)
        xi = np.ascontiguousarray(self.nodes.xi[idx])
        eta = np.ascontiguousarray(self.nodes.eta[idx])
        out = np.empty((len(xi), self._n_atoms + 1))
        self._general.fused.rows_nodes(xi, eta, np.ascontiguousarray(h, float),
                                       np.ascontiguousarray(w), np.array([[1.0 / V]]),
                                       _target_matrix(T), float(self.params.sigma), out)
        return self._with_M(out, G)

    # -- every shape ---------------------------------------------------------------------
    def _with_M(self, rows, G) -> np.ndarray:
        """The pass's rows (atoms, loss) with ``M = G`` between them."""
        na = self._n_atoms
        out = np.empty((rows.shape[0], na + 2))
        out[:, :na] = rows[:, :na]
        out[:, na] = G
        out[:, na + 1] = rows[:, na]
        return out

    def _state(self, x, eps, pas) -> ChannelState:
        """A :class:`ChannelState` from a pass with per-node minima and rows."""
        w, _ = self._general.node_map(self.coordinates.order_parameters(x))
        n = w.shape[0]
        pr = ProxResult(h=pas["h"].reshape(n, -1), value=pas["G"], converged=pas["conv"],
                        h2=pas["h2"].reshape(n, -1), value2=pas["G2"], iterations=0)
        gap = pr.gap
        p = np.ones(n)
        cand = tie_candidates(gap, eps)
        p[cand] = special.expit(gap[cand] / eps)
        rows_best = self._with_M(pas["rows"], pas["G"])
        rows_second = np.full_like(rows_best, np.nan)
        if cand.any():
            rows_second[cand] = self._with_M(pas["rows2"][cand], pas["G2"][cand])
        return ChannelState(x=x, eps=eps, w=w.reshape(n, -1), prox=pr, p=p, rows_best=rows_best, rows_second=rows_second,
                            means=pas["sums"], n_atoms=self._n_atoms)

    def _pass(self, x, eps, starts=None, only_given=False, keep=True, rows=True, idx=None):
        X = self.order_parameters(x)
        given = None if starts is None else np.ascontiguousarray(starts, float)
        return self._general._pass(X, given, only_given, eps, keep=keep, rows=rows, idx=idx)

    def evaluate(self, x, eps: float = 1e-10, starts=None) -> ChannelState:
        """Global multi-start prox at every node and the smoothed averages at ``x``.

        ``starts`` (``(n, k, L r)``, optional) replaces the default starts by warm ones, e.g.
        the local minima of every node at a nearby ``x``: Newton then converges in a few
        steps (the default starts are added where they do not converge).  The minima followed
        from a nearby ``x`` are the global ones unless a new minimum became global in
        between; a minimum born at a fold starts no lower than the minimum its saddle connects
        it to, so for small moves that is rare (measured: docs/numerics.md, section 'The
        method, per large scramble'), and callers check
        (:class:`~symattn.refine.precise.ChunkedChannel`).
        """
        x = np.asarray(x, float)
        return self._state(x, eps, self._pass(x, eps, starts))

    def means(self, x, eps: float = 1e-10, starts=None, keep: bool = False):
        """The averages of :meth:`evaluate` without per-node arrays, by one compiled pass:
        ``(ChannelMeans, minima)``.

        ``minima``: with ``keep``, every node's best and runner-up minimum ``(h, h2)``, each
        ``(n, L r)`` (warm starts for a nearby ``x``), else ``None``.
        """
        x = np.asarray(x, float)
        pas = self._pass(x, eps, starts, keep=keep, rows=False)
        out = ChannelMeans(x=x, eps=eps, means=pas["sums"], n_atoms=self._n_atoms,
                           n_failed=pas["failed"], n_ties=pas["mixed"])
        n = self.nodes.size
        return out, ((pas["h"].reshape(n, -1), pas["h2"].reshape(n, -1)) if keep else None)

    def derivative(self, state: ChannelState, j: int, step: float) -> np.ndarray:
        r""":math:`\partial\,\mathrm{means}/\partial x_j` of the smoothed averages.

        Each local minimum is followed by Newton from its position at ``x`` (a smooth
        function of ``x``; forward difference of size ``step``); the smoothing weight is
        differentiated analytically, :math:`\partial p = p(1-p)\,\partial\Delta G/\varepsilon`,
        which captures the motion of the switching surfaces exactly.
        """
        x = state.x.copy()
        x[j] += step
        best = self._pass(x, 0.0, state.prox.h[:, None, :], only_given=True)
        rows = self._with_M(best["rows"], best["G"])
        d_best = (rows - state.rows_best) / step
        p = state.p
        d_mixed = d_best
        cand = tie_candidates(state.prox.gap, state.eps)
        if cand.any():
            idx = np.flatnonzero(cand)
            sec = self._pass(x, 0.0, state.prox.h2[idx][:, None, :], only_given=True, idx=idx)
            rows2 = self._with_M(sec["rows"], sec["G"])
            d_second = (rows2 - state.rows_second[idx]) / step
            d_gap = ((sec["G"] - best["G"][idx]) - state.prox.gap[idx]) / step
            pi = p[idx][:, None]
            dp = (p[idx] * (1 - p[idx]) * d_gap / state.eps)[:, None]
            d_mixed = d_best.copy()
            d_mixed[idx] = (pi * d_best[idx] + (1 - pi) * d_second
                            + dp * (state.rows_best[idx] - state.rows_second[idx]))
        return self.nodes.expect(d_mixed)


def _target_matrix(t) -> np.ndarray:
    from .prox import target_matrix
    return np.ascontiguousarray(target_matrix(t))
