"""The general model's thresholds (symattn/numerics/general_thresholds.py)."""

from types import SimpleNamespace

import numpy as np
import pytest

from symattn.model import ModelParams
from symattn.numerics.bifurcation import trivial_stability
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.coordinates import Coordinates
from symattn.numerics.general import GeneralChannel, OrderParameters, nodes_for, solve_general
from symattn.numerics.general_thresholds import (ThresholdNotFound, _alpha_c,
                                                 general_thresholds_on_nodes, theta_stability)
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.saddle import SaddlePointMap
from symattn.numerics.settings import NumericalSettings
from symattn.numerics.thresholds import thresholds_on_nodes


class _Curve:
    """A stand-in branch: ``eps_t(alpha)`` and its derivative in closed form, missing outside
    ``[a_min, a_max]``."""

    def __init__(self, kind, eps, deps, a_min=0.0, a_max=np.inf):
        self.kind, self.eps, self.deps = kind, eps, deps
        self.a_min, self.a_max = a_min, a_max
        self.last_failure = "outside the curve"

    def at(self, a):
        if not self.a_min <= a <= self.a_max:
            return None
        return SimpleNamespace(eps_t=self.eps(a), E_M=self.deps(a))


def test_alpha_c_skips_a_touching_branch_and_finds_the_crossing():
    """Delta = (a - 0.4)^2 (a - 0.7): the branches touch at 0.4 (Delta and Delta' vanish, as
    where the rank-2 student's mixed branch is born) and cross at 0.7.  Started at the
    touching point, the root finder must not stop there."""
    below = _Curve("positional", lambda a: (a - 0.4) ** 2 * (a - 0.7),
                   lambda a: 2 * (a - 0.4) * (a - 0.7) + (a - 0.4) ** 2)
    above = _Curve("mixed", lambda a: 0.0, lambda a: 0.0, a_min=0.4)
    ac, err, *_ = _alpha_c(below, above, 0.3, 1.0, 1e-10, alpha0=0.4 + 1e-7)
    assert abs(ac - 0.7) <= 1e-9 and err <= 1e-9


def test_alpha_c_treats_a_missing_branch_as_the_other_being_global():
    """The lower branch exists only below 0.9 and the crossing lies at 0.8: bisection through
    the missing region, then Newton."""
    below = _Curve("positional", lambda a: a - 0.8, lambda a: 1.0, a_max=0.9)
    above = _Curve("semantic", lambda a: 0.0, lambda a: 0.0)
    ac, *_ = _alpha_c(below, above, 0.5, 2.0, 1e-12, alpha0=1.9)
    assert abs(ac - 0.8) <= 1e-11
    with pytest.raises(ThresholdNotFound, match="neither branch"):
        _alpha_c(_Curve("positional", lambda a: 1.0, lambda a: 0.0, a_max=0.6),
                 _Curve("semantic", lambda a: 0.0, lambda a: 0.0, a_min=0.7), 0.5, 0.8, 1e-12,
                 alpha0=0.65)


def _general_x(fp):
    return OrderParameters(np.array([[fp.q]]), np.array([[fp.m], [-fp.m]]),
                           np.array([[fp.theta]]), np.array([[fp.V]]))


def test_papers_thresholds_through_the_general_path():
    """The paper's shape through the general equations, prox, branches and root finders gives
    the paper route's alpha_c and alpha_l on the same rule (2^14, seed 0) to 1e-9 (measured:
    6e-13 and 9e-12; both root finders stop at steps of 1e-12).  At 2^12 the positional branch
    has two sheets near alpha_c (eps_t 6e-8 apart, docs/numerics.md) and the two routes'
    warm starts land on different ones, so the larger rule."""
    p = ModelParams()
    nodes = SobolRule(log2n=14, seed=0).nodes(dim=4)
    ref = thresholds_on_nodes(p, nodes, NumericalSettings(log2n=14, root_tol=1e-12), seed=0)
    ch = OutputChannel(p, nodes)
    pos = solve_branch(p, "positional", 1.0, ch, with_eps_g=False)
    sem = solve_branch(p, "semantic", 1.5, ch, with_eps_g=False)
    g = general_thresholds_on_nodes(
        p, nodes, bracket=(1.0, 1.5), root_tol=1e-12, verify=False,
        branches={"below": ("positional", _general_x(pos), 1.0),
                  "above": ("semantic", _general_x(sem), 1.5)})
    assert (g.below, g.above) == ("positional", "semantic")
    assert abs(g.alpha_c - ref.alpha_c) <= 1e-9
    assert abs(g.alpha_l - ref.alpha_l) <= 1e-9
    assert g.alpha_l_branch == ref.alpha_l_branch == "semantic"


@pytest.mark.slow
def test_scrambles_in_a_pool_are_the_scrambles_in_process():
    """compute_general_thresholds runs the scrambles after the first on a process pool: the
    same computation as one after another in this process, so the per-rule thresholds are
    equal exactly (the paper's shape on 2^10 points, branches given: a few seconds)."""
    from symattn.numerics.general_thresholds import compute_general_thresholds
    from symattn.runs.executors import InProcess
    p = ModelParams()
    nodes = SobolRule(log2n=10, seed=0).nodes(dim=4)
    ch = OutputChannel(p, nodes)
    kw = dict(log2n=10, rules=3, bracket=(1.0, 1.5), verify=False,
              branches={"below": ("positional", _general_x(solve_branch(
                  p, "positional", 1.0, ch, with_eps_g=False)), 1.0),
                  "above": ("semantic", _general_x(solve_branch(
                      p, "semantic", 1.5, ch, with_eps_g=False)), 1.5)})
    pool = compute_general_thresholds(p, **kw)
    here = compute_general_thresholds(p, executor=InProcess(), **kw)
    assert [(r.alpha_c, r.alpha_l) for r in pool.per_rule] == \
        [(r.alpha_c, r.alpha_l) for r in here.per_rule]
    assert len({r.alpha_c for r in here.per_rule}) == 3        # three different scrambles
    assert pool.alpha_c == here.alpha_c and pool.alpha_c_err == here.alpha_c_err


def test_same_character_at_both_ends_is_refused():
    p = ModelParams()
    nodes = SobolRule(log2n=10, seed=0).nodes(dim=4)
    sem = solve_branch(p, "semantic", 1.5, OutputChannel(p, nodes), with_eps_g=False)
    x = _general_x(sem)
    with pytest.raises(ThresholdNotFound, match="semantic at both"):
        general_thresholds_on_nodes(p, nodes, bracket=(1.5, 2.0), verify=False,
                                    branches={"below": ("semantic", x, 1.5),
                                              "above": ("semantic", x, 2.0)})


@pytest.mark.parametrize("alpha", [0.8, 1.2])
def test_theta_stability_at_the_papers_trivial_point(alpha):
    """The general theta block (matrix likelihood ratios) at the paper's trivial point is the
    paper's scalar eigenvalue (symattn/numerics/bifurcation.py, its own formula and channel)
    on the same rule, to rounding (measured: 3e-14)."""
    p = ModelParams()
    nodes = SobolRule(log2n=12, seed=0).nodes(dim=4)
    ref = trivial_stability(p, alpha, OutputChannel(p, nodes))
    q, _, _, V = ref.fp.x
    x = OrderParameters(np.array([[q]]), np.zeros((2, 1)), np.zeros((1, 1)), np.array([[V]]))
    lam, J = theta_stability(GeneralChannel(p, nodes), x, alpha)
    assert J.shape == (1, 1)
    assert abs(lam - ref.eig_theta) <= 1e-11


@pytest.mark.parametrize("seed", [0, 1])
def test_theta_stability_against_finite_differences_of_the_map(seed):
    """Rank-2 student, positional point at alpha = 0.5 (2^12): the largest eigenvalue of the
    likelihood-ratio block against that of symmetric differences of the map itself (full prox
    start set, step 1e-2).  The differences are only a rough check: their step is half the
    mixed branch's theta nearby (0.02), so the cubic term biases them by O(1e-2), and with a
    step of 1e-3 the few nodes whose minimiser switches make them noisy (+-0.1); measured
    differences 0.004 (seed 0) and 0.020 (seed 1), hence 0.03.  The exact check is the
    paper's shape, above."""
    p = ModelParams(r=2)
    ch = GeneralChannel(p, nodes_for(p, 12, seed))
    x0 = OrderParameters(np.diag([0.02, 0.015]), np.array([[0.2, 0.0], [-0.2, 0.0]]),
                         np.zeros((1, 2)), np.diag([22.4, 32.0]))
    fp = solve_general(ch, 0.5, x0, pin=("theta",))
    assert fp.converged
    lam, _ = theta_stability(ch, fp.x, 0.5)
    eps = 1e-2
    c = Coordinates(p, gauge=False)           # the map itself: no symmetry, no gauge
    F = SaddlePointMap(p, 0.5, OutputChannel(p, ch.nodes, coordinates=c, general=ch))
    x = c.project(fp.x)
    th = c.blocks["theta"]
    Jfd = np.empty((2, 2))
    for k in range(2):
        up, dn = x.copy(), x.copy()
        up[th.start + k] += eps
        dn[th.start + k] -= eps
        Jfd[:, k] = (F(up, 0.0).Fx[th] - F(dn, 0.0).Fx[th]) / (2 * eps)
    assert abs(lam - np.max(np.linalg.eigvals(Jfd).real)) <= 0.03


@pytest.mark.slow
def test_general_phase_diagram_cli(tmp_path, capsys):
    """``symattn phase-diagram`` with a general model (L = 3, simplex encodings): one omega on
    two small rules, the point file, the CSV with the general columns, a figure; rerunning
    resumes without recomputing.  What the values are is the study's business
    (studies/general_thresholds.py, on 2^14 points): on rules this small (2^10, for time) the
    search at alpha = 0.5 may find a mixed point lowest, so only the structure is checked,
    and alpha_c inside the bracket."""
    import csv
    import json

    from symattn.cli import main
    out = tmp_path / "pd"
    args = ["phase-diagram", "--L", "3", "--positions", "simplex", "--A",
            "0.6,0.2,0.2,0.2,0.6,0.2,0.2,0.2,0.6", "--omegas", "0.3", "--log2n", "10",
            "--rules", "2", "--bracket", "0.1:0.5", "--workers", "1", "--out", str(out)]
    assert main(args) == 0
    point = json.loads((out / "points" / "omega=0.300000.json").read_text())
    assert point["status"] == "ok"
    assert point["below"] == "positional"
    assert point["transition"] in ("first-order", "continuous")
    assert 0.1 < point["alpha_c"] < 0.5 and point["alpha_c_err"] > 0
    assert point["alpha_l"] is None or point["alpha_l"] > point["alpha_c"]
    rows = list(csv.DictReader((out / "phase_diagram.csv").open()))
    assert rows[0]["transition"] == point["transition"]
    assert (out / "fig_phase_diagram_general.png").exists()
    capsys.readouterr()
    assert main(args) == 0
    assert "resuming: 1 of 1" in capsys.readouterr().err


def test_bracket_is_refused_for_the_papers_model(tmp_path):
    from symattn.cli import main
    assert main(["phase-diagram", "--omegas", "0.3", "--bracket", "0.5:2",
                 "--out", str(tmp_path / "pd")]) == 2


def test_general_thresholds_refuse_the_papers_refined_routes():
    from symattn.cli import main
    assert main(["thresholds", "--rank", "2", "--precision", "high"]) == 2
    assert main(["thresholds", "--bracket", "0.5:1"]) == 2        # the paper's model
