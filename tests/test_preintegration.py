"""Line preintegration (symattn.refine.preintegration) against mpmath.

The node map, the teacher and the Moreau objective are typed here from the model page (sections 3
and 4) in mpmath; minima are refined by Newton at 40 digits (``newton_mp``).  The library's
switching points must be genuine ties of two distinct local minima, and its piecewise
Gauss-Legendre line integrals must match mpmath's adaptive quadrature split at switching
points that mpmath locates itself.
"""

import mpmath
import numpy as np
import pytest

from symattn.numerics.channel import OutputChannel
from symattn.numerics.coordinates import Coordinates
from symattn.refine.highprec import newton_mp
from symattn.refine.preintegration import (
    LineRule,
    PreintegratedChannel,
    gauss_hermite_outer,
)
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import NodeSet

#: near the positional fixed point at alpha_c (q, m, theta, V); lines there switch often
X_POS = np.array([0.04714992, 0.25225507, 0.0, 14.92349097])
DPS = 40


def _logistic(z):
    return 1 / (1 + mpmath.exp(-z))


def mp_node(params, x, xi1, outer):
    """``(w, t)`` in mpmath at node ``(xi1, *outer)`` (model page §4)."""
    q, m, theta, V = (mpmath.mpf(float(v)) for v in x)
    xi = (mpmath.mpf(xi1), mpmath.mpf(float(outer[0])))
    eta = (mpmath.mpf(float(outer[1])), mpmath.mpf(float(outer[2])))
    rho = mpmath.mpf(params.rho)
    w = (mpmath.sqrt(q) * xi[0] + m, mpmath.sqrt(q) * xi[1] - m)
    hs = [theta / mpmath.sqrt(q) * xi[i] + mpmath.sqrt(rho - theta**2 / q) * eta[i]
          for i in (0, 1)]
    lg = _logistic
    om = mpmath.mpf(params.omega)
    t = ((1 - om) * lg(hs[0]**2 - hs[0] * hs[1]) + om * mpmath.mpf(params.A[0][0]),
         (1 - om) * lg(hs[1]**2 - hs[0] * hs[1]) + om * mpmath.mpf(params.A[1][1]))
    return w, t, V


def mp_objective(h, w, t, V, sigma):
    lg = _logistic
    a1, a2 = h[0] ** 2 - h[0] * h[1], h[1] ** 2 - h[0] * h[1]
    return (((h[0] - w[0]) ** 2 + (h[1] - w[1]) ** 2) / (2 * V)
            + mpmath.mpf(sigma) ** 2 * ((lg(a1) - t[0]) ** 2 + (lg(a2) - t[1]) ** 2))


def mp_minimum(params, x, xi1, outer, start, required=True):
    """The local minimum reached by Newton from ``start`` at the working precision, and its
    value (hand-typed G); ``None`` if Newton fails and the start is not ``required``."""
    w, t, V = mp_node(params, x, xi1, outer)
    h, _, ok = newton_mp(start, w, t, V, params.sigma,
                         tol=mpmath.mpf(10) ** -(mpmath.mp.dps - 5))
    if not ok:
        assert not required, f"Newton failed at xi_1 = {xi1} from {start}"
        return None
    return h, mp_objective(h, w, t, V, params.sigma), w, V


@pytest.fixture(scope="module")
def located(paper_params):
    ch = PreintegratedChannel(paper_params, LineRule(log2n=6, seed=0))
    _, _, (k, s, hA, hB) = ch.line_switches(X_POS, ch._outer)
    assert len(k) >= 3, "the test needs lines with switching points"
    return ch, k, s, hA, hB


def test_switching_points_are_ties_of_two_minima(paper_params, located):
    """At every located point the two minima, refined at 40 digits, are distinct and equal in
    value to 1e-13: the bisection places s within span/2^44 = 4e-13 and G_A - G_B has slope
    ~1e-2 there (measured ties ~1e-15).  1e-9 to either side the order of the two flips, so
    each is a genuine switch, not a spurious root."""
    ch, k, s, hA, hB = located
    with mpmath.workdps(DPS):
        for kk, sk, a, b in zip(k, s, hA, hB):
            outer = ch._outer[kk // ch.rule.cells]
            ha, Ga, _, _ = mp_minimum(paper_params, X_POS, sk, outer, a)
            hb, Gb, _, _ = mp_minimum(paper_params, X_POS, sk, outer, b)
            assert max(abs(ha[0] - hb[0]), abs(ha[1] - hb[1])) > 1e-3
            assert abs(Ga - Gb) < 1e-13
            sides = []
            for d in (-1e-9, 1e-9):
                _, Ga_, _, _ = mp_minimum(paper_params, X_POS, mpmath.mpf(sk) + d, outer, a)
                _, Gb_, _, _ = mp_minimum(paper_params, X_POS, mpmath.mpf(sk) + d, outer, b)
                sides.append(Ga_ < Gb_)
            assert sides == [True, False]


#: the semantic fixed point at alpha_l (scramble 1000 of the default --precision high run)
X_SEM_L = np.array([0.09359382694424126, 0.0, 0.13409487622370012, 16.08189248553328])
#: a line there (xi_2, eta_1, eta_2) whose two minima coexist only on [-0.23, -0.04], inside
#: one 56-cell detection cell [-0.268, 0]: each branch ends at a fold within the cell
SHORT_OVERLAP = np.array([-0.2, 3.0759144, -1.6617009])


def test_switch_where_both_branches_end_inside_one_cell(paper_params):
    """Following each edge's minimiser across the cell in one Newton step lands on the other
    edge's minimiser from both sides (the branch ends at a fold and Newton falls into the
    other one), so with ``follow_steps=1`` the switch is missed.  With 4 steps the jump at
    the fold is seen and the switch located; at 40 digits it is a tie of two distinct minima
    (to 1e-13, as above), and the mpmath branches confirm that neither reaches the far edge
    of the cell."""
    lines = {m: PreintegratedChannel(paper_params, LineRule(cells=56, follow_steps=m))
             for m in (1, 4)}
    outer = SHORT_OVERLAP[None, :]
    _, _, (k1, _, _, _) = lines[1].line_switches(X_SEM_L, outer)
    _, _, (k4, s4, hA, hB) = lines[4].line_switches(X_SEM_L, outer)
    assert len(k1) == 0 and len(k4) == 1
    edges = lines[4]._edges
    lo, hi = edges[k4[0]], edges[k4[0] + 1]
    assert lo < s4[0] < hi
    with mpmath.workdps(DPS):
        ha, Ga, _, _ = mp_minimum(paper_params, X_SEM_L, s4[0], SHORT_OVERLAP, hA[0])
        hb, Gb, _, _ = mp_minimum(paper_params, X_SEM_L, s4[0], SHORT_OVERLAP, hB[0])
        assert max(abs(ha[0] - hb[0]), abs(ha[1] - hb[1])) > 1e-2
        assert abs(Ga - Gb) < 1e-13
        # branch A (global at the left edge) followed to the right edge in small steps
        # does not survive: Newton ends far from it (on B or nowhere); likewise B leftwards
        for start, path in ((hA[0], np.linspace(s4[0], hi, 40)),
                            (hB[0], np.linspace(s4[0], lo, 40))):
            h = start
            for z in path:
                r = mp_minimum(paper_params, X_SEM_L, z, SHORT_OVERLAP, h, required=False)
                if r is None or max(abs(r[0][0] - h[0]), abs(r[0][1] - h[1])) > 0.1:
                    break
                h = r[0]
            else:
                raise AssertionError("the branch reached the far edge: not a short overlap")


@pytest.mark.slow
def test_line_integral_matches_mpmath_quadrature(paper_params, located):
    """One line with a switch: the library's piecewise Gauss-Legendre integrals of M phi
    (kink) and of f_1^2 phi (jump) against mpmath's tanh-sinh quadrature on [-7.5, 7.5] split
    at the switching point located in mpmath (findroot on G_A - G_B).  At each mpmath node the
    global minimum is chosen at 40 digits among Newton solutions from both branches and from
    the double-precision multi-start prox.  Agreement to 1e-13 (measured ~1e-16): the
    library's pieces are smooth and its switching point is good to ~4e-13."""
    ch, k, s, hA, hB = located
    C = ch.rule.cells
    line = k[0] // C
    on_line = np.flatnonzero(k // C == line)      # every switch of this line
    outer = ch._outer[line]
    rows = ch._lines(X_POS, outer[None, :])[0]
    n_at = len(rows) - 2
    lib_M, lib_f1sq = rows[n_at], rows[Coordinates(paper_params).atom_keys.index("f[1,1]*f[1,1]")]

    def branch_diff(z, a, b):
        return (mp_minimum(paper_params, X_POS, z, outer, a)[1]
                - mp_minimum(paper_params, X_POS, z, outer, b)[1])

    def integrand(z, col):
        pt = np.array([[float(z), *outer]])
        w, t = OutputChannel(paper_params, NodeSet(pt, np.ones(1), "x"), gtol=1e-13)._setup(X_POS)
        h_double = prox(w, t, X_POS[3], paper_params.sigma).h[0]
        found = [mp_minimum(paper_params, X_POS, z, outer, h_double)]
        found += [mp_minimum(paper_params, X_POS, z, outer, st, required=False)
                  for i in on_line for st in (hA[i], hB[i])]
        best = min((r for r in found if r is not None), key=lambda r: r[1])
        h, G, wm, V = best
        val = G if col == "M" else ((h[0] - wm[0]) / V) ** 2
        return val * mpmath.npdf(z)

    s_mp = []
    with mpmath.workdps(DPS):
        for i in on_line:
            r = mpmath.findroot(lambda z, a=hA[i], b=hB[i]: branch_diff(z, a, b),
                                (mpmath.mpf(s[i]) - 1e-6, mpmath.mpf(s[i]) + 1e-6),
                                solver="secant")
            assert abs(r - s[i]) < 1e-11
            s_mp.append(r)
    with mpmath.workdps(20):
        pts = sorted({-7.5, -3.0, 0.0, 3.0, 7.5} | set(s_mp))
        ref_M = mpmath.quad(lambda z: integrand(z, "M"), pts)
        ref_f = mpmath.quad(lambda z: integrand(z, "f1sq"), pts)
    assert abs(lib_M - float(ref_M)) < 1e-13
    assert abs(lib_f1sq - float(ref_f)) < 1e-13


def test_outer_gauss_hermite_rule_is_a_probability_rule():
    """The tensor rule integrates 1, xi_2^2 and eta_1^2 eta_2^2 exactly (Gauss-Hermite of
    order 6 is exact to degree 11)."""
    pts, w = gauss_hermite_outer(6)
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    assert w @ pts[:, 0] ** 2 == pytest.approx(1.0, abs=1e-13)
    assert w @ (pts[:, 1] ** 2 * pts[:, 2] ** 2) == pytest.approx(1.0, abs=1e-13)


def test_preintegrated_E_M_agrees_with_raw_rqmc(paper_params):
    """E[M] at X_POS from 12^3 lines against 8 scrambles of 2^20 raw Sobol points,
    0.0022588229(64) (studies/preintegration_accuracy.py): within 5e-7, the size of the
    12^3 outer rule's error measured against higher orders (it was 7.6e-8)."""
    st = PreintegratedChannel(paper_params, LineRule(), outer=gauss_hermite_outer(12),
                              chunk=256).evaluate(X_POS)
    assert st.n_failed == 0
    assert abs(st.E_M - 0.0022588229) < 5e-7


def test_line_rule_refuses_bad_values():
    with pytest.raises(ValueError):
        LineRule(cells=1)
    with pytest.raises(ValueError):
        LineRule(log2n=0)
