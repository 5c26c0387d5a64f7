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

This is the general model's channel (:class:`~symattn.numerics.general.GeneralChannel`, one
fused compiled pass per shape) at the paper's instance: ``L = 2``, ``r = r_t = 1``, the
paper's start set (:func:`~symattn.numerics.general.start_policy`), and the reduced order
parameters ``x = (q, m, theta, V)`` with ``M = (m, -m)`` (``Pi = s s^T`` keeps ``M`` along
``s``); the atoms are the general derivation's, in the paper's order (matched by
:func:`~symattn.compile.general_equations.atom_key`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scipy import special

from ..compile.generated import shape_kernels
from ..compile.kernels import SETTING, equations_module, n_atoms
from ..model.params import ModelParams
from ..results import Status
from .general import GeneralChannel, InvalidGeneralOrderParameters, OrderParameters, tie_candidates
from .prox import ProxResult
from .quadrature import NodeSet

__all__ = ["OutputChannel", "PaperEquations", "ChannelState", "ChannelMeans", "MeansView",
           "InvalidOrderParameters"]


class InvalidOrderParameters(ValueError):
    """``(q, m, theta, V)`` outside the domain ``q > 0, V > 0, theta^2 < q rho``."""


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
    """Evaluate the output channel of ``params`` on ``nodes`` (module doc).

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
        self._general = GeneralChannel(self.params, nodes, gtol=gtol)
        keys = self._general.equations.ATOM_KEYS
        self._perm = np.array([keys.index(k) for k in equations_module().ATOM_KEYS])

    def _check_domain(self, q, theta, V=1.0):
        if not V > 0:
            raise InvalidOrderParameters(f"need V > 0; got V={V}")
        if not (q > 0 and theta**2 < q * self.params.rho):
            raise InvalidOrderParameters(f"need q > 0 and theta^2 < q rho; got q={q}, theta={theta}")

    def order_parameters(self, x) -> OrderParameters:
        """``(q, m, theta, V)`` as the general model's matrices (``M = (m, -m)``)."""
        q, m, theta, V = (float(v) for v in x)
        self._check_domain(q, theta, V)
        return OrderParameters(np.array([[q]]), self._signs[:, None] * m, np.array([[theta]]),
                               np.array([[V]]))

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
        """``(w, T)`` at ``x = (q, m, theta, V)``: the node map and the targets ``(n, 2, 2)``
        (for callers that solve the prox themselves, e.g. along preintegration lines)."""
        q, m, theta, V = x
        self._check_domain(q, theta, V)
        w, hs = self.node_map(q, m, theta)
        return w, self.targets(hs)

    def _paper_rows(self, rows, G) -> np.ndarray:
        """General rows (atoms, loss) to the paper's: the atoms in its order, ``M = G``, the
        loss."""
        na = self._n_atoms
        out = np.empty((rows.shape[0], na + 2))
        out[:, :na] = rows[:, self._perm]
        out[:, na] = G
        out[:, na + 1] = rows[:, na]
        return out

    def _rows(self, idx, w, t, h, G, V):
        """Integrand rows ``(n, n_atoms + 2)`` at nodes ``idx`` with prox ``h`` and value ``G``:
        the atoms, ``M = G`` and ``loss(h)``.  ``w``, ``t`` are those of the nodes (the node
        map at the point the rows are wanted for, which they determine with ``V``)."""
        w = np.asarray(w, float)
        T = np.asarray(t, float)
        xi = np.ascontiguousarray(self.nodes.xi[idx])
        eta = np.ascontiguousarray(self.nodes.eta[idx])
        n = len(xi)
        out = np.empty((n, self._n_atoms + 1))
        self._general.fused.rows_nodes(xi, eta, np.ascontiguousarray(h, float),
                                       np.ascontiguousarray(w), np.array([[1.0 / V]]),
                                       _target_matrix(T), float(self.params.sigma), out)
        return self._paper_rows(out, G)

    def _state(self, x, eps, pas) -> ChannelState:
        """A :class:`ChannelState` from a pass with per-node minima and rows."""
        w, T = self._setup(x)
        pr = ProxResult(h=pas["h"][:, :, 0], value=pas["G"], converged=pas["conv"],
                        h2=pas["h2"][:, :, 0], value2=pas["G2"], iterations=0)
        gap = pr.gap
        n = len(gap)
        p = np.ones(n)
        cand = tie_candidates(gap, eps)
        p[cand] = special.expit(gap[cand] / eps)
        rows_best = self._paper_rows(pas["rows"], pas["G"])
        rows_second = np.full_like(rows_best, np.nan)
        if cand.any():
            rows_second[cand] = self._paper_rows(pas["rows2"][cand], pas["G2"][cand])
        means = self._means_of(pas["sums"])
        return ChannelState(x=x, eps=eps, w=w, t=T, prox=pr, p=p, rows_best=rows_best,
                            rows_second=rows_second, means=means, n_atoms=self._n_atoms)

    def _means_of(self, sums) -> np.ndarray:
        na = self._n_atoms
        out = np.empty(na + 2)
        out[:na] = sums[:na][self._perm]
        out[na:] = sums[na:]
        return out

    def _pass(self, x, eps, starts=None, only_given=False, keep=True, rows=True, idx=None):
        X = self.order_parameters(x)
        given = None if starts is None else np.ascontiguousarray(starts, float)
        try:
            return self._general._pass(X, given, only_given, eps, keep=keep, rows=rows, idx=idx)
        except InvalidGeneralOrderParameters as exc:
            raise InvalidOrderParameters(str(exc)) from None

    def evaluate(self, x, eps: float = 1e-10, starts=None) -> ChannelState:
        """Global multi-start prox at every node and the smoothed averages at ``x``.

        ``starts`` (``(n, k, 2)``, optional) replaces the default starts by warm ones, e.g.
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
        ``(n, 2)`` (warm starts for a nearby ``x``), else ``None``.
        """
        x = np.asarray(x, float)
        pas = self._pass(x, eps, starts, keep=keep, rows=False)
        out = ChannelMeans(x=x, eps=eps, means=self._means_of(pas["sums"]),
                           n_atoms=self._n_atoms, n_failed=pas["failed"], n_ties=pas["mixed"])
        return out, ((pas["h"][:, :, 0], pas["h2"][:, :, 0]) if keep else None)

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
        rows = self._paper_rows(best["rows"], best["G"])
        d_best = (rows - state.rows_best) / step
        p = state.p
        d_mixed = d_best
        cand = tie_candidates(state.prox.gap, state.eps)
        if cand.any():
            idx = np.flatnonzero(cand)
            sec = self._pass(x, 0.0, state.prox.h2[idx][:, None, :], only_given=True, idx=idx)
            rows2 = self._paper_rows(sec["rows"], sec["G"])
            d_second = (rows2 - state.rows_second[idx]) / step
            d_gap = ((sec["G"] - best["G"][idx]) - state.prox.gap[idx]) / step
            pi = p[idx][:, None]
            dp = (p[idx] * (1 - p[idx]) * d_gap / state.eps)[:, None]
            d_mixed = d_best.copy()
            d_mixed[idx] = (pi * d_best[idx] + (1 - pi) * d_second
                            + dp * (state.rows_best[idx] - state.rows_second[idx]))
        return self.nodes.expect(d_mixed)


class PaperEquations:
    r"""The generated saddle-point map of the general model
    (:mod:`symattn.compile.general_equations`) at the paper's instance, in its reduced
    variables, with the argument orders of the paper's scalar equations
    (:func:`symattn.compile.kernels.output_equations` and the rest), which it replaces in the
    solvers: ``M = s m`` and :math:`\hat m = s^\top\hat M` with ``s = (1, -1)`` (so ``M_hat =
    s m_hat / 2`` gives the same ``M``, ``q`` and ``Phi``: the prior sees ``M_hat`` only
    through :math:`\Pi\hat M = s\,\hat m`), :math:`K^{-\top} = 1/\sqrt q`,
    :math:`B^{-\top} = 1/\sqrt{\rho - \theta^2/q}`, the atoms in the paper's order
    (:func:`~symattn.compile.general_equations.atom_key`)."""

    def __init__(self, params: ModelParams):
        from ..compile.general_equations import general_equations
        from ..compile.shape import Shape
        self.params = params.require_paper_shape("the paper's equations")
        self._eqs = general_equations(Shape())
        keys = self._eqs.ATOM_KEYS
        self._perm = np.array([keys.index(k) for k in equations_module().ATOM_KEYS])
        self._Pi = np.asarray(params.Pi_array)[np.triu_indices(2)]

    def output(self, *args):
        """``(*atoms, q, m, theta, V, alpha, rho) -> (q_hat, m_hat, theta_hat, V_hat)``."""
        *atoms, q, m, theta, V, alpha, rho = args
        a = np.empty(len(atoms))
        a[self._perm] = atoms
        q_hat, M1, M2, th_hat, V_hat = self._eqs.output_equations(
            a, np.array([1 / math.sqrt(q)]), np.array([1 / math.sqrt(rho - theta**2 / q)]),
            np.array([q]), np.array([theta]), alpha, rho)
        return q_hat, M1 - M2, th_hat, V_hat

    def prior(self, q_hat, m_hat, theta_hat, V_hat, sigma, lam, rho):
        """``(q_hat, m_hat, theta_hat, V_hat, sigma, lam, rho) -> (q, m, theta, V)``."""
        q, M1, _, theta, V = self._eqs.prior_equations(
            np.array([q_hat]), np.array([m_hat / 2, -m_hat / 2]), np.array([theta_hat]),
            np.array([V_hat]), self._Pi, sigma, lam, rho)
        return q, M1, theta, V

    def phi(self, q, m, theta, V, q_hat, m_hat, theta_hat, V_hat, E_M, alpha, sigma, lam, rho):
        """``Phi`` (the paper's argument order)."""
        return self._eqs.phi(np.array([q]), np.array([m, -m]), np.array([theta]), np.array([V]),
                             np.array([q_hat]), np.array([m_hat / 2, -m_hat / 2]),
                             np.array([theta_hat]), np.array([V_hat]), E_M, self._Pi, alpha,
                             sigma, lam, rho)


def _target_matrix(t) -> np.ndarray:
    from .prox import target_matrix
    return np.ascontiguousarray(target_matrix(t))
