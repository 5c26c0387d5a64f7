r"""Smooth expectations: the test error ``eps_g`` and the linear baseline ``eps_lin``.

model page §4, with :math:`u, v \sim N(0, I_2)`:

.. math::

    \varepsilon_g = \tfrac{\sigma^2}{2}\,\mathbb{E}\lVert S(h) - T(h^*)\rVert_F^2,\quad
    h_l = s_l m + \sqrt q\,u_l,\;
    h^*_l = \tfrac{\theta}{\sqrt q}u_l + \sqrt{\rho - \theta^2/q}\,v_l ;

.. math::

    \varepsilon_{\rm lin} = \tfrac{\sigma^2}{2}\,\mathbb{E}\lVert T(h^*) - \mathbb{E}T(h^*)\rVert_F^2
      = \sigma^2(1-\omega)^2\left[\mathrm{Var}\,\mathrm{logistic}(a_1) + \mathrm{Var}\,\mathrm{logistic}(a_2)\right],
    \quad h^* \sim N(0, \rho I_2),\; a_l = h^{*2}_l - h^*_1 h^*_2 .

Both integrands are analytic, so tensor Gauss-Hermite converges fast; each function returns
the value at a fine order and its difference to a coarser rule as a conservative error bound.
"""

from __future__ import annotations

import functools

import numpy as np

from ..compile.generated import shape_kernels
from ..compile.kernels import eps_g_kernel
from ..model.params import ModelParams
from .quadrature import GaussHermiteRule, gauss_hermite_1d

__all__ = ["generalisation_error", "linear_baseline_error", "teacher_mean_diagonal"]


@functools.lru_cache(maxsize=4)
def _eps_g_rule(order):
    """The tensor Gauss-Hermite rule of ``eps_g``: ``(u, v, weights)``, built once per order
    (building the 24^4 grid cost more than integrating on it)."""
    nodes = GaussHermiteRule(order).nodes(4)
    return (np.ascontiguousarray(nodes.points[:, :2]), np.ascontiguousarray(nodes.points[:, 2:]),
            nodes.weights)


def _eps_g(params: ModelParams, q, m, theta, order):
    u, v, weights = _eps_g_rule(order)
    vals = np.empty((len(u), 1))
    eps_g_kernel()(u, v, float(q), float(m), float(theta), float(params.rho),
                   float(params.sigma), float(params.omega), params.A_array, vals)
    return float(np.dot(weights, vals[:, 0]))


def _teacher_grid(params: ModelParams, order):
    """``T(h*)`` on the ``order x order`` Gauss-Hermite grid of ``h* ~ N(0, rho I_2)``:
    ``(T (order, order, 2, 2), weights (order, order))``."""
    x, w = gauss_hermite_1d(order)
    s = np.sqrt(params.rho)
    H = np.stack(np.meshgrid(s * x, s * x, indexing="ij"), -1).reshape(-1, 2)
    T = np.empty((len(H), 2, 2))
    shape_kernels().teacher_nodes(np.ascontiguousarray(H), float(params.omega), params.A_array, T)
    return T.reshape(order, order, 2, 2), np.outer(w, w)


def generalisation_error(params: ModelParams, q, m, theta, order: int = 24,
                         coarse: int | None = None):
    """``(eps_g, error_estimate)``: the ``order``-point tensor Gauss-Hermite value, and its
    difference to the ``coarse``-point rule (default ``order // 2``) as a deliberately
    conservative error bound (Gauss-Hermite converges fast here, so the error of the finer
    rule is far smaller).  ``coarse=0``: the value alone, with a nan bound."""
    hi = _eps_g(params, q, m, theta, order)
    if coarse == 0:
        return hi, float("nan")
    lo = _eps_g(params, q, m, theta, order // 2 if coarse is None else coarse)
    return hi, abs(hi - lo)


def _eps_lin(params: ModelParams, order):
    T, W = _teacher_grid(params, order)
    var = sum(np.sum(W * t**2) - np.sum(W * t) ** 2 for t in (T[..., 0, 0], T[..., 1, 1]))
    return float(params.sigma**2 * var)


def linear_baseline_error(params: ModelParams, order: int = 80):
    """``(eps_lin, error_estimate)``; independent of ``alpha`` (best ``B`` is ``E[T]``)."""
    hi = _eps_lin(params, order)
    lo = _eps_lin(params, order - 20)
    return hi, abs(hi - lo)


def _mean_diagonal(params: ModelParams, order):
    T, W = _teacher_grid(params, order)
    return float(np.sum(W * (T[..., 0, 0] + T[..., 1, 1])) / 2)


def teacher_mean_diagonal(params: ModelParams, order: int = 80):
    r"""``(value, error_estimate)`` of the teacher's mean diagonal
    :math:`\tfrac12\,\mathbb{E}[T_{11} + T_{22}]`, :math:`h^* \sim N(0, \rho I_2)`.

    With tied ``Q`` and :math:`p_2 = -p_1` the student's diagonal satisfies
    :math:`S_{11} + S_{22} \ge 1` for every ``h`` (the two logistic arguments sum to
    :math:`(h_1 - h_2)^2 \ge 0`), so a teacher whose mean diagonal is below one half cannot be
    approached by attending by position (model page §5).
    """
    hi = _mean_diagonal(params, order)
    lo = _mean_diagonal(params, order - 20)
    return hi, abs(hi - lo)
