"""The Python API (symattn.api): each function gives what its command gives, and prints readably.

The reference for every ``to_dict()`` is the command line run in the same process with the
same arguments (a different code path for argument handling and output); the numbers
themselves are checked elsewhere against independent routes.
"""

import json
import math

import numpy as np
import pytest
from conftest import teacher_diag

import symattn
from symattn import ParameterError
from symattn.cli import main
from symattn.model.params import APPENDIX_A, ModelParams
from symattn.numerics.branches import BranchNotFound, positional_excluded
from symattn.numerics.observables import teacher_mean_diagonal
from symattn.numerics.settings import NumericalSettings
from symattn.results import Estimate, Status, format_estimate

SMALL = dict(log2n=9, rules=2)


def _cli_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_fixed_point_to_dict_is_the_cli_json(capsys):
    est = symattn.fixed_point(branch="semantic", alpha=1.5, **SMALL)
    cli = _cli_json(capsys, ["fixed-point", "--branch", "semantic", "--alpha", "1.5",
                             "--log2n", "9", "--rules", "2", "--json"])
    assert json.loads(json.dumps(est.to_dict())) == cli
    assert est["theta"].value == cli["theta"] and est["theta"].error == cli["theta_err"]
    text = repr(est)
    assert "semantic branch, alpha = 1.5" in text and "theta" in text and "converged" in text
    # every reported fixed point carries its RS-stability report (numerics.stability)
    rs = cli["rs_stability"]
    assert rs["verdict"] in ("stable", "unstable", "undecided") and rs["replicon"] > 0
    assert "RSStability(" in text


def test_trivial_branch_is_offered(capsys):
    cli = _cli_json(capsys, ["fixed-point", "--branch", "trivial", "--alpha", "1",
                             "--log2n", "9", "--rules", "2", "--json"])
    assert cli["converged"] and cli["theta"] == 0 and cli["m"] == 0 and cli["q"] > 0


def test_simulate_to_dict_is_the_cli_json(capsys):
    res = symattn.simulate(d=30, alpha=1.0, start="positional", seeds=2, n_test=50)
    cli = _cli_json(capsys, ["simulate", "--d", "30", "--alpha", "1", "--start", "positional",
                             "--seeds", "2", "--n-test", "50", "--json"])
    mine = res.to_dict()
    for d in (mine, cli):               # timings differ between two runs; nothing else may
        for k in ("wall_time", "wall_time_err"):
            d.pop(k, None)
            d.get("paired", {}).get("semantic", {}).pop(k, None)
        for row in d["instances"]:
            row.pop("wall_time"), row.pop("task_time")
        d.get("paired", {}).get("semantic", {}).pop("wall_time_err", None)
    assert mine == cli
    assert "positional start" in repr(res) and "paired eps_t" in repr(res)


def test_latex_is_the_cli_output(capsys):
    assert main(["latex"]) == 0
    assert symattn.latex() == capsys.readouterr().out


@pytest.mark.parametrize("call, name", [
    (lambda: symattn.fixed_point(branch="mixed", alpha=1.0), "branch"),
    (lambda: symattn.fixed_point(branch="semantic", alpha=-1.0), "alpha"),
    (lambda: symattn.fixed_point(branch="semantic", alpha=1.0, omega=True), "omega"),
    (lambda: symattn.thresholds(precision="medium"), "precision"),
    (lambda: symattn.thresholds(log2n=0), "log2n"),
    (lambda: symattn.thresholds(rules=2.5), "rules"),
    (lambda: symattn.thresholds(tol=-1), "tol"),
    (lambda: symattn.simulate(d=2.5, alpha=1, start="semantic"), "d"),
    (lambda: symattn.simulate(d=10, alpha=1, start="semantic", seeds=0), "seeds"),
    (lambda: symattn.simulate(d=10, alpha=1, start="sideways"), "start"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ParameterError) as exc:
        call()
    assert exc.value.name == name


# ----------------------------------------------------------------------------- settings, results
def test_numerical_settings_derive_the_prox_tolerance():
    assert NumericalSettings(tol=1e-10).prox_tol == pytest.approx(1e-13)
    assert NumericalSettings(tol=1e-13).prox_tol == 1e-14            # the floor
    assert list(NumericalSettings(rules=3, seed=5).seeds) == [5, 6, 7]


def test_estimate_prints_the_digits_its_error_resolves():
    assert format_estimate(1.2503750432826317, 5.024e-4) == "1.25038 ± 5.0e-04"
    # no error bar: seven digits, said so; a bar below rounding claims no digits double
    # precision does not carry (issue 18: "eps_lin ... +- 1e-17")
    assert format_estimate(0.0019713843346693405, math.nan) == "0.001971384 (no error bar)"
    assert format_estimate(0.0019713843346693405, 1e-17) == "0.001971384334669 (to rounding)"
    assert format_estimate(1.269065264121813, 2.2e-16) == "1.269065264122 (to rounding)"
    assert format_estimate(0.0019713843346693405, 1e-15) == "0.0019713843346693 ± 1.0e-15"
    assert format_estimate(0.0, 0.0) == "0"
    assert repr(Estimate(1.5, 0.01, Status(False, message="residual 1e-3"))).endswith(
        "[NOT converged]")
    assert float(Estimate(2.0, 0.1, Status(True))) == 2.0


# ----------------------------------------------------------------------------- appendix matrix
def test_teacher_mean_diagonal_against_monte_carlo():
    """Independent route: plain Monte Carlo over h* ~ N(0, rho I_2) with the teacher typed in
    conftest; 4e5 samples give a standard error near 2e-4, the tolerance is five of them."""
    for params in (ModelParams(), ModelParams(A=APPENDIX_A), ModelParams(A=APPENDIX_A, omega=0.14)):
        rng = np.random.default_rng(7)
        hs = np.sqrt(params.rho) * rng.standard_normal((400_000, 2))
        t = teacher_diag(hs, params)
        mc = t.mean(axis=1)
        val, err = teacher_mean_diagonal(params)
        assert abs(val - mc.mean()) < 5 * mc.std() / np.sqrt(mc.size)
        assert err < 1e-12


@pytest.mark.slow
def test_no_positional_branch_for_the_appendix_matrix(capsys):
    """model page §5: at A = [[0.3, 0.7], [0.8, 0.2]], omega = 0.3 the teacher's mean diagonal
    is below one half, and the positional solve finds no fixed point with m != 0 at any of
    several alphas; the error says why.  The paper's A keeps its positional branch."""
    P = ModelParams(A=APPENDIX_A)
    assert positional_excluded(P) is not None and positional_excluded(ModelParams()) is None
    assert positional_excluded(ModelParams(A=APPENDIX_A, omega=0.14)) is None   # diagonal 0.514
    for alpha in (0.8, 1.25, 2.0):
        with pytest.raises(BranchNotFound, match="no positional branch exists"):
            symattn.fixed_point(branch="positional", alpha=alpha, A=APPENDIX_A, **SMALL)
    code = main(["fixed-point", "--branch", "positional", "--alpha", "1.25", "--A",
                 "0.3,0.7,0.8,0.2", "--log2n", "9", "--rules", "2"])
    err = capsys.readouterr().err
    assert code == 3 and "no positional branch exists" in err
    # the diagonal it quotes, against plain Monte Carlo (4e5 samples: standard error ~2e-4)
    quoted = float(err.split("mean diagonal is ")[1].split(" ")[0])
    rng = np.random.default_rng(11)
    mc = teacher_diag(np.sqrt(P.rho) * rng.standard_normal((400_000, 2)), P).mean(axis=1)
    assert abs(quoted - mc.mean()) < 5 * mc.std() / np.sqrt(mc.size) + 5e-5   # + printed rounding


@pytest.mark.slow
def test_thresholds_say_alpha_c_is_undefined_for_the_appendix_matrix(capsys):
    code = main(["thresholds", "--A", "0.3,0.7,0.8,0.2", "--log2n", "9", "--rules", "2"])
    err = capsys.readouterr().err
    assert code == 3 and "alpha_c is undefined: no positional branch exists" in err


@pytest.mark.slow
def test_thresholds_object_prints_and_estimates(capsys):
    th = symattn.thresholds(**SMALL, precision="fast", executor=None)
    assert "alpha_c = 1.2" in repr(th) and "2 scrambles of 2^9 points" in repr(th)
    est = th.estimate("alpha_c")
    assert est.value == th.alpha_c and est.error == th.alpha_c_err and est.status.converged
    cli = _cli_json(capsys, ["thresholds", "--precision", "fast", "--log2n", "9", "--rules", "2",
                             "--json"])
    mine = json.loads(json.dumps(th.to_dict(), default=float))
    mine.pop("wall_time"), cli.pop("wall_time")
    assert mine == cli
    assert set(cli["rs_stability"]) == {"positional", "semantic"}
