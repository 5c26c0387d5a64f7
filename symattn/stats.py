"""Small statistics shared by every layer (numpy and scipy only; imports nothing from
symattn)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["mean_se", "t_halfwidth"]


def mean_se(x):
    """``(mean, standard error of the mean)`` of a sample.

    The standard error is ``std(ddof=1) / sqrt(n)``; it is ``nan`` for fewer than two values
    (and both are ``nan`` for an empty sample).
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return float(x.mean()), se


def t_halfwidth(se: float, n: int, level: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of a mean, at ``level``, from its
    standard error ``se`` over ``n`` values (``n - 1`` degrees of freedom): ``t_{(1 + level)/2,
    n - 1} * se``; 2.36 times ``se`` for 8 values at 95%.  ``nan`` for fewer than two values."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n < 2:
        return math.nan
    return float(stats.t.ppf(0.5 + level / 2, n - 1)) * se
