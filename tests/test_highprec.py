"""The double-precision output channel against mpmath (symattn.refine.highprec).

Reference: Newton's method in mpmath at 40 digits on the same compiled expressions, with the
global minimum chosen again at that precision.  The bounds say how much double precision may
contribute; measured values are in the comments.
"""

import mpmath
import numpy as np
import pytest

from symattn.compile.kernels import prox_kernel
from symattn.refine.highprec import channel_in_mpmath, newton_mp


@pytest.mark.parametrize("branch", ["positional", "semantic"])
def test_double_channel_agrees_with_mpmath(branch, branch_points, sobol12_channel):
    """Every node of the first 1024 of the 2^12 rule at both fixed points.  The double prox
    stops at |grad G| <= 1e-13; with Hessian eigenvalues >= ~1e-2 that places it within
    ~1e-11 of the minimiser (measured 2e-12), so 1e-9 is a loose bound; the node averages
    then agree to ~1e-15 (measured 3e-15), bounded here by 1e-12, far below the rule's
    quadrature error (~1e-5).  No node may change its global minimum."""
    r = channel_in_mpmath(sobol12_channel, branch_points[branch].x, dps=40, idx=np.arange(1024))
    assert r.n_not_converged == 0
    assert r.n_selection_flips == 0
    assert r.max_prox_diff < 1e-9
    assert r.max_value_diff < 1e-14
    assert r.max_atom_diff < 1e-12


def test_mpmath_newton_reaches_its_tolerance(paper_params):
    """From a start 1e-3 away, Newton at 50 digits lands where the gradient, re-evaluated
    independently, is below 1e-40, at a positive-definite Hessian."""
    kern = prox_kernel("mpmath")
    with mpmath.workdps(50):
        w = (mpmath.mpf("0.3"), mpmath.mpf("-0.7"))
        t = (mpmath.mpf("0.62"), mpmath.mpf("0.55"))
        V, sigma = mpmath.mpf(20), mpmath.mpf(paper_params.sigma)
        (h1, h2), G, ok = newton_mp((0.3 + 1e-3, -0.7 - 1e-3), w, t, V, sigma,
                                    tol=mpmath.mpf(10) ** -42)
        assert ok
        _, g1, g2, H11, H12, H22 = kern(h1, h2, w[0], w[1], t[0], t[1], V, sigma)
        assert max(abs(g1), abs(g2)) < mpmath.mpf(10) ** -40
        assert H11 > 0 and H11 * H22 > H12**2
