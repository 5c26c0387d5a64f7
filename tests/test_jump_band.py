"""The outer rule adapted to the jump surface (symattn.numerics.jump_band): it must integrate
what lives on the jump set as a plain rule of the dense rule's size would, with the base rule's
few points elsewhere."""

import math

import numpy as np
import pytest

from symattn.model import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.jump_band import gap_density, jump_band_rule
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import SobolRule

#: a point near the semantic branch's RS point at alpha_c, omega = 0.3 (q, m, theta, V; the
#: test needs a point where the jump set is light, not the fixed point's digits)
ALPHA, POINT = 1.2515, (0.0817, 0.0, 0.1181, 18.29)
#: a gap window inside the band (the band reaches ~1.5e-3 in gap here)
WINDOW = 4e-4


def _density_and_error(nodes, power=3):
    """The |Delta|^power-weighted gap density at zero (gap_density) on ``nodes`` at POINT, and
    its standard error as a sum of independent node contributions (the nodes in the window are
    few and scattered: Poisson counting, which bounds RQMC's error)."""
    params = ModelParams()
    ch = OutputChannel(params, nodes, gtol=1e-13)
    q, m, theta, V = POINT
    w, t = ch.diagonal_nodes(q, m, theta)
    pr = prox(w, t, V, params.sigma, gtol=1e-13)
    jump = np.linalg.norm(pr.h - pr.h2, axis=1)
    wt = nodes.weights
    tie = pr.converged & (pr.gap < WINDOW)
    err = math.sqrt(float(wt[tie] ** 2 @ jump[tie] ** (2 * power))) / (2 * WINDOW)
    return gap_density(wt, pr.converged, pr.gap, jump, power, WINDOW), err, int(tie.sum())


def test_the_band_rule_integrates_the_jump_set_like_a_plain_dense_rule():
    base = SobolRule(10, 0).nodes()
    band = jump_band_rule(ModelParams(), ALPHA, POINT, base, dense_log2n=17, seed=0)
    # the weights still integrate 1: the base points outside the band and the dense points in
    # it each estimate their stratum's measure; the base's count in the band (~0.5 points) is
    # the noise, binomial: 4 of its standard deviations, sqrt(share / 2^10)
    assert abs(band.nodes.weights.sum() - 1.0) < 4 * math.sqrt(band.share / 2**10)
    assert band.n_band > 20
    got, got_err, n_got = _density_and_error(band.nodes)
    # the reference: plain rules of 4 independent scrambles of 2^17 points
    ref = [_density_and_error(SobolRule(17, 900 + k).nodes()) for k in range(4)]
    want = np.mean([r[0] for r in ref])
    want_err = math.sqrt(sum(r[1] ** 2 for r in ref)) / 4
    assert n_got > 10 and sum(r[2] for r in ref) > 40
    # 4 standard errors of the difference: a wrong dense weight (2^-10 instead of 2^-17) or a
    # band that misses the window would be off by orders of magnitude
    assert abs(got - want) < 4 * math.hypot(got_err, want_err), (got, got_err, want, want_err)
    # the base rule alone has (almost) no point in the window: the band is what resolves it
    assert _density_and_error(base)[2] <= 2


def test_bad_band_settings_are_refused():
    from symattn.model.checks import ParameterError
    from symattn.numerics.one_step_rsb_search import RSBSettings
    with pytest.raises(ParameterError, match="rsb-band-log2n"):
        RSBSettings(log2n=10, band_log2n=10)
    with pytest.raises(ParameterError, match="rsb-band-reach"):
        RSBSettings(band_log2n=16, band_reach=0.0)
    with pytest.raises(ValueError, match="positive"):
        jump_band_rule(ModelParams(), ALPHA, POINT, SobolRule(8, 0).nodes(), dense_log2n=12,
                       seed=0, factor=-1.0)
    # without a band the settings' dict is as before (old run files resume)
    assert "band_log2n" not in RSBSettings().as_dict()


def test_the_search_uses_the_band_only_where_it_has_points(monkeypatch):
    """With a band: the reference starts at q_RS - D* and q_RS - 3 D* (the theory's D*), on the
    banded rule; where the dense rule has no tie (alpha = 2, semantic: RS-stable) the band is
    not used and the plain starts are kept (no start at q0 = q1)."""
    from symattn.numerics import one_step_rsb
    from symattn.numerics.one_step_rsb_search import (START_RATIOS, RSBSettings,
                                                      rule_one_step_rsb)
    starts = []

    def stand_in(channel, alpha, z0, **kw):
        starts.append((z0[0] / z0[1], channel.nodes.size))
        raise RuntimeError("stop")            # the starts are all this test looks at

    monkeypatch.setattr(one_step_rsb, "solve_ladder", stand_in)
    s = RSBSettings(log2n=8, rules=1, coarse=4, fine=6, band_log2n=18)
    for alpha, banded in ((ALPHA, True), (2.0, False)):
        starts.clear()
        with pytest.raises(RuntimeError, match="stop"):
            rule_one_step_rsb(ModelParams(), "semantic", alpha, 0, s)
        (ratio, size), = starts
        if banded:
            # D* here is ~1e-5 of q ~ 0.08: the start is within 1e-3 of q0 = q1, not 0.985
            assert 0.999 < ratio < 1.0 and size > 2**8
        else:
            # (0.985 q) / q: START_RATIOS[0] to one rounding, whatever the last bit of q
            assert ratio == pytest.approx(START_RATIOS[0], rel=1e-15) and size == 2**8
