"""Folded Sobol rules (``SobolRule.nodes(fold=...)``, used by ``thresholds --precision high``).

A folded rule puts all its points on the fundamental domain of a symmetry group of the
integrands.  That is right only if (1) the group acts on the integrands as claimed, (2) the
saddle-point equations use the atoms only through combinations the group leaves invariant, and
(3) the points lie on a fundamental domain and integrate invariant functions over the whole
space.  Each is checked here against the model written out in ``conftest.py`` (docs/model.md), and
(4) folded and unfolded rules give the same channel averages at the paper's points.
"""

import numpy as np
import pytest
from conftest import node_map, teacher_diag

from symattn import ModelParams
from symattn.compile.kernels import odd_atoms, output_equations
from symattn.model.params import APPENDIX_A
from symattn.numerics.coordinates import Coordinates
from symattn.refine.precise import ChunkedChannel, branch_fold
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import FOLDS, SobolRule

#: near the fixed points at alpha_c (benchmarks/bench_warm_start.py); only theta = 0 (resp.
#: m = 0) matters for the symmetries
POINTS = {"positional": np.array([0.04714992, 0.25225507, 0.0, 14.92349097]),
          "semantic": np.array([0.08173869, 0.0, 0.11820496, 18.2508151])}

#: each symmetry as (map of the nodes (xi_1, xi_2, eta_1, eta_2), map of f = (f_1, f_2))
SWAP = [1, 0, 3, 2]
GENERATORS = {
    "eta_flip": (lambda z: z * [1, 1, -1, -1], lambda f: f),
    "full_flip": (lambda z: -z, lambda f: -f),
    # theta = 0: w -> -P w, h* -> P h*, so the prox -> -P prox and f -> -P f
    "token_swap@positional": (lambda z: z[:, SWAP] * [-1, -1, 1, 1], lambda f: -f[:, ::-1]),
    # m = 0: w -> P w, h* -> P h*
    "token_swap@semantic": (lambda z: z[:, SWAP], lambda f: f[:, ::-1]),
}


def _f_and_M(params, x, z):
    """``f`` and the Moreau envelope at nodes ``z``, from the model page (conftest) and the prox."""
    q, m, theta, V = x
    w, hs = node_map(z, q, m, theta, params.rho)
    r = prox(w, teacher_diag(hs, params), V, params.sigma)
    assert r.converged.all()
    return (r.h - w) / V, r.value


@pytest.mark.parametrize("params", [ModelParams(),
                                    ModelParams(sigma=0.8, omega=0.6, A=((0.7, 0.3), (0.3, 0.7)))],
                         ids=["paper", "other"])
@pytest.mark.parametrize("branch, generators", [
    ("positional", ("eta_flip", "token_swap@positional")),
    ("semantic", ("full_flip", "token_swap@semantic")),
])
def test_symmetries_act_on_the_integrands_as_claimed(params, branch, generators):
    """At 4096 Sobol nodes, the envelope is invariant and ``f`` transforms as stated
    (``FOLDS``), to 1e-9 in ``f`` (the prox is converged to a gradient of 1e-13 and
    ``1/V`` ~ 0.06, so the minimisers agree to ~1e-12 unless the global minimum is
    ambiguous; a tie within 1e-9 would show as a large difference).  At the paper's
    parameters and at another swap-symmetric model."""
    x = POINTS[branch]
    z = SobolRule(12, 3).nodes().points
    f, M = _f_and_M(params, x, z)
    for g in generators:
        node_map_g, f_map = GENERATORS[g]
        fg, Mg = _f_and_M(params, x, node_map_g(z))
        assert np.max(np.abs(Mg - M)) < 1e-12, g
        assert np.max(np.abs(fg - f_map(f))) < 1e-9, g


def test_token_swap_is_no_symmetry_for_an_asymmetric_A():
    """The swap needs ``A11 = A22``: with the appendix's matrix the envelope changes, and
    ``branch_fold`` does not use it."""
    params = ModelParams(A=APPENDIX_A)
    x = POINTS["semantic"]
    z = SobolRule(8, 3).nodes().points
    _, M = _f_and_M(params, x, z)
    _, Mg = _f_and_M(params, x, GENERATORS["token_swap@semantic"][0](z))
    assert np.max(np.abs(Mg - M)) > 1e-3
    assert branch_fold(params, "semantic") == "full_flip"
    assert branch_fold(params, "positional") == "eta_flip"
    assert branch_fold(ModelParams(), "semantic") == "full_flip+token_swap"


@pytest.mark.parametrize("branch, symmetry, sign", [
    ("positional", "eta_flip", [-1, -1, 1, 1, -1, 1, -1, 1]),
    ("semantic", "full_flip", [1, 1, 1, 1, 1, 1, 1, 1]),
])
def test_equations_use_swap_invariant_atom_combinations(branch, symmetry, sign):
    """The atoms are ``E[eta_1 f_1], E[eta_2 f_2], E[xi_1 f_1], E[xi_2 f_2], E[f_1],
    E[f_1^2], E[f_2], E[f_2^2]``; the swap exchanges the tokens' atoms, with the ``sign`` of
    ``f -> -P f, xi -> -P xi`` on the positional branch.  After the odd atoms of the branch's
    flip are set to zero (as the saddle-point map does), the hats must not change: the
    equations see token sums only."""
    rng = np.random.default_rng(5)
    out = output_equations()
    idx = [1, 0, 3, 2, 6, 7, 4, 5]
    for _ in range(20):
        atoms = rng.normal(size=8)
        atoms[list(odd_atoms(symmetry))] = 0.0
        x = POINTS[branch] * rng.uniform(0.9, 1.1, 4)     # keeps theta^2 < q rho
        before = np.array(out(*atoms, *x, 1.3, 0.25))
        after = np.array(out(*(np.array(sign) * atoms[idx]), *x, 1.3, 0.25))
        assert np.isfinite(before).all()
        np.testing.assert_allclose(after, before, rtol=1e-13, atol=1e-15)
    # and the single-token atoms do matter: the test can fail
    atoms = rng.normal(size=8)
    atoms[list(odd_atoms(symmetry))] = 0.0
    lopsided = atoms.copy()
    lopsided[5] += 0.1
    lopsided[7] -= 0.05
    assert np.max(np.abs(np.array(out(*lopsided, *x, 1.3, 0.25))
                         - np.array(out(*atoms, *x, 1.3, 0.25)))) > 1e-3


@pytest.mark.parametrize("fold", sorted(FOLDS))
def test_folded_rules_lie_on_the_domain_and_integrate_invariant_functions(fold):
    """Every point satisfies the domain's inequalities, and
    ``E[exp(-(xi_1 + xi_2)^2/4 - (eta_1 - eta_2)^2/4)] = 1/2`` (invariant under all four
    symmetries) comes out within 2e-4 on 2^14 points: ten times the scramble-to-scramble
    spread of an unfolded rule of that size (2e-5, measured over 8 scrambles), while a map
    that lost, doubled or stretched a part of the space would be off by O(0.1)."""
    z = SobolRule(14, 11).nodes(fold=fold).points
    xi1, xi2, eta1, eta2 = z.T
    domain = {"eta_flip": [eta1], "full_flip": [xi1],
              "eta_flip+token_swap": [xi1 + xi2, eta1 + eta2],
              "full_flip+token_swap": [xi1 - xi2, xi1 + xi2]}[fold]
    assert all((d > 0).all() for d in domain)
    estimate = np.mean(np.exp(-(xi1 + xi2) ** 2 / 4 - (eta1 - eta2) ** 2 / 4))
    assert abs(estimate - 0.5) < 2e-4


def test_fold_rejects_unknown_names():
    with pytest.raises(ValueError, match="fold"):
        SobolRule(8, 0).nodes(fold="swap")
    with pytest.raises(ValueError, match="fold"):
        SobolRule(8, 0).nodes(dim=3, fold="eta_flip")


@pytest.mark.parametrize("branch", ["positional", "semantic"])
def test_folded_and_plain_rules_agree_on_the_channel(paper_params, branch):
    """``E[M]`` and the token sums the equations use, on 8 scrambles of 2^13 points folded
    and 8 not (different points): the means agree within 4 combined standard errors."""
    x = POINTS[branch]
    fold = branch_fold(paper_params, branch)

    keys = Coordinates(paper_params).atom_keys

    def sums(nodes):
        m = ChunkedChannel(paper_params, nodes).evaluate(x).means
        a = {k: m[i] for i, k in enumerate(keys)}
        return np.array([a["eta[1,1]*f[1,1]"] + a["eta[2,1]*f[2,1]"],
                         a["f[1,1]*xi[1,1]"] + a["f[2,1]*xi[2,1]"], a["f[1,1]"] - a["f[2,1]"],
                         a["f[1,1]*f[1,1]"] + a["f[2,1]*f[2,1]"], m[len(keys)]])

    plain = np.array([sums(SobolRule(13, 40 + k).nodes()) for k in range(8)])
    folded = np.array([sums(SobolRule(13, 60 + k).nodes(fold=fold)) for k in range(8)])
    se = np.sqrt(plain.var(0, ddof=1) / 8 + folded.var(0, ddof=1) / 8)
    diff = np.abs(plain.mean(0) - folded.mean(0))
    # the eta sum (positional) and f_1 - f_2 (semantic) are odd under the branch's flip: the
    # equations take them as zero, a folded rule does not integrate them
    odd = {"positional": [0], "semantic": [2]}[branch]
    keep = [i for i in range(5) if i not in odd]
    assert (diff[keep] <= 4 * se[keep]).all(), (diff / se)
