"""One object for the numerical settings of the core solver, spelled as on the command line.

``log2n`` (``--log2n``): each scrambled Sobol rule has ``2**log2n`` points; ``rules``
(``--rules``): independent scrambles, whose spread is the error bar; ``tol`` (``--tol``): the
fixed-point residual tolerance.  The prox's gradient tolerance is derived from ``tol``
(:attr:`NumericalSettings.prox_tol`), so one knob sets both.  The same names are the keys of
the ``settings`` block of every JSON result.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.checks import check_int, check_number

__all__ = ["NumericalSettings", "LOG2N_RANGE", "RULES_RANGE", "TOL_RANGE"]

#: Sobol points per rule, ``2**log2n``: from the smallest at which 2 rules find both thresholds
#: at the paper's parameters and omega = 0.1, 0.3, 0.45 (2^7 fails at omega = 0.3: "alpha_c: no
#: convergence"; studies/solver_outcomes.py --section smallest), to 2^22 (the high-precision
#: route's large scrambles; a rule of 2^22 nodes takes about 1 GiB).
LOG2N_RANGE = (8, 22)
#: Scrambles: two at least, since their spread is the error bar.
RULES_RANGE = (2, 256)
#: Fixed-point residual tolerance: not below the rounding of the residual (about 1e-14 for
#: order parameters of order one), not above 1e-3 (a residual that large is no fixed point).
TOL_RANGE = (1e-14, 1e-3)


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
        check_int("log2n", self.log2n, *LOG2N_RANGE)
        check_int("rules", self.rules, *RULES_RANGE)
        check_number("tol", self.tol, *TOL_RANGE)
        check_number("root_tol", self.root_tol, 0.0, lo_open=True)
        check_number("alpha_start", self.alpha_start, 0.0, lo_open=True)
        check_int("seed", self.seed, 0, 2**32 - 1)

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
