"""Linear stability of the trivial fixed point by likelihood ratios (symattn.numerics.bifurcation).

Independent routes: for smooth integrands, a central finite difference of the Gaussian average
itself (Gauss-Hermite, exact to rounding for the test functions' smooth parts); for the real,
discontinuous output function, a finite difference of the saddle-point map across many
switching nodes; and the positional branch's own existence on either side of the bifurcation.
"""

import numpy as np
import pytest

from symattn.model.params import ModelParams
from symattn.numerics.bifurcation import score_derivatives, trivial_bifurcation, trivial_stability
from symattn.numerics.branches import BranchNotFound, solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import GaussHermiteRule, SobolRule
from symattn.numerics.saddle import SaddlePointMap


def _smooth_f(w, hs):
    """A smooth stand-in for f, even in h* like the real f at theta = 0."""
    return np.stack([np.tanh(w[:, 0]) * hs[:, 0] ** 2 + w[:, 1] * hs[:, 1] ** 2,
                     np.sin(w[:, 1] + hs[:, 0] * hs[:, 1])], axis=-1)


def test_score_derivatives_equal_finite_differences_for_smooth_integrands():
    """The likelihood-ratio formulas (score of the Gaussian weight, plus the explicit theta
    dependence of eta at fixed (w, h*)) against d/dtheta and d/dm of the averages themselves.
    12^4 Gauss-Hermite nodes integrate these analytic integrands to ~1e-10; the central
    difference step 1e-5 has truncation error ~1e-10 and rounding error ~1e-11."""
    P = ModelParams()
    ch = OutputChannel(P, GaussHermiteRule(12).nodes(4))
    q = 0.05

    def avg_theta(theta):
        w, hs = ch.node_map(q, 0.0, theta)
        return ch.nodes.expect((ch.nodes.eta * _smooth_f(w, hs)).sum(1)[:, None])[0]

    def avg_m(m):
        w, hs = ch.node_map(q, m, 0.0)
        f = _smooth_f(w, hs)
        return ch.nodes.expect((f[:, 0] - f[:, 1])[:, None])[0]

    d = 1e-5
    w, hs = ch.node_map(q, 0.0, 0.0)
    lr_theta, lr_m = score_derivatives(ch, np.array([q, 0.0, 0.0, 1.0]), _smooth_f(w, hs))
    assert lr_theta * np.sqrt(P.rho) == pytest.approx((avg_theta(d) - avg_theta(-d)) / (2 * d), abs=1e-7)
    assert lr_m == pytest.approx((avg_m(d) - avg_m(-d)) / (2 * d), abs=1e-7)


@pytest.mark.slow
def test_theta_eigenvalue_matches_a_finite_difference_of_the_map():
    """At the trivial point (alpha = 0.7, two scrambles of 2^16 Sobol nodes) the map's theta
    component is differenced over theta = +-0.05 sqrt(q rho) with q, V held: wide enough that
    many nodes switch minimiser, so the difference sees the surface terms that a node-by-node
    derivative misses.  The difference is the noisier estimate: over three scrambles at 2^16 its
    per-rule scatter was 0.004 (the likelihood ratio's 0.001), so the mean of two has a standard
    error ~0.003; the cubic term of the odd map adds O(delta^2) ~ 1e-3.  The bound 0.012 is four
    standard errors, and far below the ~0.15 by which the node-by-node derivative was off."""
    P = ModelParams()
    lr, fd = [], []
    for seed in range(2):
        ch = OutputChannel(P, SobolRule(16, seed=seed).nodes(4))
        st = trivial_stability(P, 0.7, ch)
        x = st.fp.x.copy()
        T = SaddlePointMap(P, 0.7, ch)
        d = 0.05 * np.sqrt(x[0] * P.rho)
        xp, xm = x.copy(), x.copy()
        xp[2], xm[2] = d, -d
        lr.append(st.eig_theta)
        fd.append((T(xp).Fx[2] - T(xm).Fx[2]) / (2 * d))
    assert abs(np.mean(lr) - np.mean(fd)) < 0.012, (lr, fd)


def test_m_bifurcation_is_where_the_positional_branch_appears():
    """The m eigenvalue crosses one at alpha_b; the positional branch (m != 0) must exist a
    little above alpha_b and collapse onto the trivial point a little below it."""
    P = ModelParams()
    ch = OutputChannel(P, SobolRule(12, seed=0).nodes(4))
    end = trivial_bifurcation(P, ch, "m", [0.02, 0.05, 0.1])
    a_b, scanned = end.alpha, end.scanned
    assert end.status.converged and 0.02 < a_b < 0.1
    assert scanned[0].eig_m < 1 < scanned[-1].eig_m
    fp = solve_branch(P, "positional", 2.0 * a_b, ch, with_eps_g=False)
    assert abs(fp.m) > 0.05 * np.sqrt(fp.q)
    with pytest.raises(BranchNotFound):
        solve_branch(P, "positional", 0.6 * a_b, ch, with_eps_g=False)


def test_no_crossing_on_the_grid_is_reported_not_converged():
    """A grid that stops below the crossing: no alpha_b, a status that says so."""
    P = ModelParams()
    ch = OutputChannel(P, SobolRule(10, seed=0).nodes(4))
    end = trivial_bifurcation(P, ch, "theta", [0.2, 0.35])
    assert not end.status.converged and np.isnan(end.alpha)
    assert "below one" in end.status.message
    assert all(st.eig_theta < 1 for st in end.scanned)


def test_bad_direction_and_asymmetric_A_are_refused():
    P = ModelParams()
    ch = OutputChannel(P, SobolRule(8, seed=0).nodes(4))
    with pytest.raises(ValueError, match="direction"):
        trivial_bifurcation(P, ch, "q", [0.5, 0.6])
    Pa = ModelParams(A=((0.3, 0.7), (0.8, 0.2)))
    with pytest.raises(ValueError, match="swap-symmetric"):
        trivial_bifurcation(Pa, OutputChannel(Pa, ch.nodes), "m", [0.5, 0.6])
