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

__all__ = ["Status", "Estimate", "format_estimate"]


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


def format_estimate(value: float, error: float) -> str:
    """``value ± error`` with the value to the digits the error resolves (two more), e.g.
    ``1.25038 ± 5.0e-04``; ``value`` alone where the error is undefined."""
    if value is None or not math.isfinite(value):
        return str(value)
    if error is None or not math.isfinite(error) or error <= 0:
        return f"{value:.10g}"
    digits = max(0, 1 - int(math.floor(math.log10(error))))
    return f"{value:.{digits}f} ± {error:.1e}"


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
