r"""The output channel at inverse temperature :math:`\beta`, node by node (model page §8; the
equations: :mod:`symattn.symbolic.finite_temperature`).  The paper's shape, ``L = 2``, ``r = 1``.

At a node ``(w, T)`` the Gibbs measure of the pre-activations is
:math:`\propto e^{-\beta\mathcal G(h)}`, :math:`\mathcal G(h) = |h-w|^2/2V + \ell(h; T)`, and

.. math::

    \mathcal M_\beta = -\frac1\beta\log\Big[\frac{\beta}{2\pi V}\int e^{-\beta\mathcal G(h)}
    \,\mathrm dh\Big],\qquad f_l = \frac{\langle h_l\rangle - w_l}{V},\qquad
    c_l = \langle h_l^2\rangle - \langle h_l\rangle^2 .

**Quadrature.** The integrand is smooth at every finite :math:`\beta`, but as :math:`\beta`
grows its mass gathers at the local minima of :math:`\mathcal G` (all of it at the global one
as :math:`\beta\to\infty`), at distance :math:`\sim\sqrt\beta` standard deviations from ``w``
in the units of :math:`\mathcal N(w, V/\beta)`: a rule centred at ``w`` misses it.  The rule
is therefore a sum over *centres* ``k`` -- the prox, the runner-up minimum where there is one
(:func:`symattn.numerics.prox.prox`), and ``w`` itself -- each with the Gaussian
:math:`N_k = \mathcal N(c_k, \Sigma_k)` of Laplace's method, :math:`\Sigma_k = (\beta
\nabla^2\mathcal G(c_k))^{-1}` at a minimum and :math:`V/\beta` at ``w``, and a smooth
partition of unity :math:`\pi_k = a_kN_k/\sum_j a_jN_j`:

.. math::

    \int g\,\mathrm dh = \sum_k \mathbb E_{z\sim N(0, I)}\Big[\frac{g\,\pi_k}{N_k}(c_k +
    \Sigma_k^{1/2}z)\Big],

each expectation by a tensor Gauss--Hermite rule of ``order`` points per axis.  The partition
changes nothing in the exact integral; it only splits it into pieces each rule resolves.  At
:math:`\beta\to\infty` the rule becomes Laplace's method at the minima.
``tests/test_finite_temperature.py`` checks it against a dense Gauss--Legendre rule.

**The saddle point.** :class:`FiniteTemperatureMap` evaluates the derived finite-temperature
equations with these moments on an :class:`~symattn.numerics.channel.OutputChannel`'s nodes,
and :func:`solve_finite_temperature` finds its fixed point by backtracked Newton (numpy: about
0.5 ms a node, for the stability analysis at a few ``beta``, not a production route).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compile.kernels import objective_kernel, prox_kernel
from .channel import InvalidOrderParameters
from .prox import prox

__all__ = ["GibbsNodes", "gibbs_moments", "FiniteTemperatureMap",
           "solve_finite_temperature"]


def _objective(h, w, t, V, sigma):
    r""":math:`\mathcal G(h)` broadcasting over leading axes (``h``, ``w``, ``t`` ``(..., 2)``),
    by the derived kernel (:func:`symattn.compile.kernels.objective_kernel`)."""
    return objective_kernel()(h[..., 0], h[..., 1], w[..., 0], w[..., 1], t[..., 0], t[..., 1],
                              V, sigma)


def _hessian(h, w, t, V, sigma):
    """``(n, 2, 2)`` Hessian of :math:`\\mathcal G` at ``h``, derived
    (:func:`symattn.compile.kernels.prox_kernel`)."""
    _, _, _, H11, H12, H22 = prox_kernel()(h[:, 0], h[:, 1], w[:, 0], w[:, 1], t[:, 0],
                                           t[:, 1], V, sigma)
    return np.stack([np.stack([H11, H12], -1), np.stack([H12, H22], -1)], -2)


@dataclass
class GibbsNodes:
    """Per node: :math:`\\mathcal M_\\beta` ``(n,)``, ``f`` and ``c`` ``(n, 2)``, and the Gibbs
    covariance ``cov`` ``(n, 2, 2)`` of the pre-activations (``c`` its diagonal)."""

    M: np.ndarray
    f: np.ndarray
    c: np.ndarray
    cov: np.ndarray


def gibbs_moments(w, t, V, beta, sigma, *, order: int = 24, minima=None) -> GibbsNodes:
    """:math:`\\mathcal M_\\beta`, ``f``, ``c`` at every node (module doc).

    ``w``, ``t`` ``(n, 2)`` (``t`` the diagonal targets), ``V`` and ``beta`` scalars;
    ``minima``: a :class:`~symattn.numerics.prox.ProxResult` for these nodes (computed if not
    given)."""
    w, t = np.asarray(w, float), np.asarray(t, float)
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    n = w.shape[0]
    pr = minima if minima is not None else prox(w, t, V, sigma)
    centres, covs, logw = [], [], []
    for c, G in ((pr.h, pr.value), (pr.h2, pr.value2)):
        ok = np.all(np.isfinite(c), axis=1)
        cc = np.where(ok[:, None], c, w)
        H = _hessian(cc, w, t, V, sigma)
        eig = np.linalg.eigvalsh(H)
        ok &= eig[:, 0] > 0
        cov = np.where(ok[:, None, None], np.linalg.inv(np.where(ok[:, None, None], H,
                                                                 np.eye(2))) / beta,
                       np.eye(2) * V / beta)
        # Laplace weight of the centre (G its value); a centre that is not a minimum takes no
        # part
        logw.append(np.where(ok, -beta * np.where(ok, G, 0.0) - 0.5 * np.log(np.linalg.det(cov)), -np.inf))
        centres.append(cc)
        covs.append(cov)
    centres.append(w)
    covs.append(np.broadcast_to(np.eye(2) * V / beta, (n, 2, 2)))
    logw.append(-beta * _objective(w, w, t, V, sigma) - np.log(V / beta))
    logw = np.stack(logw, axis=1)
    logw = np.where(np.isfinite(logw), logw, -np.inf)
    chol = [np.linalg.cholesky(S) for S in covs]
    inv = [np.linalg.inv(S) for S in covs]
    logdet = [np.log(np.linalg.det(S)) for S in covs]

    x, wx = np.polynomial.hermite_e.hermegauss(order)
    wx = wx / np.sqrt(2 * np.pi)
    Z1, Z2 = np.meshgrid(x, x, indexing="ij")
    z = np.stack([Z1.ravel(), Z2.ravel()], axis=1)                    # (m, 2)
    wz = np.outer(wx, wx).ravel()                                     # (m,)
    gmin = pr.value
    K = len(centres)
    acc = np.zeros((n, 6))                                   # 1, h1, h2, h1^2, h2^2, h1 h2
    for k in range(K):
        h = centres[k][:, None, :] + np.einsum("nij,mj->nmi", chol[k], z)     # (n, m, 2)
        # log N_j(h) for every centre j, and log of the partition's numerator for k
        logN = np.empty((n, z.shape[0], K))
        for j in range(K):
            d = h - centres[j][:, None, :]
            logN[..., j] = (-0.5 * np.einsum("nmi,nij,nmj->nm", d, inv[j], d)
                            - np.log(2 * np.pi) - 0.5 * logdet[j][:, None])
        mix = logN + logw[:, None, :]
        top = np.max(mix, axis=2, keepdims=True)
        log_sum = top[..., 0] + np.log(np.exp(mix - top).sum(axis=2))
        log_pi_k = mix[..., k] - log_sum
        G = _objective(h, w[:, None, :], t[:, None, :], V, sigma)
        val = np.exp(-beta * (G - gmin[:, None]) + log_pi_k - logN[..., k]) * wz
        val = np.where(np.isfinite(logw[:, k])[:, None], val, 0.0)
        acc[:, 0] += val.sum(axis=1)
        acc[:, 1:3] += np.einsum("nm,nmi->ni", val, h)
        acc[:, 3:5] += np.einsum("nm,nmi->ni", val, h * h)
        acc[:, 5] += np.einsum("nm,nm->n", val, h[..., 0] * h[..., 1])
    Zint = acc[:, 0]
    mean = acc[:, 1:3] / Zint[:, None]
    c = acc[:, 3:5] / Zint[:, None] - mean**2
    c12 = acc[:, 5] / Zint - mean[:, 0] * mean[:, 1]
    cov = np.stack([np.stack([c[:, 0], c12], -1), np.stack([c12, c[:, 1]], -1)], -2)
    M = gmin - np.log(Zint * beta / (2 * np.pi * V)) / beta
    return GibbsNodes(M=M, f=(mean - w) / V, c=c, cov=cov)


# --------------------------------------------------------------------------------------
# the saddle-point map at finite beta
# --------------------------------------------------------------------------------------
class FiniteTemperatureMap:
    """The finite-temperature saddle-point map :math:`x \\mapsto F_\\beta(x)` on ``channel``'s
    nodes (paper's shape): the Gaussian atoms of the derived output equations
    (:func:`symattn.symbolic.finite_temperature.derive_finite_temperature`) from
    :func:`gibbs_moments`, the hats from those equations, the order parameters from the prior
    equations.  ``pin_m``: the semantic branch, ``m_hat = 0`` (as the zero-temperature solver
    pins it)."""

    def __init__(self, channel, beta: float, *, order: int = 24):
        import sympy as sp

        from ..model.symbols import (CONJUGATES, ORDER_PARAMS, alpha as a_sym, lam, rho,
                                     sigma as s_sym)
        from ..symbolic.expectation import OutputF
        from ..symbolic.finite_temperature import (OutputVariance, beta as b_sym,
                                                   derive_finite_temperature)
        eq = derive_finite_temperature()
        self.channel, self.beta, self.order = channel, float(beta), order
        f = sp.symbols("f_1 f_2", real=True)
        c = sp.symbols("c_1 c_2", real=True)
        node_syms = (*eq.nodes.xi, *eq.nodes.eta, *f, *c)

        def plain(expr):
            return expr.replace(lambda e: isinstance(e, OutputF), lambda e: f[int(e.args[0]) - 1]) \
                       .replace(lambda e: isinstance(e, OutputVariance),
                                lambda e: c[int(e.args[0]) - 1])
        atom_syms = sp.symbols(f"a_0:{len(eq.atoms)}", real=True)
        self._atoms = [sp.lambdify(node_syms, plain(E.args[0]), "numpy") for E in eq.atoms]
        sub = dict(zip(eq.atoms, atom_syms))
        self._hats = sp.lambdify((*atom_syms, *ORDER_PARAMS, a_sym, rho, b_sym),
                                 [eq.output[k].xreplace(sub) for k in CONJUGATES], "numpy")
        self._prior = sp.lambdify((*CONJUGATES, s_sym, lam, rho),
                                  [eq.prior[k] for k in ORDER_PARAMS], "numpy")

    def __call__(self, x, alpha: float, pin_m: bool = False):
        ch, p = self.channel, self.channel.params
        q, m, theta, V = (float(v) for v in x)
        w, t = ch.diagonal_nodes(q, m, theta)
        g = gibbs_moments(w, t, V, self.beta, p.sigma, order=self.order)
        xi, eta = ch.nodes.xi, ch.nodes.eta
        cols = (xi[:, 0], xi[:, 1], eta[:, 0], eta[:, 1], g.f[:, 0], g.f[:, 1], g.c[:, 0],
                g.c[:, 1])
        wts = ch.nodes.weights
        atoms = [float(wts @ np.broadcast_to(fn(*cols), wts.shape)) for fn in self._atoms]
        hats = self._hats(*atoms, q, m, theta, V, alpha, p.rho, self.beta)
        if pin_m:
            hats[1] = 0.0
        return np.array(self._prior(*hats, p.sigma, p.lam, p.rho), float)


def solve_finite_temperature(fmap: FiniteTemperatureMap, alpha: float, x0, *, pin_m=False,
                             tol: float = 1e-10, max_iter: int = 30, step: float = 1e-6):
    """Newton on ``F_beta(x) - x`` (forward-difference Jacobian over the free entries):
    ``(x, residual, iterations)``; raises ``RuntimeError`` if it does not reach ``tol``."""
    x = np.array(x0, float)
    free = [0, 2, 3] if pin_m else [0, 1, 2, 3]
    if pin_m:
        x[1] = 0.0
    g = fmap(x, alpha, pin_m) - x
    for it in range(max_iter):
        res = float(np.max(np.abs(g)))
        if res <= tol:
            return x, res, it
        J = np.empty((len(free), len(free)))
        for c, k in enumerate(free):
            xp = x.copy()
            h = step * max(1.0, abs(x[k]))
            xp[k] += h
            J[:, c] = ((fmap(xp, alpha, pin_m) - xp) - g)[free] / h
        dx = np.linalg.solve(J, -g[free])
        t = 1.0
        while t > 1e-3:                       # backtrack: stay in the domain, lower the residual
            xn = x.copy()
            xn[free] += t * dx
            try:
                gn = fmap(xn, alpha, pin_m) - xn
                if float(np.max(np.abs(gn))) < res:
                    break
            except InvalidOrderParameters:
                pass
            t /= 2
        else:
            raise RuntimeError(f"finite-temperature Newton: no step lowers the residual {res:.3g}")
        x, g = xn, gn
    res = float(np.max(np.abs(g)))
    if res <= tol:
        return x, res, max_iter
    raise RuntimeError(f"finite-temperature Newton: residual {res:.3g} after {max_iter} steps")
