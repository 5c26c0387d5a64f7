"""`symattn simulate` and `symattn validate` on the command line: bad input (one line, exit
status 2) and the JSON keys of `simulate`."""

import json

import pytest
from conftest import assert_one_line_error

from symattn.cli import STARTS, main
from symattn.simulation import STARTS as SIMULATION_STARTS

SIM_KEYS = {"m", "theta", "q", "eps_t", "eps_g", "eps_lin"}


@pytest.mark.parametrize("argv, name", [
    (["simulate", "--d", "1", "--alpha", "1", "--start", "semantic"], "d"),
    (["simulate", "--d", "1.5", "--alpha", "1", "--start", "semantic"], "d"),
    (["simulate", "--d", "abc", "--alpha", "1", "--start", "semantic"], "d"),
    (["simulate", "--alpha", "1", "--start", "semantic"], "d"),
    (["simulate", "--d", "40", "--alpha", "0", "--start", "semantic"], "alpha"),
    (["simulate", "--d", "40", "--alpha", "-1", "--start", "semantic"], "alpha"),
    (["simulate", "--d", "40", "--alpha", "inf", "--start", "semantic"], "alpha"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "mixed"], "start"),
    (["simulate", "--d", "40", "--alpha", "1"], "start"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--seeds", "0"], "seeds"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--seeds", "2.5"], "seeds"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--n-test", "0"], "n-test"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--omega", "1.5"], "omega"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--sigma", "0"], "sigma"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--lam", "-1"], "lam"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--A", "0.5,0.4,0.4,0.6"], "A"),
    (["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--log2n", "10"], "log2n"),
    # 10^7 x 2 * 10^7 tokens: refused before anything is allocated
    (["simulate", "--d", "10000000", "--alpha", "2", "--start", "semantic"], "d"),
    (["validate", "--alphas", "1"], "out"),
    (["validate", "--out", "X", "--alphas", "1,-1"], "alphas"),
    (["validate", "--out", "X", "--alphas", "1,x"], "alphas"),
    (["validate", "--out", "X", "--ds", "1,100"], "ds"),
    (["validate", "--out", "X", "--ds", "100,10.5"], "ds"),
    (["validate", "--out", "X", "--seeds", "0"], "seeds"),
    (["validate", "--out", "X", "--workers", "0"], "workers"),
    (["validate", "--out", "X", "--omega", "2"], "omega"),
    (["validate", "--out", "X", "--tol", "1"], "tol"),
    (["validate", "--out", "X", "--ds", "10000000"], "ds"),
    (["validate", "--out", "X", "--positional-scale", "0"], "positional-scale"),
])
def test_bad_input_one_line_exit_2(argv, name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)            # validate must not create X before failing
    assert main(argv) == 2
    assert_one_line_error(capsys, name)
    assert not (tmp_path / "X" / "simulations.csv").exists()


def test_validate_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("")
    assert main(["validate", "--out", str(f), "--ds", "30", "--alphas", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out" in err


def test_starts_match_the_simulator():
    assert STARTS == SIMULATION_STARTS


@pytest.mark.parametrize("start, other", [("semantic", "positional"), ("positional", "semantic")])
def test_simulate_json_keys_and_pairing(start, other, capsys):
    assert main(["simulate", "--d", "40", "--alpha", "1.5", "--start", start, "--seeds", "3",
                 "--n-test", "200", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert SIM_KEYS <= set(data) and {k + "_err" for k in SIM_KEYS} <= set(data)
    assert data["start"] == start and data["d"] == 40 and data["seeds"] == 3
    assert {"delta_eps_t", "delta_eps_t_err"} <= set(data)
    # the paired difference is built from the two starts on the same data sets
    inst = {(r["seed"], r["start"]): r for r in data["instances"]}
    assert len(inst) == 6
    deltas = [inst[(s, "semantic")]["eps_t"] - inst[(s, "positional")]["eps_t"] for s in range(3)]
    assert data["delta_eps_t"] == pytest.approx(sum(deltas) / 3, rel=1e-12)
    assert all(inst[(s, "semantic")]["eps_lin"] == inst[(s, "positional")]["eps_lin"]
               for s in range(3))
    assert SIM_KEYS <= set(data["paired"][other])
    # instance k is the data set of validate's seed k
    assert inst[(1, start)]["data_seed"] == 40 * 10**6 + 1


def test_simulate_random_start_one_seed(capsys):
    assert main(["simulate", "--d", "40", "--alpha", "1", "--start", "random", "--n-test", "100",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert SIM_KEYS <= set(data) and "delta_eps_t" not in data
    assert data["theta_err"] is None           # one seed: no standard error (null, not NaN)


def test_simulate_text_output(capsys):
    assert main(["simulate", "--d", "40", "--alpha", "1", "--start", "semantic", "--seeds", "2",
                 "--n-test", "100"]) == 0
    out, err = capsys.readouterr()
    assert "eps_t(semantic) - eps_t(positional)" in out and "theta" in out
    assert "seed 2/2" in err
