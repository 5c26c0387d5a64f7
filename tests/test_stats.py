"""The small statistics of ``symattn.stats`` against closed forms."""

import math

import numpy as np
import pytest

from symattn.stats import mean_se, t_halfwidth


def test_t_halfwidth_against_closed_forms():
    """One degree of freedom is the Cauchy distribution, whose quantile is
    ``tan(pi (p - 1/2))``; two degrees of freedom have ``t_p = (2p - 1) sqrt(2 / (4 p (1 - p)))``.
    Many degrees of freedom tend to the normal quantile 1.959964.  Tolerances: the quantile is
    computed by scipy to near machine precision; the large-n value differs from the normal one
    by O(1/n)."""
    assert t_halfwidth(1.0, 2) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-12)
    p = 0.975
    t2 = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    assert t_halfwidth(3.0, 3) == pytest.approx(3.0 * t2, rel=1e-12)
    assert t_halfwidth(1.0, 10**6) == pytest.approx(1.959964, abs=1e-5)
    assert t_halfwidth(1.0, 8, level=0.6827) < t_halfwidth(1.0, 8) / 2  # about one SE at 68%
    assert math.isnan(t_halfwidth(1.0, 1))
    with pytest.raises(ValueError):
        t_halfwidth(1.0, 8, level=1.5)


def test_mean_se_matches_its_definition():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    m, se = mean_se(x)
    assert m == 3.5
    assert se == pytest.approx(math.sqrt(((x - 3.5) ** 2).sum() / 3 / 4), rel=1e-15)
