"""The 1RSB search's logic (symattn.numerics.one_step_rsb_search, the ``--rsb 1`` commands):
statuses, the stationary x, the two training-loss routes, saving and resuming.

The solver itself is tested in test_one_step_rsb.py; here ``solve_ladder`` is replaced by a
closed-form stand-in whose x equation, losses and overlaps are known, so that every number the
search reports has an independent value (and the tests take seconds, not hours)."""

import json
import math
from dataclasses import replace

import pytest
from conftest import assert_one_line_error

from symattn.cli import main
from symattn.model import ModelParams
from symattn.numerics import one_step_rsb
from symattn.numerics.one_step_rsb import OneStepRSBPoint
from symattn.numerics.one_step_rsb_search import (RSBSettings, envelope_shift,
                                                  one_step_rsb_estimate)

#: the stand-in: Sigma/e = S0 (1 - x / X0) changes sign at X0; eps_t = E0 + C x; q0 = (1 - GAP) q1
S0, X0, E0, C, GAP = 0.02, 400.0, 2e-3, 1e-9, 0.05
SETTINGS = RSBSettings(log2n=8, rules=2, coarse=4, fine=6, xs=(30.0, 100.0, 300.0, 1000.0))


class Fake:
    """``solve_ladder``'s stand-in; ``collapse``: Newton goes to q0 = q1 from starts with
    q0/q1 above it; ``sign``: False keeps Sigma/e > 0; ``newton``: the six-equation solve
    converges; ``jump``: Sigma/e = +-S0, a step at X0 (no x solves the x equation); ``gap``:
    q0 = (1 - gap) q1 along the profile."""

    def __init__(self, collapse=None, sign=True, newton=True, stall=None, curved=False,
                 reach=None, jump=False, gap=GAP):
        self.collapse, self.sign, self.newton, self.calls = collapse, sign, newton, []
        self.stall, self.curved, self.reach, self.jump = stall, curved, reach, jump
        self.gap, self.starts, self.eps = gap, [], []

    def _stalls(self, z):
        return self.stall is not None and z[0] / z[1] > self.stall

    def __call__(self, channel, alpha, z0, *, pin, hold_x, **kw):
        z = [float(v) for v in z0]
        self.calls.append((hold_x, z[5]))
        self.starts.append(list(z))
        self.eps.append(tuple(kw.get("eps_stages", (1e-5,))))
        if not hold_x:
            # Newton converges (to X0) if it may, and if it starts within ``reach`` of X0
            far = self.reach is not None and abs(z[5] - X0) > self.reach
            if not self.newton or far:
                return self._point(alpha, z, False, "no step lowers the residual 0.1")
            z[5] = X0
        if self._stalls(z):
            return self._point(alpha, z, False, "no step lowers the residual 0.03")
        if self.collapse is not None and z[0] / z[1] > self.collapse:
            z[0] = z[1]
        elif hold_x:
            z[1] *= 1 + 1e-4          # q1 grows along the profile (so eps_g moves)
            z[0] = (1 - self.gap) * z[1]
        return self._point(alpha, z, True, "converged")

    def _point(self, alpha, z, ok, msg):
        x = z[5]
        s = S0 * (1 - (x / X0) ** (2 if self.curved else 1)) if self.sign else S0
        if self.jump:
            s = math.copysign(S0, s)
        return OneStepRSBPoint(alpha, list(z), [0.0] * 5, E0 + C * x, 1e-10 if ok else 0.1, ok,
                               3, msg, eps=self.eps[-1][-1], sigma_over_e=0.0 if not ok else s)


@pytest.fixture
def fake(monkeypatch):
    def make(**kw):
        f = Fake(**kw)
        monkeypatch.setattr(one_step_rsb, "solve_ladder", f)
        return f
    return make


def test_stationary_x_and_shifts(fake):
    f = fake()
    rows = []
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS, save=rows.append)
    assert est.status == "converged" and est.converged
    assert [r.status for r in est.per_rule] == ["stationary"] * 2
    # the profile stops at the first x past the sign change (1000), then Newton with x free
    # starts from the linear interpolation between 300 and 1000: X0 exactly (Sigma/e is linear)
    assert [c for c in f.calls if c[0]][-1] == (True, 1000.0)
    assert [c for c in f.calls if not c[0]] == [(False, pytest.approx(X0))] * 2
    assert est.shifts["x_star"][0] == pytest.approx(X0)
    # direct route: eps_t(X0) - eps_t(x_ref) = C (X0 - x_ref)
    assert est.shifts["d_eps_t"][0] == pytest.approx(C * (X0 - SETTINGS.x_ref), rel=1e-9)
    assert est.shifts["q0_over_q1"][0] == pytest.approx(1 - GAP)
    assert len(rows) == 2 * 6 and {r["seed"] for r in rows} == {0, 1}


def test_envelope_shift_is_the_trapezoid_of_the_x_equation():
    # d eps/dx = eps (Sigma/e) / x^2; with eps (Sigma/e) = k x^2 the integrand is the constant
    # k, and the trapezoid rule is exact: k (x* - x_ref)
    k = 3e-9
    rows = [{"x": x, "eps_t": 2.0, "sigma_over_e": k * x * x / 2.0} for x in (10, 30, 100)]
    assert envelope_shift(rows) == pytest.approx(k * 90)
    # and the half trapezoid to x* = 150 (Sigma = 0 there)
    assert envelope_shift(rows, 150.0) == pytest.approx(k * 90 + 0.5 * k * 50)


def test_collapse_onto_rs_is_retried_then_reported(fake):
    f = fake(collapse=0.96)           # the first start (0.985) collapses, the retry (0.93) not
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0, SETTINGS)
    assert est.status == "converged"
    assert [round(z, 3) for h, z in f.calls[:2]] == [SETTINGS.x_ref] * 2
    f = fake(collapse=0.5)            # both starts collapse
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0, SETTINGS)
    assert est.status == "reduces to RS" and est.converged
    assert all(r.status == "reduces to RS" for r in est.per_rule)
    assert est.shifts["d_eps_t"] == (0.0, 0.0)


def test_a_rule_without_the_rs_fixed_point_fails_and_the_others_go_on(fake, monkeypatch):
    """Near a branch end a small rule may have no RS fixed point of the branch (the semantic
    alpha = 0.8, rule 2 of 2^10): that rule fails and says why; the search goes on (it used to
    end the whole run, the other rules' results unwritten)."""
    from symattn.numerics import one_step_rsb_search as search
    from symattn.numerics.branches import BranchNotFound
    fake()
    real = search.rule_channel

    def channel(params, branch, alpha, seed, settings):
        if seed == 1:
            raise BranchNotFound("semantic branch not found at alpha = 0.8")
        return real(params, branch, alpha, seed, settings)

    monkeypatch.setattr(search, "rule_channel", channel)
    lines = []
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0,
                                replace(SETTINGS, rules=3), progress=lines.append)
    assert [r.status for r in est.per_rule] == ["stationary", "failed", "stationary"]
    assert "no RS fixed point" in est.per_rule[1].why and "0.8" in est.per_rule[1].why
    assert any(line.startswith("rule 1: no RS fixed point") for line in lines)
    assert est.status == "converged" and est.note.startswith("rules: 2 stationary, 1 failed")


def test_with_a_jump_band_q0_eq_q1_is_judged_against_the_band_s_d_star(fake, monkeypatch):
    # q1 - q0 = 1e-6 q1 = 1e-7 is below COLLAPSED q1: on the plain rule every start reduces
    # to RS; with a band whose small-D theory predicts D* = 1e-8 the floor is COLLAPSED_BAND
    # D* = 1e-10 < 1e-7, and the same points are a 1RSB one
    from types import SimpleNamespace

    from symattn.numerics import one_step_rsb_search as search
    fake(gap=1e-6)
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0, SETTINGS)
    assert est.status == "reduces to RS"
    fp = SimpleNamespace(q=0.1, m=0.0, theta=0.1, V=1.0, eps_t=E0)
    band = SimpleNamespace(D_pred=1e-8, n_band=10, D_band=4e-8, as_dict=lambda: {})
    monkeypatch.setattr(search, "rule_channel", lambda *a: (None, fp, band, True))
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0,
                                replace(SETTINGS, band_log2n=12))
    assert est.status == "converged"
    assert est.shifts["q0_over_q1"][0] == pytest.approx(1 - 1e-6)
    # and a band whose D* = 1e-4 puts the floor (1e-6) above the gap: reduces to RS again
    band.D_pred = 1e-4
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0,
                                replace(SETTINGS, band_log2n=12))
    assert est.status == "reduces to RS"


def test_with_a_jump_band_the_reference_is_tried_from_three_gaps(fake, monkeypatch):
    # starts at q_RS - k D* for k = 1, 3, 6 (D* = 1e-8, q_RS = 0.1): Newton stalls from the
    # first two (q0/q1 above 1 - 4e-7) and converges from the third
    from types import SimpleNamespace

    from symattn.numerics import one_step_rsb_search as search
    f = fake(stall=1 - 4e-7)
    fp = SimpleNamespace(q=0.1, m=0.0, theta=0.1, V=1.0, eps_t=E0)
    band = SimpleNamespace(D_pred=1e-8, n_band=10, D_band=4e-8, as_dict=lambda: {})
    monkeypatch.setattr(search, "rule_channel", lambda *a: (None, fp, band, True))
    est = one_step_rsb_estimate(ModelParams(), "semantic", 2.0, replace(SETTINGS, band_log2n=12))
    assert est.status == "converged"
    assert [z[0] / z[1] for z in f.starts[:3]] == pytest.approx([1 - 1e-7, 1 - 3e-7, 1 - 6e-7],
                                                                abs=1e-12)


@pytest.mark.parametrize("count, top, tried", [
    (lambda k: 3 * 2 ** (k - 14), 24, [18, 20]),   # 48 < 100: two doublings more give 192
    (lambda k: 3 * 2 ** (k - 14), 19, [18, 19]),   # capped at band_log2n
    (lambda k: 0, 24, [18, 24]),                   # no point in the band: straight to the cap
    (lambda k: 5000, 24, [18]),                    # enough at the first
])
def test_band_points_chooses_the_dense_rule_per_rule(monkeypatch, count, top, tried):
    from types import SimpleNamespace

    from symattn.numerics import branches, jump_band
    from symattn.numerics.one_step_rsb_search import rule_channel
    ks = []

    def band_rule(*a, dense_log2n, **kw):
        ks.append(dense_log2n)
        return SimpleNamespace(n_band=count(dense_log2n), D_pred=0.0, dense_log2n=dense_log2n)
    monkeypatch.setattr(jump_band, "jump_band_rule", band_rule)
    monkeypatch.setattr(branches, "solve_branch",
                        lambda *a, **kw: SimpleNamespace(q=0.1, m=0.0, theta=0.1, V=1.0))
    s = replace(SETTINGS, log2n=10, band_log2n=top, band_points=100)
    _, _, band, used = rule_channel(ModelParams(), "semantic", 1.5, 0, s)
    assert ks == tried and band.dense_log2n == tried[-1] and not used
    ks.clear()
    rule_channel(ModelParams(), "semantic", 1.5, 0, replace(s, band_points=None))
    assert ks == [top]


@pytest.mark.parametrize("n_band, used", [(2831, False), (160, True), (1023, True),
                                           (1024, False)])
def test_with_band_points_a_band_the_base_rule_already_holds_is_not_used(monkeypatch, n_band,
                                                                         used):
    # at 2^18 dense points for 2^10 base ones the base rule holds n_band / 256 band points on
    # average: 4 or more (1024 and up) and the plain rule resolves the point (the positional
    # branch at alpha_c: 2831, i.e. 11)
    from types import SimpleNamespace

    from symattn.numerics import branches, channel, jump_band
    from symattn.numerics.one_step_rsb_search import rule_channel
    monkeypatch.setattr(jump_band, "jump_band_rule", lambda *a, dense_log2n, **kw:
                        SimpleNamespace(n_band=n_band, D_pred=1e-8, dense_log2n=dense_log2n,
                                        nodes=None))
    fp = SimpleNamespace(q=0.1, m=0.0, theta=0.1, V=1.0)
    monkeypatch.setattr(branches, "solve_branch", lambda *a, **kw: fp)
    monkeypatch.setattr(channel, "OutputChannel",
                        lambda params, nodes, **kw: SimpleNamespace(nodes=nodes))
    s = replace(SETTINGS, log2n=10, band_log2n=24, band_points=100)
    assert rule_channel(ModelParams(), "semantic", 1.5, 0, s)[3] is used
    # without band_points only band_max (4096) decides
    assert rule_channel(ModelParams(), "semantic", 1.5, 0, replace(s, band_points=None))[3]


def test_an_unused_band_says_why(fake, monkeypatch):
    # 2831 band points of 2^18 for 2^10 base points: the base rule holds 11.1 on average
    from types import SimpleNamespace

    from symattn.numerics import one_step_rsb_search
    from symattn.numerics.one_step_rsb_search import rule_one_step_rsb
    fake()
    band = SimpleNamespace(n_band=2831, D_pred=1e-3, D_band=4e-3, dense_log2n=18,
                           as_dict=lambda: {})
    real = one_step_rsb_search.rule_channel

    def channel(params, branch, alpha, seed, settings):
        # the plain rule's channel and RS point, and the band the dense rule would have given
        plain = replace(settings, band_log2n=None, band_points=None)
        ch, fp, _, _ = real(params, branch, alpha, seed, plain)
        return ch, fp, band, False

    monkeypatch.setattr(one_step_rsb_search, "rule_channel", channel)
    said = []
    s = replace(SETTINGS, log2n=10, band_log2n=24, band_points=256)
    rule_one_step_rsb(ModelParams(), "positional", 1.0, 0, s, progress=said.append)
    assert "not used (the plain rule holds 11.1 of them on average)" in said[0], said[0]


def test_band_points_needs_a_band():
    from symattn.model.params import ParameterError
    with pytest.raises(ParameterError, match="rsb-band-points"):
        RSBSettings(band_points=100)


def test_a_stalled_start_is_retried_and_a_mixed_failure_is_not_rs(fake):
    fake(stall=0.96)                  # the first start stalls, the second converges
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "converged"
    fake(stall=0.96, collapse=0.5)    # stalls, then goes to q0 = q1: not evidence for RS
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "not resolved"
    assert all(r.status == "failed" and "no step lowers" in r.why
               and "went to q_0 = q_1" in r.why for r in est.per_rule)


def test_no_sign_change_is_not_a_result(fake):
    fake(sign=False)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS, rs={})
    assert est.status == "not resolved" and not est.converged
    assert all(r.status == "no sign change" and "up to x = 1000" in r.why for r in est.per_rule)
    assert est.shifts == {} and est.values() == {}


def test_where_newton_stalls_the_secant_in_x_solves_the_x_equation(fake):
    f = fake(newton=False)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "converged"
    assert all(r.status == "stationary" and "no step lowers" in r.why and "secant" in r.why
               for r in est.per_rule)
    # per rule: Newton, three bisections of [300, 1000] in log x, Newton again, then regula
    # falsi on the bracket [348.72, 405.36]: Sigma/e is linear in x, so one step lands on X0
    assert [c[0] for c in f.calls[5:11]] == [False, True, True, True, False, True]
    assert f.calls[6][1] == pytest.approx(math.sqrt(300 * 1000))
    assert f.calls[10][1] == pytest.approx(X0)
    assert est.shifts["x_star"][0] == pytest.approx(X0)
    pt = est.per_rule[0].point
    assert pt["converged"] and "secant" in pt["message"] and abs(pt["sigma_over_e"]) < 1e-12


def test_the_secant_in_x_is_superlinear_where_sigma_is_curved(fake):
    # Sigma/e = S0 (1 - (x/X0)^2) is concave: plain regula falsi keeps the upper end of the
    # bracket and gains a constant factor a step; Illinois halves the kept value after the
    # second keep and converges superlinearly. Reference: |Sigma/e| <= SIGMA_TOL = 1e-8 needs
    # |x - X0| <= X0 SIGMA_TOL / (2 S0) = 1e-4 (the slope at X0 is -2 S0 / X0)
    from symattn.numerics.one_step_rsb_search import SIGMA_TOL
    f = fake(newton=False, curved=True)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "converged"
    secant = [z for h, z in f.calls[10:] if h][:len(f.calls) // 2 - 10]
    # halving the kept value at every step (rather than after the second keep) gains a factor
    # 2 a step: from |x - X0| = 0.36 after the first, 1e-4 needs 12 > SECANT_STEPS; Illinois
    # needs 4 here (6 allowed)
    assert len(secant) <= 6
    assert abs(est.shifts["x_star"][0] - X0) <= X0 * SIGMA_TOL / (2 * S0) * 1.01


def test_where_no_x_solves_the_x_equation_the_values_are_interpolated_and_say_so(fake):
    # Sigma/e jumps from +S0 to -S0 at X0: the secant narrows the bracket around X0 for its
    # SECANT_STEPS steps but never reaches |Sigma/e| <= SIGMA_TOL
    from symattn.numerics.one_step_rsb_search import SECANT_STEPS
    f = fake(newton=False, jump=True)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "interpolated" and not est.converged
    assert est.note.endswith("stationary x or one interpolated in its bracket")
    assert all("no step lowers" in r.why and "did not reach" in r.why for r in est.per_rule)
    assert len(f.calls) == 2 * (10 + SECANT_STEPS)
    secant = [z for h, z in f.calls[10:10 + SECANT_STEPS]]
    assert all(348.72 < z < 405.37 for z in secant) and abs(secant[-1] - X0) < 1.0
    # the interpolation of the last bracket, which holds X0
    assert abs(est.shifts["x_star"][0] - X0) < 1.0
    assert est.per_rule[0].point["converged"] is False


def test_a_secant_step_that_fails_ends_in_interpolation(fake, monkeypatch):
    f = fake(newton=False, jump=True)
    monkeypatch.setattr(f, "_stalls", lambda z: 350.0 < z[5] < 399.0)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "interpolated"
    assert all("the secant in x stopped at step 1" in r.why and "348.7" in r.why
               and "405.3" in r.why for r in est.per_rule)


def test_with_profile_skips_a_stalled_secant_step_is_stepped_over(fake, monkeypatch):
    # Sigma/e is linear: after the bisections ([348.72, 405.36]) regula falsi lands on X0 = 400,
    # where the first fixed-x solve stalls (once: at the semantic alpha_l which x stalls changes
    # with the arithmetic). Without skips the rule is interpolated; with one, the log-midpoint
    # of the longer side of 400 in the bracket, sqrt(348.72 * 400) = 373.5, is solved
    # (Sigma/e > 0, the new lower end), and regula falsi lands on 400 again, which converges
    f = fake(newton=False)
    seen = []

    def once(z):
        if 399.0 < z[5] < 401.0 and not seen:
            seen.append(z[5])
            return True
        return False

    monkeypatch.setattr(f, "_stalls", once)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, replace(SETTINGS, rules=1))
    assert est.per_rule[0].status == "interpolated"
    assert "the secant in x stopped at step 1" in est.per_rule[0].why
    seen.clear()
    f.calls.clear()
    rows = []
    skip = replace(SETTINGS, rules=1, profile_skips=1)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, skip, save=rows.append)
    rule = est.per_rule[0]
    assert rule.status == "stationary" and "the secant stepped over x = 400 (stalled)" in rule.why
    assert "secant" in rule.point["message"] and rule.x_star == pytest.approx(X0)
    secant = [x for hold, x in f.calls[10:] if hold]
    assert secant == pytest.approx([X0, math.sqrt(348.72 * X0), X0], abs=0.05)
    # replayed without a solve
    n = len(f.calls)
    assert one_step_rsb_estimate(ModelParams(), "positional", 1.0, skip,
                                 rows=rows).shifts == est.shifts and len(f.calls) == n


def test_a_point_solved_only_at_a_coarser_width_neither_ends_a_profile_nor_solves_x(
        fake, monkeypatch):
    # the solver returns a point that converged only at the coarser smoothing width (1e-4) at
    # x = 1000 (profile) and near X0 (the secant): on another map, so it may not end the
    # profile (the step is halved to 547.7 instead, a 1e-5 point past X0) nor be taken as the
    # root of the x equation (the rule is interpolated, and says why)
    from dataclasses import replace as dc_replace
    f = fake(newton=False)

    def solver(channel, alpha, z0, **kw):
        pt = f(channel, alpha, z0, **kw)
        x = float(z0[5])
        if kw["hold_x"] and (x == 1000.0 or 399.0 < x < 401.0):
            pt = dc_replace(pt, eps=1e-4)
        return pt

    monkeypatch.setattr(one_step_rsb, "solve_ladder", solver)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, replace(SETTINGS, rules=1))
    rule = est.per_rule[0]
    fixed = [x for hold, x in f.calls if hold]
    assert fixed[4:6] == pytest.approx([1000.0, math.sqrt(300 * 1000)])
    assert rule.status == "interpolated"
    assert "stopped at step 1: solved only at smoothing width 0.0001" in rule.why


def test_newton_from_a_narrowed_bracket(fake):
    # Sigma/e = S0 (1 - (x/X0)^2): the interpolation of [300, 1000] starts Newton at 354, out
    # of its reach (30); the bisections narrow the bracket to [348.7, 405.3], whose
    # interpolation (399.6) is within it
    f = fake(curved=True, reach=30.0)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert est.status == "converged"
    newton = [z for h, z in f.calls if not h]
    assert newton[0] == pytest.approx(353.8, abs=0.1) and abs(newton[1] - X0) < 30
    bisect = [z for h, z in f.calls[6:9]]
    assert bisect == pytest.approx([547.7, 405.3, 348.7], abs=0.1)
    assert est.shifts["x_star"][0] == pytest.approx(X0)


def test_resume_replays_without_solving(fake):
    fake()
    rows = []
    first = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS, save=rows.append)
    f = fake()
    again = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS,
                                  rows=json.loads(json.dumps(rows)), save=rows.append)
    assert f.calls == [] and len(rows) == 12
    assert again.shifts == first.shifts and again.status == first.status


@pytest.mark.parametrize("argv, name", [
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb-xs", "100"], "rsb"),
    (["fixed-point", "--branch", "trivial", "--alpha", "1", "--rsb", "1"], "branch"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
      "--rsb-xs", "300,100"], "rsb-xs"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "2"], "rsb"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
      "--rsb-split", "1"], "rsb-split"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb-recentre-from", "1e4"],
     "rsb"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
      "--rsb-eps", "1e-5,1e-4"], "rsb-eps"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
      "--rsb-eps", "0.1"], "rsb-eps"),
    (["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb-eps", "1e-7"], "rsb"),
    (["thresholds", "--rsb-rules", "1"], "rsb"),
    (["thresholds", "--rsb-rules", "1", "--L", "3", "--A", "1,0,0,0,1,0,0,0,1"], "rsb"),
    (["thresholds", "--rsb", "1", "--precision", "high", "--second-route-alpha-l"], "rsb"),
    (["thresholds", "--rsb", "1", "--L", "3", "--A", "1,0,0,0,1,0,0,0,1"], "rsb"),
])
def test_bad_rsb_input_one_line_exit_2(argv, name, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "r.json")]) == 2
    assert_one_line_error(capsys, name)


def test_cli_fixed_point_saves_and_resumes(fake, tmp_path, capsys):
    fake()
    out = tmp_path / "rsb.json"
    argv = ["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
            "--rsb-log2n", "8", "--rsb-rules", "2", "--rsb-coarse", "4", "--rsb-fine", "6",
            "--rsb-xs", "30,100,300,1000", "--log2n", "8", "--rules", "2", "--json",
            "--out", str(out)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "converged" and data["rsb"] == 1
    assert data["shifts"]["x_star"][0] == pytest.approx(X0)
    # the 1RSB values: the accurate RS value plus the paired shift
    assert data["values"]["eps_t"][0] == pytest.approx(data["rs"]["eps_t"]
                                                       + C * (X0 - SETTINGS.x_ref))
    saved = json.loads(out.read_text())
    assert len(saved["rows"]) == 12 and saved["result"]["status"] == "converged"
    f = fake()
    assert main(argv) == 0
    assert f.calls == [] and "resuming: 12 solves done" in capsys.readouterr().err
    resumed = json.loads(out.read_text())
    assert resumed["rows"] == saved["rows"]
    assert resumed["result"]["shifts"] == saved["result"]["shifts"]
    # the same file with other parameters is refused, not overwritten
    assert main([a if a != "1" else "1.1" for a in argv[:5]] + argv[5:]) == 2
    assert_one_line_error(capsys, "out")
    assert json.loads(out.read_text()) == resumed
    # fewer rules than the file's: refused; more: the file's rules replayed, the third solved
    i = argv.index("--rsb-rules") + 1
    assert main(argv[:i] + ["1"] + argv[i + 1:]) == 2
    assert_one_line_error(capsys, "out")
    f = fake()
    assert main(argv[:i] + ["3"] + argv[i + 1:]) == 0
    assert len(f.calls) == 6 and "resuming: 12 solves done" in capsys.readouterr().err
    grown = json.loads(out.read_text())
    assert grown["rows"][:12] == saved["rows"] and {r["seed"] for r in grown["rows"][12:]} == {2}
    assert grown["header"]["rsb"]["rules"] == 3
    # more profile skips resume too (nothing to add here: every profile found its sign
    # change); then the file has skips, and a run without them is refused
    three = argv[:i] + ["3"] + argv[i + 1:]
    f = fake()
    assert main(three + ["--rsb-profile-skips", "2"]) == 0 and f.calls == []
    assert json.loads(out.read_text())["header"]["rsb"]["profile_skips"] == 2
    capsys.readouterr()
    assert main(three) == 2
    assert_one_line_error(capsys, "out")


def test_cli_smoothing_widths_reach_every_solve_and_the_file(fake, tmp_path, capsys):
    fake()
    out = tmp_path / "rsb.json"
    argv = ["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
            "--rsb-log2n", "8", "--rsb-rules", "2", "--rsb-xs", "30,100,300,1000",
            "--log2n", "8", "--rules", "2", "--json", "--out", str(out)]
    f = fake()
    assert main(argv + ["--rsb-eps", "1e-4,1e-5,1e-7"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "converged"
    # the fixed-x solves go through the three widths, Newton with x free at the last alone
    assert {e for (hold, _), e in zip(f.calls, f.eps) if hold} == {(1e-4, 1e-5, 1e-7)}
    assert {e for (hold, _), e in zip(f.calls, f.eps) if not hold} == {(1e-7,)}
    assert json.loads(out.read_text())["header"]["rsb"]["eps_stages"] == [1e-4, 1e-5, 1e-7]
    # the rows were solved at these widths: the file does not resume with others
    assert main(argv) == 2
    assert_one_line_error(capsys, "out")


def test_cli_not_converged_exit_3(fake, tmp_path, capsys):
    fake(sign=False)
    code = main(["fixed-point", "--branch", "positional", "--alpha", "1", "--rsb", "1",
                 "--rsb-log2n", "8", "--rsb-rules", "2", "--rsb-xs", "30,100", "--log2n", "8",
                 "--rules", "2", "--out", str(tmp_path / "r.json")])
    text = capsys.readouterr().out
    assert code == 3
    assert "not resolved" in text and "no sign change" in text


def test_cli_thresholds_first_order_shift(fake, tmp_path, capsys, monkeypatch):
    from symattn.numerics import one_step_rsb_thresholds as th
    from symattn.numerics.settings import NumericalSettings
    monkeypatch.setattr(th, "SLOPE_SETTINGS", NumericalSettings(log2n=10, rules=2))
    fake()
    code = main(["thresholds", "--rsb", "1", "--precision", "fast", "--rsb-log2n", "8",
                 "--rsb-rules", "2",
                 "--rsb-xs", "30,100,300,1000", "--log2n", "10", "--rules", "2", "--json",
                 "--out", str(tmp_path / "t.json")])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "converged"
    # the stand-in gives both branches the same shift: alpha_c does not move
    rs = data["rs"]
    for route in ("direct", "envelope"):
        assert data["alpha_c"][route][0] == pytest.approx(rs["alpha_c"], abs=1e-12)
    # alpha_l moves by -d eps_g / (d eps_g / d alpha), d eps_g from the stand-in's overlaps
    d_eg = data["estimates"]["semantic_l"]["shifts"]["d_eps_g"][0]
    g = data["slopes"]["eps_g_sem"][0]
    assert g < 0 and math.isfinite(d_eg)
    assert data["alpha_l"][0] == pytest.approx(rs["alpha_l"] - d_eg / g)


@pytest.mark.slow
def test_where_rs_is_stable_the_search_finds_no_1rsb_point():
    # semantic branch at alpha = 2: the RS-stability report (the replicon, a separate
    # computation) says stable and no node is near a tie; then no 1RSB point with q0 < q1 lies
    # near RS, and the real solver (not a stand-in) must end at q0 = q1 from both starts.
    # 2^8 outer points with 6^2 / 12^2 inner ones: about a minute.
    from symattn.numerics.branches import solve_branch
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.quadrature import SobolRule
    from symattn.numerics.stability import rs_stability
    p = ModelParams()
    ch = OutputChannel(p, SobolRule(8, 0).nodes())
    fp = solve_branch(p, "semantic", 2.0, ch)
    report = rs_stability(ch, (fp.q, fp.m, fp.theta, fp.V), 2.0)
    assert report.verdict == "stable" and report.near_tie == 0
    est = one_step_rsb_estimate(p, "semantic", 2.0,
                                RSBSettings(log2n=8, rules=2, coarse=6, fine=12))
    assert est.status == "reduces to RS"
    for r in est.per_rule:
        assert all(abs(row["q1"] - row["q0"]) <= 1e-5 * row["q1"] for row in r.rows)


def test_a_stalled_profile_step_is_halved_in_log_x(fake, monkeypatch):
    # fixed-x solves stall at x = 1000 only: the profile (30, 100, 1000) tries halfway points
    # in log x and passes the sign change at X0 = 400, so the stationary x is still found
    f = fake()
    plain = f._stalls
    monkeypatch.setattr(f, "_stalls", lambda z: plain(z) or z[5] == 1000.0)
    rows = []
    settings = RSBSettings(**{**SETTINGS.__dict__, "xs": (30.0, 100.0, 1000.0)})
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, settings, save=rows.append)
    assert est.status == "converged"
    # each solve has its own key (the second try at 1000 names its start), so a resumed run
    # replays them in order without solving
    keys = [tuple(r["key"]) for r in rows if r["seed"] == 0]
    assert len(set(keys)) == len(keys) and ("profile", 1000.0, math.sqrt(1e5)) in keys
    n = len(f.calls)
    again = one_step_rsb_estimate(ModelParams(), "positional", 1.0, settings, rows=rows)
    assert len(f.calls) == n and again.shifts == est.shifts
    fixed = [x for hold, x in f.calls if hold]
    # per rule: ref, 30, 100, 1000 (stalls), sqrt(100 * 1000) = 316 (Sigma/e > 0), 1000 again
    # (stalls), sqrt(316 * 1000) = 562 (Sigma/e < 0)
    assert fixed[:7] == pytest.approx([SETTINGS.x_ref, 30, 100, 1000, math.sqrt(1e5), 1000,
                                       math.sqrt(math.sqrt(1e5) * 1000)])
    # x = 1000 keeps stalling while every point below it converges: two halvings per grid
    # step in all (316, then 562), then "no sign change" (not a march ever closer to 1000)
    monkeypatch.setattr(f, "_stalls", lambda z: z[5] == 1000.0)
    f.sign = False
    f.calls.clear()
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, settings)
    assert all(r.status == "no sign change" for r in est.per_rule)
    fixed = [x for hold, x in f.calls if hold]
    assert fixed[:8] == pytest.approx([SETTINGS.x_ref, 30, 100, 1000, math.sqrt(1e5), 1000,
                                       math.sqrt(math.sqrt(1e5) * 1000), 1000])
    assert fixed[8] == SETTINGS.x_ref          # the next rule
    f.sign = True
    # every x stalls past 100: two halvings, then "no sign change", naming the failed solve
    monkeypatch.setattr(f, "_stalls", lambda z: z[5] > 100.0)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert all(r.status == "no sign change" and "no step lowers" in r.why
               for r in est.per_rule)
    fixed = [x for hold, x in f.calls if hold]
    assert fixed[-3:] == pytest.approx([300.0, math.sqrt(3e4), math.sqrt(100 * math.sqrt(3e4))])


def test_with_profile_skips_a_grid_x_that_keeps_stalling_is_stepped_over(fake, monkeypatch):
    # fixed-x solves stall at x = 300 only: its halvings (173, then 228) converge but 300 keeps
    # stalling; without skips the profile ends there, with one skip 1000 is tried from 228 and
    # the sign change at X0 = 400 is found between them
    f = fake()
    monkeypatch.setattr(f, "_stalls", lambda z: z[5] == 300.0)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, SETTINGS)
    assert all(r.status == "no sign change" and "at x = 300 the solve failed" in r.why
               for r in est.per_rule)
    f.calls.clear()
    rows = []
    skip = replace(SETTINGS, profile_skips=1)
    est = one_step_rsb_estimate(ModelParams(), "positional", 1.0, skip, save=rows.append)
    assert est.status == "converged" and est.shifts["x_star"][0] == pytest.approx(X0)
    assert all("skipped x = 300 (stalled)" in r.why for r in est.per_rule)
    fixed = [x for hold, x in f.calls if hold]
    h1 = math.sqrt(100 * 300)
    assert fixed[:9] == pytest.approx([SETTINGS.x_ref, 30, 100, 300, h1, 300,
                                       math.sqrt(h1 * 300), 300, 1000])
    # replayed without a solve
    n = len(f.calls)
    assert one_step_rsb_estimate(ModelParams(), "positional", 1.0, skip,
                                 rows=rows).shifts == est.shifts and len(f.calls) == n
    assert RSBSettings().as_dict().get("profile_skips") is None       # old run files resume


def test_inner_rules_recentre_from_the_settings_x_on():
    from symattn.numerics.one_step_rsb import InnerRule
    s = RSBSettings(log2n=10, band_log2n=24, split=16, recentre_from=1e4)
    assert s.inner_rules(9999.0) == {"inner": InnerRule(12), "fine": InnerRule(32),
                                     "split": InnerRule(16, split=True)}
    assert s.inner_rules(1e4) == {"inner": InnerRule(12, recentre=True),
                                  "fine": InnerRule(32, recentre=True),
                                  "split": InnerRule(16, split=True)}
    # without recentre_from and split: the centred rules at every x, no split rule
    assert RSBSettings().inner_rules(1e9) == {"inner": InnerRule(12), "fine": InnerRule(32),
                                              "split": None}


class FoldFake:
    """``solve_ladder``'s stand-in whose solutions fold over in x: q1 = 0.5, q0 = q1 - D,
    x(D) = XF - K (D - DF)^2, Sigma/e = SF (D - DS) (positive up to the fold and changing sign
    on the branch beyond it, at DS), eps_t = E0.  At fixed x the solve takes the branch with
    D > DF (the one from small x) and stalls past XF; holding the gap it returns the point at
    that gap."""

    XF, DF, K, DS, SF = 2000.0, 0.02, 1e7, 0.012, 5.0

    def __init__(self, coarse_above=None, ds=None):
        # fixed-x solves above this x converge at the first smoothing width only; ds: where
        # Sigma/e changes sign (below x = 0's gap, 0.00586: it stays positive on the branch)
        self.calls, self.coarse_above = [], coarse_above
        if ds is not None:
            self.DS = ds

    def x_of(self, d):
        return self.XF - self.K * (d - self.DF) ** 2

    def __call__(self, channel, alpha, z0, *, pin, hold_x, hold_gap=False, **kw):
        z = [float(v) for v in z0]
        self.calls.append("gap" if hold_gap else "x" if hold_x else "six")
        ok = True
        if hold_gap:
            d = z[1] - z[0]
            z[5] = self.x_of(d)
        elif hold_x and z[5] <= self.XF:
            d = self.DF + math.sqrt((self.XF - z[5]) / self.K)
        else:
            d, ok = z[1] - z[0], False
        z[1], z[0] = 0.5, 0.5 - d
        sigma = self.SF * (d - self.DS)
        coarse = hold_x and self.coarse_above is not None and z[5] > self.coarse_above
        return OneStepRSBPoint(alpha, z, [0.0] * 5, E0, 1e-10 if ok else 0.1, ok, 3,
                               "converged" if ok else "no step lowers the residual 0.1",
                               eps=kw["eps_stages"][0 if coarse else -1],
                               sigma_over_e=sigma if ok else 0.0)


def test_past_a_fold_in_x_the_gap_continuation_finds_the_stationary_point(monkeypatch):
    """The profile climbs the branch towards the fold (Sigma/e > 0 all the way) and stalls past
    it; with fold steps the search follows the solutions in q1 - q0 round the fold and solves
    the x equation on the branch beyond it, and integrates the x equation along that path."""

    from scipy.integrate import quad
    f = FoldFake()
    monkeypatch.setattr(one_step_rsb, "solve_ladder", f)
    s = replace(SETTINGS, rules=1, xs=(30.0, 100.0, 300.0, 1000.0, 3000.0))
    # without: the profile ends at the stall, Sigma/e still positive
    est = one_step_rsb_estimate(ModelParams(), "semantic", 1.5, s)
    rule = est.per_rule[0]
    assert rule.status == "no sign change" and "gap" not in f.calls
    assert "continued" not in rule.why
    f.calls.clear()
    rows = []
    est = one_step_rsb_estimate(ModelParams(), "semantic", 1.5, replace(s, fold_steps=200),
                                save=rows.append)
    rule = est.per_rule[0]
    assert rule.status == "stationary", rule.why
    assert "continued in q_1 - q_0" in rule.why and "secant in q_1 - q_0" in rule.why
    # Sigma/e is linear in the gap: the secant lands on D_S, on the branch beyond the fold
    # (x(D_S) = 2000 - 1e7 * 0.008^2 = 1360, below the fold's 2000)
    pt = rule.point
    assert pt["q1"] - pt["q0"] == pytest.approx(FoldFake.DS, rel=1e-9)
    assert rule.x_star == pytest.approx(1360.0, rel=1e-9)
    # the path went round the fold: some gap solves beyond XF's gap, x coming back down
    gaps = [r for r in rows if r["key"][0] == "gap"]
    assert max(r["x"] for r in gaps) > 1999.0 and gaps[-1]["x"] < 1400.0
    # the x equation integrated along the path: the profile's trapezoid in x (tested above),
    # then the continuation's, against quadrature in D along the branch from the profile's
    # last gap to D_S (eps_t Sigma/e / x^2 dx, dx = x'(D) dD); the trapezoid's steps of 1 %
    # of D put it within 1e-3 relative; sorted by x, the leg over x > 1360 would cancel
    # instead of adding up
    profile = [r for r in rows if r["key"][0] in ("ref", "profile") and r["converged"]]
    d_last = profile[-1]["q1"] - profile[-1]["q0"]

    def integrand(d):
        x = f.x_of(d)
        return E0 * FoldFake.SF * (d - FoldFake.DS) / x**2 * (-2 * FoldFake.K * (d - FoldFake.DF))
    path = -quad(integrand, FoldFake.DS, d_last, points=[FoldFake.DF], limit=200)[0]
    assert rule.shifts["d_eps_t_envelope"] - envelope_shift(profile) == pytest.approx(
        path, rel=1e-3)
    # resumed: replayed, nothing solved again
    f.calls.clear()
    again = one_step_rsb_estimate(ModelParams(), "semantic", 1.5, replace(s, fold_steps=200),
                                  rows=json.loads(json.dumps(rows)))
    assert f.calls == [] and again.per_rule[0].x_star == rule.x_star


def test_cli_fold_steps_end_honestly_and_resume_with_more(monkeypatch, tmp_path, capsys):
    """Too few fold steps: the rule says where the continuation ended (no sign change, not a
    result: exit 3); the same file resumed with more goes on from there, replaying the rest."""
    f = FoldFake()
    monkeypatch.setattr(one_step_rsb, "solve_ladder", f)
    out = tmp_path / "rsb.json"
    argv = ["fixed-point", "--branch", "semantic", "--alpha", "1.5", "--rsb", "1",
            "--rsb-log2n", "8", "--rsb-rules", "2", "--rsb-xs", "30,100,300,1000,3000",
            "--log2n", "8", "--rules", "2", "--json", "--out", str(out)]
    assert main(argv + ["--rsb-fold-steps", "10"]) == 3
    printed = capsys.readouterr()
    assert "up to 10 steps in q1 - q0 past a stalled profile" in printed.err
    rule = json.loads(printed.out)["per_rule"][0]
    assert rule["status"] == "no sign change"
    assert "continued in q_1 - q_0" in rule["why"] and "no sign change in 10 steps" in rule["why"]
    # the point reported is where the continuation stopped, ten steps of 1 % down in the gap
    first = json.loads(out.read_text())["rows"]
    mine = [r for r in first if r["seed"] == 0]
    assert rule["point"] == mine[-1] and mine[-1]["key"][:2] == ["gap", 9]
    assert sum(r["key"][0] == "gap" for r in mine) == 10
    f.calls.clear()
    assert main(argv + ["--rsb-fold-steps", "200"]) == 0
    assert "resuming" in capsys.readouterr().err
    grown = json.loads(out.read_text())
    assert grown["rows"][:len(first)] == first and len(f.calls) == len(grown["rows"]) - len(first)
    assert [r["status"] for r in grown["result"]["per_rule"]] == ["stationary"] * 2
    assert grown["header"]["rsb"]["fold_steps"] == 200
    assert main(argv + ["--rsb-fold-steps", "-1"]) == 2
    assert_one_line_error(capsys, "rsb-fold-steps")


def test_the_gap_continuation_starts_from_the_last_point_at_the_finest_width(monkeypatch):
    """A profile point solved only at a coarser width (accepted there, Sigma/e > 0) is not
    where the continuation starts: its steps are solved at the finest width, from the last
    profile point solved there (x = 1000, D = 0.03) and the one before."""
    f = FoldFake(coarse_above=1500.0)
    monkeypatch.setattr(one_step_rsb, "solve_ladder", f)
    s = replace(SETTINGS, rules=1, xs=(30.0, 100.0, 300.0, 1000.0, 3000.0), fold_steps=200)
    rows = []
    rule = one_step_rsb_estimate(ModelParams(), "semantic", 1.5, s, save=rows.append).per_rule[0]
    # the profile took x = 1732 at the coarse width (then stalled at 3000 and 2279)
    assert any(r["key"][0] == "profile" and r["converged"] and r["x"] > 1700 for r in rows)
    assert "continued in q_1 - q_0 from 0.03 (x = 1000)" in rule.why, rule.why
    assert rule.status == "stationary"
    assert rule.x_star == pytest.approx(1360.0, rel=1e-9)


def test_a_branch_that_runs_back_to_small_x_ends_the_continuation_honestly(monkeypatch):
    """Past the fold the branch runs back towards x = 0 with Sigma/e > 0 all the way (so on
    the semantic alpha = 1.5, rule 0): the continuation stops where its next start would fall
    below x_ref, and the rule has no sign change (not a result), its point the last one."""
    f = FoldFake(ds=0.004)
    monkeypatch.setattr(one_step_rsb, "solve_ladder", f)
    s = replace(SETTINGS, rules=1, xs=(30.0, 100.0, 300.0, 1000.0, 3000.0), fold_steps=300)
    rule = one_step_rsb_estimate(ModelParams(), "semantic", 1.5, s).per_rule[0]
    assert rule.status == "no sign change", rule.why
    assert "x falls below x_ref = 10" in rule.why
    # the last point: past the fold (gap below D_F) at small x, Sigma/e still positive
    pt = rule.point
    assert pt["q1"] - pt["q0"] < FoldFake.DF and SETTINGS.x_ref < pt["x"] < 300.0
    assert pt["sigma_over_e"] > 0
