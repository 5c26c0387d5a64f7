"""The command line: error handling (one line, exit status 2), branch-not-found, JSON keys."""

import json
import subprocess
import sys

import pytest
from conftest import assert_one_line_error

from symattn.cli import main

FP_KEYS = {"q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_t", "eps_g",
           "residual", "converged"}


@pytest.mark.parametrize("argv, name", [
    (["thresholds", "--sigma", "-1"], "sigma"),
    (["thresholds", "--sigma", "0"], "sigma"),
    (["thresholds", "--sigma", "abc"], "sigma"),
    (["thresholds", "--lam", "0"], "lam"),
    (["thresholds", "--lam", "-0.5"], "lam"),
    (["thresholds", "--omega", "1.5"], "omega"),
    (["thresholds", "--omega", "-0.1"], "omega"),
    (["thresholds", "--omega", "nan"], "omega"),
    (["thresholds", "--A", "0.5,0.4,0.4,0.6"], "A"),
    (["thresholds", "--A", "1,2,3"], "A"),
    (["thresholds", "--A", "1.2,-0.2,0.4,0.6"], "A"),
    (["thresholds", "--A", "a,b,c,d"], "A"),
    (["fixed-point", "--branch", "semantic", "--alpha", "0"], "alpha"),
    (["fixed-point", "--branch", "semantic", "--alpha", "-2"], "alpha"),
    (["fixed-point", "--branch", "semantic", "--alpha", "x"], "alpha"),
    (["fixed-point", "--branch", "mixed", "--alpha", "1"], "branch"),
    (["fixed-point", "--alpha", "1"], "branch"),
    (["thresholds", "--log2n", "99"], "log2n"),
    (["thresholds", "--tol", "0.5"], "tol"),
])
def test_bad_input_one_line_exit_2(argv, name, capsys):
    assert main(argv) == 2
    assert_one_line_error(capsys, name)


def test_console_script_no_traceback():
    r = subprocess.run([sys.executable, "-m", "symattn.cli", "thresholds", "--sigma", "-1"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "sigma" in r.stderr and "Traceback" not in r.stderr


def test_missing_branch_reported_not_replaced(capsys):
    # alpha = 0.3 is far below the semantic branch: the solve collapses to the trivial point
    code = main(["fixed-point", "--branch", "semantic", "--alpha", "0.3", "--rules", "2",
                 "--log2n", "10", "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    data = json.loads(out)
    assert data["converged"] is False and "semantic branch not found" in data["error"]
    assert "semantic branch not found" in err


def test_fixed_point_json_keys(capsys):
    code = main(["fixed-point", "--branch", "positional", "--alpha", "1.3", "--rules", "2",
                 "--log2n", "10", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert FP_KEYS <= set(data)
    assert data["converged"] is True and data["residual"] <= 1e-10
    assert data["theta"] == 0.0 and data["m"] > 0


@pytest.mark.slow
def test_thresholds_json_keys(capsys, tmp_path):
    out_file = tmp_path / "th.json"
    code = main(["thresholds", "--precision", "fast", "--rules", "2", "--log2n", "10", "--json",
                 "--out", str(out_file)])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert {"alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err", "eps_lin"} <= set(data)
    assert data["alpha_c"] < data["alpha_l"]
    assert json.loads(out_file.read_text())["alpha_c"] == data["alpha_c"]
    # the error bar is the sum of its reported components; the spread of the two rules is
    # recomputed here from per_rule
    rules = [r["alpha_c"] for r in data["per_rule"]]
    budget = data["error_budget"]["alpha_c"]
    assert budget["integration"] == pytest.approx(abs(rules[0] - rules[1]) / 2, rel=1e-12)
    assert budget["integration"] + budget["root_finding"] == pytest.approx(data["alpha_c_err"],
                                                                          rel=1e-12)


def test_time_left_counts_the_workers(capsys, monkeypatch):
    """With 2 workers, after the first of 8 scrambles of 100 s each, 7 are left and 350 s of
    work remains (the run had 2 side by side), not 700 s."""
    from symattn.cli import thresholds
    monkeypatch.setattr(thresholds, "default_workers", lambda: 2)
    report = thresholds._high_progress()
    report(1, 8, {"alpha_c": 1.25, "alpha_l": 1.49, "wall_time": 100.0})
    report(2, 8, {"alpha_c": 1.25, "alpha_l": 1.49, "wall_time": 110.0})
    err = capsys.readouterr().err.splitlines()
    assert "about 350 s left" in err[0]
    assert "about 315 s left" in err[1]
