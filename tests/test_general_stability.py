"""The RS-stability report of the general model (symattn/numerics/general_stability.py)."""

import json
import math

import numpy as np
import pytest

from symattn.model import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.general import GeneralChannel, OrderParameters, nodes_for
from symattn.numerics.general_search import find_fixed_points
from symattn.numerics.general_stability import RANK_NOTE, general_rs_stability, moreau_hessian
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.stability import _verdict, rs_stability

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))


def _x(q, M, theta, V):
    return OrderParameters(np.atleast_2d(q), np.asarray(M, float).reshape(len(M), -1),
                           np.atleast_2d(theta), np.atleast_2d(V))


@pytest.mark.parametrize("q, m, theta, V", [
    (0.06826407, 0.0, 0.09530722, 21.46487477),     # semantic fixed point, alpha = 1
    (0.04345013, 0.24828937, 0.0, 16.4560998)])     # positional fixed point, alpha = 1
def test_papers_shape_through_the_general_route_is_the_papers_report(q, m, theta, V):
    """At the paper's fixed points of alpha = 1 (2^12 points, seed 3; both have near-ties, so
    the jump terms are exercised) the general route -- multi-start prox over L x r, compiled
    Hessian of the general loss with the full target matrix, replicon integrand derived for
    L = 2 through the general code -- gives the paper route's report (the paper's own prox,
    the lambdified L = 2 Hessian of the diagonal-target loss).  The paper's (q, m, theta, V)
    is the general (q, M = (m, -m), theta, V) (antipodal positions, model page §7).  Both
    prox converge to 1e-13 in the gradient; measured 4e-12 relative in the replicon, so
    1e-8; the near-tie counts exactly (no gap within 1e-12 of a threshold)."""
    p = ModelParams()
    nodes = SobolRule(log2n=12, seed=3).nodes(dim=4)
    ref = rs_stability(OutputChannel(p, nodes), np.array([q, m, theta, V]), 1.0)
    got = general_rs_stability(GeneralChannel(p, nodes), _x(q, [m, -m], theta, V), 1.0)
    assert ref.near_tie > 0 and ref.verdict == "unstable"
    assert abs(got.replicon - ref.replicon) <= 1e-8 * ref.replicon
    assert abs(got.replicon_err - ref.replicon_err) <= 1e-6 * ref.replicon_err
    assert abs(got.growth - ref.growth) <= 1e-8 * ref.growth
    assert abs(got.jump - ref.jump) <= 1e-8 * ref.jump
    for k in ("n_nodes", "near_tie", "near_tie_10", "two_minima", "verdict"):
        assert getattr(got, k) == getattr(ref, k), k


def _moreau(h, w, T, V, sigma):
    """G(h) = |h - w|^2/(2V) + (sigma^2/2) ||softmax(h h^T) - T||_F^2, rank one, in numpy:
    written here from model page §7, not from the SymPy derivation."""
    S = np.exp(np.outer(h, h))
    S /= S.sum(axis=1, keepdims=True)
    return np.sum((h - w) ** 2) / (2 * V) + sigma**2 / 2 * np.sum((S - T) ** 2)


def test_three_tokens_hessian_against_finite_differences_of_the_moreau_objective():
    """L = 3, r = 1 (simplex positions): the derived Hessian at the prox of 6 nodes against
    central second differences (step 1e-4) of the Moreau objective written in numpy.  The
    objective is first checked to be the kernel's (the value at the prox to 1e-12).  Error of
    the differences: truncation, O(e^2) (measured 1.8e-6 at step 1e-3, 1.8e-8 at 1e-4), and
    rounding, 1e-16 |G| / e^2 ~ 1e-8, so 1e-6; the loss part of the Hessian (large q and V,
    so that the prox lies far out on the softmax) is checked to exceed 1e-2 (measured 5e-2
    and up): it is compared to better than 1e-4, not the Moreau term 1/V alone."""
    p = ModelParams(A=A3, Pi="simplex")
    ch = GeneralChannel(p, nodes_for(p, 6, 1))
    x = _x(2.0, [0.5, -0.25, -0.25], 0.5, 15.0)
    w, _, T, h, G, conv, _, _ = ch.prox(x)
    H = moreau_hessian(ch, x, h, w, T)
    V, s = float(x.V[0, 0]), p.sigma
    e = 1e-4
    I = np.eye(3)
    for i in range(6):
        assert conv[i]
        hi, wi = h[i, :, 0], w[i, :, 0]
        assert abs(_moreau(hi, wi, T[i], V, s) - G[i]) <= 1e-12 * max(1.0, abs(G[i]))
        fd = np.empty((3, 3))
        for a in range(3):
            for b in range(3):
                f = [_moreau(hi + sa * e * I[a] + sb * e * I[b], wi, T[i], V, s)
                     for sa, sb in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
                fd[a, b] = (f[0] - f[1] - f[2] + f[3]) / (4 * e * e)
        assert np.max(np.abs(H[i] - fd)) <= 1e-6, (i, H[i], fd)
        assert np.max(np.abs(H[i] - I / V)) > 1e-2


def test_three_tokens_report_uses_the_derived_jacobian():
    """L = 3, r = 1: the replicon is alpha E||J - I||_F^2 with J = (V H)^-1 from the Hessian
    above (the mean of per-node values, to rounding)."""
    p = ModelParams(A=A3, Pi="simplex")
    ch = GeneralChannel(p, nodes_for(p, 8, 0))
    x = _x(0.3, [0.2, -0.1, -0.1], 0.25, 4.0)
    pr = ch.prox(x)
    w, _, T, h, _, conv, _, _ = pr
    J = np.linalg.inv(float(x.V[0, 0]) * moreau_hessian(ch, x, h, w, T))
    want = 1.5 * np.mean(np.sum((J - np.eye(3)) ** 2, axis=(1, 2))[conv])
    rep = general_rs_stability(ch, x, 1.5, prox=pr)
    assert rep.n_nodes == int(conv.sum()) == 256
    assert abs(rep.replicon - want) <= 1e-12 * want
    assert rep.verdict in ("stable", "unstable", "undecided") and not math.isnan(rep.growth)


@pytest.mark.parametrize("x, verdict", [
    # the start of the rank-2 semantic solve of tests/test_general_numerics.py (alpha = 1.5):
    # no node has a second minimum
    (_x([[0.1, 0.01], [0.01, 0.03]], [[0.0, 0.0], [0.0, 0.0]], [[0.1, 0.02]], 15 * np.eye(2)),
     "undecided"),
    # the positional global minimum of alpha = 0.5 (studies/data/general_validation/
    # theory_rank2.json, omega = 0.3, rounded), where the prox jumps (docs/numerics.md, 'Where
    # the prox jumps': 2 % of the measure has a second minimum)
    (_x([[0.0197, 0.00018], [0.00018, 0.0151]], [[0.1976, 0.0], [-0.1976, 0.0]], [[0.0, 0.0]],
        [[22.44, 0.06], [0.06, 32.08]]), "unstable")])
def test_rank_two_reports_no_replicon_and_never_stable(x, verdict):
    """r = 2: the replicon is not derived, so replicon and growth are nan; the verdict is
    unstable exactly when a node is within delta of a tie (the jump then the Frobenius norm of
    h - h2, positive), else undecided with the reason; never stable."""
    p = ModelParams(r=2)
    ch = GeneralChannel(p, nodes_for(p, 10, 0))
    rep = general_rs_stability(ch, x, 1.0)
    assert math.isnan(rep.replicon) and math.isnan(rep.growth)
    assert rep.verdict == verdict == ("unstable" if rep.near_tie > 0 else "undecided")
    assert rep.n_nodes == 1024
    if verdict == "undecided":
        assert RANK_NOTE in rep.reason and rep.two_minima == 0
    else:
        assert rep.jump > 0 and rep.two_minima >= rep.near_tie_10 >= rep.near_tie > 0
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["beta_star"] is None and d["verdict"] == verdict


def test_verdict_with_a_nan_replicon():
    assert _verdict(math.nan, math.nan, 0, 0, 1e-3, 100, "why")[0] == "undecided"
    assert _verdict(math.nan, math.nan, 0, 0, 1e-3, 100, "why")[1].startswith("why")
    assert _verdict(math.nan, math.nan, 2, 3, 1e-3, 100)[0] == "unstable"
    # a finite replicon: unchanged
    assert _verdict(0.3, 0.01, 0, 0, 1e-3, 100)[0] == "stable"


def test_found_fixed_points_carry_the_report_in_as_dict():
    """find_fixed_points attaches the report to each distinct fixed point it returns, and
    as_dict (the JSON of the search) carries it under rs_stability."""
    p = ModelParams()
    ch = GeneralChannel(p, nodes_for(p, 10, 0))
    start = _x(0.1, [0.0, 0.0], 0.1, 15.0)
    found, failed = find_fixed_points(ch, 1.4, starts=[("semantic", start, ("M",))])
    assert len(found) == 1 and not failed
    fp = found[0].fixed_point
    assert fp.stability is not None and fp.stability.alpha == 1.4
    d = json.loads(json.dumps(found[0].as_dict()))
    assert d["rs_stability"]["verdict"] == fp.stability.verdict
    assert d["rs_stability"]["replicon"] == fp.stability.replicon > 0
    # not asked for: none
    found, _ = find_fixed_points(ch, 1.4, starts=[("semantic", start, ("M",))],
                                 stability=False)
    assert found[0].fixed_point.stability is None
    assert "rs_stability" not in found[0].as_dict()


def test_thresholds_report_both_branches_at_alpha_c():
    """general_thresholds_on_nodes attaches the report to both branches' fixed points at
    alpha_c (at alpha_c itself), combine_rules combines them per character, and both reach
    the JSON.  The paper's shape on 2^11 points: the paper route's alpha_c = 1.25 lies in the
    bracket; the verdicts themselves are not checked here."""
    from symattn.numerics.branches import solve_branch
    from symattn.numerics.general_thresholds import combine_rules, general_thresholds_on_nodes
    p = ModelParams()
    nodes = SobolRule(log2n=11, seed=0).nodes(dim=4)
    ch = OutputChannel(p, nodes)
    pos = solve_branch(p, "positional", 1.0, ch, with_eps_g=False)
    sem = solve_branch(p, "semantic", 1.5, ch, with_eps_g=False)
    g = general_thresholds_on_nodes(
        p, nodes, bracket=(1.0, 1.5), root_tol=1e-6, verify=False,
        branches={"below": ("positional", _x(pos.q, [pos.m, -pos.m], pos.theta, pos.V), 1.0),
                  "above": ("semantic", _x(sem.q, [sem.m, -sem.m], sem.theta, sem.V), 1.5)})
    for side in ("below", "above"):
        fp = g.at_alpha_c[side]
        assert fp.stability is not None and fp.stability.alpha == fp.alpha == g.alpha_c
        assert g.as_dict()["at_alpha_c"][side]["rs_stability"]["verdict"] == fp.stability.verdict
    res = combine_rules(p, [g], {"log2n": 11})
    d = json.loads(json.dumps(res.to_dict()))
    assert set(d["rs_stability"]) == {"positional", "semantic"}
    assert d["rs_stability"]["semantic"]["replicon"] == g.at_alpha_c["above"].stability.replicon


def test_printed_summary_says_why_a_rank_two_report_has_no_replicon(capsys):
    """The printed thresholds summary: a rank-one report shows its replicon and beta*, a
    rank-two one (replicon nan) its verdict and reason only -- not 'reaches 1 never', which
    would read as stable."""
    from symattn.cli.thresholds import _print_stability
    one = {"verdict": "stable", "reason": "no tie", "replicon": 0.25, "replicon_err": 0.004,
           "growth": 0.0, "growth_err": 0.0, "beta_star": None}
    two = {"verdict": "undecided", "reason": RANK_NOTE + "; no node within 0.001 of a tie",
           "replicon": math.nan, "replicon_err": math.nan, "growth": math.nan,
           "growth_err": math.nan, "beta_star": None}
    _print_stability({"semantic": one, "positional": two}, "at alpha_c")
    out = capsys.readouterr().out.splitlines()
    sem = next(line for line in out if "semantic" in line)
    pos = next(line for line in out if "positional" in line)
    assert "STABLE" in sem and "replicon 0.25" in sem and "never" in sem
    assert "UNDECIDED" in pos and RANK_NOTE in pos and "never" not in pos and "nan" not in pos
