r"""The general model's free entropy and saddle-point equations, matrix order parameters (model page §7).

For ``L`` tokens, student rank ``r`` and teacher rank ``r_t`` the order parameters are matrices:
:math:`q = \sigma^2 Q^\top Q/d` and the response :math:`V` (``r x r``, symmetric), the positional
overlaps :math:`M = PQ/d` (``L x r``), the semantic overlaps :math:`\theta = \sigma^2 Q^{*\top}Q/d`
(``r_t x r``), with conjugates :math:`\hat q, \hat V` (symmetric), :math:`\hat M, \hat\theta`, and
:math:`\rho = \sigma^2 I_{r_t}`.  With :math:`\Pi = PP^\top/d` and
:math:`\mathcal A = \lambda I_r + \sigma^2\hat V`,

.. math::

    \Phi = \tfrac12\mathrm{Tr}(\hat V q) - \tfrac12\mathrm{Tr}(\hat q V) - \mathrm{Tr}(\hat M^\top M)
           - \mathrm{Tr}(\hat\theta^\top\theta)
           + \tfrac12\mathrm{Tr}\big[\mathcal A^{-1}(\sigma^2\hat q + \hat M^\top\Pi\hat M
           + \sigma^2\hat\theta^\top\rho\,\hat\theta)\big] - \alpha\,\mathbb E\,\mathcal M .

* **Prior channel** (:func:`general_prior_channel`): derived from one row :math:`Q_i\in\mathbb R^r`
  of the weights, :math:`\max_{Q}[-\tfrac12 Q^\top\mathcal A Q + Q^\top b]` with
  :math:`b = \sigma\,g + \hat M^\top p + \sigma^2\hat\theta^\top Q^*`, averaged over
  :math:`g\sim N(0,\hat q)`, :math:`Q^*\sim N(0, I_{r_t})` and the positional entries ``p``
  (second moments :math:`\Pi`).  Stationarity in the conjugates gives
  :math:`V = \sigma^2\mathcal A^{-1}`, :math:`M = \Pi\hat M\mathcal A^{-1}`,
  :math:`\theta = \sigma^2\rho\,\hat\theta\mathcal A^{-1}`,
  :math:`q = \sigma^2\mathcal A^{-1}(\sigma^2\hat q + \hat M^\top\Pi\hat M + \sigma^2\hat\theta^\top\rho\,\hat\theta)\mathcal A^{-1}`,
  checked to be the optimal row's moments.
* **Output channel**: per token, :math:`u_l = w_l - M_l` and :math:`h^*_l` are jointly Gaussian with
  covariance :math:`C = \begin{pmatrix} q & \theta^\top\\ \theta & \rho\end{pmatrix}`; with
  :math:`q = KK^\top` and :math:`R = \rho - \theta q^{-1}\theta^\top = BB^\top` (Cholesky factors),
  :math:`w_l = M_l + K\xi_l`, :math:`h^*_l = \theta K^{-\top}\xi_l + B\eta_l`.  The Moreau envelope
  :math:`\mathcal M = \min_h[\sum_l (h_l-w_l)^\top V^{-1}(h_l-w_l)/2 + \ell(h,h^*)]` and
  :math:`f_l = V^{-1}(\mathrm{prox}_l - w_l)`.  The derivatives of :math:`\mathbb E\mathcal M`:

  - in ``M`` and ``V`` by the envelope theorem, :math:`\partial_{w_l}\mathcal M = -f_l`,
    :math:`\partial_V\mathcal M = -\tfrac12\sum_l f_lf_l^\top` (:func:`check_matrix_envelope`);
  - in ``q`` and ``theta`` by Price's theorem,
    :math:`\mathrm d\,\mathbb E g = \tfrac12\sum_l\mathrm{Tr}(\mathbb E[H^{uu}_l]\,\mathrm dq)
    + \sum_l\mathrm{Tr}(\mathbb E[H^{u*}_l]\,\mathrm d\theta)` (``H`` the Hessian of ``g`` in
    token ``l``'s variables), and Stein's lemma :math:`\mathbb E[\nabla^2 g] = C^{-1}\mathbb E[x\nabla g^\top]`
    with the block inverse of ``C``, which removes every derivative in :math:`h^*`:

    .. math::

        \mathbb E[H^{uu}] = -K^{-\top}\mathbb E[\xi f^\top] + q^{-1}\theta^\top B^{-\top}\mathbb E[\eta f^\top],
        \qquad \mathbb E[H^{*u}] = -B^{-\top}\mathbb E[\eta f^\top]

    (:func:`check_price_stein`, exactly, on polynomial test functions).

  Stationarity in ``q, M, theta, V`` then gives (:func:`derive_general_saddle_point`)

  .. math::

      \hat q = \alpha\sum_l\mathbb E[f_lf_l^\top],\quad \hat M = \alpha\,\mathbb E[F],\quad
      \hat\theta = \alpha B^{-\top}\sum_l\mathbb E[\eta_lf_l^\top],\quad
      \hat V = \mathrm{sym}\big(-\alpha K^{-\top}\sum_l\mathbb E[\xi_lf_l^\top] + q^{-1}\theta^\top\hat\theta\big),

  ``F`` the ``L x r`` matrix of rows :math:`f_l^\top`, :math:`\mathrm{sym}(X) = (X+X^\top)/2`.

At ``L = 2``, ``r = r_t = 1``, :math:`\Pi = ss^\top` with ``s = (1, -1)`` (``p_2 = -p_1``) and
``M = s m``, everything reduces exactly to model page §4 with :math:`\hat m = s^\top\hat M`
(``tests/test_general_symbolic.py``).
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass

import sympy as sp

from ..model.symbols import alpha, lam, rho, sigma
from .expectation import Expect

__all__ = ["GeneralSymbols", "general_symbols", "general_prior_channel", "GeneralSaddlePoint",
           "derive_general_saddle_point", "check_price_stein", "check_matrix_envelope",
           "wick_expectation", "sym", "prior_closed_form"]


def sym(X: sp.Matrix) -> sp.Matrix:
    """:math:`(X + X^\\top)/2`."""
    return (X + X.T) / 2


def _symmetric(name: str, n: int) -> sp.Matrix:
    if n == 1:
        return sp.Matrix([[sp.Symbol(name, real=True)]])
    s = {}
    for a in range(n):
        for b in range(a, n):
            s[a, b] = s[b, a] = sp.Symbol(f"{name}_{{{a + 1}{b + 1}}}", real=True)
    return sp.Matrix(n, n, lambda a, b: s[a, b])


def _general(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{{{i + 1}{j + 1}}}", real=True))


def _upper(name: str, n: int) -> sp.Matrix:
    """An upper-triangular ``n x n`` symbol matrix (the inverse transpose of a Cholesky factor)."""
    if n == 1:
        return sp.Matrix([[sp.Symbol(name, positive=True)]])
    return sp.Matrix(n, n, lambda a, b: sp.Symbol(f"{{{name}}}_{{{a + 1}{b + 1}}}", real=True)
                     if b >= a else sp.Integer(0))


def _zero(X) -> bool:
    """Exact zero test for rational functions (a matrix: every entry)."""
    entries = X if isinstance(X, sp.MatrixBase) else [X]
    return all(sp.cancel(sp.together(e)) == 0 for e in entries)


def free_entries(X: sp.Matrix) -> tuple:
    """The distinct symbols of ``X`` in row order (a symmetric matrix's upper triangle)."""
    out = []
    for e in X:
        if e not in out:
            out.append(e)
    return tuple(out)


@dataclass(frozen=True)
class GeneralSymbols:
    """Component symbols of the order parameters of one shape (module doc)."""

    L: int
    r: int
    r_t: int
    q: sp.Matrix
    V: sp.Matrix
    M: sp.Matrix
    theta: sp.Matrix
    q_hat: sp.Matrix
    V_hat: sp.Matrix
    M_hat: sp.Matrix
    theta_hat: sp.Matrix
    Pi: sp.Matrix

    @property
    def order_params(self) -> tuple:
        return tuple(itertools.chain(*(free_entries(X) for X in (self.q, self.M, self.theta,
                                                                   self.V))))

    @property
    def conjugates(self) -> tuple:
        return tuple(itertools.chain(*(free_entries(X) for X in (self.q_hat, self.M_hat,
                                                                   self.theta_hat, self.V_hat))))

    @property
    def rho(self) -> sp.Matrix:
        r""":math:`\rho = \sigma^2 I_{r_t}` as the symbol ``rho`` times the identity."""
        return rho * sp.eye(self.r_t)


@functools.lru_cache(maxsize=None)
def general_symbols(L: int, r: int, r_t: int) -> GeneralSymbols:
    """The symbols for ``L`` tokens, ranks ``r`` and ``r_t`` (``Pi`` a symmetric symbol matrix)."""
    return GeneralSymbols(
        L=L, r=r, r_t=r_t, q=_symmetric("q", r), V=_symmetric("V", r), M=_general("M", L, r),
        theta=_general(r"\theta", r_t, r), q_hat=_symmetric(r"\hat{q}", r),
        V_hat=_symmetric(r"\hat{V}", r), M_hat=_general(r"\hat{M}", L, r),
        theta_hat=_general(r"\hat{\theta}", r_t, r), Pi=_symmetric(r"\Pi", L))


# --------------------------------------------------------------------------------------
# Gaussian moments
# --------------------------------------------------------------------------------------
def wick_expectation(expr, gens, cov) -> sp.Expr:
    """Exact ``E[expr]`` of a polynomial in centred jointly Gaussian ``gens`` with covariance
    matrix ``cov`` (Isserlis/Wick: the sum over pairings of products of covariances)."""
    P = sp.Poly(sp.expand(expr), *gens)
    cache = {}

    def pairings(idx):
        if not idx:
            return sp.Integer(1)
        if idx in cache:
            return cache[idx]
        first, rest = idx[0], idx[1:]
        total = sp.Integer(0)
        for k in range(len(rest)):
            total += cov[first, rest[k]] * pairings(rest[:k] + rest[k + 1:])
        cache[idx] = total
        return total

    out = sp.Integer(0)
    for monom, coeff in P.terms():
        idx = tuple(i for i, k in enumerate(monom) for _ in range(k))
        if len(idx) % 2 == 0:
            out += coeff * pairings(idx)
    return out


# --------------------------------------------------------------------------------------
# prior channel
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneralPrior:
    psi: sp.Expr        #: Psi_prior(q_hat, M_hat, theta_hat, V_hat)
    moments: dict       #: "q", "M", "theta", "V" -> matrix, moments of the optimal row


def general_prior_channel(s: GeneralSymbols) -> GeneralPrior:
    r"""Derive the prior channel from one row of the weights (module doc).

    :math:`Q(b) = \mathcal A^{-1}b` maximises :math:`-\tfrac12Q^\top\mathcal AQ + Q^\top b`;
    :math:`\Psi = \mathbb E[\max]`, and the moments :math:`q = \sigma^2\mathbb E[QQ^\top]`,
    :math:`M = \mathbb E[pQ^\top]`, :math:`\theta = \sigma^2\mathbb E[Q^*Q^\top]`,
    :math:`V = \sigma^2\,\partial Q/\partial b`.
    """
    r, L, rt = s.r, s.L, s.r_t
    g = sp.Matrix(sp.symbols(f"g_1:{r + 1}", real=True))
    p = sp.Matrix(sp.symbols(f"p_1:{L + 1}", real=True))
    Qs = sp.Matrix(sp.symbols(f"Q^*_1:{rt + 1}", real=True))
    Qw = sp.Matrix(sp.symbols(f"Q_1:{r + 1}", real=True))
    A = lam * sp.eye(r) + sigma**2 * s.V_hat
    b = sigma * g + s.M_hat.T * p + sigma**2 * s.theta_hat.T * Qs
    objective = (-(Qw.T * A * Qw) / 2 + Qw.T * b)[0, 0]
    if not _zero(sp.hessian(objective, list(Qw)) + A):
        raise AssertionError("prior channel: the row problem's curvature is not -A")
    Qopt = A.LUsolve(b)      # the stationary point, a maximum when A > 0 (V > 0)
    if not _zero(sp.Matrix([objective]).jacobian(Qw).T.subs(dict(zip(Qw, Qopt)))):
        raise AssertionError("prior channel: A^{-1} b is not stationary")
    # b is linear in the centred variables x = (g, p, Q*), b = J x, so the moments are those of
    # a linear map: E[b b^T] = J S J^T, E[x b^T] = S J^T (S the covariance of x)
    gens = list(g) + list(p) + list(Qs)
    S = sp.zeros(len(gens), len(gens))
    S[:r, :r] = s.q_hat
    S[r:r + L, r:r + L] = s.Pi
    S[r + L:, r + L:] = rho / sigma**2 * sp.eye(rt)
    J = b.jacobian(gens)
    if not _zero(b - J * sp.Matrix(gens)):
        raise AssertionError("prior channel: the field b is not linear in (g, p, Q*)")
    Ai = A.inv()
    Ebb = J * S * J.T
    ExQ = S * J.T * Ai.T                  # E[x Q^T] with Q = A^{-1} b
    value = objective.subs(dict(zip(Qw, Qopt)))
    # E[value]: value is the quadratic form b^T A^{-1} b / 2 (checked), whose mean is
    # Tr(A^{-1} E[b b^T]) / 2
    if not _zero(sp.Matrix([value - (b.T * Ai * b)[0, 0] / 2])):
        raise AssertionError("prior channel: the row maximum is not b^T A^{-1} b / 2")
    psi = (Ai * Ebb).trace() / 2
    moments = {
        "q": sigma**2 * Ai * Ebb * Ai.T,
        "M": ExQ[r:r + L, :],
        "theta": sigma**2 * ExQ[r + L:, :],
        "V": sigma * Qopt.jacobian(list(g)),      # sigma^2 dQ/db, and dQ/dg = sigma dQ/db
    }
    return GeneralPrior(psi=psi, moments=moments)


def prior_closed_form(s: GeneralSymbols) -> dict:
    """The prior equations of the module doc as matrices (``q, M, theta, V``) and ``psi``."""
    A = lam * sp.eye(s.r) + sigma**2 * s.V_hat
    Ai = A.inv()
    Bm = sigma**2 * s.q_hat + s.M_hat.T * s.Pi * s.M_hat + sigma**2 * s.theta_hat.T * s.rho * s.theta_hat
    return {"q": sigma**2 * Ai * Bm * Ai, "M": s.Pi * s.M_hat * Ai,
            "theta": sigma**2 * s.rho * s.theta_hat * Ai, "V": sigma**2 * Ai,
            "psi": (Ai * Bm).trace() / 2}


# --------------------------------------------------------------------------------------
# identities of the output channel
# --------------------------------------------------------------------------------------
def check_matrix_envelope(r: int) -> None:
    r"""The envelope theorem with a matrix ``V``: for
    :math:`\mathcal G = \sum_l (h_l-w_l)^\top V^{-1}(h_l-w_l)/2 + \ell`,
    :math:`\partial_{V_{ab}}\mathcal G = -\tfrac12\sum_l [f_lf_l^\top]_{ab}\,(2-\delta_{ab})`
    with :math:`f_l = V^{-1}(h_l-w_l)` (the factor counts a symmetric entry twice), i.e.
    :math:`\partial_V\mathcal M = -\tfrac12\sum_l f_lf_l^\top`; the ``h``-derivatives drop out at
    the prox (the optimality condition), as for :func:`~symattn.symbolic.moreau.envelope_derivatives`.
    Raises ``AssertionError`` if not (one token suffices: the term is a sum over tokens)."""
    V = _symmetric("V", r)
    d = sp.Matrix(sp.symbols(f"d_1:{r + 1}", real=True))        # h_l - w_l
    G = (d.T * V.inv() * d)[0, 0] / 2
    f = V.inv() * d
    for a in range(r):
        for b in range(a, r):
            want = -(f * f.T)[a, b] * (1 if a == b else 2) / 2
            if not _zero(sp.diff(G, V[a, b]) - want):
                raise AssertionError(f"matrix envelope: dG/dV_{a + 1}{b + 1} is not {want}")


def _rational_point(rng, n, lo=-3, hi=3):
    return [sp.Rational(rng.randint(lo * 7, hi * 7), 7) for _ in range(n)]


def price_stein_form(qi, theta, Ri, Euf, Eef):
    r"""The claim checked by :func:`check_price_stein`, for one token: ``(E[H^uu], E[H^*u])`` from
    :math:`\mathbb E[uf^\top]` and :math:`\mathbb E[(h^*-\theta q^{-1}u)f^\top]` (``qi``, ``Ri``:
    :math:`q^{-1}`, :math:`R^{-1}`)."""
    return -qi * Euf + qi * theta.T * Ri * Eef, -Ri * Eef


def check_price_stein(L: int, r: int, r_t: int, seed: int = 0, trials: int = 2,
                      claim=price_stein_form) -> None:
    r"""Price's theorem and Stein's lemma as used for the ``q``- and ``theta``-stationarity
    (module doc), checked exactly on polynomial test functions.

    ``g`` is a random polynomial with integer coefficients, of degrees 2 and 4, in all tokens'
    variables :math:`(u_l, h^*_l)`, iid :math:`N(0, C)` per token.  :math:`\mathbb E g` is
    computed by Wick's theorem as a polynomial in the entries of ``C``; its derivatives in
    ``q`` and ``theta`` must equal, at random rational points with ``C`` positive definite
    (a rational-function identity checked at random points),

    .. math::

        \tfrac12\sum_l\mathbb E[H^{uu}_l] = \tfrac12\sum_l\big(-q^{-1}\mathbb E[u_lf_l^\top]
            + q^{-1}\theta^\top R^{-1}\mathbb E[(h^*_l-\theta q^{-1}u_l)f_l^\top]\big),
        \qquad \sum_l\mathbb E[H^{*u}_l] = -\sum_l R^{-1}\mathbb E[(h^*_l-\theta q^{-1}u_l)f_l^\top]

    with :math:`f_l = -\nabla_{u_l}g` (the envelope's :math:`-\partial_w\mathcal M`); the
    :math:`\xi, \eta` form of the module doc follows from :math:`q^{-1}K = K^{-\top}` and
    :math:`R^{-1}B = B^{-\top}`.  Symmetric entries of ``q`` are counted twice, as in ``Phi``.
    """
    rng = random.Random(seed)
    s = general_symbols(L, r, r_t)
    u = [sp.Matrix(sp.symbols(f"u_{l + 1}_1:{r + 1}", real=True)) for l in range(L)]
    hs = [sp.Matrix(sp.symbols(f"t_{l + 1}_1:{r_t + 1}", real=True)) for l in range(L)]
    gens = list(itertools.chain(*[list(u[l]) + list(hs[l]) for l in range(L)]))
    n1 = r + r_t
    C = sp.zeros(n1, n1)
    C[:r, :r] = s.q
    C[r:, :r] = s.theta
    C[:r, r:] = s.theta.T
    C[r:, r:] = s.rho
    cov = sp.zeros(len(gens), len(gens))
    for l in range(L):
        cov[l * n1:(l + 1) * n1, l * n1:(l + 1) * n1] = C
    qi = s.q.inv()
    R = s.rho - s.theta * qi * s.theta.T
    Ri = R.inv()
    for _ in range(trials):
        g = sum(rng.randint(-3, 3) * sp.Mul(*mon) for deg in (2, 4)
                for mon in itertools.combinations_with_replacement(gens, deg)
                if rng.random() < min(1.0, 30.0 / len(gens) ** deg * 4))
        Eg = wick_expectation(g, gens, cov)
        E = functools.partial(wick_expectation, gens=gens, cov=cov)
        Huu = sp.zeros(r, r)
        Hsu = sp.zeros(r_t, r)
        for l in range(L):
            f = -sp.Matrix([sp.diff(g, x) for x in u[l]])
            resid = hs[l] - s.theta * qi * u[l]
            Euf = (u[l] * f.T).applyfunc(E)
            Eef = (resid * f.T).applyfunc(E)
            huu, hsu = claim(qi, s.theta, Ri, Euf, Eef)
            Huu += huu
            Hsu += hsu
        point = {}
        while True:   # a positive definite C
            vals = _rational_point(rng, len(s.order_params))
            point = dict(zip(s.order_params, vals))
            point[rho] = sp.Integer(1) + sp.Rational(rng.randint(0, 20), 4)
            Cn = C.subs(point)
            if all(Cn[:k, :k].det() > 0 for k in range(1, n1 + 1)):
                break
        for a in range(r):
            for b in range(a, r):
                lhs = sp.diff(Eg, s.q[a, b]).subs(point)
                rhs = ((Huu + Huu.T) / 2)[a, b].subs(point) * (1 if a == b else 2) / 2
                if not _zero(lhs - rhs):
                    raise AssertionError(f"Price/Stein: dE[g]/dq_{a + 1}{b + 1} mismatch "
                                         f"({lhs} vs {rhs})")
        for c in range(r_t):
            for a in range(r):
                lhs = sp.diff(Eg, s.theta[c, a]).subs(point)
                rhs = Hsu[c, a].subs(point)
                if not _zero(lhs - rhs):
                    raise AssertionError(f"Price/Stein: dE[g]/dtheta_{c + 1}{a + 1} mismatch "
                                         f"({lhs} vs {rhs})")


# --------------------------------------------------------------------------------------
# the saddle point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneralSaddlePoint:
    r"""The general saddle-point system of one shape (module doc).

    ``atoms`` holds matrices of :class:`Expect` atoms: ``Sff`` is
    :math:`\sum_l \mathbb E[f_l f_l^\top]`, ``EF`` is :math:`\mathbb E[F]`, ``Sxf`` is
    :math:`\sum_l \mathbb E[\xi_l f_l^\top]`, ``Sef`` is :math:`\sum_l \mathbb E[\eta_l f_l^\top]`,
    and ``EM`` the envelope's mean.  ``KiT`` and ``BiT`` are :math:`K^{-\top}` and
    :math:`B^{-\top}` (upper-triangular symbol matrices), ``K`` and ``B`` the lower Cholesky
    factors of ``q`` and :math:`R = \rho - \theta q^{-1}\theta^\top`.
    """

    symbols: GeneralSymbols
    phi: sp.Expr
    prior: dict
    output: dict
    atoms: dict
    KiT: sp.Matrix
    BiT: sp.Matrix


def _atom_matrices(s: GeneralSymbols) -> dict:
    L, r, rt = s.L, s.r, s.r_t
    f = [[sp.Symbol(f"f_{{{l + 1}{a + 1}}}", real=True) for a in range(r)] for l in range(L)]
    xi = [[sp.Symbol(f"xi_{{{l + 1}{a + 1}}}", real=True) for a in range(r)] for l in range(L)]
    eta = [[sp.Symbol(f"eta_{{{l + 1}{c + 1}}}", real=True) for c in range(rt)] for l in range(L)]
    Sff = sp.Matrix(r, r, lambda a, b: sum(Expect(f[l][min(a, b)] * f[l][max(a, b)])
                                           for l in range(L)))
    EF = sp.Matrix(L, r, lambda l, a: Expect(f[l][a]))
    Sxf = sp.Matrix(r, r, lambda a, b: sum(Expect(xi[l][a] * f[l][b]) for l in range(L)))
    Sef = sp.Matrix(rt, r, lambda c, b: sum(Expect(eta[l][c] * f[l][b]) for l in range(L)))
    return {"Sff": Sff, "EF": EF, "Sxf": Sxf, "Sef": Sef,
            "EM": Expect(sp.Symbol(r"\mathcal{M}", real=True)),
            "f": f, "xi": xi, "eta": eta}


@functools.lru_cache(maxsize=None)
def derive_general_saddle_point(L: int, r: int, r_t: int) -> GeneralSaddlePoint:
    """Derive the saddle-point equations of the module doc for one shape (cached).

    The prior equations are solved from the conjugates' stationarity and checked against the
    optimal row's moments; the output equations are solved from the order parameters'
    stationarity, with the derivatives of :math:`\\mathbb E\\mathcal M` given by the envelope
    theorem and Price/Stein (:func:`check_matrix_envelope`, :func:`check_price_stein`; run by
    the tests for each shape, not here, as they take seconds).
    """
    s = general_symbols(L, r, r_t)
    at = _atom_matrices(s)
    prior = general_prior_channel(s)
    closed = prior_closed_form(s)
    phi = ((s.V_hat * s.q).trace() / 2 - (s.q_hat * s.V).trace() / 2
           - (s.M_hat.T * s.M).trace() - (s.theta_hat.T * s.theta).trace()
           + prior.psi - alpha * at["EM"])
    if not _zero(prior.psi - closed["psi"]):
        raise AssertionError("prior channel: Psi is not the closed form")

    # conjugate stationarity -> prior equations (linear in the order parameters)
    eqs = [sp.diff(phi, x) for x in s.conjugates]
    sol = sp.solve(eqs, s.order_params, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"prior equations: expected one solution, got {len(sol)}")
    prior_sol = {}
    for name, X in (("q", s.q), ("M", s.M), ("theta", s.theta), ("V", s.V)):
        Y = X.subs(sol[0])
        for want in (prior.moments[name], closed[name]):
            if not _zero(Y - want):
                raise AssertionError(f"prior channel: {name} from stationarity != its moment")
        prior_sol[name] = closed[name]

    # order-parameter stationarity -> output equations.  The Cholesky factors enter only as
    # K^{-T} and B^{-T}: kept as triangular symbol matrices (q = K K^T, R = B B^T), so that the
    # solution stays small for any rank
    KiT = _upper(r"K^{-\top}", r)
    BiT = _upper(r"B^{-\top}", r_t)
    # dE[M] = sum_ij G_X[i, j] dX[i, j] over the entries of X taken as independent; a
    # symmetric matrix's symbol collects both of its entries
    EHuu = -KiT * at["Sxf"] + s.q.inv() * s.theta.T * BiT * at["Sef"]
    EHsu = -BiT * at["Sef"]
    grads = ((s.q, sym(EHuu) / 2), (s.theta, EHsu), (s.M, -at["EF"]), (s.V, -at["Sff"] / 2))
    dEM = {}
    for X, G in grads:
        for x in free_entries(X):
            dEM[x] = sum(G[i, j] for i in range(X.rows) for j in range(X.cols) if X[i, j] == x)
    stationarity = [sp.diff(phi.subs(at["EM"], 0), x) - alpha * dEM[x] for x in s.order_params]
    sol = sp.solve(stationarity, s.conjugates, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"output equations: expected one solution, got {len(sol)}")
    output = {name: X.subs(sol[0]).applyfunc(sp.expand)
              for name, X in (("q_hat", s.q_hat), ("M_hat", s.M_hat),
                              ("theta_hat", s.theta_hat), ("V_hat", s.V_hat))}
    return GeneralSaddlePoint(symbols=s, phi=phi, prior=prior_sol, output=output,
                              atoms=at, KiT=KiT, BiT=BiT)
