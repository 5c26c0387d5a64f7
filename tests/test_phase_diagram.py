"""Phase diagram runner: grid parsing, resumability, executors (local and Dask), one real point."""

import csv
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np
import pytest

from symattn.model import ModelParams, ParameterError
from symattn.experiments.phase_diagram import (CSV_COLUMNS, PhaseDiagramSettings, load_points,
                                           omega_grid, phase_point, run_phase_diagram)

CALLS = []
_LOCK = threading.Lock()


def fake_task(params_dict, omega, settings_dict):
    """Stands in for phase_point: records the call, returns a well-formed row."""
    with _LOCK:
        CALLS.append(omega)
    if omega in FAIL_AT:
        raise KeyboardInterrupt("killed")  # what an interrupted run looks like to the runner
    row = {k: 0.0 for k in CSV_COLUMNS}
    row.update(omega=omega, alpha_c=1 + omega, alpha_l=1.5 + omega, status="ok", curves={})
    return row


FAIL_AT = set()


def test_omega_grid():
    g = omega_grid("0:0.45:0.025")
    assert len(g) == 19 and g[0] == 0 and abs(g[-1] - 0.45) < 1e-12
    assert omega_grid("0.1, 0.3") == [0.1, 0.3]
    for bad in ("0:1.5:0.5", "a:b:c", "0.5:0.1:0.1", "0:1:0", "", "0.2,1.1"):
        with pytest.raises(ParameterError):
            omega_grid(bad)


def _rows(out):
    with open(out / "phase_diagram.csv") as fh:
        return list(csv.DictReader(fh))


def test_killed_run_resumes_without_recomputing(tmp_path):
    params = ModelParams()
    grid = [0.0, 0.1, 0.2, 0.3]
    CALLS.clear()
    FAIL_AT.clear()
    FAIL_AT.add(0.2)
    with ThreadPoolExecutor(max_workers=1) as ex:   # one worker: tasks finish in grid order
        with pytest.raises(KeyboardInterrupt):
            run_phase_diagram(params, grid, tmp_path, executor=ex, task=fake_task)
    finished = {round(p["omega"], 9) for p in load_points(tmp_path)}
    assert finished == {0.0, 0.1}          # what finished before the kill is on disk
    CALLS.clear()
    FAIL_AT.clear()
    with ThreadPoolExecutor(max_workers=2) as ex:
        pts = run_phase_diagram(params, grid, tmp_path, executor=ex, task=fake_task)
    assert sorted(CALLS) == [0.2, 0.3]       # finished points were not recomputed
    assert [p["omega"] for p in pts] == grid
    rows = _rows(tmp_path)
    assert [float(r["omega"]) for r in rows] == grid   # each omega exactly once
    CALLS.clear()
    with ThreadPoolExecutor(max_workers=2) as ex:      # a third run has nothing to do
        run_phase_diagram(params, grid, tmp_path, executor=ex, task=fake_task)
    assert CALLS == []


def test_refuses_to_mix_models(tmp_path):
    with ThreadPoolExecutor(max_workers=1) as ex:
        run_phase_diagram(ModelParams(), [0.1], tmp_path, executor=ex, task=fake_task)
        with pytest.raises(ParameterError, match="different params"):
            run_phase_diagram(ModelParams(sigma=0.6), [0.1], tmp_path, executor=ex,
                              task=fake_task)


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        CALLS.clear()
        FAIL_AT.clear()
        pts = run_phase_diagram(ModelParams(), [0.1, 0.2, 0.3], tmp_path,
                                executor=client.get_executor(), task=fake_task)
    assert [p["omega"] for p in pts] == [0.1, 0.2, 0.3]
    assert len(_rows(tmp_path)) == 3


@pytest.mark.slow
def test_one_real_point():
    """A real omega point on small rules: thresholds ordered, branch ends below alpha_c; the
    thresholds refined on three folded scrambles of 2^12 lie within three of their error bars
    of the plane route's values at omega = 0.3 (1.2515356 and 1.4922707, an independent
    integrator: docs/numerics.md), and without the refinement they are the two rules' mean."""
    s = PhaseDiagramSettings(log2n=10, rules=2, alpha_max=2.0, refine_log2n=12, refine_rules=3)
    d = {k: v for k, v in ModelParams().as_dict().items() if k != "omega"}
    r = phase_point(d, 0.3, asdict(s))
    assert r["status"] == "ok", r["status"]
    assert r["thresholds_route"] == "refined on 3 folded scrambles of 2^12"
    assert [p["route"] for p in r["refined"]["per_rule"]][0] == "solved"
    for key, plane in (("alpha_c", 1.2515356), ("alpha_l", 1.4922707)):
        assert 0 < r[key + "_err"] < 0.01
        assert abs(r[key] - plane) <= 3 * r[key + "_err"], key
    assert r["alpha_spinodal_semantic"] < r["alpha_c"]
    assert r["alpha_spinodal_positional"] < r["alpha_c"]
    # the ends are the bifurcations off the trivial point, found on both rules; the error bar
    # is the spread of two rules of 2^10 (alpha_b scatters by ~0.01 there)
    for name in ("semantic", "positional"):
        assert r[f"{name}_end"] == "bifurcation"
        assert [e[2] for e in r[f"{name}_end_per_rule"]] == ["bifurcation", "bifurcation"]
        assert 0 < r[f"alpha_spinodal_{name}_err"] < 0.05
        assert isinstance(r[f"{name}_continuation_end"], str)
    json.dumps(r)  # serialisable as written to disk
    for name in ("semantic", "positional"):
        a = [row["alpha"] for row in r["curves"][name]]
        assert min(a) < r["alpha_c"] < max(a)
        # below alpha_c the curve is followed down to the first rule's bifurcation: only its
        # last step may cross it (the continuation stops at the first point past its target)
        assert sorted(a)[1] >= r[f"{name}_end_per_rule"][0][0]
        assert r[f"{name}_continuation_end"] == "none"
    lo, hi = (float(v) for v in r["trivial_range"].split("-"))
    assert lo < r["alpha_c"] < hi
    # at alpha_c the trivial point (learns neither) trains worse than the two branches
    sem = min(r["curves"]["semantic"], key=lambda row: abs(row["alpha"] - r["alpha_c"]))
    assert r["trivial_eps_t_at_alpha_c"] > sem["eps_t"]


def test_cli_bad_input_and_plot_from_saved(tmp_path, capsys):
    from symattn.cli import main
    assert main(["phase-diagram", "--omegas", "0:2:0.5", "--out", str(tmp_path)]) == 2
    assert "omegas" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "nothing")]) == 2
    # a saved diagram (fake points) is redrawn without computing anything
    with ThreadPoolExecutor(max_workers=1) as ex:
        run_phase_diagram(ModelParams(), [0.1, 0.2], tmp_path, executor=ex, task=fake_task)
    capsys.readouterr()
    code = main(["plot", str(tmp_path)])
    out = capsys.readouterr().out
    assert "fig_d_phase_diagram.png" in out and (tmp_path / "fig_d_phase_diagram.pdf").exists()
    assert code == 0


def test_thresholds_without_refinement_are_the_mean_over_the_rules(monkeypatch):
    """``refine_rules = 0``: the thresholds are the mean over the rules (the refinement is
    not called), and the route says so; a refinement of one scramble is refused."""
    import symattn.experiments.phase_diagram as pd
    from symattn.model.params import ParameterError

    def refuse(*args, **kwargs):
        raise AssertionError("refined although refine_rules = 0")
    monkeypatch.setattr(pd, "_refined_thresholds", refuse)

    class Rule:
        def __init__(self, a):
            self.alpha_c, self.alpha_l, self.positional, self.semantic = a, a + 0.2, None, None
    s = PhaseDiagramSettings(log2n=10, rules=2, refine_rules=0)
    refined, route = pd._thresholds_route(ModelParams(), [Rule(1.2)], s, None)
    assert refined is None and route == "mean over 2 scrambles of 2^10"
    with pytest.raises(ParameterError):
        PhaseDiagramSettings(refine_rules=1)
