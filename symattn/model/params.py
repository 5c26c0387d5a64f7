"""Model parameters of model page §2, validated once, at the boundary.

Every numerical routine of symattn takes a :class:`ModelParams`; nothing below
this module re-checks its inputs.  Invalid input raises :class:`ParameterError`,
whose message names the offending parameter (the CLI turns it into a one-line
error with exit status 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np

from .checks import ParameterError, check_alpha, check_int, check_number
from .positions import PAPER_PI, gram_name, position_gram

__all__ = ["ModelParams", "ParameterError", "PAPER_A", "APPENDIX_A", "check_alpha", "SIGMA_RANGE",
           "LAM_RANGE", "MAX_TOKENS", "MAX_RANK"]

#: The paper's default positional attention matrix (model page §2).
PAPER_A = ((0.6, 0.4), (0.4, 0.6))
#: The second matrix used in the paper's appendix.
APPENDIX_A = ((0.3, 0.7), (0.8, 0.2))

_ROW_SUM_TOL = 1e-9

#: ``(lowest, highest)`` token noise sigma (lowest excluded).  Outside, the numbers themselves
#: break: ``rho = sigma^2`` underflows (``1e-308`` gave "invalid starting point"), the
#: simulator's risk overflows (``1e6`` gave theta = 5.8e10).  Inside, the thresholds are found
#: or refused ("not found", exit 3) within a minute at small rules for sigma <= 0.5; above about
#: 1 the search for alpha_c takes minutes (measured at lambda = 0.01, omega = 0.3, 2 rules of
#: 2^8 and 2^10: studies/solver_outcomes.py --section ranges).
SIGMA_RANGE = (1e-3, 1e2)
#: ``(lowest, highest)`` ridge penalty lambda (lowest excluded).  ``1e308`` overflowed the
#: simulator's risk; ``1e4`` is refused by the solver within seconds ("not found"); below about
#: ``1e-6`` the search for alpha_c takes minutes (same measurement as for sigma).
LAM_RANGE = (1e-8, 1e4)
#: Largest number of tokens and largest rank (student or teacher) accepted: the output channel
#: is a Gaussian expectation over ``L (r + r_t)`` variables of a prox over ``L r`` of them, and
#: the compiled kernels carry ``(L r)^2`` Hessian entries (the kernel layer's own limits).
MAX_TOKENS = 8
MAX_RANK = 4


def _finite(name: str, value) -> float:
    return check_number(name, value)


@dataclass(frozen=True)
class ModelParams:
    r"""Parameters of the attention model (model page §2, and §7 for the general model).

    The teacher variance is :math:`\rho = \sigma^2 I_{r_t}` (teacher weights are iid ``N(0, 1)``).

    Attributes
    ----------
    sigma : float
        Token noise standard deviation, :math:`z_l \sim N(0, \sigma^2 I_d)`; must be > 0.
    lam : float
        Ridge penalty :math:`\lambda`; must be > 0.
    omega : float
        Mixing :math:`\omega \in [0, 1]` between the teacher's semantic and positional parts.
    A : tuple of tuples
        The fixed row-stochastic positional attention matrix, ``L x L`` (``L >= 2``), non-negative
        entries; ``L`` is read from it.
    Pi : str, tuple of tuples or None
        The positional encodings' Gram matrix :math:`\Pi = P P^\top / d` (``L x L``, symmetric
        positive semi-definite), or a family name of :mod:`symattn.model.positions`; ``None``:
        ``antipodal`` (the paper's ``p_2 = -p_1``) at ``L = 2``, ``simplex`` above.  Stored as
        the matrix.
    r, r_t : int
        Student rank (``Q`` is ``d x r``) and teacher rank (``Q*`` is ``d x r_t``), in
        ``[1, MAX_RANK]``.
    """

    sigma: float = 0.5
    lam: float = 0.01
    omega: float = 0.3
    A: tuple = field(default=PAPER_A)
    Pi: object = None
    r: int = 1
    r_t: int = 1

    def __post_init__(self):
        sigma = check_number("sigma", self.sigma, *SIGMA_RANGE, lo_open=True)
        lam = check_number("lam", self.lam, *LAM_RANGE, lo_open=True)
        omega = check_number("omega", self.omega, 0.0, 1.0)
        try:
            rows = [[_finite("A", x) for x in row] for row in self.A]
        except TypeError:
            raise ParameterError("A", f"must be a square matrix, got {self.A!r}") from None
        L = len(rows)
        if L < 2 or any(len(r) != L for r in rows):
            raise ParameterError("A", f"must be a square L x L matrix with L >= 2, got {self.A!r}")
        if L > MAX_TOKENS:
            raise ParameterError("A", f"L = {L} tokens; at most {MAX_TOKENS}")
        for i, r in enumerate(rows):
            if any(x < 0 for x in r):
                raise ParameterError("A", f"row {i + 1} has a negative entry: {r}")
            if abs(sum(r) - 1.0) > _ROW_SUM_TOL:
                raise ParameterError("A", f"must be row-stochastic; row {i + 1} sums to {sum(r):.12g}")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "omega", omega)
        object.__setattr__(self, "A", tuple(tuple(r) for r in rows))
        object.__setattr__(self, "Pi", position_gram(self.Pi, L))
        object.__setattr__(self, "r", check_int("r", self.r, 1, MAX_RANK))
        object.__setattr__(self, "r_t", check_int("r_t", self.r_t, 1, MAX_RANK))

    @property
    def L(self) -> int:
        """Number of tokens per sentence."""
        return len(self.A)

    @property
    def rho(self) -> float:
        r"""Teacher pre-activation variance :math:`\rho = \sigma^2`."""
        return self.sigma**2

    @property
    def A_array(self) -> np.ndarray:
        return np.array(self.A, dtype=float)

    @property
    def Pi_array(self) -> np.ndarray:
        r"""The Gram matrix :math:`\Pi` as an ``(L, L)`` array."""
        return np.array(self.Pi, dtype=float)

    @property
    def positions(self) -> str:
        """The family name of ``Pi`` (:mod:`symattn.model.positions`), or ``"custom"``."""
        return gram_name(self.Pi, self.L) or "custom"

    @property
    def is_paper_shape(self) -> bool:
        """``L = 2``, ``r = r_t = 1`` and the paper's encodings ``p_2 = -p_1`` (model page §4):
        the case the fast solvers of :mod:`symattn.numerics` are written for."""
        return self.L == 2 and self.r == 1 and self.r_t == 1 and self.Pi == PAPER_PI

    def require_paper_shape(self, what: str) -> "ModelParams":
        """``self`` if :attr:`is_paper_shape`, else :class:`ParameterError` naming ``what``."""
        if not self.is_paper_shape:
            raise ParameterError("model", f"{what} solves the paper's shape only (L = 2, "
                                          f"r = r_t = 1, antipodal positions); got L = {self.L}, "
                                          f"r = {self.r}, r_t = {self.r_t}, positions "
                                          f"{self.positions}; the general model has its fixed "
                                          "points in symattn.numerics.general and finite-size "
                                          "training in symattn simulate")
        return self

    @property
    def swap_symmetric(self) -> bool:
        """True when ``A`` is exactly invariant under swapping the two tokens (``A11 = A22``).

        Then ``m = 0`` is an exact invariant of the saddle-point equations (model page §5),
        and the token swap is an exact symmetry that rules may be folded by; exact equality,
        because a fold is exact only then.
        """
        return self.A[0][0] == self.A[1][1]

    @classmethod
    def coerce(cls, params) -> "ModelParams":
        """``params`` if it is a :class:`ModelParams`; a ``dict`` of its fields (as
        :meth:`as_dict` writes them) made into one; anything else refused, naming ``params``."""
        if isinstance(params, cls):
            return params
        if isinstance(params, Mapping):
            names = {f.name for f in fields(cls)}
            unknown = sorted(set(params) - names)
            if unknown:
                raise ParameterError("params", f"unknown key(s) {unknown}; the parameters are "
                                               f"{sorted(names)}")
            return cls(**params)
        raise ParameterError("params", f"expected ModelParams or a dict of its fields, got "
                                       f"{type(params).__name__}")

    def as_dict(self) -> dict:
        """The fields as JSON-ready values (``coerce`` reads them back)."""
        return {"sigma": self.sigma, "lam": self.lam, "omega": self.omega,
                "A": [list(r) for r in self.A], "Pi": [list(r) for r in self.Pi],
                "r": self.r, "r_t": self.r_t}
