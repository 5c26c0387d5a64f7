"""One vocabulary for numerical results: a value, its error bar and how it was obtained.

Every solver of symattn reports, besides its numbers, whether it reached them:

- :class:`Status` -- converged or not, iterations, the residual of the last iterate, a message;
- :class:`Estimate` -- a value with its error bar (``nan`` where none is defined) and a
  :class:`Status`.

The richer results (:class:`~symattn.numerics.saddle.FixedPoint`,
:class:`~symattn.numerics.thresholds.Thresholds`,
:class:`~symattn.numerics.estimates.FixedPointEstimate`,
:class:`~symattn.numerics.bifurcation.BranchEnd`) expose their numbers as :class:`Estimate`\\ s and
their solves as :class:`Status`\\ es, and print readably (``repr``) in a notebook.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Status", "Estimate", "format_estimate", "ROUNDING"]


@dataclass(frozen=True)
class Status:
    """How a numerical result was obtained."""

    converged: bool
    iterations: int = 0
    residual: float = math.nan
    message: str = ""

    def __repr__(self) -> str:
        word = "converged" if self.converged else "NOT converged"
        parts = [word]
        if self.iterations:
            parts.append(f"{self.iterations} iterations")
        if not math.isnan(self.residual):
            parts.append(f"residual {self.residual:.1e}")
        if self.message and self.message != "converged":
            parts.append(self.message)
        return f"Status({', '.join(parts)})"


#: An error bar below this fraction of its value is floating-point rounding (double precision
#: carries about 16 digits; sums of many terms lose two or three), not a measured uncertainty.
ROUNDING = 1e-13


def format_estimate(value: float, error: float, pm: str = "±") -> str:
    """``value ± error`` with the value to the digits the error resolves (one more than the
    error's first), e.g. ``1.25038 ± 5.0e-04``.

    Where no error bar is defined (``nan``, ``None``) the value is printed to seven significant
    digits with ``(no error bar)``; where the error bar is below rounding (:data:`ROUNDING`), to
    thirteen with ``(to rounding)``: a bar of ``1e-17`` on ``0.002`` would claim digits that
    double precision does not carry.  ``pm`` is the sign between value and error (the command
    line's text output uses ``+-``).
    """
    if value is None or not math.isfinite(value):
        return str(value)
    if error is None or not math.isfinite(error) or error < 0:
        return f"{value:.7g} (no error bar)"
    if value == 0 and error == 0:
        return "0"
    if error <= ROUNDING * abs(value):
        return f"{value:.13g} (to rounding)"
    digits = max(0, 1 - int(math.floor(math.log10(error))))
    return f"{value:.{digits}f} {pm} {error:.1e}"


@dataclass(frozen=True)
class Estimate:
    """A number with its error bar and the status of the computation that produced it.

    ``error`` is one standard error of the scrambles plus any bias bound stated by the producer
    (``nan`` where no error bar is defined, e.g. a single rule).  ``status`` has no default: an
    estimate always says whether its computation converged.  ``float(estimate)`` is the value.
    """

    value: float
    error: float
    status: Status

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        flag = "" if self.status.converged else "  [NOT converged]"
        return f"{format_estimate(self.value, self.error)}{flag}"
