"""Checks at the door (issue 18): every input refused in one line naming it, before any work.

The fuzz test draws command lines from the options of every command with values a user might
type (numbers good and bad, huge and tiny, ``nan``, words, negative lists, paths that cannot be
written).  The computations are replaced by a stub that stops the run where the work would
start, so each example takes milliseconds: an argument list is either refused (exit 2, one line
on stderr, no traceback) or reaches the work with arguments that the library's own checks
accept.  The commands quoted in the issue, run for real, are in ``test_quoted_commands`` (slow).
"""

import math
import os
import subprocess
import sys
import time

import pytest
from conftest import assert_one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symattn
from symattn import ModelParams, ParameterError
from symattn.cli import main
from symattn.model.checks import check_int, check_number, omega_grid
from symattn.numerics.settings import NumericalSettings


class Reached(Exception):
    """The run got past the door."""


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """Every command's work replaced by :class:`Reached`; the working folder is ``tmp_path``
    (the main job writes ``symattn-results/`` there)."""
    import symattn.api
    import symattn.experiments.phase_diagram as pd
    import symattn.experiments.validation as val
    import symattn.numerics.thresholds as th
    import symattn.outputs.latex as tex

    def stop(*args, **kwargs):
        raise Reached()
    for module, name in ((th, "compute_thresholds"), (symattn.api, "fixed_point"),
                         (symattn.api, "simulate"), (pd, "run_phase_diagram"),
                         (val, "run_validation"), (tex, "document")):
        monkeypatch.setattr(module, name, stop)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ----------------------------------------------------------------------------- the fuzz
NUMBERS = st.sampled_from(["0.3", "1", "0", "-1", "-0.2", "1e-308", "1e308", "1e6", "nan", "inf",
                           "-inf", "abc", "", "1e-9", "2.5", "0.5", "1e7", "10000000", "64",
                           "0x10", "1,2", "-0.2,1.2,0.4,0.6", "0.6,0.4,0.4,0.6", "0:1:0.1",
                           "0:inf:0.1", "0:1:1e-300", "0.1,0.2", "none", "16,20,24"])
OPTIONS = {
    "thresholds": ["--omega", "--sigma", "--lam", "--A", "--log2n", "--rules", "--tol", "--out",
                   "--precision", "--high-log2n", "--high-rules", "--second-route-orders"],
    "fixed-point": ["--branch", "--alpha", "--omega", "--sigma", "--lam", "--A", "--log2n",
                    "--rules", "--tol"],
    "simulate": ["--d", "--alpha", "--start", "--seeds", "--n-test", "--omega", "--sigma",
                 "--lam", "--A"],
    "validate": ["--out", "--alphas", "--ds", "--seeds", "--workers", "--n-test",
                 "--positional-scale", "--omega", "--sigma", "--log2n", "--rules"],
    "phase-diagram": ["--omegas", "--out", "--sigma", "--lam", "--A", "--log2n", "--rules",
                      "--alpha-max", "--workers", "--omega"],
    "latex": ["--out"],
    "plot": ["--omega"],
}
WORDS = st.sampled_from(["semantic", "positional", "trivial", "random", "mixed", "fast", "high"])
PATHS = st.sampled_from(["OUT", "OUT/sub/file.json", "/proc/x", "/proc/x/th.json", "/etc/hostname",
                         "/etc/hostname/eq.tex", "FILE", "FILE/x"])


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(sorted(OPTIONS)))
    argv = [command] + ([draw(PATHS)] if command == "plot" else [])
    for opt in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=5)):
        value = draw(PATHS if opt == "--out" else
                     st.one_of(WORDS, NUMBERS) if opt in ("--branch", "--start", "--precision")
                     else NUMBERS)
        argv += [opt, value]
    return argv


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_fuzz_command_line(argv, stubbed, capsys):
    """Exit 2 with one line and no traceback, or the work is reached; either within 10 s (a
    bound against hangs at the door, e.g. a grid of 1e300 points, not a speed target)."""
    (stubbed / "FILE").write_text("x")
    argv = [a.replace("OUT", str(stubbed / "out")).replace("FILE", str(stubbed / "FILE"))
            for a in argv]
    t0 = time.perf_counter()
    try:
        code = main(argv)
    except Reached:
        code = None
    assert time.perf_counter() - t0 < 10
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in (None, 0, 2), (argv, code, err)
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, (argv, err)


# ----------------------------------------------------------------------------- Python API
@pytest.mark.parametrize("kwargs, name", [
    (dict(omega=True), "omega"), (dict(omega="0.3"), "omega"), (dict(sigma=-1), "sigma"),
    (dict(lam=math.nan), "lam"), (dict(A="0.6,0.4,0.4,0.6"), "A"), (dict(omega=1.5), "omega"),
])
def test_model_params_refused(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}: "):
        ModelParams(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    (dict(log2n=0), "log2n"), (dict(rules=1), "rules"), (dict(tol=-1), "tol"),
    (dict(tol=1e-300), "tol"), (dict(log2n=12.0), "log2n"), (dict(seed=-1), "seed"),
    (dict(rules=True), "rules"),
])
def test_numerical_settings_refused(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}: "):
        NumericalSettings(**kwargs)


def test_params_as_a_dict():
    assert ModelParams.coerce({"omega": 0.2}) == ModelParams(omega=0.2)
    with pytest.raises(ParameterError, match="^params: unknown"):
        ModelParams.coerce({"omg": 0.2})
    with pytest.raises(ParameterError, match="^params: "):
        ModelParams.coerce([0.2])


@pytest.mark.parametrize("kwargs, name", [
    (dict(d=2.5), "d"), (dict(d=1), "d"), (dict(seed=-1), "seed"), (dict(alpha=1e-9), "alpha"),
    (dict(params={"omega": 2.0}), "omega"),
])
def test_simulation_refused(kwargs, name):
    from symattn.simulation import run
    args = dict(params=ModelParams(), d=50, alpha=1.0, seed=0) | kwargs
    with pytest.raises(ParameterError, match=f"^{name}: "):
        run(args.pop("params"), args.pop("d"), args.pop("alpha"), seed=args.pop("seed"))


def test_api_simulate_refuses_oversized_test_sets():
    with pytest.raises(ParameterError, match="^n_test: "):
        symattn.simulate(d=1000, alpha=1.0, start="semantic", n_test=10**7)


def test_checks():
    assert check_int("k", 3, 1, 5) == 3
    for bad in (2.0, "3", True, None):
        with pytest.raises(ParameterError, match="^k: "):
            check_int("k", bad, 1, 5)
    assert check_number("x", 0.5, 0.0, 1.0) == 0.5
    with pytest.raises(ParameterError, match="^x: must be > 0"):
        check_number("x", 0.0, 0.0, lo_open=True)
    assert omega_grid("0:0.1:0.05") == [0.0, 0.05, 0.1]
    assert omega_grid([0.1, 0.2]) == [0.1, 0.2]
    for spec in ("0:inf:0.1", "0:1:1e-300", "0:1:0", "0.5:0.1:0.1", "a,b", "", "0:1"):
        with pytest.raises(ParameterError, match="^omegas: "):
            omega_grid(spec)


# ----------------------------------------------------------------------------- command line
def test_negative_values_are_values_not_options(capsys):
    """``--A -0.2,...`` is checked as a matrix (not 'expected one argument')."""
    assert main(["simulate", "--d", "10", "--alpha", "1", "--start", "semantic",
                 "--A", "-0.2,1.2,0.4,0.6"]) == 2
    out, err = capsys.readouterr()
    assert "negative entry" in err


def test_no_abbreviations(capsys):
    """``phase-diagram --omega 0.2`` was taken as ``--omegas 0.2`` (a one-point sweep)."""
    assert main(["phase-diagram", "--omega", "0.2", "--out", "x"]) == 2
    assert_one_line_error(capsys, "--omega")


def test_output_checked_before_the_work(stubbed, capsys):
    for argv in (["thresholds", "--out", "/proc/x/th.json"], ["thresholds", "--out", "/tmp"],
                 ["latex", "--out", "/etc/hostname/eq.tex"], ["phase-diagram", "--out", "/proc/x"],
                 ["validate", "--out", "/etc/hostname"]):
        assert main(argv) == 2, argv
        assert_one_line_error(capsys, "out")
    assert not os.path.exists("/tmp.tmp")


def test_argument_errors_come_before_the_heavy_imports():
    """A bad value is refused without importing the solvers (the error took 5-6 s)."""
    code = ("import sys; from symattn.cli import main; c = main(['thresholds', '--sigma', '-1']); "
            "sys.exit(10 + c if 'symattn.numerics.thresholds' in sys.modules or 'sympy' in "
            "sys.modules else c)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr


def test_thresholds_progress_is_kept_with_json(stubbed, capsys, monkeypatch):
    """--json puts JSON on stdout; the progress stays on stderr (it was switched off)."""
    with pytest.raises(Reached):
        main(["thresholds", "--json"])
    assert "scrambled Sobol rule" in capsys.readouterr().err
