"""The general model's free entropy and saddle-point equations (model page §7;
symattn/symbolic/general.py): exact reduction to the paper's §4, the identities they rest on,
and their symmetries."""

import pytest
import sympy as sp

from symattn.model.symbols import V, V_hat, m, m_hat, q, q_hat, rho, theta, theta_hat
from symattn.symbolic.expectation import Expect
from symattn.symbolic.free_energy import derive_saddle_point
from symattn.symbolic.general import (check_matrix_envelope, check_price_stein,
                                      derive_general_saddle_point, general_prior_channel,
                                      general_symbols, prior_closed_form)


def _zero(x):
    entries = x if isinstance(x, sp.MatrixBase) else [x]
    return all(sp.simplify(e) == 0 for e in entries)


def test_reduces_exactly_to_the_paper():
    """L = 2, r = r_t = 1, Pi = s s^T (p_2 = -p_1), M = s m, m_hat = s^T M_hat: Phi, the prior
    equations and the output equations are the paper's (symattn.symbolic.free_energy), with
    K^{-T} = 1/sqrt(q) and B^{-T} = 1/sqrt(rho - theta^2/q), and the atoms identified."""
    gen = derive_general_saddle_point(2, 1, 1)
    pap = derive_saddle_point()
    s = gen.symbols
    sv = sp.Matrix([1, -1])
    Mh1, Mh2 = s.M_hat
    to_paper = {s.q[0, 0]: q, s.V[0, 0]: V, s.theta[0, 0]: theta, s.q_hat[0, 0]: q_hat,
                s.V_hat[0, 0]: V_hat, s.theta_hat[0, 0]: theta_hat,
                s.Pi[0, 0]: 1, s.Pi[1, 1]: 1, s.Pi[0, 1]: -1,
                s.M[0, 0]: m, s.M[1, 0]: -m,
                gen.KiT[0, 0]: 1 / sp.sqrt(q), gen.BiT[0, 0]: 1 / sp.sqrt(rho - theta**2 / q)}
    at = gen.atoms
    F = pap.F
    xi, eta = pap.nodes.xi, pap.nodes.eta
    for l in range(2):
        to_paper[Expect(at["f"][l][0])] = Expect(F[l])
        to_paper[Expect(at["f"][l][0] ** 2)] = Expect(F[l] ** 2)
        to_paper[Expect(at["xi"][l][0] * at["f"][l][0])] = Expect(xi[l] * F[l])
        to_paper[Expect(at["eta"][l][0] * at["f"][l][0])] = Expect(eta[l] * F[l])
    to_paper[at["EM"]] = Expect(pap.M)

    # Phi, with m_hat = M_hat_1 - M_hat_2 (one of M_hat's two entries is free: Pi is rank one)
    phi = gen.phi.xreplace(to_paper).subs(Mh1, m_hat + Mh2)
    assert _zero(phi - pap.phi)
    # prior equations
    pr = {k: v.xreplace(to_paper).subs(Mh1, m_hat + Mh2) for k, v in gen.prior.items()}
    assert _zero(pr["q"][0, 0] - pap.prior[q])
    assert _zero(pr["theta"][0, 0] - pap.prior[theta])
    assert _zero(pr["V"][0, 0] - pap.prior[V])
    assert _zero(pr["M"] - sv * pap.prior[m])
    # output equations
    out = {k: v.xreplace(to_paper) for k, v in gen.output.items()}
    assert _zero(out["q_hat"][0, 0] - pap.output[q_hat])
    assert _zero(out["theta_hat"][0, 0] - pap.output[theta_hat])
    assert _zero(out["V_hat"][0, 0] - pap.output[V_hat])
    assert _zero((sv.T * out["M_hat"])[0, 0] - pap.output[m_hat])


@pytest.mark.parametrize("shape", [(2, 1, 1), (3, 1, 1), (2, 2, 1), (2, 1, 2)])
def test_price_and_stein_identities(shape):
    """The q- and theta-derivatives of a Gaussian mean in the first-derivative form the output
    equations use, exactly on random polynomials (a wrong transpose, factor 1/2 or block of
    C^{-1} fails: check_price_stein raises)."""
    check_price_stein(*shape, seed=sum(shape))


@pytest.mark.parametrize("wrong", ["transposed", "no_theta_term", "sign"])
def test_price_stein_check_can_fail(wrong):
    """The check is not vacuous: a claim with a transposed block, without the theta term, or
    with the H^*u sign flipped is refused."""
    from symattn.symbolic.general import price_stein_form

    def claim(qi, th, Ri, Euf, Eef):
        huu, hsu = price_stein_form(qi, th, Ri, Euf, Eef)
        if wrong == "transposed":
            return -qi * Euf.T + qi * th.T * Ri * Eef, hsu
        if wrong == "no_theta_term":
            return -qi * Euf, hsu
        return huu, -hsu
    with pytest.raises(AssertionError, match="Price/Stein"):
        check_price_stein(2, 2, 1, seed=3, trials=1, claim=claim)


@pytest.mark.parametrize("r", [1, 2, 3])
def test_matrix_envelope(r):
    check_matrix_envelope(r)


def test_prior_channel_is_the_closed_form_for_rank_two():
    s = general_symbols(3, 2, 1)
    pr = general_prior_channel(s)
    closed = prior_closed_form(s)
    for k in ("q", "M", "theta", "V"):
        assert _zero(pr.moments[k] - closed[k]), k


def _perm_matrix(perm):
    n = len(perm)
    return sp.Matrix(n, n, lambda i, j: 1 if perm[i] == j else 0)


def test_relabelling_tokens():
    """Permuting the tokens (Pi -> P Pi P^T, M_hat -> P M_hat) leaves Psi_prior, q, theta and V
    unchanged and permutes M; the output equations permute M_hat with the tokens' atoms."""
    s = general_symbols(3, 1, 1)
    closed = prior_closed_form(s)
    P = _perm_matrix([2, 0, 1])
    sub = dict(zip(list(s.Pi), list(P * s.Pi * P.T)))
    sub.update(dict(zip(list(s.M_hat), list(P * s.M_hat))))
    moved = {k: v.xreplace(sub) for k, v in closed.items()}
    assert _zero(moved["psi"] - closed["psi"])
    for k in ("q", "theta", "V"):
        assert _zero(moved[k] - closed[k])
    assert _zero(moved["M"] - P * closed["M"])
    # output: M_hat's rows are the tokens' E[f_l]; q_hat a sum over tokens
    gen = derive_general_saddle_point(3, 1, 1)
    f = gen.atoms["f"]
    relabel = {Expect(f[l][0]): Expect(f[[2, 0, 1][l]][0]) for l in range(3)}
    relabel.update({Expect(f[l][0] ** 2): Expect(f[[2, 0, 1][l]][0] ** 2) for l in range(3)})
    assert _zero(gen.output["q_hat"].xreplace(relabel) - gen.output["q_hat"])
    assert _zero(gen.output["M_hat"].xreplace(relabel) - P * gen.output["M_hat"])


def test_rotation_of_the_students_rank_space():
    """Q -> Q O (O orthogonal, exact rationals 3/5, 4/5): conjugates q_hat -> O^T q_hat O,
    V_hat -> O^T V_hat O, M_hat -> M_hat O, theta_hat -> theta_hat O give Psi unchanged and
    q -> O^T q O, M -> M O, theta -> theta O, V -> O^T V O."""
    s = general_symbols(2, 2, 1)
    closed = prior_closed_form(s)
    O = sp.Matrix([[sp.Rational(3, 5), -sp.Rational(4, 5)], [sp.Rational(4, 5), sp.Rational(3, 5)]])
    sub = {}
    for X, Y in ((s.q_hat, O.T * s.q_hat * O), (s.V_hat, O.T * s.V_hat * O),
                 (s.M_hat, s.M_hat * O), (s.theta_hat, s.theta_hat * O)):
        for i in range(X.rows):
            for j in range(X.cols):
                sub[X[i, j]] = Y[i, j]
    moved = {k: v.xreplace(sub) for k, v in closed.items()}
    assert _zero(moved["psi"] - closed["psi"])
    assert _zero(moved["q"] - O.T * closed["q"] * O)
    assert _zero(moved["V"] - O.T * closed["V"] * O)
    assert _zero(moved["M"] - closed["M"] * O)
    assert _zero(moved["theta"] - closed["theta"] * O)
