"""Fixed points of the saddle-point equations at fixed quadrature (model page §4 and §5).

Independent route: the node map, the hat equations and the prior equations typed from the model page
(``conftest``), evaluated with the library's prox on a node set symmetrised *explicitly* (the
rule's points plus their mirror images), instead of the library's zeroing of odd atoms.
"""

import numpy as np
import pytest

from conftest import ALPHA, hats_model_md, node_map, prior_model_md, teacher_diag
from symattn.compile.general_equations import atom_key
from symattn.compile.kernels import atom_list, odd_atoms, phi_kernel
from symattn.numerics.branches import BranchNotFound, solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.coordinates import Coordinates
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import NodeSet, SobolRule
from symattn.numerics.saddle import SaddlePointMap, solve_fixed_point

BRANCHES = ("positional", "semantic")


def mirrored(points, branch):
    """The points plus their images under the branch's symmetry, equal weights."""
    if branch == "positional":            # eta -> -eta: exact at theta = 0
        image = points * np.array([1, 1, -1, -1])
    elif branch == "semantic":            # (xi, eta) -> -(xi, eta): exact at m = 0
        image = -points
    elif branch == "swap":                # token swap 1 <-> 2: maps m -> -m when A11 = A22
        image = points[:, [1, 0, 3, 2]]
    P = np.concatenate([points, image])
    return NodeSet(points=P, weights=np.full(len(P), 1.0 / len(P)), label=f"{branch}-mirrored")


def hand_map(x, points, params, alpha):
    """T(x) of model page §4 with the hard global prox at every node; also returns the hats."""
    q, m, theta, V = x
    w, hs = node_map(points, q, m, theta, params.rho)
    r = prox(w, teacher_diag(hs, params), V, params.sigma)
    assert r.converged.all()
    f = (r.h - w) / V
    xi, eta = points[:, :2], points[:, 2:]
    E = {"f2": np.mean(f[:, 0] ** 2 + f[:, 1] ** 2), "f1-f2": np.mean(f[:, 0] - f[:, 1]),
         "eta_f": np.mean(f[:, 0] * eta[:, 0] + f[:, 1] * eta[:, 1]),
         "xi_f": np.mean(f[:, 0] * xi[:, 0] + f[:, 1] * xi[:, 1])}
    hats = hats_model_md(E, x, alpha, params.rho)
    return prior_model_md(hats, params.sigma, params.lam, params.rho), hats, r


@pytest.mark.parametrize("branch", BRANCHES)
def test_branch_fixed_point_is_a_fixed_point_of_the_hand_typed_map(branch, branch_points, paper_params,
                                                                   sobol12_nodes):
    fp = branch_points[branch]
    assert fp.converged and fp.residual <= 1e-10
    assert fp.n_failed_prox == 0
    if branch == "positional":
        assert fp.theta == 0.0 and abs(fp.m) > 0.1
    else:
        assert fp.m == 0.0 and abs(fp.theta) > 0.05
    Fx, hats, r = hand_map(fp.x, mirrored(sobol12_nodes.points, branch).points, paper_params, ALPHA)
    # |T_hand(x) - x| <= |T_hand(x) - T_lib(x)| + residual.  The first term is rounding (summation
    # order, prox solved to |grad| <= 1e-13, amplified by at most ~1e3 through 1/D^2 of the prior
    # equations) plus the library's smoothing of near-tied minima (none within 1e-8 here, checked
    # below); the second is <= 1e-10.  1e-8 is a hundred times the residual tolerance.
    assert np.min(r.gap) > 1e-8
    np.testing.assert_allclose(Fx, fp.x, rtol=0, atol=1e-8)
    lib_hats = np.array([fp.q_hat, fp.m_hat, fp.theta_hat, fp.V_hat])
    # the conjugates themselves: same sums, ~1e-13 of their size of rounding; 1e-9 relative
    np.testing.assert_allclose(hats, lib_hats, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("branch", BRANCHES)
def test_phi_equals_minus_training_loss_at_fixed_point(branch, branch_points, paper_params):
    r"""-eps_t = Phi = -(alpha E[loss(prox)] + lambda q / (2 sigma^2)) at a fixed point.

    Per node M = loss(prox) + V sum f^2 / 2, so alpha E[M] = alpha E[loss] + V q_hat / 2 on any rule,
    and with x = prior(hats) the remaining terms of Phi collapse to -lambda q / (2 sigma^2) exactly
    (algebra of the prior block).  The pinned variable and its conjugate (theta, theta_hat = 0 or
    m, m_hat = 0) are exactly zero under the symmetrised rule, so the only violation is linear in
    the residual x - T(x): bounded by (|V_hat|/2 + lambda/(2 sigma^2) + |q_hat| + |m_hat| +
    |theta_hat|) * residual, plus rounding of O(1e-3) numbers.
    """
    fp = branch_points[branch]
    p = paper_params
    eps_t_identity = ALPHA * fp.E_loss + p.lam * fp.q / (2 * p.sigma**2)
    bound = ((abs(fp.V_hat) / 2 + p.lam / (2 * p.sigma**2) + abs(fp.q_hat) + abs(fp.m_hat)
              + abs(fp.theta_hat)) * fp.residual + 1e-16)
    assert abs(fp.eps_t - eps_t_identity) <= bound
    assert fp.eps_t > 0


@pytest.mark.parametrize("branch", BRANCHES)
def test_phi_is_stationary_in_the_conjugates(branch, branch_points, paper_params):
    """dPhi/d(hat) = 0 at a fixed point (the prior block is closed form): central differences of the
    compiled Phi in each conjugate, E[M] and (q, m, theta, V) held fixed."""
    fp = branch_points[branch]
    p = paper_params
    phi = phi_kernel()
    hats = np.array([fp.q_hat, fp.m_hat, fp.theta_hat, fp.V_hat])

    def Phi(hh):
        return phi(fp.q, fp.m, fp.theta, fp.V, *hh, fp.E_M, ALPHA, p.sigma, p.lam, p.rho)

    assert abs(Phi(hats) + fp.eps_t) < 1e-15          # eps_t is -Phi (same function, same inputs)
    for k in range(4):
        step = 2e-5 * max(abs(hats[k]), 1e-2)
        e = np.zeros(4)
        e[k] = step
        d = (Phi(hats + e) - Phi(hats - e)) / (2 * step)
        # exactly dPhi/dhat_k = -(x_k - prior_k(hats)) / c with c in {1, 2}: bounded by the residual.
        # Phi is linear/quadratic in q_hat, m_hat, theta_hat (central difference exact up to
        # rounding, ~1e-18 / step ~ 3e-12) and rational in V_hat: step^2 |Phi'''| / 6 with
        # |Phi'''| = 3 sigma^4 q / D^2 ~ 1e2 at D = lambda + V_hat sigma^2 ~ 0.015 gives ~1e-12
        assert abs(d) <= fp.residual + 1e-11, (k, d)


@pytest.mark.parametrize("branch, tol", [
    # theta = 0 pinned: every stationarity condition is exact on any rule (no Stein step is needed at
    # theta = 0; the eta-symmetrised rule kills the theta direction), so Phi is exactly stationary
    # and the error is the O(h^2) truncation (measured 3e-11 at h = 1e-3, 1.4e-10 at 2e-3) plus
    # residual/h ~ 1e-9
    ("positional", 2e-9),
    # theta != 0: the theta_hat and V_hat equations use Stein's lemma, exact for the Gaussian but not
    # on a finite rule, so the fixed point is stationary only up to the integration error of the
    # 2^12-point RQMC rule (~1e-4 relative): measured 3e-7 = 2e-4 relative, independent of h
    ("semantic", 1e-3 * 1.4e-3),
])
def test_d_eps_t_d_alpha_is_E_M(branch, tol, branch_points, paper_params, sobol12_channel):
    fp = branch_points[branch]
    h = 1e-3
    plus, minus = (solve_branch(paper_params, branch, ALPHA + s * h, sobol12_channel, x0=fp.x,
                                with_eps_g=False) for s in (1, -1))
    fd = (plus.eps_t - minus.eps_t) / (2 * h)
    assert abs(fd - fp.E_M) <= tol


def test_token_swap_symmetry_maps_m_to_minus_m(paper_params):
    """A symmetric (A11 = A22): with a swap-symmetrised rule, the m -> -m image of the positional
    fixed point is a fixed point; rule-exact, so agreement is limited only by the solver tolerance
    (residual 1e-10 amplified by the local condition of the map, well under 1e-8)."""
    rule = mirrored(SobolRule(11, 0).nodes().points, "swap")
    T = SaddlePointMap(paper_params, ALPHA, OutputChannel(paper_params, rule), symmetry="eta_flip")
    up = solve_fixed_point(T, [0.05, 0.2, 0.0, 10.0], (0, 1, 3))
    down = solve_fixed_point(T, [0.05, -0.2, 0.0, 10.0], (0, 1, 3))
    assert up.converged and down.converged
    assert up.m > 0.1 and down.m < -0.1
    for name in ("q", "V", "eps_t", "theta"):
        assert abs(getattr(up, name) - getattr(down, name)) <= 1e-8, name
    assert abs(up.m + down.m) <= 1e-8


def test_token_swap_check_needs_the_symmetric_rule(paper_params):
    """Teeth: on the plain (not swap-symmetric) rule the two solutions differ at the integration-error
    level, far above the 1e-8 of the test above."""
    T = SaddlePointMap(paper_params, ALPHA, OutputChannel(paper_params, SobolRule(11, 0).nodes()),
                       symmetry="eta_flip")
    up = solve_fixed_point(T, [0.05, 0.2, 0.0, 10.0], (0, 1, 3))
    down = solve_fixed_point(T, [0.05, -0.2, 0.0, 10.0], (0, 1, 3))
    assert up.converged and down.converged
    assert abs(up.m + down.m) > 1e-6


def test_semantic_branch_absent_at_small_alpha(paper_params, sobol12_channel):
    with pytest.raises(BranchNotFound, match="semantic"):
        solve_branch(paper_params, "semantic", 0.3, sobol12_channel, with_eps_g=False)


def test_unconverged_solve_is_reported(paper_params, sobol12_channel):
    T = SaddlePointMap(paper_params, ALPHA, sobol12_channel, symmetry="eta_flip")
    fp = solve_fixed_point(T, [2.0, 1.0, 0.0, 0.5], (0, 1, 3), max_iter=1)
    assert fp.converged is False
    assert fp.residual > 1e-10
    assert "residual" in fp.message and "tol" in fp.message
    # the reported residual is the undamped max |T(x) - x| over the free variables at the point returned
    st = T(fp.x)          # default smoothing width = the solve's tol, the final stage of every ladder
    assert fp.residual == pytest.approx(np.max(np.abs(st.Fx - st.x)[[0, 1, 3]]), rel=1e-12)


@pytest.mark.parametrize("symmetry, x", [("eta_flip", (0.05, 0.25, 0.0, 15.0)),
                                         ("full_flip", (0.08, 0.0, 0.12, 18.0))])
def test_odd_atoms_are_odd_on_actual_nodes(symmetry, x, paper_params):
    """The parity the solver uses (``Coordinates.odd``, read off the atoms' factors) holds for
    the real integrands with the real prox: on the mirrored nodes the odd atoms change sign and
    the others do not."""
    P = SobolRule(8, 1).nodes().points
    image = P * np.array([1, 1, -1, -1]) if symmetry == "eta_flip" else -P
    odd = Coordinates(paper_params).odd(symmetry)
    n_at = Coordinates(paper_params).n_atoms
    rows = []
    for pts in (P, image):
        ch = OutputChannel(paper_params, NodeSet(pts, np.full(len(pts), 1 / len(pts)), "t"))
        st = ch.evaluate(np.array(x))
        ok = st.prox.gap > 1e-8               # away from ties both sides choose the same minimum
        rows.append((st.rows_best[:, :n_at], ok))
    (a, ok_a), (b, ok_b) = rows
    ok = ok_a & ok_b
    sign = np.ones(n_at)
    sign[odd] = -1
    # prox solved to |grad| <= 1e-13 on each side independently: integrands agree to ~1e-12
    np.testing.assert_allclose(b[ok], a[ok] * sign, rtol=0, atol=1e-10)
    assert np.abs(a[ok][:, odd]).max() > 1e-3   # not trivially zero


@pytest.mark.parametrize("symmetry", ["eta_flip", "full_flip"])
def test_odd_atoms_read_off_the_factors_are_those_sympy_finds(symmetry, paper_params):
    """The solver's parity rule (an odd number of ``eta`` factors, resp. of factors) picks the
    atoms the paper's derivation finds odd by substituting the flip into each integrand
    (``kernels.odd_atoms``, SymPy), matched by name."""
    c = Coordinates(paper_params)
    paper = {atom_key(E) for k, E in enumerate(atom_list()) if k in odd_atoms(symmetry)}
    assert {c.atom_keys[k] for k in c.odd(symmetry)} == paper and paper


def test_eps_ladders_end_at_the_tolerance():
    """Every continuation ends at the requested width; the last one climbs down by factors of
    3 from 1e-4 (no stage more than a factor 3 below the previous one)."""
    from symattn.numerics.saddle import eps_stages
    ladders = eps_stages(1e-10)
    assert all(lad[-1] == 1e-10 for lad in ladders)
    fine = ladders[-1]
    assert fine[0] == 1e-4 and all(a / b <= 3.0 + 1e-12 for a, b in zip(fine, fine[1:]))


@pytest.mark.slow
def test_root_on_a_narrow_selection_ramp_is_found(paper_params):
    """Scramble 112 of 2^14, semantic branch at alpha = 1.2525: the fixed point sits on the
    selection ramp of one node.  Every ladder by factors of 100 stalls there (the solve used to
    fail, and the threshold search retried for minutes); the fine ladder reaches the 1e-10
    residual."""
    ch = OutputChannel(paper_params, SobolRule(14, 112).nodes())
    x0 = solve_branch(paper_params, "semantic", 1.254016387155025, ch, with_eps_g=False).x
    T = SaddlePointMap(paper_params, 1.252518054185661, ch, symmetry="full_flip")
    fp = solve_fixed_point(T, x0, (0, 2, 3), tol=1e-10)
    assert fp.converged, fp.message
    assert fp.residual <= 1e-10
    assert fp.eps_stages[-1][1] == pytest.approx(1e-4 / 3)   # it took the fine ladder
