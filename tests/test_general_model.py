"""The general model's description (model page §7): ModelParams with L, Pi, r, r_t, the
named position families, and the command line's flags."""

import json
import math

import numpy as np
import pytest

from symattn.cli import main
from symattn.model import ModelParams, ParameterError
from symattn.model.positions import position_gram

A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))


def test_defaults_are_the_papers():
    p = ModelParams()
    assert p.L == 2 and p.r == 1 and p.r_t == 1
    assert p.Pi == ((1.0, -1.0), (-1.0, 1.0)) and p.positions == "antipodal"
    assert p.is_paper_shape


@pytest.mark.parametrize("name, L, rank", [("simplex", 3, 2), ("simplex", 5, 4),
                                           ("orthogonal", 4, 4), ("cyclic", 5, 2),
                                           ("cyclic", 6, 2), ("none", 3, 0),
                                           ("antipodal", 2, 1), ("simplex", 2, 1)])
def test_families_are_unit_diagonal_psd_with_their_rank(name, L, rank):
    """Closed forms: unit diagonal (|p_l|^2 = d), PSD, rank as the module table says (simplex
    L - 1: centred; cyclic 2: cos(a - b) = cos a cos b + sin a sin b)."""
    Pi = np.array(position_gram(name, L))
    ev = np.linalg.eigvalsh(Pi)
    assert ev.min() > -1e-12
    assert int((ev > 1e-9).sum()) == rank
    if name != "none":
        np.testing.assert_array_equal(np.diag(Pi), np.ones(L))


def test_simplex_at_two_tokens_is_antipodal():
    assert position_gram("simplex", 2) == position_gram("antipodal", 2)


def test_json_round_trip_and_named_positions():
    p = ModelParams(A=A3, Pi="cyclic", r=2, r_t=3, omega=0.1)
    d = json.loads(json.dumps(p.as_dict()))
    assert ModelParams.coerce(d) == p
    assert p.positions == "cyclic" and not p.is_paper_shape
    q = ModelParams(A=A3, Pi=[[1, 0.2, 0], [0.2, 1, 0], [0, 0, 1]])
    assert q.positions == "custom"


@pytest.mark.parametrize("kwargs, name", [
    (dict(A=A3, Pi=[[1, 2, 0], [2, 1, 0], [0, 0, 1]]), "positions"),      # not PSD
    (dict(A=A3, Pi=[[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]), "positions"),    # not symmetric
    (dict(A=A3, Pi=[[1, 0], [0, 1]]), "positions"),                       # wrong size
    (dict(A=A3, Pi="antipodal"), "positions"),                            # L = 2 only
    (dict(Pi="cyclic"), "positions"),                                     # L >= 3
    (dict(Pi="spiral"), "positions"),
    (dict(r=0), "r"), (dict(r_t=5), "r_t"), (dict(r=1.5), "r"),
    (dict(A=((1.0,) * 9,) * 9), "A"),
])
def test_bad_model_is_refused_naming_the_parameter(kwargs, name):
    with pytest.raises(ParameterError) as exc:
        ModelParams(**kwargs)
    assert exc.value.name == name


def test_the_channels_scalar_node_map_refuses_other_shapes():
    """The output channel takes every shape; its scalar ``(q, m, theta)`` methods, which serve
    the paper's numpy-prox consumers, refuse the others by name."""
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.general import nodes_for
    p = ModelParams(r=2)
    ch = OutputChannel(p, nodes_for(p, 4, 0))
    with pytest.raises(ParameterError, match="paper's shape only"):
        ch.diagonal_nodes(0.1, 0.0, 0.0)


def test_cli_general_simulate(capsys):
    code = main(["simulate", "--d", "120", "--alpha", "1", "--start", "semantic", "--L", "3",
                 "--A", "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6", "--positions", "simplex",
                 "--rank", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (out["L"], out["r"], out["r_t"]) == (3, 2, 1)
    assert out["params"]["Pi"][0][1] == pytest.approx(-0.5)
    assert math.isfinite(out["eps_t"])


@pytest.mark.parametrize("argv, needle", [
    (["fixed-point", "--alpha", "1", "--branch", "semantic", "--rank", "2"], "paper's shape only"),
    (["simulate", "--d", "50", "--alpha", "1", "--start", "semantic", "--L", "3"], "--A"),
    (["simulate", "--d", "50", "--alpha", "1", "--start", "semantic", "--L", "3",
      "--A", "0.5,0.5,0.5,0.5"], "--L is 3"),
    (["simulate", "--d", "50", "--alpha", "1", "--start", "semantic", "--A", "1,0,0"], "L^2"),
    (["simulate", "--d", "50", "--alpha", "1", "--start", "semantic", "--positions", "bogus"],
     "unknown family"),
])
def test_cli_refuses_bad_general_input(argv, needle, capsys):
    assert main(argv) == 2
    assert needle in capsys.readouterr().err
