r"""Integration rules for Gaussian expectations over the nodes ``(xi_1, xi_2, eta_1, eta_2)``.

A :class:`NodeSet` is a list of points in :math:`\mathbb{R}^4` with weights summing to one,
approximating :math:`\mathbb{E}_{\xi,\eta\sim N(0,I_2)\otimes N(0,I_2)}[g]`.

* :class:`SobolRule` -- randomised quasi-Monte Carlo: ``2**log2n`` scrambled Sobol points
  (Owen scrambling, ``scipy.stats.qmc.Sobol``) mapped through the normal quantile. The
  default rule of symattn: the hat integrands jump across the surfaces where the global
  minimiser of the prox switches.  At the semantic fixed point near ``alpha_c``
  (``studies/quadrature_convergence.py``) RQMC errors fall faster with the number of nodes
  than tensor Gauss-Hermite ones, which fall erratically (measured: docs/numerics.md, section
  'Integration: measured convergence').  Independent scrambles (different ``seed``) give
  independent, unbiased estimates, whose spread is the integration error bar.  A rule can be
  *folded* onto the fundamental domain of a symmetry of the integrands (:data:`FOLDS`): the
  same number of points then covers a half or a quarter of the space.
* :class:`GaussHermiteRule` -- tensor Gauss-Hermite, kept for cross-checks and for the
  smooth expectations (``eps_g``, ``eps_lin``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import special
from scipy.stats import qmc

__all__ = ["FOLDS", "GaussHermiteRule", "NodeSet", "SobolRule", "gauss_hermite_1d"]


@dataclass(frozen=True)
class RuleLabel:
    """What a channel without a node set (a preintegrated one) shows in its place: a label for
    messages and the number of outer points (``0`` if none)."""

    label: str
    size: int = 0


@dataclass(frozen=True)
class NodeSet:
    """Points ``(n, 4)`` = ``(xi_1, xi_2, eta_1, eta_2)`` and weights ``(n,)`` summing to one."""

    points: np.ndarray
    weights: np.ndarray
    label: str

    @property
    def xi(self) -> np.ndarray:
        return self.points[:, :2]

    @property
    def eta(self) -> np.ndarray:
        return self.points[:, 2:]

    @property
    def size(self) -> int:
        return self.points.shape[0]

    def expect(self, values: np.ndarray) -> np.ndarray:
        """Weighted sum over the leading (node) axis."""
        return np.tensordot(self.weights, values, axes=(0, 0))


def gauss_hermite_1d(n: int):
    """Nodes and weights (summing to one) of the ``n``-point rule for ``N(0, 1)``."""
    x, w = hermegauss(n)
    return x, w / w.sum()


#: Fundamental domains of the node symmetries of the integrands, for folded rules
#: (:meth:`SobolRule.nodes`): ``name: (rotated, columns)``.  The rule's coordinates are
#: ``(xi_1, xi_2, eta_1, eta_2)``, or with ``rotated`` ``(a, b, c, d)`` with
#: ``xi = (b + a, b - a)/sqrt 2``, ``eta = (d + c, d - c)/sqrt 2`` (orthogonal, so still
#: ``N(0, I_4)``); the domain is where the ``columns`` are positive.  The symmetries
#: (``P`` swaps the two tokens' entries):
#:
#: * ``eta_flip``: ``eta -> -eta``, at ``theta = 0`` (positional);
#: * ``full_flip``: ``(xi, eta) -> -(xi, eta)``, at ``m = 0`` (semantic);
#: * ``token_swap`` added to these, when ``A`` is token-swap symmetric (``A11 = A22``):
#:   ``(xi, eta) -> (-P xi, P eta)`` at ``theta = 0`` (``w -> -P w``, ``h* -> P h*``) and
#:   ``(xi, eta) -> (P xi, P eta)`` at ``m = 0`` (``w -> P w``, ``h* -> P h*``).  They exchange
#:   the two tokens' ``f`` (up to sign), so only token sums (``f_1^2 + f_2^2``, ...), which
#:   are all the saddle-point equations use, are invariant: on these rules the single-token
#:   atoms are not expectations of their own.
#:
#: The integrands of the saddle-point equations are invariant under each symmetry or odd
#: (those atoms vanish, :func:`~symattn.compile.kernels.odd_atoms`), so a rule on the domain
#: integrates them exactly as on the whole space, with two (four) times the density.
FOLDS = {
    "eta_flip": (False, (2,)),                  # eta_1 > 0
    "full_flip": (False, (0,)),                 # xi_1 > 0
    "eta_flip+token_swap": (True, (1, 3)),      # xi_1 + xi_2 > 0, eta_1 + eta_2 > 0
    "full_flip+token_swap": (True, (0, 1)),     # xi_1 > xi_2, xi_1 + xi_2 > 0
}


def _unrotate(z):
    """``(a, b, c, d) -> (xi_1, xi_2, eta_1, eta_2)`` (see :data:`FOLDS`)."""
    r = np.sqrt(0.5)
    a, b, c, d = z.T
    return np.stack([r * (b + a), r * (b - a), r * (d + c), r * (d - c)], axis=-1)


@dataclass(frozen=True)
class SobolRule:
    """Scrambled Sobol rule with ``2**log2n`` points in 4-D, scramble ``seed``."""

    log2n: int = 13
    seed: int = 0

    def __post_init__(self):
        if not 1 <= self.log2n <= 24:
            raise ValueError(f"log2n must be in [1, 24], got {self.log2n}")

    @property
    def size(self) -> int:
        return 2**self.log2n

    def nodes(self, dim: int = 4, fold: str | None = None) -> NodeSet:
        """The nodes; with ``fold`` (a key of :data:`FOLDS`, ``dim = 4``) the scrambled points
        are mapped onto that symmetry's fundamental domain (``u -> (1 + u)/2`` in the folded
        coordinates, so the points still form a net there)."""
        u = qmc.Sobol(d=dim, scramble=True, seed=np.random.default_rng([self.seed, dim]))
        pts = u.random_base2(self.log2n)
        label = f"sobol(2^{self.log2n}, seed={self.seed})"
        rotated = False
        if fold is not None:
            if fold not in FOLDS or dim != 4:
                raise ValueError(f"fold must be one of {sorted(FOLDS)} (dim 4), got {fold!r}")
            rotated, cols = FOLDS[fold]
            pts[:, cols] = 0.5 + 0.5 * pts[:, cols]
            label = label[:-1] + f", folded to {fold})"
        eps = 2.0**-53
        z = special.ndtri(np.clip(pts, eps, 1 - eps))
        if rotated:
            z = _unrotate(z)
        n = z.shape[0]
        return NodeSet(points=z, weights=np.full(n, 1.0 / n), label=label)


@dataclass(frozen=True)
class GaussHermiteRule:
    """Tensor Gauss-Hermite rule with ``order`` points per dimension (``order**4`` nodes)."""

    order: int = 8

    @property
    def size(self) -> int:
        return self.order**4

    def nodes(self, dim: int = 4) -> NodeSet:
        x, w = gauss_hermite_1d(self.order)
        grids = np.meshgrid(*([x] * dim), indexing="ij")
        wgrids = np.meshgrid(*([w] * dim), indexing="ij")
        pts = np.stack([g.ravel() for g in grids], axis=-1)
        weights = np.prod(np.stack([g.ravel() for g in wgrids], axis=-1), axis=-1)
        return NodeSet(points=pts, weights=weights, label=f"gauss-hermite({self.order}^{dim})")
