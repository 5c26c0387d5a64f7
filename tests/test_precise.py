"""The high-precision stage (symattn.refine.precise, ``thresholds --precision high``).

The references are independent algorithms on the same node set: a one-pass channel for the
chunked one, and the fast route's own Newton solver (``thresholds_on_nodes``: Newton on the
fixed point with the smoothed Jacobian, Newton in alpha) for the chord/Newton/secant stage run
on the same rule.  Sizes are small (2^11 to 2^13 points); the physics is not the point here.
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from symattn.cli import main
from symattn.numerics.branches import BRANCHES, solve_branch
from symattn.numerics.observables import linear_baseline_error
from symattn.refine.precise import (
    ChunkedChannel,
    HighPrecisionSettings,
    NotConverged,
    _fast_setup,
    _large_rule_task,
    chord_solve,
    confirm_alpha_c,
    confirm_alpha_l,
)
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.saddle import SaddlePointMap
from symattn.numerics.thresholds import (
    ThresholdSettings,
    compute_thresholds,
    thresholds_on_nodes,
)


def test_chunked_channel_is_the_one_pass_channel(paper_params, sobol12_channel):
    """Same nodes, same prox: the averages may differ only by the order of summation."""
    x = np.array([0.08, 0.0, 0.11, 18.0])
    one = sobol12_channel.evaluate(x)
    chunked = ChunkedChannel(paper_params, sobol12_channel.nodes).evaluate(x)
    assert chunked.n_failed == one.n_failed == 0
    np.testing.assert_allclose(chunked.means, one.means, rtol=1e-13, atol=1e-17)
    assert chunked.E_M == pytest.approx(one.E_M, rel=1e-13)


@pytest.mark.parametrize("x", [[0.08, 0.0, 0.11, 18.0], [0.047, 0.25, 0.0, 14.9]])
def test_warm_started_channel_is_the_cold_channel(paper_params, sobol12_channel, x):
    """Starting each node's prox from its minima at a nearby x (relative moves of 1e-2 to
    1e-4, as between chord steps) finds the same global minima as the default multi-start,
    node by node: positions within 1e-10 (Newton stops at |grad G| <= 1e-13 and the flattest
    curvature is about 1e-2, so two solves of one minimum differ by up to ~1e-11; distinct
    minima are >= 1e-6 apart), envelope values within 1e-15.  The averages then agree to 1e-14
    (the integrand rows move by ~1e-12 with h).  A move beyond the warm radius falls back to
    cold starts."""
    x = np.array(x)
    ch = ChunkedChannel(paper_params, sobol12_channel.nodes, warm=True)
    before = sobol12_channel.evaluate(x)
    ch.evaluate(x)
    assert not ch.last_warm
    for rel in (1e-2, 1e-3, 1e-4):
        x1 = x * (1 + rel * np.array([1.0, -0.7, 0.5, 0.3]))
        # the stored minima: best and runner-up (nan where there is none: that start is
        # skipped)
        starts = np.stack([before.prox.h, before.prox.h2], axis=1)
        node_warm = sobol12_channel.evaluate(x1, starts=starts)
        cold = sobol12_channel.evaluate(x1)
        assert node_warm.n_failed == cold.n_failed == 0
        assert np.max(np.abs(node_warm.prox.h - cold.prox.h)) < 1e-10
        assert np.max(np.abs(node_warm.prox.value - cold.prox.value)) < 1e-15
        warm = ch.evaluate(x1)
        assert ch.last_warm
        np.testing.assert_allclose(warm.means, cold.means, rtol=0, atol=1e-14)
    ch.evaluate(x * 1.5)
    assert not ch.last_warm


def test_failed_warm_starts_fall_back_to_the_default_starts(paper_params, sobol12_channel):
    """Starts from which Newton cannot converge (nan) are replaced by the default starts at
    those nodes: the result is the cold evaluation's, node by node."""
    x = np.array([0.08, 0.0, 0.11, 18.0])
    n = sobol12_channel.nodes.size
    bad = sobol12_channel.evaluate(x, starts=np.full((n, 1, 2), np.nan))
    cold = sobol12_channel.evaluate(x)
    assert bad.n_failed == 0
    np.testing.assert_array_equal(bad.prox.h, cold.prox.h)
    np.testing.assert_allclose(bad.means, cold.means, rtol=1e-14, atol=1e-18)


def test_training_loss_is_stationary_at_a_fixed_point(paper_params, sobol12_channel):
    """The premise of the route: moving the order parameters by t from the positional fixed
    point changes eps_t = -Phi by O(t^2), not O(t).  Doubling t must multiply the change by
    about four (a first-order term would give two); 3 to 5 allows for the cubic term and
    for nodes switching minimiser along the way."""
    fp = solve_branch(paper_params, "positional", 1.3, sobol12_channel, tol=1e-12,
                      with_eps_g=False)
    T = SaddlePointMap(paper_params, 1.3, sobol12_channel, symmetry="eta_flip")
    direction = np.array([0.3, 1.0, 0.0, 40.0]) * 1e-3    # free: q, m, V
    changes = [abs(-T.phi(T(fp.x + t * direction)) - fp.eps_t) for t in (1.0, 2.0)]
    assert 3.0 < changes[1] / changes[0] < 5.0


def test_chord_solve_reaches_the_newton_fixed_point(paper_params, sobol12_channel):
    """Chord with the fast Jacobian from 1e-3 away lands on the fixed point that the fast
    route's Newton solver finds on the same rule; eps_t agrees to 1e-12 (both stop there)."""
    fp = solve_branch(paper_params, "semantic", 1.3, sobol12_channel, tol=1e-12,
                      with_eps_g=False)
    B = BRANCHES["semantic"]
    T = SaddlePointMap(paper_params, 1.3, sobol12_channel, symmetry=B.symmetry)
    J = T.jacobian(T(fp.x, 1e-3), B.free)
    x0 = fp.x * (1 + 1e-3)
    x0[1] = 0.0
    st, eps_t, change, k = chord_solve(T, x0, B.free, J, watch=lambda s: -T.phi(s),
                                       tol=1e-14, max_iter=20)
    assert eps_t == pytest.approx(fp.eps_t, abs=1e-12)
    np.testing.assert_allclose(st.x, fp.x, rtol=1e-7)
    assert change <= 1e-14 and k >= 2


def test_chord_solve_that_cannot_converge_says_so(paper_params, sobol12_channel):
    """One step with a Jacobian that is 50% wrong cannot reach 1e-15: NotConverged, no value."""
    B = BRANCHES["positional"]
    T = SaddlePointMap(paper_params, 1.3, sobol12_channel, symmetry=B.symmetry)
    J = -np.eye(3) * 1.5
    with pytest.raises(NotConverged, match="after 1 steps"):
        chord_solve(T, [0.05, 0.25, 0.0, 15.0], B.free, J, watch=lambda s: -T.phi(s),
                    tol=1e-15, max_iter=1)


@pytest.fixture(scope="module")
def fast_small(paper_params):
    return compute_thresholds(paper_params, ThresholdSettings(log2n=11, rules=2))


@pytest.mark.slow
def test_large_rule_stage_finds_the_roots_of_that_rule(paper_params, fast_small):
    """On one 2^13 rule, the high-precision stage (chord solves from the fast 2^11 route's
    points, Newton then secant in alpha) and the fast route's solver run directly on that rule
    must find the same alpha_c and alpha_l: the integration error is the same, so they may
    differ only by the two solvers' own bounds (the stage's root-finding and fixed-point parts,
    the direct solver's last Newton step / Brent bound and its 1e-10 residual tolerance, which
    moves alpha_c by ~1e-10 / |Delta'| x |eps_t gradient| < 1e-7).  Unfolded, so that both
    run on the same nodes (folded rules: ``tests/test_folds.py``)."""
    hp = HighPrecisionSettings(log2n=13, rules=2, seed=77, fold=False)
    setup = _fast_setup(paper_params, fast_small, hp)
    eps_lin, _ = linear_baseline_error(paper_params)
    stage = _large_rule_task((paper_params, hp, 77, setup, eps_lin))
    direct = thresholds_on_nodes(paper_params, SobolRule(13, 77).nodes(),
                                 ThresholdSettings(log2n=13), seed=77,
                                 alpha0=fast_small.alpha_c)
    for key in ("alpha_c", "alpha_l"):
        bound = (stage[key + "_root_bound"] + stage[key + "_fixed_point"]
                 + getattr(direct, key + "_step") + 1e-7)
        assert abs(stage[key] - getattr(direct, key)) <= bound, key
    assert len(stage["alpha_c_steps"]) >= 2     # the slope error is measured, not assumed


@pytest.mark.slow
def test_shared_route_gives_each_scrambles_solved_thresholds(paper_params, fast_small):
    """The shared route (every scramble after the first evaluated at the first one's fixed
    points: a chord step and one Newton / secant step in alpha) against solving each
    scramble, a different algorithm, on the same three 2^13 scrambles: per scramble the two
    may differ only by their own root-finding and fixed-point bounds (plus 1e-9 for the
    rounding of two different iterations); the first scramble is solved by both."""
    from symattn.refine.precise import refine_thresholds
    from symattn.runs.executors import InProcess
    runs = {shared: refine_thresholds(paper_params, fast_small,
                                      HighPrecisionSettings(log2n=13, rules=3, seed=40,
                                                            confirm_orders=(), shared=shared),
                                      executor=InProcess)
            for shared in (True, False)}
    routes = [r["route"] for r in runs[True].per_rule]
    assert routes[0] == "solved" and "shared" in routes[1:]
    for a, b in zip(runs[True].per_rule, runs[False].per_rule):
        for key in ("alpha_c", "alpha_l"):
            bound = sum(r[key + k] for r in (a, b) for k in ("_root_bound", "_fixed_point"))
            assert abs(a[key] - b[key]) <= bound + 1e-9, (a["seed"], key)


@pytest.mark.slow
def test_cli_precision_high_json(tmp_path, capsys):
    """Small sizes end to end: the error bar is the sum of its four parts, the large rules'
    answer lies within the fast route's error bar widened to three standard errors, and the
    JSON is written to --out."""
    out = tmp_path / "th.json"
    rc = main(["thresholds", "--log2n", "11", "--rules", "2", "--precision", "high",
               "--high-log2n", "13", "--high-rules", "2", "--second-route-orders", "4,6,8",
               "--second-route-alpha-l", "--json", "--out", str(out)])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text())["alpha_c"] == data["alpha_c"]
    assert not (tmp_path / "th.json.partial").exists()     # the checkpoint is gone once saved
    assert data["precision"] == "high"
    for key in ("alpha_c", "alpha_l"):
        parts = data["error_budget"][key]
        assert set(parts) == {"integration", "root_finding", "fixed_point", "floating_point"}
        assert data[key + "_err"] == pytest.approx(sum(parts.values()), rel=1e-12)
        # 95% over 2 scrambles: Student's t with 1 degree of freedom (Cauchy, tan(0.475 pi))
        assert data["integration_95"][key] == pytest.approx(
            math.tan(0.475 * math.pi) * parts["integration"], rel=1e-12)
        assert abs(data[key] - data["fast"][key]) <= 3 * (data["fast"][key + "_err"]
                                                          + data[key + "_err"])
    assert len(data["per_rule"]) == 2
    second = data["second_route"]
    assert [r["outer_order"] for r in second["table"]] == [4, 6, 8, 8]
    assert second["agrees"] == (abs(second["alpha_c"] - data["alpha_c"])
                                <= second["alpha_c_err"] + data["alpha_c_err"])
    second_l = second["alpha_l_route"]
    assert [r["outer_order"] for r in second_l["table"]] == [4, 6, 8, 4]
    assert second_l["agrees"] == (abs(second_l["alpha_l"] - data["alpha_l"])
                                  <= second_l["alpha_l_err"] + data["alpha_l_err"])


@pytest.fixture(scope="module")
def two_small_scrambles(paper_params, fast_small):
    """Two 2^12 scrambles through the large-rule stage, with what the second route needs."""
    hp = HighPrecisionSettings(log2n=12, rules=2, confirm_orders=(8, 10, 12),
                               confirm_cells=(28, 56))
    setup = _fast_setup(paper_params, fast_small, hp)
    eps_lin, _ = linear_baseline_error(paper_params)
    rules = [_large_rule_task((paper_params, hp, seed, setup, eps_lin)) for seed in (5, 6)]
    return hp, setup, eps_lin, rules


@pytest.mark.slow
def test_second_route_does_not_inherit_the_scrambles_errors(paper_params, two_small_scrambles):
    """The second route is evaluated at one large scramble's fixed points, which (eps_t being
    stationary) should enter only at second order.  So run from two different scrambles it
    must give nearly the same alpha_c, although the two scrambles' own alpha_c differ by
    their integration error: the spread must shrink at least tenfold (measured: 1.4e-3 against
    3.9e-6 on these 2^12 scrambles, outer orders 8, 10, 12).
    """
    hp, _, _, rules = two_small_scrambles
    second = [confirm_alpha_c(paper_params, r, hp) for r in rules]
    spread_a = abs(rules[0]["alpha_c"] - rules[1]["alpha_c"])
    spread_b = abs(second[0]["alpha_c"] - second[1]["alpha_c"])
    print(f"scrambles differ by {spread_a:.1e}, second route by {spread_b:.1e}")
    assert spread_a > 1e-4          # 2^12 scrambles do differ at this level
    assert spread_b < 0.1 * spread_a


@pytest.mark.slow
def test_second_route_for_alpha_l_solves_its_own_fixed_point(paper_params, two_small_scrambles):
    """The alpha_l route re-solves the fixed point with preintegrated atoms, starting from a
    scramble's fixed point at that scramble's last alpha.  From two scrambles whose alpha_l
    differ by their integration error it solves the same preintegrated map (at two nearby
    alphas), and the linear step in alpha removes the difference up to the slope's error
    times the distance: the two alpha_l must agree at least ten times more closely than the
    scrambles' (measured: 4.5e-3 against 2.1e-5 on these 2^12 scrambles, outer orders 8, 10,
    12).  Its error bar is the sum of its parts."""
    hp, setup, eps_lin, rules = two_small_scrambles
    second = [confirm_alpha_l(paper_params, r, setup, eps_lin, hp) for r in rules]
    spread_a = abs(rules[0]["alpha_l"] - rules[1]["alpha_l"])
    spread_b = abs(second[0]["alpha_l"] - second[1]["alpha_l"])
    print(f"scrambles differ by {spread_a:.1e}, second route by {spread_b:.1e}")
    assert spread_a > 1e-4
    assert spread_b < 0.1 * spread_a
    for s in second:
        assert [r["outer_order"] for r in s["table"]] == [8, 10, 12, 8]
        assert s["alpha_l_err"] == pytest.approx(sum(s["convergence"].values()), rel=1e-12)


def test_cli_high_options_need_precision_high(capsys):
    assert main(["thresholds", "--precision", "fast", "--high-rules", "4"]) == 2
    assert "need --precision standard or high" in capsys.readouterr().err
    assert main(["thresholds", "--second-route-alpha-l"]) == 2
    assert "need --precision high" in capsys.readouterr().err
    assert main(["thresholds", "--precision", "standard", "--second-route-orders", "8,10,12"]) == 2
    assert "need --precision high" in capsys.readouterr().err
    assert main(["thresholds", "--precision", "high", "--second-route-alpha-l",
                 "--second-route-orders", "none"]) == 2
    assert "needs the second route" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs", [{"log2n": 9}, {"rules": 1},
                                    {"confirm_orders": (20, 24)}])
def test_settings_refuse_bad_values(kwargs):
    with pytest.raises(ValueError):
        HighPrecisionSettings(**kwargs)


class _Stop(Exception):
    pass


@pytest.mark.slow
def test_interrupted_refinement_resumes_without_recomputing(paper_params, fast_small, tmp_path):
    """Interrupted after its second large scramble, a rerun with the checkpoint computes only
    the third and gives exactly the uninterrupted result; a checkpoint of other settings is
    refused, not overwritten."""
    from concurrent.futures import ThreadPoolExecutor

    from symattn.refine.precise import CheckpointMismatch, refine_thresholds
    hp = HighPrecisionSettings(log2n=12, rules=3, confirm_orders=())
    ck = tmp_path / "high.json.partial"

    def stop_after_two(k, n, rec):
        if k == 2:
            raise _Stop

    with ThreadPoolExecutor(1) as pool, pytest.raises(_Stop):
        refine_thresholds(paper_params, fast_small, hp, executor=pool, progress=stop_after_two,
                          checkpoint=ck)
    assert len(json.loads(ck.read_text())["records"]) == 2
    calls = []
    with ThreadPoolExecutor(1) as pool:
        resumed = refine_thresholds(paper_params, fast_small, hp, executor=pool, checkpoint=ck,
                                    progress=lambda k, n, rec: calls.append(rec["seed"]))
        fresh = refine_thresholds(paper_params, fast_small, hp, executor=pool)
    assert calls == [hp.seed + 2]
    assert resumed.alpha_c == fresh.alpha_c and resumed.alpha_l == fresh.alpha_l
    assert resumed.alpha_c_err == fresh.alpha_c_err
    before = ck.read_text()
    with pytest.raises(CheckpointMismatch):
        refine_thresholds(paper_params, fast_small,
                          HighPrecisionSettings(log2n=13, rules=3, confirm_orders=()),
                          checkpoint=ck)
    assert ck.read_text() == before


class _ShiftedAtoms:
    """``channel`` smoothed at ``eps = 1e-3`` with its averages shifted by a constant: a map
    whose fixed point moves as the plane route's would under an integration error ``shift``."""

    def __init__(self, channel, shift):
        self.inner, self.shift, self.nodes = channel, np.asarray(shift, float), channel.nodes

    def evaluate(self, x, eps=1e-10):
        st = self.inner.evaluate(x, 1e-3)
        return dataclasses.replace(st, means=st.means + self.shift)

    def derivative(self, state, j, step):
        return self.inner.derivative(state, j, step)


def test_alpha_l_goal_is_the_derivative_of_alpha_l(paper_params, sobol12_channel):
    """``alpha_l_goal`` (linearised: closed-form dT/d atoms, one Jacobian solve) against the
    fixed point re-solved by Newton with each atom shifted, on a smoothed 2^12 rule at
    alpha = 1.49 (semantic branch): ``alpha_l`` moves by ``-(eps_g(x') - eps_g(x))/slope``.
    Shifts sized to move alpha_l by 1e-5; agreement to 1e-4 relative (measured below 1e-5:
    the second-order term is of that size, and the fixed points are solved to a residual of
    1e-11, which moves eps_g by about 1e-13, 1e-5 of the shift)."""
    from symattn.refine.precise import _eps_g, alpha_l_goal
    from symattn.numerics.saddle import solve_fixed_point

    B = BRANCHES["semantic"]
    alpha, slope = 1.49, -1.39e-3
    n = len(sobol12_channel.evaluate(np.array([0.09, 0.0, 0.13, 16.0])).means)

    def fixed_point(shift, x0):
        T = SaddlePointMap(paper_params, alpha, _ShiftedAtoms(sobol12_channel, shift),
                           symmetry=B.symmetry)
        fp = solve_fixed_point(T, x0, B.free, tol=1e-11, eps=1e-3)
        assert fp.converged, fp.message
        return T, fp

    T, fp = fixed_point(np.zeros(n), np.array([0.09, 0.0, 0.13, 16.0]))
    state = T(fp.x, 1e-3)
    J = T.jacobian(state, B.free)
    goal = alpha_l_goal(paper_params, "semantic", alpha, fp.x, state.channel.atoms, J, slope)
    assert goal.shape == (n,) and np.all(goal[-2:] == 0)
    checked = 0
    for k in np.flatnonzero(np.abs(goal) > 1e-9 * np.max(np.abs(goal))):
        shift = np.zeros(n)
        shift[k] = 1e-5 / goal[k]
        _, fpk = fixed_point(shift, fp.x)
        moved = -(_eps_g(paper_params, fpk.x)[0] - _eps_g(paper_params, fp.x)[0]) / slope
        assert moved == pytest.approx(1e-5, rel=1e-4), k
        checked += 1
    assert checked >= 4


def test_a_checkpoint_with_a_damaged_record_is_refused_not_half_read(tmp_path):
    """A record missing a key (a hand edit, another version) stops the run with the file's
    name, instead of failing later inside the error budget."""
    from symattn.refine.precise import RECORD_KEYS, CheckpointMismatch, _load_checkpoint
    path = tmp_path / "th.json.partial"
    key = {"params": {"sigma": 0.5}}
    good = {k: 1.0 for k in RECORD_KEYS}
    path.write_text(json.dumps({"key": key, "records": [dict(good, seed=1000)]}))
    assert list(_load_checkpoint(path, key)) == [1000]
    path.write_text(json.dumps({"key": key, "records": [{"seed": 1000, "alpha_c": 1.25}]}))
    with pytest.raises(CheckpointMismatch, match="damaged"):
        _load_checkpoint(path, key)


@pytest.mark.parametrize("x", [[0.08164738, 0.0, 0.1179633, 18.31522],
                               [0.04705195, 0.2525654, 0.0, 14.87689],
                               [0.3, 0.2, 0.2, 30.0]])      # wide search discs: _widen's starts
def test_fused_channel_is_the_numpy_level_channel(paper_params, sobol12_channel, x):
    """OutputChannel.means (one compiled pass) against OutputChannel.evaluate: the same prox
    at every node to the bit (same starts, same Newton), so the averages differ only by the
    order of summation (4096 terms: ~1e-15 relative); cold, and warm from stored minima (a
    nan runner-up is skipped), with no start at all at every seventh node (there the default
    starts take over)."""
    ch = sobol12_channel
    x = np.array(x)
    fused, (h, h2) = ch.means(x, keep=True)
    one = ch.evaluate(x)
    np.testing.assert_array_equal(h, one.prox.h)
    np.testing.assert_array_equal(np.isnan(h2), np.isnan(one.prox.h2))
    np.testing.assert_allclose(fused.means, one.means, rtol=1e-14, atol=1e-18)
    assert (fused.n_failed, fused.n_ties) == (one.n_failed, one.n_ties)
    starts = np.stack([h, h2], axis=1)
    starts[::7] = np.nan
    x1 = x * (1 + 1e-3)
    fused1, _ = ch.means(x1, starts=starts)
    one1 = ch.evaluate(x1, starts=starts)
    np.testing.assert_allclose(fused1.means, one1.means, rtol=1e-14, atol=1e-18)
    assert (fused1.n_failed, fused1.n_ties) == (one1.n_failed, one1.n_ties)


class _FakeState:
    """A map state of :func:`_fake_map`: ``x`` and the residual on its free variable 0."""

    def __init__(self, x, r):
        self.x, self._r = np.asarray(x, float), r
        self.channel = dataclasses.make_dataclass("Ch", [("n_failed", int)])(0)

    def residual(self, free):
        return np.array([self._r])


def _fake_map(r):
    return lambda x: _FakeState(x, r(float(x[0])))


def test_shared_chord_passes_contract_alternate_or_refuse():
    """The shared route's chord steps (J = 1 on the free variable): a map contracting by 0.3
    stops after the passes asked; one that jumps by 0.01 across its fixed point at 1 (the
    chord alternates between 0.99 and 1.01) is recognised as a jump, with the midpoint; one
    that expands is refused (the scramble is then solved instead)."""
    from symattn.refine.precise import _chord_passes, _NoContraction
    x0, J = [1.02, 0.0, 0.0, 15.0], np.eye(1)
    states, x, c, jump = _chord_passes(_fake_map(lambda v: 0.7 * (v - 1)), x0, (0,), J, 2, 10)
    assert len(states) == 2 and not jump and c == pytest.approx(0.3)
    states, x, c, jump = _chord_passes(
        _fake_map(lambda v: (v - 1) + 0.01 * np.sign(v - 1)), x0, (0,), J, 2, 10)
    assert jump and x[0] == pytest.approx(1.0) and len(states) == 4
    with pytest.raises(_NoContraction):
        _chord_passes(_fake_map(lambda v: -0.9 * (v - 1)), x0, (0,), J, 2, 6)


def test_first_scramble_that_does_not_converge_hands_over(monkeypatch):
    """The shared route's solved scramble: the next one if the first does not converge (the
    first is then evaluated like the others), at most FIRST_TRIES, then a clear error."""
    from symattn.refine import precise as P
    calls = []

    def task(args):
        calls.append(args[2])
        if args[2] in (10, 20, 21, 22):
            raise P.NotConverged("the map jumps")
        return {"seed": args[2], "route": "solved"}
    monkeypatch.setattr(P, "_large_rule_task", task)
    done = {}
    hp = HighPrecisionSettings(log2n=12, rules=3, seed=10, confirm_orders=())
    first = P._first_solved(None, hp, [10, 11, 12], None, 0.0, done,
                            lambda k, n, rec: done.setdefault(rec["seed"], rec))
    assert first["seed"] == 11 and calls == [10, 11] and set(done) == {11}
    with pytest.raises(P.NotConverged, match="no scramble to share"):
        P._first_solved(None, hp, [20, 21, 22, 23], None, 0.0, {}, lambda *a: None)
    assert calls[2:] == [20, 21, 22]
