"""Small statistics shared by every layer (numpy only; imports nothing from symattn)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mean_se"]


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
