"""Branch following in alpha (symattn.numerics.continuation)."""

import numpy as np
import pytest

from symattn.model import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.continuation import _hermite_extremum, follow_branch
from symattn.numerics.quadrature import SobolRule


@pytest.fixture(scope="module")
def channel():
    return OutputChannel(ModelParams(), SobolRule(11, 3).nodes())


def test_hermite_extremum_of_a_parabola():
    # alpha(s) = 2 - (s - 0.3)^2: values and slopes at s = 0 and s = 1 determine the cubic
    # interpolant exactly (it is the parabola), whose maximum is 2 at s = 0.3
    a = lambda s: 2 - (s - 0.3) ** 2          # noqa: E731
    da = lambda s: -2 * (s - 0.3)             # noqa: E731
    val, u = _hermite_extremum(0.0, a(0.0), da(0.0), 1.0, a(1.0), da(1.0))
    assert abs(val - 2.0) < 1e-12 and abs(u - 0.3) < 1e-12


def test_positional_branch_points_are_fixed_points(channel):
    p = ModelParams()
    curve = follow_branch(p, "positional", channel, 1.2, 2.0)
    assert curve.fold is None and curve.merge is None
    alphas = curve.alphas
    assert np.all(np.diff(alphas) > 0) and alphas[-1] >= 2.0
    for fp in curve.points:
        assert fp.converged and fp.residual <= 1e-10 and fp.theta == 0.0
    # an independent solve at one of the continuation's alphas, from the branch's cold start,
    # lands on the same point (same rule: agreement to the fixed-point tolerance's effect)
    mid = curve.points[len(curve.points) // 2]
    cold = solve_branch(p, "positional", mid.alpha, channel, with_eps_g=False)
    np.testing.assert_allclose(cold.x, mid.x, rtol=1e-7, atol=1e-9)


def test_semantic_branch_ends_below_alpha_c(channel):
    """Followed down from alpha = 1.25 the semantic branch ends (fold or merge with the
    trivial point) somewhere in (0.3, 1.2); its overlap shrinks on the way."""
    p = ModelParams()
    curve = follow_branch(p, "semantic", channel, 1.25, 0.1)
    assert curve.fold is not None or curve.merge is not None, curve.end
    end = curve.fold.alpha if curve.fold is not None else curve.merge[0]
    assert 0.3 < end < 1.2
    cos = np.array([fp.theta / np.sqrt(fp.q * p.rho) for fp in curve.points])
    assert cos[0] > 0.5 and cos[-1] < cos[0]
    assert all(fp.converged for fp in curve.points)
