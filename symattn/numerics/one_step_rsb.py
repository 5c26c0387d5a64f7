r"""The zero-temperature 1RSB saddle point at the paper's shape (model page §8; the equations:
:mod:`symattn.symbolic.one_step_rsb`).

**The channel at an outer node** ``(xi_0, eta)`` is an average over the inner Gaussian
:math:`\xi_1` of functions of the prox at :math:`w_1 = w_0 + \sqrt{q_1 - q_0}\,\xi_1`, tilted by
:math:`e^{-x\mathcal M(w_1)}`.  The inner average is a tensor Gauss--Hermite rule of ``inner``
points per axis; the outer one the channel's rule (scrambled Sobol).  Per outer node:
:math:`\mathcal M_x = -\frac1x\log\sum_jg_je^{-x\mathcal M_j}`, :math:`\langle f_l\rangle`,
:math:`\langle|f|^2\rangle`, :math:`\langle\xi_{1,l}f_l\rangle`, :math:`\langle\mathcal M\rangle`
with the tilted weights :math:`g_je^{-x\mathcal M_j}/\sum`.  The integrand of the inner
average is continuous in :math:`\xi_1` (the prox's jumps make ``f`` jump, not
:math:`e^{-x\mathcal M}`), so the rule converges, if slowly where ``f`` jumps; the error is
measured by changing ``inner`` (:func:`solve_one_step_rsb` reports it).

**The map** (:class:`OneStepRSBMap`): from ``z = (q_0, q_1, m, theta, V, x)`` the derived
output equations give the conjugates, the prior equations new ``(q_0, q_1, m, theta, V)``, and
the stationarity in ``x`` a sixth residual; :func:`solve_one_step_rsb` finds its root by
Newton with a forward-difference Jacobian (the prox warm-started from the current minimisers,
so each inner point follows its minima and the map differentiated is smooth).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from .channel import InvalidOrderParameters
from .prox import prox

__all__ = ["RSBNodes", "rsb_node_moments", "OneStepRSBMap", "OneStepRSBPoint",
           "solve_one_step_rsb", "solve_ladder", "EPS_STAGES"]


@functools.lru_cache(maxsize=None)
def _kernels():
    """Lambdified derived equations: atoms' integrands, hats, prior, x equation, phi."""
    import sympy as sp

    from ..model.symbols import alpha, lam, rho, sigma
    from ..symbolic.expectation import Expect
    from ..symbolic.one_step_rsb import (HATS, ORDER, RSBEnvelope, TiltedF, TiltedF2,
                                         TiltedM, TiltedXiF, D, derive_one_step_rsb,
                                         x as x_sym)
    eq = derive_one_step_rsb()
    f = sp.symbols("fb_1 fb_2", real=True)
    X = sp.symbols("X_1 X_2", real=True)
    F2, Mb, Mx = sp.symbols("F2 Mb Mx", real=True)

    def plain(expr):
        return (expr.replace(lambda e: isinstance(e, TiltedF), lambda e: f[int(e.args[0]) - 1])
                .replace(lambda e: isinstance(e, TiltedF2), lambda e: F2)
                .replace(lambda e: isinstance(e, TiltedXiF), lambda e: X[int(e.args[0]) - 1])
                .replace(lambda e: isinstance(e, TiltedM), lambda e: Mb)
                .replace(lambda e: isinstance(e, RSBEnvelope), lambda e: Mx))
    node_syms = (*eq.nodes.xi, *eq.nodes.eta, *f, F2, *X, Mb, Mx, D)
    atoms = [sp.lambdify(node_syms, plain(E.args[0]), "numpy") for E in eq.atoms]
    a_syms = sp.symbols(f"a_0:{len(eq.atoms)}", real=True)
    sub = dict(zip(eq.atoms, a_syms))
    params = (alpha, rho, sigma, lam)
    hats = sp.lambdify((*a_syms, *ORDER, x_sym, *params),
                       [eq.output[h].xreplace(sub) for h in HATS], "numpy")
    prior = sp.lambdify((*HATS, x_sym, *params), [eq.prior[o] for o in ORDER], "numpy")
    x_eq = sp.lambdify((*a_syms, *ORDER, *HATS, x_sym, *params),
                       eq.x_equation.xreplace(sub), "numpy")
    EM = Expect(eq.M)
    phi = sp.lambdify((sp.Symbol("EM"), *ORDER, *HATS, x_sym, *params),
                      eq.phi.xreplace({EM: sp.Symbol("EM")}), "numpy")
    if eq.phi.xreplace({EM: 0}).has(Expect):
        raise AssertionError("phi has expectations besides E[M_x]")
    return atoms, hats, prior, x_eq, phi


@dataclass
class RSBNodes:
    """Per outer node: ``Mx`` (n,), ``f`` (n, 2) = ``<f>``, ``F2`` = ``<|f|^2>``, ``XiF``
    (n, 2) = ``<xi_1l f_l>``, ``Mbar`` = ``<M>``; ``minima``: the inner prox results (for warm
    starts)."""

    Mx: np.ndarray
    f: np.ndarray
    F2: np.ndarray
    XiF: np.ndarray
    Mbar: np.ndarray
    minima: object = field(repr=False, default=None)


def _inner_rule(order: int):
    z, g = np.polynomial.hermite_e.hermegauss(order)
    g = g / np.sqrt(2 * np.pi)
    Z1, Z2 = np.meshgrid(z, z, indexing="ij")
    return np.stack([Z1.ravel(), Z2.ravel()], 1), np.outer(g, g).ravel()


def rsb_node_moments(w0, t, V, Dq, x, sigma, *, inner: int = 12, eps: float = 1e-3,
                     starts=None, only_starts: bool = True, gtol: float = 1e-13) -> RSBNodes:
    """The tilted inner averages at every outer node (module doc).  ``w0``, ``t`` ``(n, 2)``;
    ``starts``: ``(n * inner^2, k, 2)`` warm starts (the previous call's minima), alone
    (``only_starts``) or added to the default start set.  Where an
    inner point's two lowest minima lie within a few ``eps`` of each other, ``f`` is their
    blend with weight ``expit(gap/eps)`` on the global one (as the RS channel smooths its
    ties, :class:`~symattn.numerics.channel.OutputChannel`): the map is then smooth on the
    scale ``eps`` and Newton converges; the bias is measured by lowering ``eps``."""
    zeta, g = _inner_rule(inner)
    n, k = w0.shape[0], len(g)
    w1 = (w0[:, None, :] + math.sqrt(Dq) * zeta[None, :, :]).reshape(-1, 2)
    tt = np.repeat(t, k, axis=0)
    if starts is None:
        pr = prox(w1, tt, V, sigma, gtol=gtol)
    else:
        pr = prox(w1, tt, V, sigma, gtol=gtol, extra_starts=starts,
                  include_default=not only_starts)
        bad = np.flatnonzero(~pr.converged)
        if bad.size:
            redo = prox(w1[bad], tt[bad], V, sigma, gtol=gtol, extra_starts=starts[bad])
            for name in ("h", "value", "converged", "h2", "value2"):
                getattr(pr, name)[bad] = getattr(redo, name)
    M = pr.value.reshape(n, k)
    fA = (pr.h - w1) / V
    second = np.isfinite(pr.gap) & (pr.gap < 40 * eps)
    p = np.ones(len(fA))
    p[second] = special.expit(pr.gap[second] / eps)
    fB = np.where(second[:, None], (np.where(second[:, None], pr.h2, 0.0) - w1) / V, 0.0)
    f = (p[:, None] * fA + (1 - p[:, None]) * fB).reshape(n, k, 2)
    Mmin = M.min(axis=1, keepdims=True)
    e = g[None, :] * np.exp(-x * (M - Mmin))
    Zs = e.sum(axis=1)
    wt = e / Zs[:, None]
    return RSBNodes(Mx=Mmin[:, 0] - np.log(Zs) / x,
                    f=np.einsum("nk,nkl->nl", wt, f),
                    F2=np.einsum("nk,nk->n", wt, np.sum(f * f, axis=2)),
                    XiF=np.einsum("nk,nkl->nl", wt, f * zeta[None, :, :]),
                    Mbar=np.einsum("nk,nk->n", wt, M), minima=pr)


@dataclass
class OneStepRSBPoint:
    """A 1RSB fixed point: ``z = (q0, q1, m, theta, V, x)``, conjugates, ``eps_t = -Phi``,
    residual and status."""

    alpha: float
    z: np.ndarray
    hats: np.ndarray
    eps_t: float
    residual: float
    converged: bool
    iterations: int
    message: str = ""

    def as_dict(self) -> dict:
        names = ("q0", "q1", "m", "theta", "V", "x")
        hats = ("q0_hat", "q1_hat", "m_hat", "theta_hat", "V_hat")
        return {"alpha": self.alpha, **dict(zip(names, map(float, self.z))),
                **dict(zip(hats, map(float, self.hats))), "eps_t": self.eps_t,
                "residual": self.residual, "converged": self.converged,
                "iterations": self.iterations, "message": self.message}


class OneStepRSBMap:
    """The 1RSB residual ``z -> (prior(hats(z)) - z[:5], dPhi/dx)`` on ``channel``'s outer
    rule with an ``inner``-point Gauss-Hermite rule per axis (module doc).  ``pin``: ``"m"``
    (semantic branch: m = m_hat = 0) or ``"theta"`` (positional: theta = theta_hat = 0)."""

    def __init__(self, channel, alpha: float, *, inner: int = 12, pin: str | None = None,
                 eps: float = 1e-3):
        self.channel, self.alpha, self.inner, self.pin = channel, float(alpha), inner, pin
        self.eps = eps
        self._starts = None
        self._kern = _kernels()

    def _params(self):
        p = self.channel.params
        return (self.alpha, p.rho, p.sigma, p.lam)

    def evaluate(self, z, warm: bool = False):
        r"""``(residual (6,), hats (5,), phi)`` at ``z``: the prior equations' new order
        parameters minus ``z[:5]``, and :math:`x^2\partial_x\Phi/|\Phi|`; ``warm``: the prox
        from the last full evaluation's minima only (for Jacobian columns)."""
        atoms_k, hats_k, prior_k, x_eq_k, phi_k = self._kern
        q0_, q1_, m_, th_, V_, x_ = (float(v) for v in z)
        if self.pin == "m":
            m_ = 0.0
        if self.pin == "theta":
            th_ = 0.0
        Dq = q1_ - q0_
        if not (q0_ > 0 and Dq > 0 and V_ > 0 and x_ > 0):
            raise InvalidOrderParameters(f"need 0 < q0 < q1, V > 0, x > 0; got {z}")
        ch = self.channel
        w0, t = ch.diagonal_nodes(q0_, m_, th_)
        # warm: follow the last full evaluation's minima only (a smooth map for the Jacobian);
        # full: the default starts and those minima, so that a minimum the default set misses
        # but the last evaluation found is not lost (the map would jump between evaluations)
        nodes = rsb_node_moments(w0, t, V_, Dq, x_, ch.params.sigma, inner=self.inner,
                                 eps=self.eps, starts=self._starts, only_starts=warm,
                                 gtol=ch.gtol)
        if not warm:
            pr = nodes.minima
            both = np.stack([pr.h, np.where(np.isfinite(pr.h2), pr.h2, pr.h)], axis=1)
            self._starts = both
        xi, eta = ch.nodes.xi, ch.nodes.eta
        cols = (xi[:, 0], xi[:, 1], eta[:, 0], eta[:, 1], nodes.f[:, 0], nodes.f[:, 1],
                nodes.F2, nodes.XiF[:, 0], nodes.XiF[:, 1], nodes.Mbar, nodes.Mx, Dq)
        wts = ch.nodes.weights
        atoms = [float(wts @ np.broadcast_to(fn(*cols), wts.shape)) for fn in atoms_k]
        order = (q0_, q1_, m_, th_, V_)
        hats = np.array(hats_k(*atoms, *order, x_, *self._params()), float)
        if self.pin == "m":
            hats[2] = 0.0
        if self.pin == "theta":
            hats[3] = 0.0
        new = np.array(prior_k(*hats, x_, *self._params()), float)
        EM = float(wts @ nodes.Mx)
        phi = float(phi_k(EM, *order, *hats, x_, *self._params()))
        # the x equation as x^2 dPhi/dx / |Phi|: at T = 0, x^2 dPhi/dx = -Sigma (the
        # complexity of the states at the energy x selects), so this is Sigma relative to the
        # energy, dimensionless like the other residuals' relative sizes
        dphi_dx = float(x_eq_k(*atoms, *order, *hats, x_, *self._params()))
        res = np.append(new - np.array(order), x_**2 * dphi_dx / abs(phi))
        return res, hats, phi


def solve_one_step_rsb(fmap: OneStepRSBMap, z0, *, tol: float = 1e-8, max_iter: int = 40,
                       step: float = 1e-6, hold_x: bool = False,
                       progress=None) -> OneStepRSBPoint:
    r"""Newton on the 1RSB residual from ``z0 = (q0, q1, m, theta, V, x)`` (module doc); the
    pinned coordinate (``fmap.pin``) is held at zero, and ``x`` too with ``hold_x`` (then the
    x equation is not solved: the profile :math:`\Phi(x)`).  Returns the point reached with
    its status (not converged: the message says why)."""
    held = {fmap.pin, "x" if hold_x else None}
    free = [i for i, name in enumerate(("q0", "q1", "m", "theta", "V", "x"))
            if name not in held]
    z = np.array(z0, float)
    if fmap.pin == "m":
        z[2] = 0.0
    if fmap.pin == "theta":
        z[3] = 0.0
    res, hats, phi = fmap.evaluate(z)
    msg = ""
    it = 0
    for it in range(1, max_iter + 1):
        r = float(np.max(np.abs(res[free])))
        if progress:
            progress(it, z, r)
        if r <= tol:
            return OneStepRSBPoint(fmap.alpha, z, hats, -phi, r, True, it - 1, "converged")
        J = np.empty((len(free), len(free)))
        for c, k in enumerate(free):
            zp = z.copy()
            h = step * max(1.0, abs(z[k]))
            zp[k] += h
            J[:, c] = (fmap.evaluate(zp, warm=True)[0][free] - res[free]) / h
        try:
            dz = np.linalg.solve(J, -res[free])
        except np.linalg.LinAlgError:
            msg = "singular Jacobian"
            break
        t = 1.0
        while t > 1e-4:
            zn = z.copy()
            zn[free] += t * dz
            try:
                rn, hn, pn = fmap.evaluate(zn)
                if float(np.max(np.abs(rn[free]))) < r:
                    break
            except InvalidOrderParameters:
                pass
            t /= 2
        else:
            msg = f"no step lowers the residual {r:.3g}"
            break
        z, res, hats, phi = zn, rn, hn, pn
    r = float(np.max(np.abs(res[free])))
    ok = r <= tol
    return OneStepRSBPoint(fmap.alpha, z, hats, -phi, r, ok, it,
                           "converged" if ok else (msg or f"residual {r:.3g} after {it} steps"))


#: the smoothing widths of :func:`solve_ladder`, as the RS solver lowers its tie smoothing
EPS_STAGES = (1e-3, 1e-5, 1e-7, 1e-9)


def solve_ladder(channel, alpha: float, z0, *, pin: str | None, inner: int = 10,
                 eps_stages=EPS_STAGES, hold_x: bool = False, tol: float = 1e-9,
                 max_iter: int = 30) -> OneStepRSBPoint:
    """:func:`solve_one_step_rsb` at each smoothing width of ``eps_stages`` in turn, each
    started from the last converged point: at a wide ``eps`` the map is smooth enough for
    Newton from afar, at the last one the blend of near-tied minima is negligible (at
    ``alpha = 1``, 2^10 x 10^2 points, fixed ``x``: residual 1e-11, where one width of 1e-2 or
    1e-3 stalls at 1e-3 because minima born at folds near a tie enter the blend abruptly)."""
    z = np.array(z0, float)
    pt = None
    for eps in eps_stages:
        fmap = OneStepRSBMap(channel, alpha, inner=inner, pin=pin, eps=eps)
        pt = solve_one_step_rsb(fmap, z, hold_x=hold_x, tol=tol, max_iter=max_iter)
        if pt.converged:
            z = pt.z
    return pt
