"""One object for the numerical settings of the core solver, spelled as on the command line.

``log2n`` (``--log2n``): each scrambled Sobol rule has ``2**log2n`` points; ``rules``
(``--rules``): independent scrambles, whose spread is the error bar; ``tol`` (``--tol``): the
fixed-point residual tolerance.  The prox's gradient tolerance is derived from ``tol``
(:attr:`NumericalSettings.prox_tol`), so one knob sets both.  The same names are the keys of
the ``settings`` block of every JSON result.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.params import ParameterError

__all__ = ["NumericalSettings"]


@dataclass(frozen=True)
class NumericalSettings:
    """Numerical settings of the core solver (module doc); validated on construction."""

    log2n: int = 14           #: Sobol points per rule: 2**log2n
    rules: int = 8            #: independent scrambles (the error bar's sample size)
    tol: float = 1e-10        #: fixed-point residual tolerance (and selection smoothing)
    root_tol: float = 1e-9    #: stopping step of the root finders in alpha
    alpha_start: float = 1.0  #: first guess for alpha_c (no knowledge of the answer assumed)
    seed: int = 0             #: seed of the first scramble; rule k uses seed + k

    def __post_init__(self):
        for name, lo, hi in (("log2n", 1, 24), ("rules", 1, 4096)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ParameterError(name, f"must be an integer in [{lo}, {hi}], got {v!r}")
        for name in ("tol", "root_tol", "alpha_start"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
                raise ParameterError(name, f"must be a positive finite number, got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ParameterError("seed", f"must be a non-negative integer, got {self.seed!r}")

    @property
    def prox_tol(self) -> float:
        """Gradient tolerance of the prox's Newton iterations: ``max(tol / 1000, 1e-14)``.

        A thousand times below the fixed-point tolerance, so that the prox's error does not
        show in the residual; floored at 1e-14, near double-precision rounding of the gradient.
        """
        return max(self.tol * 1e-3, 1e-14)

    @property
    def seeds(self) -> range:
        """The scrambles' seeds: ``seed, seed + 1, ..., seed + rules - 1``."""
        return range(self.seed, self.seed + self.rules)
