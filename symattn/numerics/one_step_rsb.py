r"""The zero-temperature 1RSB saddle point at the paper's shape (model page §8; the equations:
:mod:`symattn.symbolic.one_step_rsb`).

**The channel at an outer node** ``(xi_0, eta)`` is an average over the inner Gaussian
:math:`\xi_1` of functions of the prox at :math:`w_1 = w_0 + \sqrt{q_1 - q_0}\,\xi_1`, tilted by
:math:`e^{-x\mathcal M(w_1)}`.  The inner average is an :class:`InnerRule` (a tensor
Gauss--Hermite rule, finer on the outer nodes where the inner integrand is rough); the outer
one the channel's rule (scrambled Sobol).  Per outer node:
:math:`\mathcal M_x = -\frac1x\log\sum_jg_je^{-x\mathcal M_j}`, :math:`\langle f_l\rangle`,
:math:`\langle|f|^2\rangle`, :math:`\langle\xi_{1,l}f_l\rangle`, :math:`\langle\mathcal M\rangle`
with the tilted weights :math:`g_je^{-x\mathcal M_j}/\sum`.  The integrand of the inner
average is continuous in :math:`\xi_1` (the prox's jumps make ``f`` jump, not
:math:`e^{-x\mathcal M}`), so the rule converges, if slowly where ``f`` jumps or turns
steeply.  Those outer nodes (a third to two thirds of them at alpha = 1: :meth:`OneStepRSBMap.
classify`) get the ``fine`` rule, the rest the coarse one; the error is measured by changing
both (``studies/one_step_rsb_inner.py``: at alpha = 1, x = 1000, eps_t moves by 6e-9 from
12/48 to 16/64 points, q_1's residual by 1e-4).

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
from .finite_temperature import _hessian
from .prox import prox

__all__ = ["InnerRule", "RSBNodes", "rsb_node_moments", "OneStepRSBMap", "OneStepRSBPoint",
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
    # the x equation in mpmath (:data:`X_EQ_DIGITS`): its prior part is a sum of terms that
    # cancel by seven digits at x ~ 2e4 (studies/one_step_rsb_x_noise.py)
    x_eq = sp.lambdify((*a_syms, *ORDER, *HATS, x_sym, *params),
                       eq.x_equation.xreplace(sub), "mpmath")
    # the atoms E[M_x] and E[<M>], whose difference the x equation takes
    env = [i for i, E in enumerate(eq.atoms) if E.args[0].has(RSBEnvelope)]
    tilted = [i for i, E in enumerate(eq.atoms) if E.args[0].has(TiltedM)]
    if len(env) != 1 or len(tilted) != 1:
        raise AssertionError("expected one E[M_x] atom and one E[<M>] atom")
    x_eq.pair = (env[0], tilted[0])
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


@dataclass(frozen=True)
class InnerRule:
    r"""The inner rule of the 1RSB channel: a tensor Gauss--Hermite rule of ``size`` points per
    axis, the same at every outer node.

    It converges fast where the inner integrand is smooth, and slowly where the prox jumps or
    turns steeply inside the inner Gaussian: :class:`OneStepRSBMap` spends a finer rule on
    those nodes (``fine``).  With ``recentre`` the rule is placed on a Gaussian proposal near
    the tilted inner measure's mode and reweighted exactly (:func:`_tilted_gaussian`): the mode
    moves by about :math:`x\sqrt{q_1-q_0}\,|f|`, several inner standard deviations at
    :math:`x \gtrsim 10^4` at the paper's point, where a rule centred at zero needs many
    points (``tests/test_one_step_rsb.py``: at alpha = 2, x = 1e4, 16 x 16 recentred points are
    within 2e-6 of a centred 48 x 48 rule where 10 x 10 centred ones miss by 8e-4).  It is off
    by default: the profiles of ``studies/one_step_rsb_energy.py`` (x <= 5000) use centred
    rules."""

    size: int = 12
    #: place the rule on a proposal near the tilted measure's mode (:func:`_tilted_gaussian`)
    recentre: bool = False
    #: split the rule along the line where the prox jumps, a product rule on each side
    #: (:mod:`symattn.numerics.inner_split`; ``2 size^2`` points, each side recentred)
    split: bool = False

    def __post_init__(self):
        if not 1 <= self.size <= 96:
            raise ValueError(f"inner rule size must be in [1, 96], got {self.size}")
        if self.split and self.recentre:
            raise ValueError("a split inner rule recentres each side itself: give split or "
                             "recentre, not both")

    def points(self):
        """``(zeta, g)``: ``zeta`` ``(k, 2)`` and weights ``g`` ``(k,)`` summing to one."""
        return _inner_rule(self.size)

    def __str__(self) -> str:
        if self.split:
            return f"split along the jump, 2 x {self.size}x{self.size}"
        return f"Gauss-Hermite {self.size}x{self.size}" + (", recentred" if self.recentre else "")


def _as_rule(inner) -> InnerRule:
    return inner if isinstance(inner, InnerRule) else InnerRule(int(inner))


def rsb_node_moments(w0, t, V, Dq, x, sigma, *, inner=12, eps: float = 1e-3,
                     starts=None, only_starts: bool = True, gtol: float = 1e-13) -> RSBNodes:
    """The tilted inner averages at every outer node (module doc).  ``w0``, ``t`` ``(n, 2)``;
    ``inner``: an :class:`InnerRule` or a Gauss--Hermite order; ``starts``: ``(n k, j, 2)``
    warm starts (the previous call's minima; ``k`` inner points per node), alone
    (``only_starts``) or added to the default start set.  Where an
    inner point's two lowest minima lie within a few ``eps`` of each other, ``f`` is their
    blend with weight ``expit(gap/eps)`` on the global one (as the RS channel smooths its
    ties, :class:`~symattn.numerics.channel.OutputChannel`): the map is then smooth on the
    scale ``eps`` and Newton converges; the bias is measured by lowering ``eps``.  A split
    rule (:class:`InnerRule` with ``split``) keeps its points off the jump line, so nothing is
    blended there."""
    w1, zeta, logw = _inner_points(w0, t, V, Dq, x, sigma, gtol, inner)
    n, k = zeta.shape[:2]
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
    # a split rule keeps its points off the jump line, each side on its own branch: no blend
    second = np.isfinite(pr.gap) & (pr.gap < 40 * eps) & (not _as_rule(inner).split)
    p = np.ones(len(fA))
    p[second] = special.expit(pr.gap[second] / eps)
    fB = np.where(second[:, None], (np.where(second[:, None], pr.h2, 0.0) - w1) / V, 0.0)
    f = (p[:, None] * fA + (1 - p[:, None]) * fB).reshape(n, k, 2)
    # log of g_j e^{-x M_j} phi(zeta_j) / (the proposal's density at zeta_j), per node
    a = logw - x * M
    amax = a.max(axis=1, keepdims=True)
    e = np.exp(a - amax)
    Zs = e.sum(axis=1)
    wt = e / Zs[:, None]
    return RSBNodes(Mx=-(amax[:, 0] + np.log(Zs)) / x,
                    f=np.einsum("nk,nkl->nl", wt, f),
                    F2=np.einsum("nk,nk->n", wt, np.sum(f * f, axis=2)),
                    XiF=np.einsum("nk,nkl->nl", wt, f * zeta),
                    Mbar=np.einsum("nk,nk->n", wt, M), minima=pr)


def _inner_points(w0, t, V, Dq, x, sigma, gtol, inner):
    """``(w1 (n k, 2), zeta (n, k, 2), log weights (n, k))``: the inner rule's points at every
    node, recentred on the tilted Gaussian or split along the jump if the rule says so; the
    weights those of the inner Gaussian (a proposal's ratio included)."""
    n = w0.shape[0]
    rule = _as_rule(inner)
    if rule.split:
        from .inner_split import split_points
        return split_points(w0, t, V, Dq, x, sigma, gtol, rule.size)
    u, g = rule.points()
    k = len(g)
    u = np.broadcast_to(u, (n, k, 2))
    if rule.recentre and x * Dq > 0:
        mu, C, logdet = _tilted_gaussian(w0, t, V, Dq, x, sigma, gtol)
        zeta = mu[:, None, :] + np.einsum("nlj,nkj->nkl", C, u)
        log_iw = 0.5 * (np.sum(u * u, axis=2) - np.sum(zeta * zeta, axis=2)) + logdet[:, None]
    else:
        zeta, log_iw = u, 0.0
    logw = np.broadcast_to(np.log(g)[None, :] + log_iw, (n, k))
    return (w0[:, None, :] + math.sqrt(Dq) * zeta).reshape(-1, 2), zeta, logw


#: decimal digits of the x equation's evaluation (:meth:`OneStepRSBMap._x_equation`)
X_EQ_DIGITS = 40

#: :meth:`OneStepRSBMap.classify`: a node is rough where an inner point's gap is below this many
#: inner standard deviations' worth of its change
ROUGH_MARGIN = 8.0

#: :meth:`OneStepRSBMap.classify`: a node is steep where the prox departs from its
#: linearisation by more than this many inner standard deviations
STEEP_MARGIN = 3.0

#: the smallest eigenvalue the tilted Gaussian's precision may have (where the Moreau envelope
#: is concave the quadratic tilt would widen it without bound; the weights correct the rest)
_MIN_PRECISION = 0.25

#: the share of the tilt's curvature the proposal takes (one half: twice the Laplace
#: variance, so that the weights stay bounded in the tails where the envelope flattens)
_CURV = 0.5

#: damped Newton steps towards the tilted measure's mode, and their longest length in inner
#: standard deviations (:func:`_tilted_gaussian`)
_MODE_STEPS = 6
_MODE_CAP = 3.0


def _tilted_gaussian(w0, t, V, Dq, x, sigma, gtol, *, follow=None, steps: int = _MODE_STEPS):
    r"""Per node, a Gaussian proposal for the tilted inner measure
    :math:`\varphi(\zeta)e^{-x\mathcal M(w_0+\sqrt{D}\zeta)}`: near its mode :math:`\zeta^*`
    (``_MODE_STEPS`` damped Newton steps from 0 on the log-density
    :math:`\ell(\zeta) = -|\zeta|^2/2 - x\mathcal M`, with :math:`\nabla\mathcal M = -f`,
    :math:`\nabla^2\mathcal M = (I - J)/V`; each step at most ``_MODE_CAP`` long and taken in
    full only where it raises :math:`\ell`, else a quarter of it), with a precision that takes
    ``_CURV`` of the tilt's curvature there, :math:`I + c\,xD(I-J)/V` (eigenvalues floored at
    ``_MIN_PRECISION``): wider than the Laplace approximation, so that the importance weights
    stay bounded where the envelope flattens.  With ``follow`` (``(n, 2)`` minimisers at the
    centre) the measure is that of the branch through them, :math:`\mathcal M_S`, followed
    from step to step (:mod:`~symattn.numerics.inner_split`); ``steps``: the Newton steps.
    Returns ``(mu, C, log det C)`` with :math:`CC^\top` the proposal's covariance."""
    I2 = np.eye(2)
    s = math.sqrt(Dq)

    def at(mu, h):
        w = w0 + s * mu
        if h is None:
            pr = prox(w, t, V, sigma, gtol=gtol)
        else:
            pr = prox(w, t, V, sigma, gtol=gtol, extra_starts=h[:, None, :],
                      include_default=False)
        J = np.linalg.inv(V * _hessian(pr.h, w, t, V, sigma))
        curv = x * Dq * (I2 - 0.5 * (J + np.swapaxes(J, 1, 2))) / V
        return (-0.5 * np.sum(mu * mu, axis=1) - x * pr.value, (pr.h - w) / V, curv,
                None if h is None else pr.h)

    mu = np.zeros_like(w0)
    ell, f, curv, h = at(mu, follow)
    for _ in range(steps):
        lam, U = np.linalg.eigh(I2 + curv)
        lam = np.maximum(lam, _MIN_PRECISION)
        d = np.einsum("nij,nj,nkj,nk->ni", U, 1 / lam, U, x * s * f - mu)
        norm = np.linalg.norm(d, axis=1, keepdims=True)
        d *= np.minimum(1.0, _MODE_CAP / np.maximum(norm, 1e-300))
        cand = at(mu + d, h)
        up = cand[0] > ell
        mu = np.where(up[:, None], mu + d, mu + 0.25 * d)
        ell, f, curv, h = at(mu, None if h is None else np.where(up[:, None], cand[3], h))
    lam, U = np.linalg.eigh(I2 + _CURV * curv)
    lam = np.maximum(lam, _MIN_PRECISION)
    C = np.einsum("nij,nj,nkj->nik", U, lam**-0.5, U)
    return mu, C, -0.5 * np.sum(np.log(lam), axis=1)


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
    #: outer nodes integrated with the fine inner rule (:func:`solve_ladder`)
    n_rough: int = 0
    #: the smoothing width of near-tied minima the point solves the equations at
    eps: float = float("nan")
    #: :math:`\Sigma/e = -x^2\partial_x\Phi/|\Phi|` at the point, on the map it was solved on
    #: (the x equation's residual, with the sign of the complexity; zero at the stationary x)
    sigma_over_e: float = float("nan")

    def as_dict(self) -> dict:
        names = ("q0", "q1", "m", "theta", "V", "x")
        hats = ("q0_hat", "q1_hat", "m_hat", "theta_hat", "V_hat")
        return {"alpha": self.alpha, **dict(zip(names, map(float, self.z))),
                **dict(zip(hats, map(float, self.hats))), "eps_t": self.eps_t,
                "residual": self.residual, "converged": self.converged,
                "iterations": self.iterations, "message": self.message,
                "n_rough": self.n_rough, "eps": self.eps, "sigma_over_e": self.sigma_over_e}


class OneStepRSBMap:
    """The 1RSB residual ``z -> (prior(hats(z)) - z[:5], dPhi/dx)`` on ``channel``'s outer
    rule and the inner rule ``inner`` (an :class:`InnerRule` or a Gauss--Hermite order;
    module doc).  ``pin``: ``"m"``
    (semantic branch: m = m_hat = 0) or ``"theta"`` (positional: theta = theta_hat = 0).
    ``split``: a split rule (:class:`InnerRule` with ``split``) for the rough nodes whose centre
    has a second minimum within reach (:meth:`lined`); ``fine`` then serves the other rough
    ones."""

    def __init__(self, channel, alpha: float, *, inner=12, pin: str | None = None,
                 eps: float = 1e-3, fine: InnerRule | None = None, rough=None,
                 split: InnerRule | None = None):
        self.channel, self.alpha, self.pin = channel, float(alpha), pin
        self.inner = _as_rule(inner)
        self.fine = fine
        if split is not None and (fine is None or not split.split):
            raise ValueError("split needs a fine rule and an InnerRule with split=True")
        self.split = split
        #: the outer nodes integrated with ``fine`` (frozen at the first evaluation, so the
        #: map stays smooth; :meth:`classify` recomputes it)
        self.rough = None if rough is None else np.asarray(rough, bool)
        #: the rough nodes integrated with ``split`` (frozen with ``rough``)
        self.lined_nodes = None
        self.eps = eps
        self._starts = {}
        self._kern = _kernels()

    def _params(self):
        p = self.channel.params
        return (self.alpha, p.rho, p.sigma, p.lam)

    def _unpack(self, z):
        q0_, q1_, m_, th_, V_, x_ = (float(v) for v in z)
        if self.pin == "m":
            m_ = 0.0
        if self.pin == "theta":
            th_ = 0.0
        if not (q0_ > 0 and q1_ - q0_ > 0 and V_ > 0 and x_ > 0):
            raise InvalidOrderParameters(f"need 0 < q0 < q1, V > 0, x > 0; got {z}")
        return q0_, q1_, m_, th_, V_, x_

    def classify(self, z) -> np.ndarray:
        r"""The outer nodes where the inner integrand is rough at ``z``: at some point of the
        (coarse) inner rule the global minimiser is not the one Newton reaches from the
        centre's (the prox left the centre's branch), or a second minimum lies within
        ``ROUGH_MARGIN`` times what the gap changes over one inner standard deviation,
        :math:`\sqrt{q_1-q_0}\,|\Delta|/V` (:math:`\nabla_w\,\mathrm{gap} = \Delta/V`); or
        the prox, continuous, departs from its linearisation at the centre by more than
        ``STEEP_MARGIN`` inner standard deviations (at alpha = 1, semantic, x = 1000, these
        nodes held all (to 1e-7) of the difference between 24 and 40 Gauss--Hermite points,
        ``studies/one_step_rsb_inner.py``)."""
        q0_, q1_, m_, th_, V_, x_ = self._unpack(z)
        Dq = q1_ - q0_
        ch = self.channel
        sigma = ch.params.sigma
        w0, t = ch.diagonal_nodes(q0_, m_, th_)
        n = w0.shape[0]
        w1, zeta, _ = _inner_points(w0, t, V_, Dq, x_, sigma, ch.gtol, self.inner)
        k = zeta.shape[1]
        tt = np.repeat(t, k, axis=0)
        pr = prox(w1, tt, V_, sigma, gtol=ch.gtol)
        # the inner points from the centre's minimiser only: its branch, followed
        centre = prox(w0, t, V_, sigma, gtol=ch.gtol)
        follow = prox(w1, tt, V_, sigma, gtol=ch.gtol,
                      extra_starts=np.repeat(centre.h, k, axis=0)[:, None, :],
                      include_default=False)
        left = ~follow.converged | (np.linalg.norm(follow.h - pr.h, axis=1) > 1e-6)
        scale = math.sqrt(Dq) * np.linalg.norm(pr.h - pr.h2, axis=1) / V_
        near = np.isfinite(pr.gap) & (pr.gap < ROUGH_MARGIN * np.where(np.isfinite(scale),
                                                                        scale, 0.0))
        # steep: the prox is continuous but far from linear over the inner Gaussian (near the
        # cusps of the two-minima set its Jacobian is large): the remainder of its first-order
        # expansion about the centre, in units of the inner standard deviation
        J = np.linalg.inv(V_ * _hessian(centre.h, w0, t, V_, sigma))
        zeta = (w1.reshape(n, k, 2) - w0[:, None, :]) / math.sqrt(Dq)
        lin = centre.h[:, None, :] + math.sqrt(Dq) * np.einsum("nij,nkj->nki", J, zeta)
        steep = (np.linalg.norm(pr.h.reshape(n, k, 2) - lin, axis=2).max(axis=1)
                 > STEEP_MARGIN * math.sqrt(Dq))
        return (left | near).reshape(n, k).any(axis=1) | steep

    def lined(self, z) -> np.ndarray:
        r"""The outer nodes whose centre has a second minimum within ``ROUGH_MARGIN`` inner
        standard deviations' worth of gap, :math:`\sqrt{q_1-q_0}\,|\Delta|/V`: the jump line
        crosses their inner Gaussian (or passes near), the split rule's nodes."""
        q0_, q1_, m_, th_, V_, _ = self._unpack(z)
        ch = self.channel
        w0, t = ch.diagonal_nodes(q0_, m_, th_)
        pr = prox(w0, t, V_, ch.params.sigma, gtol=ch.gtol)
        scale = math.sqrt(q1_ - q0_) * np.linalg.norm(pr.h - pr.h2, axis=1) / V_
        return np.isfinite(pr.gap) & (pr.gap < ROUGH_MARGIN * np.where(np.isfinite(scale),
                                                                       scale, 0.0))

    def _moments(self, w0, t, V_, Dq, x_, warm):
        """The inner averages on every node: ``inner`` on the smooth ones, ``fine`` on the
        rough ones (``split`` on the rough ones a jump line crosses); warm starts per part."""
        ch = self.channel
        if self.fine is None:
            parts = [(slice(None), self.inner)]
        else:
            lined = (np.zeros_like(self.rough) if self.lined_nodes is None
                     else self.lined_nodes)
            parts = [(np.flatnonzero(~self.rough), self.inner),
                     (np.flatnonzero(self.rough & ~lined), self.fine),
                     (np.flatnonzero(lined), self.split)]
        out = None
        for j, (sel, rule) in enumerate(parts):
            if not isinstance(sel, slice) and sel.size == 0:
                continue
            # warm: follow the last full evaluation's minima only (a smooth map for the
            # Jacobian); full: the default starts and those minima, so that a minimum the
            # default set misses but the last evaluation found is not lost
            nodes = rsb_node_moments(w0[sel], t[sel], V_, Dq, x_, ch.params.sigma,
                                     inner=rule, eps=self.eps, starts=self._starts.get(j),
                                     only_starts=warm, gtol=ch.gtol)
            if not warm:
                pr = nodes.minima
                self._starts[j] = np.stack([pr.h, np.where(np.isfinite(pr.h2), pr.h2, pr.h)],
                                           axis=1)
            if len(parts) == 1:
                return nodes
            if out is None:
                n = w0.shape[0]
                out = RSBNodes(Mx=np.empty(n), f=np.empty((n, 2)), F2=np.empty(n),
                               XiF=np.empty((n, 2)), Mbar=np.empty(n))
            for name in ("Mx", "f", "F2", "XiF", "Mbar"):
                getattr(out, name)[sel] = getattr(nodes, name)
        return out

    def _x_equation(self, atoms, order, hats, x_, gap) -> float:
        r""":math:`\partial\Phi/\partial x` in ``X_EQ_DIGITS`` digits from the double inputs,
        with :math:`\mathbb E[\mathcal M_x]` set to :math:`\mathbb E\langle\mathcal M\rangle` plus
        ``gap``, their difference summed node by node (the two atoms agree to seven digits at
        the semantic :math:`\alpha_c`, so their rounded difference would be noise)."""
        import mpmath as mp
        x_eq = self._kern[3]
        env, tilted = x_eq.pair
        with mp.workdps(X_EQ_DIGITS):
            a = [mp.mpf(v) for v in atoms]
            a[env] = a[tilted] + mp.mpf(gap)
            args = [*a, *map(mp.mpf, order), *map(mp.mpf, hats), mp.mpf(x_),
                    *map(mp.mpf, self._params())]
            return float(x_eq(*args))

    def evaluate(self, z, warm: bool = False):
        r"""``(residual (6,), hats (5,), phi)`` at ``z``: the prior equations' new order
        parameters minus ``z[:5]``, and :math:`x^2\partial_x\Phi/|\Phi|`; ``warm``: the prox
        from the last full evaluation's minima only (for Jacobian columns)."""
        atoms_k, hats_k, prior_k, x_eq_k, phi_k = self._kern
        q0_, q1_, m_, th_, V_, x_ = self._unpack(z)
        Dq = q1_ - q0_
        ch = self.channel
        if self.fine is not None and self.rough is None:
            self.rough = self.classify(z)
        if self.split is not None and self.lined_nodes is None:
            self.lined_nodes = self.rough & self.lined(z)
        w0, t = ch.diagonal_nodes(q0_, m_, th_)
        nodes = self._moments(w0, t, V_, Dq, x_, warm)
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
        dphi_dx = self._x_equation(atoms, order, hats, x_, float(wts @ (nodes.Mx - nodes.Mbar)))
        res = np.append(new - np.array(order), x_**2 * dphi_dx / abs(phi))
        return res, hats, phi


#: the Jacobian's step in q1 - q0 is at most this share of it
JAC_SHARE = 1e-3


def _jacobian_basis(free) -> np.ndarray:
    r"""The directions of :func:`solve_one_step_rsb`'s finite-difference columns, in the free
    coordinates (``free``: indices into ``(q0, q1, m, theta, V, x)``, starting ``0, 1``): the
    first moves :math:`q_0` and :math:`q_1` together, the second :math:`q_1` alone (so
    :math:`q_1 - q_0`), the rest one coordinate each.  The map varies on the scale of
    :math:`q_1 - q_0` along the second and of the order parameters along the first; with
    columns in :math:`q_0` and :math:`q_1` apart, each steps by a share of :math:`q_1 - q_0`
    and their sum, the common mode, is the difference of two large slopes (at the semantic
    :math:`\alpha = 1.5`, :math:`x = 2.6\times10^5`, :math:`q_1 - q_0 = 5.6\times10^{-8}`,
    the sum came out between -0.9 and +9 for a common slope of -1.77, and Newton stalled at
    residual 1e-6: docs/stability.md, 'Newton's Jacobian along the common level and the gap')."""
    B = np.eye(len(free))
    B[1, 0] = 1.0
    return B


#: the Jacobian's step in x, relative: at the semantic alpha = 1.5 (rule 0, x = 1.8e4, inner
#: rules recentred on the tilted measure) the x column at steps of 1e-6 x is noise and Newton
#: holding the gap stalls; at 1e-4 x it converges (docs/stability.md, 'Newton's Jacobian along
#: the common level and the gap')
X_STEP = 1e-4


def solve_one_step_rsb(fmap: OneStepRSBMap, z0, *, tol: float = 1e-8, max_iter: int = 40,
                       step: float = 1e-6, x_step: float = X_STEP, hold_x: bool = False,
                       hold_gap: bool = False, progress=None) -> OneStepRSBPoint:
    r"""Newton on the 1RSB residual from ``z0 = (q0, q1, m, theta, V, x)`` (module doc); the
    pinned coordinate (``fmap.pin``) is held at zero, and ``x`` too with ``hold_x`` (then the
    x equation is not solved: the profile :math:`\Phi(x)`).  With ``hold_gap`` the gap
    :math:`q_1 - q_0` of ``z0`` is held instead and ``x`` is free, the x equation again not
    solved: the same solutions parametrised by the gap, which passes where they fold over in
    ``x`` (continuation past such a fold).  Forward-difference steps: ``step`` (relative
    above 1) in the order parameters, ``x_step`` times x in x.  Returns the point reached with
    its status (not converged: the message says why)."""
    if hold_x and hold_gap:
        raise ValueError("hold_x and hold_gap: one of them, not both")
    held = {fmap.pin, "x" if hold_x else None}
    free = [i for i, name in enumerate(("q0", "q1", "m", "theta", "V", "x"))
            if name not in held]
    # the equations solved (equation i belongs to coordinate i; 5 is the x equation) and the
    # Jacobian's columns, as columns of the basis over ``free`` (without the gap's if held)
    eqs = [i for i in free if not (hold_gap and i == 5)]
    cols = [c for c in range(len(free)) if not (hold_gap and c == 1)]
    B = _jacobian_basis(free)[:, cols]
    z = np.array(z0, float)
    if fmap.pin == "m":
        z[2] = 0.0
    if fmap.pin == "theta":
        z[3] = 0.0
    try:
        res, hats, phi = fmap.evaluate(z)
    except InvalidOrderParameters as err:
        # a start outside the domain (an extrapolated start can be): a failed solve that
        # says so, not a traceback out of a long search
        return OneStepRSBPoint(fmap.alpha, z, np.full(5, np.nan), float("nan"), float("inf"),
                               False, 0, f"invalid start: {err}")
    msg = ""
    it = 0
    for it in range(1, max_iter + 1):
        r = float(np.max(np.abs(res[eqs])))
        if progress:
            progress(it, z, r)
        if r <= tol:
            return OneStepRSBPoint(fmap.alpha, z, hats, -phi, r, True, it - 1, "converged",
                                   sigma_over_e=float(-res[5]))
        # the columns along B (q0 + q1 together, q1 - q0, the others one by one); the step
        # solves in B and maps back
        J = np.full((len(eqs), len(eqs)), np.nan)
        for c, k in enumerate(free[j] for j in cols):
            h = x_step * z[5] if k == 5 else step * max(1.0, abs(z[k]))
            if B[1, c] != B[0, c]:
                # a column that moves q1 - q0: a step well inside it (at the semantic alpha_c
                # q1 - q0 ~ 1e-5, where 1e-6 misses the derivative by 15%)
                h = min(h, JAC_SHARE * (z[1] - z[0]))
            for hs in (h, -h):      # backwards where the forward step leaves the domain
                zp = z.copy()
                zp[free] += hs * B[:, c]
                try:
                    J[:, c] = (fmap.evaluate(zp, warm=True)[0][eqs] - res[eqs]) / hs
                    break
                except InvalidOrderParameters:
                    continue
        if not np.all(np.isfinite(J)):
            msg = "the Jacobian's steps leave the domain on both sides (q_1 - q_0 -> 0?)"
            break
        try:
            dz = B @ np.linalg.solve(J, -res[eqs])
        except np.linalg.LinAlgError:
            msg = "singular Jacobian"
            break
        t = 1.0
        while t > 1e-4:
            zn = z.copy()
            zn[free] += t * dz
            try:
                rn, hn, pn = fmap.evaluate(zn)
                if float(np.max(np.abs(rn[eqs]))) < r:
                    break
            except InvalidOrderParameters:
                pass
            t /= 2
        else:
            msg = f"no step lowers the residual {r:.3g}"
            break
        z, res, hats, phi = zn, rn, hn, pn
    r = float(np.max(np.abs(res[eqs])))
    ok = r <= tol
    return OneStepRSBPoint(fmap.alpha, z, hats, -phi, r, ok, it,
                           "converged" if ok else (msg or f"residual {r:.3g} after {it} steps"),
                           sigma_over_e=float(-res[5]))


#: the smoothing widths of :func:`solve_ladder`, as the RS solver lowers its tie smoothing
EPS_STAGES = (1e-3, 1e-5, 1e-7, 1e-9)


def solve_ladder(channel, alpha: float, z0, *, pin: str | None, inner=10,
                 fine: InnerRule | None = None, eps_stages=EPS_STAGES, hold_x: bool = False,
                 hold_gap: bool = False, tol: float = 1e-9, max_iter: int = 30,
                 split: InnerRule | None = None) -> OneStepRSBPoint:
    """:func:`solve_one_step_rsb` at each smoothing width of ``eps_stages`` in turn, each
    started from the last converged point: at a wide ``eps`` the map is smooth enough for
    Newton from afar, at the last one the blend of near-tied minima is negligible (at
    ``alpha = 1``, 2^10 x 10^2 points, fixed ``x``: residual 1e-11, where one width of 1e-2 or
    1e-3 stalls at 1e-3 because minima born at folds near a tie enter the blend abruptly).

    With ``fine`` the rough nodes (:meth:`OneStepRSBMap.classify`, at ``z0``) use that rule
    throughout; at the end they are classified again at the point reached and, if nodes
    outside the frozen set have become rough, the last stage is solved again on the union
    (the message says so).  With ``split`` the rough nodes a jump line crosses use that rule
    (:meth:`OneStepRSBMap.lined`).  Returns the point of the finest width that converged (``eps``;
    the message names a finer one that stalled), else the last attempt, not converged.
    ``hold_x``, ``hold_gap``: what each solve holds (:func:`solve_one_step_rsb`)."""
    z = np.array(z0, float)
    pt, rough, best, best_map = None, None, None, None
    for eps in eps_stages:
        fmap = OneStepRSBMap(channel, alpha, inner=inner, pin=pin, eps=eps, fine=fine,
                             rough=rough, split=split)
        pt = solve_one_step_rsb(fmap, z, hold_x=hold_x, hold_gap=hold_gap, tol=tol,
                                max_iter=max_iter)
        pt.eps = eps
        rough = fmap.rough
        if pt.converged:
            z, best, best_map = pt.z, pt, fmap
    finest = pt
    if fine is not None and best is not None:
        now = best_map.classify(best.z)
        extra = int(np.sum(now & ~rough))
        if extra:
            best_map = OneStepRSBMap(channel, alpha, inner=inner, pin=pin, eps=best.eps,
                                     fine=fine, rough=rough | now, split=split)
            redo = solve_one_step_rsb(best_map, best.z, hold_x=hold_x, hold_gap=hold_gap,
                                      tol=tol, max_iter=max_iter)
            redo.eps = best.eps
            redo.message += f" ({extra} nodes became rough on the way: solved again with them)"
            best = redo if redo.converged else None
            pt = redo
    if best is not None and best.eps != finest.eps:
        # a finer width stalled (minima entering the blend abruptly): the point stands at the
        # finest width that converged, and says so (also when solved again on more nodes)
        best.message += f" at smoothing width {best.eps:g}; {finest.message} at {finest.eps:g}"
    out = best if best is not None else pt
    if fine is not None:
        out.n_rough = int(np.sum((best_map or fmap).rough))
    return out
