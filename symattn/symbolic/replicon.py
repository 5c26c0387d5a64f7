r"""The replicon (de Almeida--Thouless) eigenvalue of the replica-symmetric saddle point, derived
(model page §8).  Single weight vector (``r = 1``), ``L`` tokens, ridge prior.

The ``n``-replica action at inverse temperature :math:`\beta` depends on the off-diagonal
overlaps :math:`Q_{ab}` (the covariance of replicas ``a != b`` of every token's field; tokens
independent) and their conjugates :math:`\Lambda_{ab}`:

.. math::

    S = -\sum_{a<b}\Lambda_{ab}Q_{ab}
        + \log\!\int\!\prod_a\mathrm dQ_a\,e^{-\frac12 Q^\top K Q + b^\top Q}
        + \alpha\log\mathbb E_{h\sim N(0, Q)}\prod_a e^{-\beta\ell(h^a)},
    \qquad K = A\,I - \sigma^2\Lambda,

(``Lambda`` with zero diagonal; at the RS point :math:`A = \beta(\lambda + \sigma^2\hat V)`,
:math:`\Lambda_{ab} = \beta^2\hat q`).  Perturbations :math:`\delta Q_{ab} = x\,v_{ab}`,
:math:`\delta\Lambda_{ab} = y\,v_{ab}` with ``v`` a *replicon* vector (symmetric, zero diagonal,
zero row sums) diagonalise the Hessian of every replica-symmetric matrix on pairs, with
eigenvalue ``P - 2Q + R`` (its entries on equal pairs, pairs sharing one replica, disjoint pairs;
:func:`replicon_sector`).  Here:

* **output term** (:func:`output_replicon`): by Price's theorem
  :math:`\partial_{Q_{ab}}\mathbb E F = \mathbb E\sum_l\partial_{h^a_l}\partial_{h^b_l}F`; at the RS
  point the replicas' fields are ``w + z_a`` with ``z_a`` independent, so every derivative of a
  replica's factor becomes a derivative of :math:`Z(w) = \mathbb E_z e^{-\beta\ell(w+z)}`, and
  ``n -> 0`` removes the normalisation :math:`\mathbb E_w Z^n`.  Derived:

  .. math::

      \lambda_{\rm out} = P - 2Q + R = \mathbb E_w\sum_{l,k}\big(\partial_{w_l}\partial_{w_k}\log Z\big)^2 .

* **prior term** (:func:`prior_replicon`): on explicit ``n x n`` matrices,
  :math:`\lambda_{\rm prior} = \sigma^4/A^2 = (V/\beta)^2` (with the prior equation
  :math:`V = \sigma^2/(\lambda + \sigma^2\hat V)`), independent of ``n`` and of the field ``b``.
* **the node's second derivative** (:func:`log_z_hessian`): with :math:`C` the Gibbs covariance
  of the pre-activations at the node, :math:`\partial^2_w\log Z = (\beta/V)^2C - (\beta/V)I`.
* **the combination** (:func:`derive_replicon`): along ``(x v, y v)``,
  :math:`\delta^2 S/|v|^2 = -xy + \lambda_{\rm prior}y^2/2 + \alpha\lambda_{\rm out}x^2/2`;
  eliminating the conjugate at its stationary point, the RS saddle changes character where

  .. math::

      \lambda_R = \alpha\,\lambda_{\rm prior}\lambda_{\rm out}
                = \alpha\,\mathbb E\,\Big\lVert \frac{\beta}{V}C - I_L \Big\rVert_F^2 = 1,

  RS being stable for :math:`\lambda_R < 1` (a convex loss always has :math:`\lambda_R < 1`:
  ``tests/test_replicon.py`` checks it in closed form for the square loss).

**Zero temperature.** Where the node's Moreau objective :math:`\mathcal G` has one global
minimum, Laplace's method gives :math:`\beta C/V \to J = (V\nabla^2\mathcal G)^{-1} =
\partial\,\mathrm{prox}/\partial w`, so :math:`\lambda_R \to \alpha\,\mathbb E\lVert J -
I\rVert_F^2` -- the familiar :math:`\alpha V^2\mathbb E\lVert\partial f/\partial w\rVert_F^2`.
Where two minima ``h_A, h_B`` tie (a surface of the node space on which the prox jumps by
:math:`\Delta = h_A - h_B`) the Gibbs measure is a two-point mixture, :math:`C \approx
p(1-p)\Delta\Delta^\top` with :math:`p = 1/(1+e^{-\beta g})`, ``g`` the gap, whose gradient in ``w``
is :math:`\Delta/V` (envelope theorem).  Across the surface (:func:`jump_growth`)

.. math::

    \lambda_R = \lambda_R^{\rm cont} + s\,\beta + O(1),\qquad
    s = \frac{\alpha}{6V}\int_{\rm surface}\varphi\,|\Delta|^3\,\mathrm dS
      = \lim_{\delta\to0}\frac{\alpha}{12\,\delta V^2}\,\mathbb E\big[|\Delta|^4\,
        \mathbb 1(\text{gap} < \delta)\big],

the last form being what a quadrature rule measures (the nodes whose two lowest minima lie
within ``delta``, a slab of width :math:`2\delta V/|\Delta|`).  So RS is unstable at zero
temperature wherever the prox jumps on a set of positive surface measure, and ``s`` says how
fast the instability grows with :math:`\beta`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import sympy as sp

from ..model.symbols import V, V_hat, alpha, lam, sigma
from .finite_temperature import beta

__all__ = ["replicon_sector", "OutputReplicon", "output_replicon", "prior_replicon",
           "log_z_hessian", "jump_growth", "RepliconEquations", "derive_replicon"]


# --------------------------------------------------------------------------------------
# the replicon sector of a replica-symmetric matrix on pairs
# --------------------------------------------------------------------------------------
def _pairs(n):
    return list(itertools.combinations(range(n), 2))


def _replicon_vector(n):
    """``+1`` on pairs (0,1), (2,3), ``-1`` on (0,2), (1,3): zero row sums (needs ``n >= 4``)."""
    sign = {(0, 1): 1, (2, 3): 1, (0, 2): -1, (1, 3): -1}
    return sp.Matrix([sign.get(p, 0) for p in _pairs(n)])


def replicon_sector(n_values=(4, 5, 6)):
    r"""Check on explicit ``n`` that the replicon vectors are eigenvectors, with eigenvalue
    ``P - 2Q + R``, of every replica-symmetric matrix on pairs (entries ``P`` on equal pairs,
    ``Q`` on pairs sharing one replica, ``R`` on disjoint ones).  Returns ``P - 2Q + R``."""
    P, Q, R = sp.symbols("P Q R")
    for n in n_values:
        pairs = _pairs(n)
        M = sp.Matrix(len(pairs), len(pairs),
                      lambda i, j: {2: P, 1: Q, 0: R}[len(set(pairs[i]) & set(pairs[j]))])
        v = _replicon_vector(n)
        rows = [sum(v[i] for i, p in enumerate(pairs) if a in p) for a in range(n)]
        if any(rows):
            raise AssertionError(f"n = {n}: the test vector has nonzero row sums {rows}")
        if sp.simplify(M * v - (P - 2 * Q + R) * v) != sp.zeros(len(pairs), 1):
            raise AssertionError(f"n = {n}: the replicon vector is not an eigenvector")
    return P - 2 * Q + R


# --------------------------------------------------------------------------------------
# the output term
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OutputReplicon:
    """The output term's replicon eigenvalue (integrand of :math:`\\mathbb E_w`)."""

    L: int
    w: tuple
    Z: sp.Function
    P: sp.Expr          #: integrand of E[.] on equal pairs (before subtracting E[D F/F]^2)
    Q: sp.Expr          #: ... on pairs sharing one replica
    R: sp.Expr          #: ... on disjoint pairs
    replicon: sp.Expr   #: P - 2Q + R in the symbols ``H`` of the Hessian of log Z
    H: sp.Matrix        #: symbols H_lk standing for d^2 log Z / dw_l dw_k


@functools.lru_cache(maxsize=None)
def output_replicon(L: int = 2) -> OutputReplicon:
    r"""Derive the output term's replicon eigenvalue for ``L`` tokens (module doc).

    Four replicas carry the derivatives; the others contribute :math:`Z^{n-4}`, and as
    ``n -> 0`` the weight :math:`Z^n/\mathbb E Z^n \to 1`, so each Hessian entry is
    :math:`\mathbb E[D_{ab}D_{cd}F/F] - \mathbb E[D_{ab}F/F]\,\mathbb E[D_{cd}F/F]` with
    ``F`` the product of the four factors :math:`Z(u_a)`, evaluated at ``u_a = w``."""
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    u = [sp.symbols(f"u_{a}_1:{L + 1}", real=True) for a in range(4)]
    Z = sp.Function("Z")
    F = sp.Mul(*[Z(*u[a]) for a in range(4)])
    at_w = {u[a][l]: w[l] for a in range(4) for l in range(L)}

    def D(expr, a, b):          # d/dQ_ab by Price's theorem: one derivative per replica, per token
        return sum(sp.diff(expr, u[a][l], u[b][l]) for l in range(L))

    def conditional(expr):      # E_z over the four replicas, normalised: at u_a = w
        return sp.expand((expr / F).subs(at_w, simultaneous=True))

    first = [conditional(D(F, *p)) for p in ((0, 1), (0, 2), (2, 3))]
    if any(sp.simplify(f - first[0]) != 0 for f in first[1:]):
        raise AssertionError("E[D_ab F/F] depends on the pair: the replicas are not exchangeable")
    P = conditional(D(D(F, 0, 1), 0, 1))
    Q = conditional(D(D(F, 0, 1), 0, 2))
    R = conditional(D(D(F, 0, 1), 2, 3))
    # the subtracted products E[D F/F]^2 are the same for P, Q, R and cancel in P - 2Q + R
    combo = replicon_sector()
    Ps, Qs, Rs = sorted(combo.free_symbols, key=str)
    integrand = sp.simplify(combo.subs({Ps: P, Qs: Q, Rs: R}))
    logZ = sp.log(Z(*w))
    hess = sp.Matrix(L, L, lambda l, k: sp.diff(logZ, w[l], w[k]))
    H = sp.Matrix(L, L, lambda l, k: sp.Symbol(f"H_{min(l, k) + 1}{max(l, k) + 1}", real=True))
    frobenius = sum(H[l, k]**2 for l in range(L) for k in range(L))
    target = frobenius.subs({H[l, k]: hess[l, k] for l in range(L) for k in range(L)})
    if sp.simplify(sp.expand(integrand - target)) != 0:
        raise AssertionError("P - 2Q + R is not E ||Hess log Z||_F^2")
    return OutputReplicon(L=L, w=w, Z=Z, P=P, Q=Q, R=R, replicon=frobenius, H=H)


def log_z_hessian(L: int = 2):
    r"""Derive :math:`\partial_{w_l}\partial_{w_k}\log Z = (\beta/V)^2C_{lk} - (\beta/V)\delta_{lk}`
    for :math:`Z = \int\mathrm dh\,\mathcal N(h; w, \tfrac V\beta I)e^{-\beta\ell(h)}`: the
    observables :math:`\partial W/W`, :math:`\partial^2W/W` of the integrand ``W`` are quadratics in
    ``u = h - w`` whose Gibbs means are written with :math:`\langle u_l\rangle = Vf_l`,
    :math:`\langle u_lu_k\rangle = V^2f_lf_k + C_{lk}`.  Returns the ``L x L`` matrix in the
    symbols ``C_lk`` (symmetric)."""
    h = sp.symbols(f"h_1:{L + 1}", real=True)
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    u = sp.symbols(f"u_1:{L + 1}", real=True)
    f = sp.symbols(f"f_1:{L + 1}", real=True)
    C = sp.Matrix(L, L, lambda l, k: sp.Symbol(f"C_{min(l, k) + 1}{max(l, k) + 1}", real=True))
    ell = sp.Function(r"\ell")(*h)
    W = sp.exp(-beta * ell) * sp.Mul(*[sp.sqrt(beta / (2 * sp.pi * V))
                                       * sp.exp(-beta * (h[l] - w[l])**2 / (2 * V))
                                       for l in range(L)])
    shift = {h[l]: w[l] + u[l] for l in range(L)}

    def gibbs(obs):             # <obs> for a polynomial of degree <= 2 in u
        poly = sp.Poly(sp.expand(obs), *u)
        if poly.total_degree() > 2:
            raise AssertionError(f"observable of degree > 2 in h - w: {obs}")
        out = sp.Integer(0)
        for monom, coeff in poly.terms():
            idx = [l for l in range(L) for _ in range(monom[l])]
            if not idx:
                out += coeff
            elif len(idx) == 1:
                out += coeff * V * f[idx[0]]
            else:
                out += coeff * (V**2 * f[idx[0]] * f[idx[1]] + C[idx[0], idx[1]])
        return out

    d1 = [gibbs(sp.simplify(sp.diff(W, w[l]) / W).subs(shift)) for l in range(L)]
    hess = sp.Matrix(L, L, lambda l, k: sp.expand(
        gibbs(sp.simplify(sp.diff(W, w[l], w[k]) / W).subs(shift)) - d1[l] * d1[k]))
    expected = (beta / V)**2 * C - (beta / V) * sp.eye(L)
    if sp.simplify(hess - expected) != sp.zeros(L, L):
        raise AssertionError(f"d^2 log Z/dw^2: derived {hess}")
    return hess, C


# --------------------------------------------------------------------------------------
# the prior term
# --------------------------------------------------------------------------------------
def prior_replicon(n_values=(4, 5)):
    r"""Derive the prior term's replicon eigenvalue: the second derivative of
    :math:`\log\int e^{-Q^\top KQ/2 + b^\top Q}` (``K = A I - C 11^T - eps sigma^2 v``, ``b``
    along ``1``) in ``eps`` at 0, per :math:`|v|^2`, on explicit ``n x n`` matrices.  The first
    derivative vanishes (so the average over the teacher, inside ``b``, adds nothing) and the
    second is :math:`\sigma^4/A^2` for every ``n``.  Returns :math:`\sigma^4/A^2` in the model's
    symbols, :math:`(V/\beta)^2` with :math:`A = \beta(\lambda + \sigma^2\hat V)` and the prior
    equation for ``V`` (checked)."""
    A, C, b0, eps = sp.symbols("A C b_0 epsilon", real=True)
    for n in n_values:
        pairs = _pairs(n)
        v = _replicon_vector(n)
        vmat = sp.zeros(n, n)
        for i, (a, b) in enumerate(pairs):
            vmat[a, b] = vmat[b, a] = v[i]
        K = A * sp.eye(n) - C * sp.ones(n, n) - eps * sigma**2 * vmat
        bvec = b0 * sp.ones(n, 1)
        # log of the Gaussian integral, up to the constant n log(2 pi)/2
        logint = -sp.log(K.det()) / 2 + (bvec.T * K.inv() * bvec)[0, 0] / 2
        d1 = sp.simplify(sp.diff(logint, eps).subs(eps, 0))
        d2 = sp.simplify(sp.diff(logint, eps, 2).subs(eps, 0) / (v.T * v)[0, 0])
        if d1 != 0:
            raise AssertionError(f"n = {n}: first derivative along the replicon {d1}")
        if sp.simplify(d2 - sigma**4 / A**2) != 0:
            raise AssertionError(f"n = {n}: prior replicon {d2}, expected sigma^4/A^2")
    lam_prior = (sigma**4 / A**2).subs(A, beta * (lam + sigma**2 * V_hat))
    V_prior = sigma**2 / (lam + V_hat * sigma**2)
    if sp.simplify(lam_prior - (V_prior / beta)**2) != 0:
        raise AssertionError("sigma^4/A^2 is not (V/beta)^2")
    return (V / beta)**2


# --------------------------------------------------------------------------------------
# jumps of the prox at zero temperature
# --------------------------------------------------------------------------------------
def jump_growth():
    r"""The coefficient of :math:`\beta` in :math:`\lambda_R` from a switching surface (module
    doc): with :math:`C = p(1-p)\Delta\Delta^\top`, :math:`p = 1/(1 + e^{-\beta g})`,
    :math:`g = |\Delta|\nu/V` at normal distance :math:`\nu` from the surface, the integral over
    :math:`\nu` of :math:`\lVert\beta C/V\rVert_F^2 = \beta^2p^2(1-p)^2|\Delta|^4/V^2`.  Returns
    ``(per_surface, per_slab)``: the coefficient per unit surface measure,
    :math:`|\Delta|^3/(6V)`, and per unit Gaussian weight of the slab ``gap < delta``
    (:math:`2\delta V/|\Delta|` wide), :math:`|\Delta|^4/(12\delta V^2)`; multiply by ``alpha``."""
    x, nu, Dn, delta = sp.symbols("x nu |Delta| delta", positive=True)
    p = 1 / (1 + sp.exp(-x))
    # the envelope theorem: the gap between two local minima of |h - w|^2/2V + l(h) moves with
    # w as (h_A - h_B)/V
    w, hA, hB = sp.symbols("w h_A h_B", real=True)
    gap = ((hB - w)**2 - (hA - w)**2) / (2 * V)
    if sp.simplify(sp.diff(gap, w) - (hA - hB) / V) != 0:
        raise AssertionError("the gap's gradient is not Delta/V")
    unit = sp.integrate(sp.simplify(p**2 * (1 - p)**2), (x, -sp.oo, sp.oo))
    if unit != sp.Rational(1, 6):
        raise AssertionError(f"int p^2 (1-p)^2 dx = {unit}")
    # nu -> x = beta |Delta| nu / V
    per_surface = sp.simplify(beta**2 * Dn**4 / V**2 * unit * V / (beta * Dn) / beta)
    per_slab = sp.simplify(per_surface / (2 * delta * V / Dn))
    return per_surface, per_slab


# --------------------------------------------------------------------------------------
# the replicon eigenvalue
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RepliconEquations:
    r""":math:`\lambda_R` at finite :math:`\beta` (integrand, in the covariance ``C``), its zero
    temperature form (in the prox Jacobian ``J``) and the jump coefficients."""

    L: int
    finite_beta: sp.Expr     #: alpha * integrand of E[.]: ||beta C/V - I||_F^2
    zero_temperature: sp.Expr  #: alpha * ||J - I||_F^2
    C: sp.Matrix
    J: sp.Matrix
    jump_per_surface: sp.Expr
    jump_per_slab: sp.Expr


@functools.lru_cache(maxsize=None)
def derive_replicon(L: int = 2) -> RepliconEquations:
    """Derive :math:`\\lambda_R` (module doc; cached)."""
    out = output_replicon(L)
    hess, C = log_z_hessian(L)
    lam_prior = prior_replicon()
    # the output integrand with the node's Hessian of log Z in the Gibbs covariance
    integrand = out.replicon.subs({out.H[l, k]: hess[l, k] for l in range(L) for k in range(L)})
    # Schur complement: stationary in the conjugate's amplitude y
    x, y, lo, lp = sp.symbols("x y lambda_out lambda_prior", positive=True)
    quad = -x * y + lp * y**2 / 2 + alpha * lo * x**2 / 2
    ystar = sp.solve(sp.diff(quad, y), y)[0]
    eff = sp.factor(quad.subs(y, ystar) / x**2 * 2 * lp)        # alpha lo lp - 1
    lam_R = sp.expand(eff + 1).subs({lo: integrand, lp: lam_prior})
    J = sp.Matrix(L, L, lambda l, k: sp.Symbol(f"J_{min(l, k) + 1}{max(l, k) + 1}", real=True))
    expected = alpha * sum((beta * C[l, k] / V - (1 if l == k else 0))**2
                           for l in range(L) for k in range(L))
    if sp.simplify(lam_R - expected) != 0:
        raise AssertionError(f"lambda_R = {lam_R}")
    zero_t = alpha * sum((J[l, k] - (1 if l == k else 0))**2 for l in range(L) for k in range(L))
    per_surface, per_slab = jump_growth()
    return RepliconEquations(L=L, finite_beta=expected, zero_temperature=zero_t, C=C, J=J,
                             jump_per_surface=per_surface, jump_per_slab=per_slab)
