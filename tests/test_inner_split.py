"""The inner rule split along the prox's jump line (symattn.numerics.inner_split): its half-line
Gauss rules against mpmath, and its tilted inner averages at outer nodes whose inner Gaussian
meets the jump line against a composite rule built another way (the jump located by bisection
on the global prox, Gauss--Legendre on each piece, no proposal, no branch following)."""

import math

import mpmath as mp
import numpy as np
import pytest

from symattn.model import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.inner_split import half_line_gauss
from symattn.numerics.one_step_rsb import InnerRule, rsb_node_moments
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import SobolRule

#: near the semantic RS point at alpha_c, omega = 0.3 (q, m, theta, V), where the jump set is
#: light (tests/test_jump_band.py); an inner variance of the 1RSB point's size there
POINT, DQ = (0.0817, 0.0, 0.1181, 18.29), 1e-5


@pytest.mark.parametrize("c", [-7.5, -1.3, 0.0, 0.8, 4.6])
@pytest.mark.parametrize("upper", [True, False])
def test_half_line_rules_integrate_polynomials_against_the_truncated_normal(c, upper):
    """A Gauss rule of n points is exact for degree 2n - 1: the moments of phi on the half-line
    to rounding (measured 3e-12 of the moments of |a|^k; the bound 1e-10 leaves room for
    the discretised Stieltjes procedure's rounding, far below what a wrong rule would miss)."""
    mp.mp.dps = 30
    n = 10
    nodes, weights = half_line_gauss(np.array([c]), n, upper)
    span = [c, mp.inf] if upper else [-mp.inf, c]
    assert np.all(nodes >= c) if upper else np.all(nodes <= c)
    for k in range(2 * n):
        ref = mp.quad(lambda a: a**k * mp.npdf(a), span)
        scale = mp.quad(lambda a: abs(a) ** k * mp.npdf(a), span)
        assert abs(float(weights[0] @ nodes[0] ** k) - float(ref)) <= 1e-10 * float(scale)


def _tied_nodes(count):
    """Outer nodes of a 2^14 Sobol rule whose inner Gaussian (variance DQ) meets the jump line
    within two inner standard deviations."""
    params = ModelParams()
    ch = OutputChannel(params, SobolRule(14, 3).nodes(), gtol=1e-13)
    q, m, theta, V = POINT
    w, t = ch.diagonal_nodes(q - DQ, m, theta)
    pr = prox(w, t, V, params.sigma, gtol=1e-13)
    reach = math.sqrt(DQ) * np.linalg.norm(pr.h - pr.h2, axis=1) / V
    idx = np.flatnonzero(pr.converged & np.isfinite(pr.gap) & (pr.gap < 2 * reach))[:count]
    assert len(idx) == count
    return w[idx], t[idx], params.sigma


def _reference(w0, t, V, x, sigma, *, lines=240, pieces=48, grid=4001, span=8.5):
    """The tilted inner averages of one node by a composite rule: Gauss--Legendre in zeta_1 on
    [-span, span]; along each zeta_2 line the global minimiser's branch (nearer the centre's
    global minimum or its runner-up) located on a grid and by bisection, and Gauss--Legendre on
    each piece.  Returns (Mx, <f>, <|f|^2>, <zeta f>, <M>)."""
    s = math.sqrt(DQ)
    centre = prox(w0[None], t[None], V, sigma, gtol=1e-13)
    hA, hB = centre.h[0], centre.h2[0]

    def branch(z1, z2):
        w = w0 + s * np.stack([z1, z2], -1)
        pr = prox(w, np.broadcast_to(t, w.shape), V, sigma, gtol=1e-13)
        side = np.linalg.norm(pr.h - hA, axis=1) < np.linalg.norm(pr.h - hB, axis=1)
        return pr, side, w

    y1, g1 = np.polynomial.legendre.leggauss(lines)
    y2, g2 = np.polynomial.legendre.leggauss(pieces)
    z1s, w1s = span * y1, span * g1
    grid_z = np.linspace(-span, span, grid)
    pts, wts = [], []
    for z1, wz in zip(z1s, w1s):
        _, side, _ = branch(np.full(grid, z1), grid_z)
        cuts = [-span]
        for i in np.flatnonzero(side[1:] != side[:-1]):
            lo, hi = grid_z[i], grid_z[i + 1]
            for _ in range(45):
                mid = 0.5 * (lo + hi)
                if branch(np.array([z1]), np.array([mid]))[1][0] == side[i]:
                    lo = mid
                else:
                    hi = mid
            cuts.append(0.5 * (lo + hi))
        cuts.append(span)
        for a, b in zip(cuts, cuts[1:]):
            half = 0.5 * (b - a)
            z2 = a + half * (y2 + 1)
            pts.append(np.stack([np.full(pieces, z1), z2], 1))
            wts.append(wz * half * g2)
    zeta, wt = np.concatenate(pts), np.concatenate(wts)
    pr, _, w = branch(zeta[:, 0], zeta[:, 1])
    M = pr.value
    f = (pr.h - w) / V
    logw = np.log(wt) - 0.5 * np.sum(zeta**2, 1) - math.log(2 * math.pi) - x * M
    amax = logw.max()
    e = np.exp(logw - amax)
    Z = e.sum()
    p = e / Z
    return (-(amax + math.log(Z)) / x, p @ f, p @ np.sum(f * f, 1), p @ (f * zeta), p @ M)


@pytest.mark.parametrize("x", [10.0, 3000.0])
def test_split_rule_matches_a_composite_rule_at_nodes_on_the_jump(x):
    """At nodes whose inner Gaussian meets the jump line, 2 x 16^2 split points give the inner
    averages of a 240 x 48-per-piece composite rule within 1e-9 (relative to |f|, |zeta f|; the
    composite rule's own error is below that; measured: 1e-13).  A Gauss--Hermite rule of 32^2
    points misses <f> by 2e-3 to 3e-2 here (the jump), so the bound is sharp; x = 3000 moves
    the tilted measure's mode a few inner standard deviations."""
    w0, t, sigma = _tied_nodes(3)
    V = POINT[3]
    got = rsb_node_moments(w0, t, V, DQ, x, sigma, inner=InnerRule(16, split=True))
    for j in range(len(w0)):
        Mx, f, F2, XiF, Mbar = _reference(w0[j], t[j], V, x, sigma)
        scale_f, scale_x = float(np.linalg.norm(f)), float(np.linalg.norm(XiF)) + 1e-300
        assert abs(got.Mx[j] - Mx) <= 1e-12 * max(1.0, abs(Mx))
        assert abs(got.Mbar[j] - Mbar) <= 1e-12 * max(1.0, abs(Mbar))
        assert np.max(np.abs(got.f[j] - f)) <= 1e-9 * scale_f
        assert abs(got.F2[j] - F2) <= 1e-9 * F2
        assert np.max(np.abs(got.XiF[j] - XiF)) <= 1e-9 * max(scale_x, scale_f * math.sqrt(DQ))


def test_split_and_recentre_settings():
    from symattn.model.checks import ParameterError
    from symattn.numerics.channel import OutputChannel as Ch
    from symattn.numerics.one_step_rsb import OneStepRSBMap
    from symattn.numerics.one_step_rsb_search import RSBSettings
    with pytest.raises(ParameterError, match="rsb-split"):
        RSBSettings(split=1)
    with pytest.raises(ParameterError, match="rsb-recentre-from"):
        RSBSettings(recentre_from=0.0)
    with pytest.raises(ValueError, match="not both"):
        InnerRule(8, recentre=True, split=True)
    ch = Ch(ModelParams(), SobolRule(4, 0).nodes())
    with pytest.raises(ValueError, match="split"):
        OneStepRSBMap(ch, 1.0, fine=InnerRule(8), split=InnerRule(8))
    # unset, the settings' dict is as before (old run files resume)
    assert not {"split", "recentre_from"} & set(RSBSettings().as_dict())
    assert RSBSettings(split=16, recentre_from=1e4).as_dict()["split"] == 16


def test_the_search_hands_the_split_and_recentred_rules_to_each_solve(monkeypatch):
    """The split rule goes to every solve; the coarse and fine rules are recentred from
    ``recentre_from`` on (a stand-in solver records what it is given)."""
    from symattn.numerics import one_step_rsb
    from symattn.numerics.one_step_rsb import OneStepRSBPoint
    from symattn.numerics.one_step_rsb_search import RSBSettings, rule_one_step_rsb
    seen = []

    def fake(channel, alpha, z0, *, pin, hold_x, inner, fine, split, **kw):
        z = [float(v) for v in z0]
        seen.append((z[5], inner.recentre, fine.recentre, split))
        z[0] = 0.9 * z[1]
        return OneStepRSBPoint(alpha, z, [0.0] * 5, 1e-3, 1e-10, True, 1, "converged",
                               sigma_over_e=1.0 - z[5] / 500.0)

    monkeypatch.setattr(one_step_rsb, "solve_ladder", fake)
    s = RSBSettings(log2n=6, rules=1, coarse=4, fine=6, xs=(30.0, 100.0, 1000.0), split=8,
                    recentre_from=100.0)
    rule_one_step_rsb(ModelParams(), "positional", 1.0, 0, s)
    assert [(x, a, b) for x, a, b, _ in seen[:4]] == [
        (10.0, False, False), (30.0, False, False), (100.0, True, True), (1000.0, True, True)]
    assert all(sp == InnerRule(8, split=True) for *_, sp in seen)
