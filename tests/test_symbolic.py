"""Tests of the symbolic layer (model page §3 and §4) and of its compilation.

Independent routes used here: high-precision mpmath evaluation of the general softmax loss; the
saddle-point equations typed by hand from the model page; exact Gaussian moments (written in this file)
of explicit polynomial stand-ins for the Moreau envelope; a numerical maximisation of the scalar
ridge problem; and hand-written mpmath formulas for the compiled kernels.
"""

import itertools

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial.hermite_e import hermegauss
from scipy.optimize import minimize_scalar

from conftest import moreau_objective, teacher_diag
from symattn.compile.kernels import atom_list, odd_atoms, prior_equations, prox_kernel, teacher_kernel
from symattn.model.symbols import (V, V_hat, alpha, attention_matrix_symbols, lam, m, m_hat, omega, q,
                                   q_hat, rho, sigma, theta, theta_hat)
from symattn.numerics.prox import prox
from symattn.symbolic import attention
from symattn.symbolic.attention import (Logistic, loss_closed_form_L2_equals_general, loss_general,
                                        loss_L2_closed_form)
from symattn.symbolic.expectation import Expect, OutputF
from symattn.symbolic.free_energy import derive_saddle_point, prior_channel
from symattn.symbolic.moreau import MoreauObjective, Prox, envelope_derivatives

H = sp.symbols("h_1:3", real=True)
HS = sp.symbols("hs_1:3", real=True)
A_SYM = attention_matrix_symbols(2)
A11, A22 = A_SYM[0, 0], A_SYM[1, 1]
#: a row-stochastic A in terms of its two free entries
A_ROW = sp.Matrix([[A11, 1 - A11], [1 - A22, A22]])

bounded = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _mp_logistic(x):
    return 1 / (1 + mpmath.exp(-x))


def _mp_function(expr):
    """mpmath function of (h1, h2, hs1, hs2, omega, sigma, A11, A22), constants bound at call time."""
    return sp.lambdify((*H, *HS, omega, sigma, A11, A22), expr,
                       modules=[{"Logistic": _mp_logistic}, "mpmath"])


LOSS_GENERAL = _mp_function(loss_general(H, HS, A_ROW))
LOSS_CLOSED = _mp_function(loss_L2_closed_form(H, HS, A_ROW))


def _agree(f, g, point, rtol=1e-12):
    """|f - g| <= rtol max(|f|, |g|) + 1e-40, evaluated at 50 digits.

    At 50 digits the rounding error of either form is ~1e-48 relative to the O(1) softmax entries,
    so 1e-12 relative measures the identity, not the arithmetic; the 1e-40 floor only covers points
    where the loss itself vanishes (e.g. h = h*, omega = 0).
    """
    with mpmath.workdps(50):
        args = [mpmath.mpf(x) for x in point]
        a, b = f(*args), g(*args)
        return abs(a - b) <= rtol * max(abs(a), abs(b)) + mpmath.mpf(10) ** -40


# ============================================================================ the L = 2 loss
def test_closed_form_proved_equal_to_general_loss():
    assert loss_closed_form_L2_equals_general(H, HS, A_SYM) is True


def _closed_form_wrong_sign(h, hs, A):
    """Mutation: logistic(h1^2 + h1 h2) in S_11 instead of logistic(h1^2 - h1 h2)."""
    h1, h2 = h
    return loss_L2_closed_form(h, hs, A).xreplace({Logistic(h1**2 - h1 * h2): Logistic(h1**2 + h1 * h2)})


def _closed_form_half(h, hs, A):
    """Mutation: sigma^2/2 in front of the diagonal sum (forgetting that off-diagonals double it)."""
    return loss_L2_closed_form(h, hs, A) / 2


@pytest.mark.parametrize("mutant", [_closed_form_wrong_sign, _closed_form_half])
def test_symbolic_proof_rejects_mutated_closed_form(monkeypatch, mutant):
    monkeypatch.setattr(attention, "loss_L2_closed_form", mutant)
    assert attention.loss_closed_form_L2_equals_general(H, HS, A_SYM) is False


coord = st.floats(-2.5, 2.5, **bounded)
unit = st.floats(0.0, 1.0, **bounded)


@settings(max_examples=40, deadline=None)
@given(h=st.tuples(coord, coord), hs=st.tuples(coord, coord), om=unit,
       sig=st.floats(0.1, 2.0, **bounded), a11=unit, a22=unit)
def test_closed_form_equals_general_loss_numerically(h, hs, om, sig, a11, a22):
    assert _agree(LOSS_GENERAL, LOSS_CLOSED, (*h, *hs, om, sig, a11, a22))


@pytest.mark.parametrize("mutant", [_closed_form_wrong_sign, _closed_form_half])
def test_numerical_comparison_rejects_mutated_closed_form(mutant):
    """The same comparison has teeth: a mutated closed form is caught at a handful of points."""
    bad = _mp_function(mutant(H, HS, A_ROW))
    rng = np.random.default_rng(0)
    points = [(*rng.uniform(-2, 2, 4), rng.uniform(0, 1), rng.uniform(0.2, 2), *rng.uniform(0, 1, 2))
              for _ in range(10)]
    assert not all(_agree(LOSS_GENERAL, bad, p) for p in points)


# ============================================================================ envelope theorem
def _prox_to_symbols(expr, p):
    """Replace every ``Prox(l, ...)`` by the plain symbol ``p[l]``; checks all share one argument list."""
    found = expr.atoms(Prox)
    assert len({P.args[1:] for P in found}) <= 1, "prox components with different arguments"
    return expr.replace(lambda e: isinstance(e, Prox), lambda e: p[int(e.args[0])])


@pytest.mark.parametrize("loss_kind", ["abstract", "L2"])
def test_envelope_derivatives_symbolic(loss_kind):
    w = sp.symbols("w_1:3", real=True)
    if loss_kind == "abstract":
        loss = sp.Function("ell")(*H, *HS)
    else:
        t = sp.symbols("t_1:3", real=True)
        loss = sigma**2 * ((Logistic(H[0] ** 2 - H[0] * H[1]) - t[0]) ** 2
                           + (Logistic(H[1] ** 2 - H[0] * H[1]) - t[1]) ** 2)
    d = envelope_derivatives(MoreauObjective(h=H, w=w, loss=loss), [*w, V])
    p = {1: sp.Symbol("p_1"), 2: sp.Symbol("p_2")}
    f = [(p[l + 1] - w[l]) / V for l in range(2)]
    for l in range(2):
        assert sp.simplify(_prox_to_symbols(d[w[l]], p) + f[l]) == 0
    assert sp.simplify(_prox_to_symbols(d[V], p) + (f[0] ** 2 + f[1] ** 2) / 2) == 0


def _paper_nodes(n, seed, params, V_values):
    """Random nodes at the paper's parameters: w ~ s m + 0.2 N(0,1) with m = +-0.25, h* ~ N(0, rho)."""
    rng = np.random.default_rng(seed)
    w = 0.2 * rng.standard_normal((n, 2)) + np.array([0.25, -0.25]) * rng.choice([-1.0, 1.0], (n, 1))
    hs = np.sqrt(params.rho) * rng.standard_normal((n, 2))
    t1, t2 = teacher_kernel()(hs[:, 0], hs[:, 1], params.omega, params.A[0][0], params.A[1][1])
    return w, np.stack([t1, t2], -1), rng.choice(V_values, n)


def test_envelope_theorem_numerically(paper_params):
    """Central differences of M(w) = min_h G equal -f_l = -(prox_l - w_l)/V."""
    sig = paper_params.sigma
    step = 1e-5
    checked = 0
    for V_ in (10.0, 17.0, 30.0):
        w, t, _ = _paper_nodes(150, int(V_), paper_params, [V_])
        base = prox(w, t, V_, sig)
        # M has a kink where the global minimiser switches: |d gap / d w| <= |f - f_2nd| < ~1, so a
        # gap above 1e-3 cannot close within the +-1e-5 stencil.
        ok = base.converged & (base.gap > 1e-3)
        f = (base.h - w) / V_
        for l in range(2):
            e = np.zeros(2)
            e[l] = step
            Mp = prox(w + e, t, V_, sig).value
            Mm = prox(w - e, t, V_, sig).value
            fd = (Mp - Mm) / (2 * step)
            # truncation step^2/6 |M'''| (|M'''| < ~10 here) ~ 2e-10, plus rounding of M (~1e-17)
            # divided by the step ~ 1e-12: 1e-8 leaves ample room and is 1e3 below |f| ~ 1e-2
            assert np.all(np.abs(fd[ok] + f[ok, l]) < 1e-8)
        checked += ok.sum()
    assert checked > 300


# ============================================================================ saddle-point equations
@pytest.fixture(scope="module")
def eq():
    return derive_saddle_point()


def _model_md_output(eq):
    """model page §4, output block, typed from the page."""
    (f1, f2), (xi1, xi2), (eta1, eta2) = eq.F, eq.nodes.xi, eq.nodes.eta
    E = Expect
    th_hat = alpha * (E(f1 * eta1) + E(f2 * eta2)) / sp.sqrt(rho - theta**2 / q)
    return {q_hat: alpha * (E(f1**2) + E(f2**2)),
            m_hat: alpha * (E(f1) - E(f2)),
            theta_hat: th_hat,
            V_hat: -alpha * (E(f1 * xi1) + E(f2 * xi2)) / sp.sqrt(q) + theta * th_hat / q}


def _model_md_prior():
    D = lam + V_hat * sigma**2
    return {V: sigma**2 / D, m: m_hat / D, theta: sigma**2 * rho * theta_hat / D,
            q: sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho) / D**2}


def _model_md_phi(EM):
    return ((V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat
            + (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * rho * sigma**2) / (2 * (lam + V_hat * sigma**2))
            - alpha * EM)


def test_output_equations_match_model_md(eq):
    hand = _model_md_output(eq)
    assert set(eq.output) == set(hand)
    for k in hand:
        assert sp.simplify(eq.output[k] - hand[k]) == 0, k


def test_output_comparison_has_teeth(eq):
    """A sign slip in the theta term of V_hat is not 'simplified away'."""
    hand = _model_md_output(eq)
    mutated = hand[V_hat] - 2 * theta * hand[theta_hat] / q
    assert sp.simplify(eq.output[V_hat] - mutated) != 0


def test_prior_equations_and_phi_match_model_md(eq):
    hand = _model_md_prior()
    assert set(eq.prior) == set(hand)
    for k in hand:
        assert sp.simplify(eq.prior[k] - hand[k]) == 0, k
    assert sp.simplify(eq.phi - _model_md_phi(Expect(eq.M))) == 0


# ---- stationarity with explicit stand-ins for M (exact Gaussian moments, written here)
def _gauss_expect(expr, gaussians):
    """E over independent standard normals of a polynomial in them: E[z^{2k}] = (2k-1)!!."""
    P = sp.Poly(sp.expand(expr), *gaussians)
    total = sp.Integer(0)
    for powers, coeff in P.terms():
        if any(k % 2 for k in powers):
            continue
        total += coeff * sp.Mul(*[sp.factorial2(k - 1) for k in powers])
    return total


def _stand_in_system(eq, M_expr):
    """E[M] and the derived conjugates for an explicit M(w, h*, V), f_l = -dM/dw_l.

    The node map is typed here from model page §4; the atoms of the derived output equations
    are evaluated with this explicit f and exact Gaussian moments.
    """
    xi, eta = eq.nodes.xi, eq.nodes.eta
    c = sp.sqrt(rho - theta**2 / q)
    nmap = {eq.w[0]: sp.sqrt(q) * xi[0] + m, eq.w[1]: sp.sqrt(q) * xi[1] - m,
            eq.hs[0]: theta / sp.sqrt(q) * xi[0] + c * eta[0],
            eq.hs[1]: theta / sp.sqrt(q) * xi[1] + c * eta[1]}
    gs = (*xi, *eta)
    f = {1: -sp.diff(M_expr, eq.w[0]), 2: -sp.diff(M_expr, eq.w[1])}

    def value(E):
        arg = E.args[0].replace(lambda e: isinstance(e, OutputF), lambda e: f[int(e.args[0])])
        return _gauss_expect(arg.xreplace(nmap), gs)

    hats = {k: v.xreplace({E: value(E) for E in eq.atoms}) for k, v in eq.output.items()}
    return _gauss_expect(M_expr.xreplace(nmap), gs), hats


def _canonical(expr):
    """Remove the square roots: q = s^2, rho = c^2 + theta^2/q with s, c > 0, then simplify."""
    s, c = sp.symbols("s c", positive=True)
    return sp.simplify(expr.subs({rho: c**2 + theta**2 / q}).subs({q: s**2}))


#: a Moreau envelope in closed form: loss = sum_l k_l (h_l - g_l(h*))^2 / 2 gives
#: M = sum_l k_l (w_l - g_l)^2 / (2 (1 + k_l V)), which obeys the envelope theorem exactly
_k1, _k2 = sp.Rational(3, 2), sp.Rational(1, 3)


def _quadratic_envelope(eq):
    (w1, w2), (a1, a2) = eq.w, eq.hs
    # logit-like and mixing both tokens; the terms linear in h*_l correlate with w_l (through theta)
    g1 = a1**2 - a1 * a2 + 2 * a1 + a2 / 2
    g2 = a2**2 - a1 * a2 - a1 + a2 / 3
    return _k1 * (w1 - g1) ** 2 / (2 * (1 + _k1 * V)) + _k2 * (w2 - g2) ** 2 / (2 * (1 + _k2 * V))


def _generic_polynomial(eq):
    (w1, w2), (a1, a2) = eq.w, eq.hs
    return (w1**3 * a1 + w1 * w2 * a1 * a2 + 2 * w2**2 * a1**2 + a1**3 * w2 - w1 * a1 + a2**4 / 3
            + V * w1**2 * a2**2 + w1**2 * w2 * a2)


def test_stationarity_with_closed_form_envelope(eq):
    """dPhi/dx = 0 for x in (q, m, theta, V) once the derived conjugates are substituted.

    With M an exact Moreau envelope (quadratic loss) every step of the derivation (envelope theorem
    in w and V, Stein's lemma in xi and eta) is exact, so the partial derivatives of the model page's Phi
    computed directly from the closed-form E[M] must vanish identically.
    """
    EM, hats = _stand_in_system(eq, _quadratic_envelope(eq))
    assert EM.has(theta) and EM.has(m) and EM.has(q)   # the stand-in does depend on each order parameter
    phi = _model_md_phi(EM)
    for x in (q, m, theta, V):
        assert _canonical(sp.diff(phi, x).subs(hats)) == 0, x


def test_stein_step_with_generic_polynomial(eq):
    """For any smooth M (not an envelope) the q, m, theta equations use only f = -dM/dw and Stein's
    lemma, so d E[M]/d(q, m, theta) must match the derived conjugates; the V equation (envelope
    theorem in V) must NOT hold for such an M -- that shows the check can fail."""
    EM, hats = _stand_in_system(eq, _generic_polynomial(eq))
    assert EM.has(theta) and EM.has(m) and EM.has(q)
    phi = _model_md_phi(EM)
    for x in (q, m, theta):
        assert _canonical(sp.diff(phi, x).subs(hats)) == 0, x
    assert _canonical(sp.diff(phi, V).subs(hats)) != 0


def test_stationarity_check_has_teeth(eq):
    """Dropping the 1/sqrt(rho - theta^2/q) of theta_hat breaks the theta equation."""
    EM, hats = _stand_in_system(eq, _quadratic_envelope(eq))
    hats[theta_hat] = hats[theta_hat] * sp.sqrt(rho - theta**2 / q)
    assert _canonical(sp.diff(_model_md_phi(EM), theta).subs(hats)) != 0


# ============================================================================ prior channel
@settings(max_examples=20, deadline=None)
@given(qh=st.floats(0.0, 2.0, **bounded), mh=st.floats(-1.0, 1.0, **bounded),
       th=st.floats(-1.0, 1.0, **bounded), vh=st.floats(0.0, 2.0, **bounded),
       sig=st.floats(0.3, 1.5, **bounded), lam_=st.floats(0.005, 0.5, **bounded),
       rho_=st.floats(0.1, 2.0, **bounded))
def test_prior_channel_against_numerical_maximisation(qh, mh, th, vh, sig, lam_, rho_):
    pc = prior_channel()
    syms = (q_hat, m_hat, theta_hat, V_hat, sigma, lam, rho)
    vals = (qh, mh, th, vh, sig, lam_, rho_)
    psi = float(sp.lambdify(syms, pc.psi)(*vals))
    mom = {k: float(sp.lambdify(syms, v)(*vals)) for k, v in pc.moments.items()}

    D = lam_ + vh * sig**2

    def argmax(B):
        r = minimize_scalar(lambda Q: D * Q * Q / 2 - Q * B, method="brent", options={"xtol": 1e-12})
        return r.x, -r.fun

    # 2-D Gauss-Hermite over g ~ N(0, 1), Q* ~ N(0, rho/sigma^2); 16 points per axis integrate
    # polynomials of degree 31 exactly, so the quadrature adds nothing visible to a smooth integrand
    x, wts = hermegauss(16)
    wts = wts / wts.sum()
    acc = np.zeros(4)
    for (g, wg), (z, wz) in itertools.product(zip(x, wts), zip(x, wts)):
        Qs = np.sqrt(rho_) / sig * z
        B = sig * np.sqrt(qh) * g + mh * 1.0 + th * sig**2 * Qs
        Qopt, val = argmax(B)
        acc += wg * wz * np.array([val, sig**2 * Qopt**2, Qopt, sig**2 * Qopt * Qs])
    psi_n, q_n, m_n, theta_n = acc
    scale = 1.0 + abs(psi_n)
    # the maximum VALUE is second order in Brent's location error (~1e-8 relative): ~1e-14
    assert abs(psi - psi_n) <= 1e-10 * scale
    # moments are first order in the location error (sqrt(machine eps) ~ 1.5e-8 relative)
    # (plus Brent's absolute location tolerance, 1e-11, for fields near zero)
    rms_Q = np.sqrt(q_n) / sig
    assert abs(mom[q] - q_n) <= 1e-6 * q_n + 1e-12
    assert abs(mom[m] - m_n) <= 1e-6 * rms_Q + 1e-10
    assert abs(mom[theta] - theta_n) <= 1e-6 * sig * np.sqrt(rho_) * rms_Q + 1e-10
    # V = sigma^2 dQ/dB by a central difference of the numerical argmax (location error 1e-8 |Q| / step)
    B0 = 0.7
    dQ = (argmax(B0 + 0.5)[0] - argmax(B0 - 0.5)[0]) / 1.0
    assert abs(mom[V] - sig**2 * dQ) <= 1e-6 * sig**2 / D


def test_compiled_prior_equations_match_model_md():
    f = prior_equations()
    hand = sp.lambdify((q_hat, m_hat, theta_hat, V_hat, sigma, lam, rho),
                       [_model_md_prior()[k] for k in (q, m, theta, V)])
    rng = np.random.default_rng(3)
    for _ in range(20):
        args = (*rng.uniform(0, 1, 4), rng.uniform(0.2, 1.5), rng.uniform(0.001, 0.3), rng.uniform(0.1, 2))
        # same rational expressions, different evaluation order: a few ulp
        np.testing.assert_allclose(f(*args), hand(*args), rtol=1e-13)


# ============================================================================ atoms and symmetries
def test_odd_atoms_match_the_atom_structure():
    atoms = atom_list()
    eq = derive_saddle_point()
    assert len(atoms) == 8
    with_eta = tuple(k for k, E in enumerate(atoms) if E.args[0].has(*eq.nodes.eta))
    plain_f = tuple(k for k, E in enumerate(atoms) if isinstance(E.args[0], OutputF))
    assert len(with_eta) == 2 and len(plain_f) == 2
    assert odd_atoms("eta_flip") == with_eta
    assert odd_atoms("full_flip") == plain_f
    with pytest.raises(ValueError):
        odd_atoms("swap")


# ============================================================================ mpmath compilation
def _hand_mp(h1, h2, w1, w2, t1, t2, V_, sig):
    """Value, gradient and Hessian of G (model page §4) in mpmath, derived by hand."""
    lg = _mp_logistic
    a = (h1 * h1 - h1 * h2, h2 * h2 - h1 * h2)
    da = ((2 * h1 - h2, -h1), (-h2, 2 * h2 - h1))     # da[l][i] = d a_l / d h_i
    dda = (((2, -1), (-1, 0)), ((0, -1), (-1, 2)))    # dda[l][i][j]
    s = [lg(x) for x in a]
    r = (s[0] - t1, s[1] - t2)
    s1 = [x * (1 - x) for x in s]
    s2 = [d * (1 - 2 * x) for x, d in zip(s, s1)]   # logistic'' = s (1 - s) (1 - 2 s)
    w = (w1, w2)
    hh = (h1, h2)
    G = ((h1 - w1) ** 2 + (h2 - w2) ** 2) / (2 * V_) + sig**2 * (r[0] ** 2 + r[1] ** 2)
    g = [(hh[i] - w[i]) / V_ + 2 * sig**2 * sum(r[l] * s1[l] * da[l][i] for l in range(2)) for i in range(2)]
    Hm = [[(1 / V_ if i == j else 0)
           + 2 * sig**2 * sum((s1[l] ** 2 + r[l] * s2[l]) * da[l][i] * da[l][j] + r[l] * s1[l] * dda[l][i][j]
                              for l in range(2))
           for j in range(2)] for i in range(2)]
    return G, g[0], g[1], Hm[0][0], Hm[0][1], Hm[1][1]


def test_mpmath_prox_kernel_keeps_precision():
    kern = prox_kernel("mpmath")
    with mpmath.workdps(40):
        third = mpmath.mpf(1) / 3
        cases = [(third, -2 * third, mpmath.mpf("0.1") + third, -third / 7, mpmath.mpf(2) / 7,
                  mpmath.mpf(5) / 9, mpmath.mpf(100) / 7, mpmath.mpf(1) / 2),
                 (mpmath.sqrt(2), mpmath.pi / 5, mpmath.e / 10, -mpmath.mpf(1) / 11, mpmath.mpf(1) / 13,
                  mpmath.mpf(12) / 13, mpmath.sqrt(300), mpmath.mpf(7) / 10)]
        for args in cases:
            got = kern(*args)
            want = _hand_mp(*args)
            for x, y in zip(got, want):
                # 40 digits: unit roundoff 1e-40 on O(1) quantities; a demotion to double anywhere
                # in the compiled expression would show up at ~1e-17
                assert abs(x - y) < mpmath.mpf(10) ** -35


def test_mpmath_teacher_kernel_keeps_precision():
    kern = teacher_kernel("mpmath")
    with mpmath.workdps(40):
        hs1, hs2, om, a11, a22 = (mpmath.mpf(1) / 3, -mpmath.sqrt(3) / 2, mpmath.mpf(3) / 10,
                                  mpmath.mpf(3) / 5, mpmath.mpf(1) / 7)
        t = kern(hs1, hs2, om, a11, a22)
        want = ((1 - om) * _mp_logistic(hs1**2 - hs1 * hs2) + om * a11,
                (1 - om) * _mp_logistic(hs2**2 - hs1 * hs2) + om * a22)
        for x, y in zip(t, want):
            assert abs(x - y) < mpmath.mpf(10) ** -35   # same reasoning as above


def test_double_kernels_match_hand_formulas(paper_params):
    """The numpy kernels against the hand formulas of conftest at random points (double precision)."""
    rng = np.random.default_rng(5)
    h = rng.normal(0, 1, (50, 2))
    w = rng.normal(0, 0.5, (50, 2))
    hs = rng.normal(0, 0.5, (50, 2))
    t = teacher_diag(hs, paper_params)
    t_lib = np.stack(teacher_kernel()(hs[:, 0], hs[:, 1], paper_params.omega, *np.diag(paper_params.A_array)), -1)
    np.testing.assert_allclose(t_lib, t, rtol=0, atol=1e-15)   # O(1) values: a few ulp
    G = prox_kernel()(h[:, 0], h[:, 1], w[:, 0], w[:, 1], t[:, 0], t[:, 1], 12.0, 0.5)[0]
    G_hand = moreau_objective(h[:, 0], h[:, 1], w.T, t.T, 12.0, 0.5)
    np.testing.assert_allclose(G, G_hand, rtol=1e-13, atol=0)  # a few ulp of each term


def test_derivation_generalises_to_three_tokens():
    """model page §7: the symbolic layer is not tied to L = 2.  For L = 3 tokens with
    positional signs (+1, -1, +1), the derived conjugates are the L-token sums of the same
    per-token forms (typed here from model page §4, extended term by term)."""
    import sympy as sp
    from symattn.model.symbols import V_hat, alpha, m_hat, q, q_hat, rho, theta, theta_hat
    from symattn.symbolic.expectation import Expect
    from symattn.symbolic.free_energy import ChannelSetting, derive_saddle_point

    signs = (1, -1, 1)
    eq = derive_saddle_point(ChannelSetting(L=3, signs=signs))
    F, xi, eta = eq.F, eq.nodes.xi, eq.nodes.eta
    c = sp.sqrt(rho - theta**2 / q)
    th_hat = alpha * sum(Expect(eta[l] * F[l]) for l in range(3)) / c
    expected = {
        q_hat: alpha * sum(Expect(F[l] ** 2) for l in range(3)),
        m_hat: alpha * sum(s * Expect(F[l]) for l, s in enumerate(signs)),
        theta_hat: th_hat,
        V_hat: -alpha * sum(Expect(xi[l] * F[l]) for l in range(3)) / sp.sqrt(q)
        + theta * th_hat / q,
    }
    for k, v in expected.items():
        assert sp.simplify(eq.output[k] - v) == 0, k
