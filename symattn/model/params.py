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

from .checks import ParameterError, check_alpha, check_number

__all__ = ["ModelParams", "ParameterError", "PAPER_A", "APPENDIX_A", "check_alpha", "SIGMA_RANGE",
           "LAM_RANGE"]

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


def _finite(name: str, value) -> float:
    return check_number(name, value)


@dataclass(frozen=True)
class ModelParams:
    r"""Parameters of the attention model (model page §2).

    The teacher variance is :math:`\rho = \sigma^2` (teacher weights are iid ``N(0, 1)``).
    Positional encodings are ``p_1 = (1, ..., 1)``, ``p_2 = -p_1`` (sign ``s_l``).

    Attributes
    ----------
    sigma : float
        Token noise standard deviation, :math:`z_l \sim N(0, \sigma^2 I_d)`; must be > 0.
    lam : float
        Ridge penalty :math:`\lambda`; must be > 0.
    omega : float
        Mixing :math:`\omega \in [0, 1]` between the teacher's semantic and positional parts.
    A : tuple of tuples
        The fixed row-stochastic positional attention matrix, ``L x L``, non-negative entries.
    """

    sigma: float = 0.5
    lam: float = 0.01
    omega: float = 0.3
    A: tuple = field(default=PAPER_A)

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
        if L != 2:
            raise ParameterError("A", f"the numerics support L = 2 only (got L = {L})")
        for i, r in enumerate(rows):
            if any(x < 0 for x in r):
                raise ParameterError("A", f"row {i + 1} has a negative entry: {r}")
            if abs(sum(r) - 1.0) > _ROW_SUM_TOL:
                raise ParameterError("A", f"must be row-stochastic; row {i + 1} sums to {sum(r):.12g}")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "lam", lam)
        object.__setattr__(self, "omega", omega)
        object.__setattr__(self, "A", tuple(tuple(r) for r in rows))

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
        return {"sigma": self.sigma, "lam": self.lam, "omega": self.omega,
                "A": [list(r) for r in self.A]}
