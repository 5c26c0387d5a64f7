"""The validation pipeline (symattn.experiments.validation, its statistics in symattn.stats): estimators against synthetic data with
known answers, crash-safe CSV, a tiny end-to-end run, resumability and refusal to mix runs."""

import csv
import json
import math
import shutil

import numpy as np
import pytest

from symattn import ModelParams, ParameterError
from symattn.cli import main
from symattn import stats
from symattn.experiments import validation as V
from symattn.outputs.report import format_pm, write_validation_report
from symattn.runs import TidyCSV
from symattn.simulation.instances import SIM_COLUMNS

# ----------------------------------------------------------------------------- estimators


def test_first_crossing_of_a_linear_function_is_its_root():
    x = [1.0, 1.25, 1.5, 1.75, 2.0]
    y = [-2.0 * (a - 1.37) for a in x]
    assert stats.first_crossing(x, y) == pytest.approx(1.37, abs=1e-12)
    assert stats.first_crossing(x, [-v for v in y]) is None          # starts below zero
    assert stats.first_crossing(x, [1.0] * 5) is None                 # never crosses
    assert stats.first_crossing(x, [1.0, 0.0, -1.0, 1.0, -1.0]) == 1.25   # the first crossing


def test_bootstrap_crossing_recovers_a_known_root_with_a_sensible_error():
    rng = np.random.default_rng(0)
    x = np.array([1.0, 1.25, 1.5, 1.75, 2.0])
    K, slope, root, noise = 40, -4e-4, 1.3, 1e-4
    # per-seed offsets shared across alpha (as the paired, same-teacher data are) plus noise
    Y = slope * (x - root) + noise * rng.standard_normal((K, 1)) + 0.3 * noise * rng.standard_normal((K, x.size))
    est, err, frac = stats.bootstrap_crossing(x, Y, n_boot=1000)
    # error propagation through the linear interpolant: se(mean at the root) / |slope|
    se_prop = noise * math.sqrt(1 + 0.09) / math.sqrt(K) / abs(slope)
    assert frac == 1.0
    assert err == pytest.approx(se_prop, rel=0.35)
    assert abs(est - root) < 4 * err


def test_power_law_fit_recovers_a_known_exponent():
    rng = np.random.default_rng(1)
    d = np.array([250, 500, 1000, 2000, 4000, 8000], float)
    a_true, c_true = 0.8, 3.0
    hits = []
    for rep in range(30):
        gap0 = c_true * d ** -a_true
        err = 0.1 * gap0 + 1e-4
        gap = gap0 + err * rng.standard_normal(d.size)
        f = stats.fit_power_law(d, gap, err)
        assert f is not None and f.dof == d.size - 2
        hits.append(abs(f.exponent - a_true) < f.exponent_err)
    # one-sigma coverage of a linearised error: about 68 %
    assert 0.45 < np.mean(hits) < 0.9
    # noiseless: exact, and the amplitude refers to d0 = geometric mean of d
    f = stats.fit_power_law(d, c_true * d ** -a_true, 0.01 * c_true * d ** -a_true)
    assert f.exponent == pytest.approx(a_true, abs=1e-8)
    assert f.predict(1000.0) == pytest.approx(c_true * 1000.0 ** -a_true, rel=1e-8)
    assert f.d0 == pytest.approx(math.exp(np.log(d).mean()))


def test_pooled_power_law_shares_the_exponent():
    d = np.array([250, 500, 1000, 2000] * 2, float)
    g = np.array([0] * 4 + [1] * 4)
    gap = np.where(g == 0, 2.0, -5.0) * d ** -1.0      # opposite signs, same exponent
    f = stats.fit_power_law(d, gap, 1e-3 * np.abs(gap), group=g)
    assert f.exponent == pytest.approx(1.0, abs=1e-8) and len(f.amplitude) == 2
    assert f.amplitude[0] > 0 > f.amplitude[1]
    # too few points for one degree of freedom: no fit
    assert stats.fit_power_law([100, 200], [1.0, 0.5], [0.1, 0.1]) is None


def test_regression_estimate_removes_the_covariate_spread():
    rng = np.random.default_rng(2)
    K = 8
    t = 1 + math.sqrt(2 / 1000) * rng.standard_normal(K)       # teacher norms, mean 1
    x = 0.12 + 0.12 * (t - 1) + 1e-4 * rng.standard_normal(K)  # theta follows the teacher norm
    est, se = stats.regression_estimate(x, t)
    m, se_plain = stats.mean_se(x)
    assert abs(est - 0.12) < 4 * se and se < 0.2 * se_plain
    assert all(math.isnan(v) for v in stats.regression_estimate(x[:2], t[:2]))


def test_format_pm():
    assert format_pm(0.13459, 0.0012) == "0.1346(12)"
    assert format_pm(0.0027944, 2.1e-5) == "0.002794(21)"
    assert format_pm(None, 0.1) == "–" and format_pm(1.5, math.nan) == "1.5"


# ----------------------------------------------------------------------------- crash-safe CSV


def test_tidy_csv_repairs_a_partial_last_line(tmp_path):
    t = TidyCSV(tmp_path / "x.csv", ("d", "alpha", "start", "converged"),
                {"d": int, "start": str, "converged": bool})
    assert t.load() == []
    t.append([{"d": 10, "alpha": 1.5, "start": "semantic", "converged": True}])
    t.append([{"d": 20, "alpha": 0.1 + 0.2, "start": "positional", "converged": False}])
    with open(t.path, "a") as fh:
        fh.write("30,1.2,sem")                  # killed mid-write
    rows = t.load()
    assert [r["d"] for r in rows] == [10, 20]
    assert rows[1]["alpha"] == 0.1 + 0.2 and rows[1]["converged"] is False   # exact round trip
    assert t.path.read_text().endswith("False\n")                            # repaired on disk
    bad = TidyCSV(t.path, ("d", "other"))
    with pytest.raises(ParameterError, match="out"):
        bad.load()


# ----------------------------------------------------------------------------- end to end
GRID = V.ValidationGrid(alphas=(1.2, 1.6), ds=(30, 60), seeds=3, n_test=200)
THEORY = V.TheorySettings(log2n=9, rules=2)
PARAMS = ModelParams()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A real run on a tiny grid (two worker processes), done once."""
    out = tmp_path_factory.mktemp("validation")
    res = V.run_validation(PARAMS, GRID, THEORY, out, workers=2, log=open("/dev/null", "w"),
                           report=write_validation_report)
    return out, res


def _sim_rows(out):
    with open(out / "simulations.csv") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_tiny_run_writes_tables_and_figures(tiny_run):
    out, res = tiny_run
    assert res["failed"] == []
    for name in ("run.json", "simulations.csv", "theory_rules.csv", "theory.csv",
                 "theory_thresholds.json", "summary.csv", "fits.csv", "thresholds.csv",
                 "summary.md"):
        assert (out / name).stat().st_size > 0, name
    for fig in ("validation_order_parameters", "validation_gap", "validation_thresholds"):
        for ext in ("png", "pdf"):
            assert (out / f"{fig}.{ext}").stat().st_size > 5000
    rows = _sim_rows(out)
    # seeds scale like 1/d (equal standard errors): 6 seeds at d = 30, 3 at d = 60
    assert [GRID.n_seeds(d) for d in GRID.ds] == [6, 3]
    assert len(rows) == 2 * len(GRID.tasks()) == 2 * 2 * (6 + 3)     # starts x alphas x seeds
    assert set(rows[0]) == set(SIM_COLUMNS)
    assert {r["start"] for r in rows} == {"semantic", "positional"}
    # paired: the two starts of a task share the data set, hence teacher norm and eps_lin
    by = {}
    for r in rows:
        by.setdefault((r["d"], r["alpha"], r["seed"]), []).append(r)
    assert all(len(v) == 2 and v[0]["teacher_norm"] == v[1]["teacher_norm"]
               and v[0]["eps_lin"] == v[1]["eps_lin"] for v in by.values())
    # the theory: both branches at every alpha of its grid; missing ones are empty, not numbers
    with open(out / "theory.csv") as fh:
        theory = list(csv.DictReader(fh))
    assert len(theory) == 2 * len(V.theory_alpha_grid(GRID.alphas))
    for r in theory:
        assert (r["found"] == "True") == (r["theta"] != "")
    md = (out / "summary.md").read_text()
    assert "## Thresholds" in md and "## Power-law fits" in md and "| 60 |" in md
    assert len(res["summary"]) == 2 * 2 * 2
    s = res["summary"][0]
    assert s["d"] == 30 and s["n_seeds"] == 6 and math.isfinite(s["theta_err"])
    json.loads((out / "run.json").read_text())["versions"]["numpy"]


def _forbid(*a, **k):
    raise AssertionError("recomputed a task that is already on disk")


@pytest.mark.slow
def test_rerun_recomputes_nothing(tiny_run, tmp_path, monkeypatch):
    out, _ = tiny_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = (copy / "simulations.csv").read_text()
    monkeypatch.setattr(V, "simulation_task", _forbid)
    monkeypatch.setattr(V, "theory_sweep", _forbid)
    monkeypatch.setattr(V, "_thresholds_task", _forbid)
    res = V.run_validation(PARAMS, GRID, THEORY, copy, workers=1, log=open("/dev/null", "w"))
    assert res["failed"] == [] and (copy / "simulations.csv").read_text() == before


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates(tiny_run, tmp_path, monkeypatch):
    out, _ = tiny_run
    run = tmp_path / "run"
    run.mkdir()
    for name in ("theory_rules.csv", "theory_thresholds.json"):      # keep the theory
        shutil.copy(out / name, run / name)
    real = V.simulation_task
    calls = []

    def dies_after_three(*args, **kwargs):
        if len(calls) == 3:
            raise KeyboardInterrupt        # the run is killed while the 4th task is running
        calls.append(args[1:4])
        return real(*args, **kwargs)

    monkeypatch.setattr(V, "simulation_task", dies_after_three)
    with pytest.raises(KeyboardInterrupt):
        V.run_validation(PARAMS, GRID, THEORY, run, workers=1, log=open("/dev/null", "w"))
    assert len(_sim_rows(run)) == 2 * 3                              # three tasks on disk

    # also cut the last line in the middle, as a kill during the write would
    text = (run / "simulations.csv").read_text()
    (run / "simulations.csv").write_text(text[:-25])

    calls.clear()
    monkeypatch.setattr(V, "simulation_task", lambda *a, **k: (calls.append(a[1:4]), real(*a, **k))[1])
    V.run_validation(PARAMS, GRID, THEORY, run, workers=1, log=open("/dev/null", "w"))
    n_tasks = len(GRID.tasks())
    assert len(calls) == n_tasks - 2           # the 2 intact tasks are not redone, the cut one is
    rows = _sim_rows(run)
    keys = [(r["d"], r["alpha"], r["seed"], r["start"]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * n_tasks
    # and the resumed results equal the uninterrupted run's (same seeds, same data)
    ref = {(r["d"], r["alpha"], r["seed"], r["start"]): r["eps_t"] for r in _sim_rows(out)}
    assert all(ref[k] == r["eps_t"] for k, r in zip(keys, rows))


@pytest.mark.slow
def test_resume_with_other_model_parameters_is_refused(tiny_run, tmp_path, capsys):
    out, _ = tiny_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    code = main(["validate", "--out", str(copy), "--omega", "0.2", "--alphas", "1.2,1.6",
                 "--ds", "30,60", "--seeds", "3", "--log2n", "9", "--rules", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "out" in err and "omega" in err
    with pytest.raises(ParameterError, match="n_test"):
        V.run_validation(PARAMS, V.ValidationGrid(alphas=(1.2,), ds=(30,), seeds=1, n_test=100),
                         THEORY, copy, workers=1)


def test_bootstrap_crossing_gives_no_error_bar_it_cannot_support():
    """Issue 18: a 2-seed validation printed ``alpha_c +- 2.2e-16``.  Of two seeds, one whose
    curve stays above zero and one below, only the mean crosses inside the grid: the resamplings
    (0, 0) and (1, 1) do not cross, (0, 1) and (1, 0) repeat the mean, so the old error was the
    spread of equal numbers.  Now there is no error bar with fewer than three seeds, nor when
    fewer than MIN_BOOT_FRACTION of the resamplings cross (with one seed up and two down, the
    resamplings of three downs, about 8/27, start below zero and one of three ups, 1/27, never
    crosses)."""
    x = np.array([1.0, 1.25, 1.5, 1.75, 2.0])
    up = [1.4, 1.2, 1.0, 0.8, 0.6]
    down = [-0.4, -0.6, -0.8, -1.0, -1.2]
    est, err, frac = stats.bootstrap_crossing(x, np.array([up, down]), n_boot=400)
    assert est == pytest.approx(1.625, abs=1e-12) and math.isnan(err)   # mean 0.5 .. -0.3
    est, err, frac = stats.bootstrap_crossing(x, np.array([up, down, down]), n_boot=400)
    assert est == pytest.approx(1.25, abs=1e-12)                          # mean 0.2, 0, ...
    assert frac == pytest.approx(18 / 27, abs=0.08) and math.isnan(err)
