r"""The coordinates the fixed-point solver works in, for every shape (model page §7).

The saddle-point map sends the order parameters :math:`(q, M, \theta, V)` to themselves.  Its
output :math:`M = \Pi\hat M\mathcal A^{-1}` lies in the range of :math:`\Pi` (rank ``k``), so
the solver's vector :math:`x` holds

.. math::  x = (\operatorname{triu} q,\ m,\ \theta,\ \operatorname{triu} V), \qquad M = P m,

with :math:`P` (``L x k``) ``k`` independent columns of :math:`\Pi`, each divided by its
diagonal entry (:func:`range_basis`), and :math:`m` ``k x r``.  The conjugate of :math:`m` is
:math:`\hat m = P^\top\hat M`; the prior sees :math:`\hat M` only through :math:`\Pi\hat M`,
so :math:`\hat M = P(P^\top P)^{-1}\hat m` gives the same order parameters and :math:`\Phi`
(:math:`\Pi P(P^\top P)^{-1}P^\top = \Pi`).  At the paper's shape (``Pi = s s^T``,
``s = (1, -1)``) ``P = s`` and :math:`x = (q, m, \theta, V)`, the paper's variables, with
:math:`\hat m = \hat M_1 - \hat M_2`.

The map itself is the generated one (:mod:`symattn.compile.general_equations`), with the
atoms in its order (:attr:`Coordinates.atom_keys`).

**Gauge** (``r > 1``).  The equations are invariant under rotations of the student's rank
space, :math:`Q \to QO` (model page §7), so without a gauge the fixed points form continuous
families and Newton's Jacobian is singular along them.  With ``gauge`` the map is composed with
the rotation :func:`gauge_rotation` that makes :math:`S = [\theta; m]` (or :math:`S = m` when
``theta`` is pinned) lower-trapezoidal, and the entries of ``S`` above its diagonal are not free
(:meth:`Coordinates.free`).

**Pins and symmetries.**  A branch may pin ``theta = 0`` (the positional branch) or ``M = 0``
(the semantic one): both are exact invariant subspaces for every shape.  Pinned, the map uses
the rule averaged over the node symmetry that leaves the subspace invariant -- ``eta -> -eta``
(``"eta_flip"``) for ``theta``, ``(xi, eta) -> -(xi, eta)`` (``"full_flip"``) for ``M`` --
which sets the atoms odd under it exactly to zero (:func:`odd_atoms`), so the pinned point is
an exact fixed point of every equation under that rule.
"""

from __future__ import annotations

import numpy as np

from ..compile.general_equations import general_equations
from ..compile.shape import Shape
from ..model import ModelParams

__all__ = ["Coordinates", "range_basis", "odd_atoms", "gauge_rotation", "SYMMETRY_OF_PIN",
           "PINNABLE", "InvalidOrderParameters", "cholesky_factors"]

#: the order parameters a branch may pin at zero, and the node symmetry that then holds
SYMMETRY_OF_PIN = {"theta": "eta_flip", "M": "full_flip"}
PINNABLE = tuple(SYMMETRY_OF_PIN)


class InvalidOrderParameters(ValueError):
    """A point outside the domain: ``q``, ``V`` or ``R = rho - theta q^-1 theta^T`` not
    positive definite, or not finite."""


def range_basis(Pi, tol: float = 1e-12):
    r"""``(P, pivots)``: ``k = rank(Pi)`` columns of ``Pi``, each divided by its diagonal
    entry (``P[pivots]`` is then invertible, with unit diagonal), chosen greedily by the largest
    remaining diagonal of the Schur complement (pivoted Cholesky); ``Pi = s s^T`` with
    ``s_1 = 1`` gives ``P = s`` exactly."""
    Pi = np.asarray(Pi, float)
    L = Pi.shape[0]
    scale = max(float(np.max(np.abs(np.diag(Pi)))), 1e-300)
    R = Pi.copy()
    pivots = []
    for _ in range(L):
        d = np.diag(R).copy()
        d[pivots] = -np.inf
        j = int(np.argmax(d))
        if not d[j] > tol * scale:
            break
        pivots.append(j)
        R = R - np.outer(R[:, j], R[j, :]) / R[j, j]
    if not pivots:
        raise ValueError("Pi is zero: the positions carry no signal")
    pivots = sorted(pivots)
    return Pi[:, pivots] / np.diag(Pi)[pivots], np.array(pivots)


def odd_atoms(keys, symmetry: str) -> tuple:
    """The indices of the atoms (named by :func:`~symattn.compile.general_equations.atom_key`)
    whose integrand is odd under ``symmetry``: at ``theta = 0`` the prox does not depend on the
    sign of ``eta`` (``h*`` enters only through the even targets), so under ``"eta_flip"`` an
    atom is odd when it has an odd number of ``eta`` factors; at ``M = 0`` the prox changes sign
    with ``(xi, eta)``, so under ``"full_flip"`` when it has an odd number of factors."""
    if symmetry not in SYMMETRY_OF_PIN.values():
        raise ValueError(f"unknown symmetry {symmetry!r}; choose from "
                         f"{tuple(SYMMETRY_OF_PIN.values())}")
    out = []
    for k, key in enumerate(keys):
        factors = key.split("*")
        n = sum(f.startswith("eta[") for f in factors) if symmetry == "eta_flip" else len(factors)
        if n % 2:
            out.append(k)
    return tuple(out)


def gauge_rotation(theta, m) -> np.ndarray:
    r"""The rotation ``O`` (``det O = 1``) of the rank space that makes :math:`S O`
    lower-trapezoidal, :math:`S = [\theta; m]` (``theta`` may be ``None``: ``S = m``), from the
    QR factorisation :math:`S^\top = O R` with :math:`R_{ii} \ge 0`, the last column flipped if
    needed (module doc, 'Gauge')."""
    S = m if theta is None else np.vstack([theta, m])
    O, R = np.linalg.qr(S.T, mode="complete")
    n = min(R.shape)
    d = np.sign(np.diag(R[:n, :n]))
    d[d == 0] = 1.0
    O[:, :n] = O[:, :n] * d
    if np.linalg.det(O) < 0:
        O[:, -1] = -O[:, -1]
    return O


def _sym(X):
    return (X + X.T) / 2


def cholesky_factors(X, rho: float):
    """``(K, B)``: the Cholesky factors of ``q`` and ``R = rho - theta q^-1 theta^T`` of the
    order parameters ``X``; :class:`InvalidOrderParameters` unless ``q``, ``R`` and ``V`` are
    positive definite."""
    try:
        K = np.linalg.cholesky(_sym(X.q))
    except np.linalg.LinAlgError:
        raise InvalidOrderParameters(f"q is not positive definite: {X.q.tolist()}") from None
    R = rho * np.eye(X.theta.shape[0]) - X.theta @ np.linalg.solve(X.q, X.theta.T)
    try:
        B = np.linalg.cholesky(_sym(R))
    except np.linalg.LinAlgError:
        raise InvalidOrderParameters("rho - theta q^-1 theta^T is not positive definite "
                                     "(theta too large for q)") from None
    if not np.all(np.linalg.eigvalsh(_sym(X.V)) > 0):
        raise InvalidOrderParameters(f"V is not positive definite: {X.V.tolist()}")
    return K, B


def _upper(X) -> np.ndarray:
    return np.asarray(X, float)[np.triu_indices(X.shape[0])]


class Coordinates:
    """The solver's vector ``x`` of one model, and the generated map in it (module doc).

    ``gauge``: fix the rank rotation (default: ``r > 1``)."""

    def __init__(self, params: ModelParams, gauge: bool | None = None):
        self.params = params
        L, r, rt = params.L, params.r, params.r_t
        self.L, self.r, self.r_t = L, r, rt
        self.equations = general_equations(Shape(L=L, r=r, r_t=rt))
        self.atom_keys = self.equations.ATOM_KEYS
        self.n_atoms = self.equations.N_ATOMS
        self.P, self.pivots = range_basis(params.Pi_array)
        self.k = self.P.shape[1]
        self._P_pinv = np.linalg.solve(self.P.T @ self.P, self.P.T).T   # P (P^T P)^-1
        self._Pi = _upper(params.Pi_array)
        self.gauge = r > 1 if gauge is None else bool(gauge)
        self.nt = r * (r + 1) // 2
        nt, k = self.nt, self.k
        self.blocks = {"q": slice(0, nt), "m": slice(nt, nt + k * r),
                       "theta": slice(nt + k * r, nt + k * r + rt * r),
                       "V": slice(nt + k * r + rt * r, 2 * nt + k * r + rt * r)}
        self.size = 2 * nt + k * r + rt * r
        iu = np.triu_indices(r)
        self.names = tuple([f"q[{a},{b}]" for a, b in zip(*iu)]
                           + [f"m[{i},{a}]" for i in range(k) for a in range(r)]
                           + [f"theta[{c},{a}]" for c in range(rt) for a in range(r)]
                           + [f"V[{a},{b}]" for a, b in zip(*iu)])
        if (r, rt, k) == (1, 1, 1):     # every block one number (the paper's shape)
            self.names = ("q", "m", "theta", "V")

    # -- the vector and the matrices ------------------------------------------------------
    def _symm(self, v) -> np.ndarray:
        r = self.r
        S = np.zeros((r, r))
        S[np.triu_indices(r)] = v
        return S + np.triu(S, 1).T

    def parts(self, x):
        """``(q, m, theta, V)`` as matrices (``m`` ``k x r``)."""
        x = np.asarray(x, float)
        b = self.blocks
        return (self._symm(x[b["q"]]), x[b["m"]].reshape(self.k, self.r),
                x[b["theta"]].reshape(self.r_t, self.r), self._symm(x[b["V"]]))

    def order_parameters(self, x):
        """The :class:`~symattn.numerics.general.OrderParameters` of ``x`` (``M = P m``)."""
        from .general import OrderParameters
        q, m, theta, V = self.parts(x)
        return OrderParameters(q, self.P @ m, theta, V)

    def vector(self, q, m, theta, V) -> np.ndarray:
        """``x`` from the matrices (``m`` ``k x r``)."""
        return np.concatenate([_upper(q), np.asarray(m, float).ravel(),
                               np.asarray(theta, float).ravel(), _upper(V)])

    def reduce(self, X) -> np.ndarray:
        """``x`` of order parameters whose ``M`` lies in the range of ``Pi``: ``m`` read off
        the pivot rows, :math:`m = P_{\\rm piv}^{-1} M_{\\rm piv}` (exact on the range)."""
        m = np.linalg.solve(self.P[self.pivots], X.M[self.pivots])
        return self.vector(X.q, m, X.theta, X.V)

    def project(self, X, pin=()) -> np.ndarray:
        """``x`` of any order parameters, as a start: ``m`` the least-squares fit of ``M = P
        m``, rotated into the gauge when there is one, the entries that are not free (pinned
        blocks, the gauge's zeros) exactly zero."""
        m = np.linalg.lstsq(self.P, np.asarray(X.M, float), rcond=None)[0]
        x = self.vector(X.q, m, X.theta, X.V)
        if self.gauge:
            x = self.rotate_to_gauge(x, pin)
        fixed = np.ones(self.size, bool)
        fixed[list(self.free(pin))] = False
        x[fixed] = 0.0
        return x

    def factors(self, x):
        """``(K, B)``, the Cholesky factors of ``q`` and ``R = rho - theta q^-1 theta^T``;
        :class:`InvalidOrderParameters` outside the domain."""
        if not np.all(np.isfinite(x)):
            raise InvalidOrderParameters(f"not finite: {np.asarray(x).tolist()}")
        return cholesky_factors(self.order_parameters(x), self.params.rho)

    def valid(self, x) -> bool:
        try:
            self.factors(x)
        except InvalidOrderParameters:
            return False
        return True

    # -- free entries ---------------------------------------------------------------------
    def free(self, pin=()) -> tuple:
        """The indices of ``x`` the solver varies: all but the pinned blocks (``pin`` a subset
        of :data:`PINNABLE`) and, with the gauge, the entries of ``S`` above its diagonal."""
        bad = set(pin) - set(PINNABLE)
        if bad:
            raise ValueError(f"pin: unknown {sorted(bad)}; choose from {PINNABLE}")
        mask = np.ones(self.size, bool)
        b = self.blocks
        if "M" in pin:
            mask[b["m"]] = False
        if "theta" in pin:
            mask[b["theta"]] = False
        if self.gauge:
            r = self.r
            rows = ([(b["theta"].start + c * r) for c in range(self.r_t)]
                    if "theta" not in pin else []) + [b["m"].start + i * r for i in range(self.k)]
            for i, base in enumerate(rows[:r]):
                mask[base + i + 1:base + r] = False
        return tuple(int(i) for i in np.flatnonzero(mask))

    def symmetries(self, pin=()) -> tuple:
        return tuple(SYMMETRY_OF_PIN[name] for name in PINNABLE if name in pin)

    def odd(self, symmetry) -> list:
        """The atoms zeroed by ``symmetry`` (a name, a tuple of names, or ``None``)."""
        syms = (symmetry,) if isinstance(symmetry, str) else tuple(symmetry or ())
        return sorted(set().union(*(odd_atoms(self.atom_keys, s) for s in syms))) if syms else []

    def pinned(self, symmetry) -> tuple:
        """The pins whose symmetries are ``symmetry``'s."""
        syms = (symmetry,) if isinstance(symmetry, str) else tuple(symmetry or ())
        return tuple(name for name, s in SYMMETRY_OF_PIN.items() if s in syms)

    # -- the map ----------------------------------------------------------------------------
    def output(self, atoms, x, alpha: float) -> np.ndarray:
        """The conjugates ``(triu q_hat, m_hat, theta_hat, triu V_hat)`` from the atom means
        (the generated output equations, :math:`\\hat m = P^\\top\\hat M`)."""
        K, B = self.factors(x)
        q, _, theta, _ = self.parts(x)
        out = np.asarray(self.equations.output_equations(
            atoms, _upper(np.linalg.inv(K).T), _upper(np.linalg.inv(B).T), _upper(q),
            theta.ravel(), float(alpha), float(self.params.rho)), float)
        nt, L, r = self.nt, self.L, self.r
        M_hat = out[nt:nt + L * r].reshape(L, r)
        return np.concatenate([out[:nt], (self.P.T @ M_hat).ravel(), out[nt + L * r:]])

    def _hat_parts(self, hats):
        """``(q_hat, M_hat, theta_hat, V_hat)`` free entries for the generated prior and phi
        (:math:`\\hat M = P(P^\\top P)^{-1}\\hat m`)."""
        b = self.blocks
        m_hat = np.asarray(hats[b["m"]]).reshape(self.k, self.r)
        return (hats[b["q"]], (self._P_pinv @ m_hat).ravel(), hats[b["theta"]], hats[b["V"]])

    def prior(self, hats, pin=()) -> np.ndarray:
        """The order parameters ``x`` of the conjugates (the generated prior equations), in
        the gauge when there is one (``pin``: which rows make up ``S``)."""
        from .general import OrderParameters
        p = self.params
        out = np.asarray(self.equations.prior_equations(
            *self._hat_parts(hats), self._Pi, float(p.sigma), float(p.lam), float(p.rho)), float)
        nt, L, r, rt = self.nt, self.L, self.r, self.r_t
        X = OrderParameters(self._symm(out[:nt]), out[nt:nt + L * r].reshape(L, r),
                            out[nt + L * r:nt + L * r + rt * r].reshape(rt, r),
                            self._symm(out[nt + L * r + rt * r:]))
        x = self.reduce(X)
        if self.gauge:
            x = self.rotate_to_gauge(x, pin)
        return x

    def rotate_to_gauge(self, x, pin=()) -> np.ndarray:
        """``x`` rotated into the gauge (module doc)."""
        q, m, theta, V = self.parts(x)
        O = gauge_rotation(None if "theta" in pin else theta, m)
        return self.vector(O.T @ q @ O, m @ O, theta @ O, O.T @ V @ O)

    def phi(self, x, hats, E_M: float, alpha: float) -> float:
        r""":math:`\Phi` (generated)."""
        p = self.params
        q, m, theta, V = self.parts(x)
        return float(self.equations.phi(
            _upper(q), (self.P @ m).ravel(), theta.ravel(), _upper(V), *self._hat_parts(hats),
            float(E_M), self._Pi, float(alpha), float(p.sigma), float(p.lam), float(p.rho)))
