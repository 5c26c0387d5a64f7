"""Tests of the finite-size simulator (model page §2, §6, §7): :mod:`symattn.simulation.general`,
the only one, at the paper's shape (``ModelParams()``) and for the general model.

Every reference is an independent route:

* a literal implementation of the model page's formulas written here (explicit ``X``, ``Y``,
  row softmax, least squares on the stacked tokens, fresh sentences drawn from the seed here);
* for the paper's shape also: the ``L = 2`` logistic form of the softmax (model page §3) with the
  gradient written out by the chain rule, the seed's streams drawn here in the documented order,
  and scipy's L-BFGS-B run here on that literal risk;
* central finite differences of the risk;
* closed forms and symmetries: ``P P^T / d = Pi``; relabelling the tokens (``A``, ``Pi`` and the
  tokens permuted together) and rotating ``Q -> Q O`` leave ``R`` unchanged, and ``q, M, theta``
  transform covariantly.
"""

import json

import numpy as np
import pytest

from symattn import ModelParams
from symattn.model.checks import ParameterError
from scipy.optimize import minimize

from symattn.simulation import general as gen
from symattn.simulation.instances import simulate_seeds

#: a non-symmetric 3-token teacher matrix (so that relabelling the tokens matters)
A3 = ((0.5, 0.3, 0.2), (0.1, 0.7, 0.2), (0.3, 0.3, 0.4))
#: the brief's 3-token matrix
A3_SYM = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))


def uniform_A(L):
    return tuple(tuple(1.0 / L for _ in range(L)) for _ in range(L))


def custom_gram(L, k, seed):
    """A rank-``k`` positive semi-definite ``L x L`` Gram matrix with no structure."""
    B = np.random.default_rng(seed).standard_normal((L, k))
    return tuple(tuple(float(x) for x in row) for row in B @ B.T / k)


# ----------------------------------------------------------------------------- literal references
def softmax_rows(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def literal_losses(Q, Z, Q_star, P, params):
    """||Y - f_Q(X)||_F^2 / (2d) per sentence, model page §7 literally: X = Z + P/sqrt(d),
    Y = [(1 - omega) softmax(h* h*^T) + omega A] Z with h* = Z Q*/sqrt(d), f = softmax(h h^T) X."""
    d = Z.shape[-1]
    Z = np.asarray(Z, dtype=float)
    X = Z + P / np.sqrt(d)
    hs = Z @ Q_star / np.sqrt(d)
    T = (1 - params.omega) * softmax_rows(hs @ hs.transpose(0, 2, 1)) + params.omega * np.array(params.A)
    h = X @ Q / np.sqrt(d)
    F = softmax_rows(h @ h.transpose(0, 2, 1)) @ X
    return np.sum((T @ Z - F) ** 2, axis=(1, 2)) / (2 * d)


def literal_risk(Q, data):
    Q = np.asarray(Q, dtype=float).reshape(data.d, -1)
    return (literal_losses(Q, data.Z, data.Q_star, data.P, data.params).sum()
            + 0.5 * data.params.lam * np.sum(Q * Q))


# ----------------------------------------------------------------------------- the paper's shape, literally
S_SIGNS = np.array([1.0, -1.0])


def logistic(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def softmax_L2(h):
    """model page §3: S11 = logistic(h1^2 - h1 h2), S22 = logistic(h2^2 - h1 h2); ``h (..., 2)``."""
    h1, h2 = h[..., 0], h[..., 1]
    s11, s22 = logistic(h1 * h1 - h1 * h2), logistic(h2 * h2 - h1 * h2)
    return np.stack([np.stack([s11, 1 - s11], -1), np.stack([1 - s22, s22], -1)], -2)


def paper_literal(Z, q_star, params):
    """Explicit ``X = Z + s (1, ..., 1)/sqrt(d)`` and ``T(h*)`` (``h* = Z q*/sqrt(d)``) of the
    paper's shape, from tokens ``Z (n, 2, d)`` and the teacher vector ``q* (d,)``."""
    Z = np.asarray(Z, dtype=float)
    d = Z.shape[-1]
    X = Z + S_SIGNS[:, None] * np.ones(d) / np.sqrt(d)
    T = (1 - params.omega) * softmax_L2(Z @ q_star / np.sqrt(d)) + params.omega * np.array(params.A)
    return Z, X, T


def paper_literal_losses(Q, Z, q_star, params):
    """``||T Z - S(X Q/sqrt(d)) X||_F^2 / (2d)`` per sentence, ``Q (d,)``."""
    Z, X, T = paper_literal(Z, q_star, params)
    d = Z.shape[-1]
    return np.sum((T @ Z - softmax_L2(X @ Q / np.sqrt(d)) @ X) ** 2, axis=(1, 2)) / (2 * d)


def paper_literal_risk_and_grad(Q, Z, q_star, params):
    """``R(Q)`` and its gradient at the paper's shape, written out: ``E = T Z - S X``,
    ``dR/dS = -E X^T / d``; ``S_11 = logistic(a)``, ``S_12 = 1 - S_11`` with
    ``a = h_1^2 - h_1 h_2`` (and ``b = h_2^2 - h_1 h_2`` for row 2), so
    ``dR/da = (dR/dS_11 - dR/dS_12) S_11 S_12``; then ``da/dh = (2 h_1 - h_2, -h_1)``,
    ``db/dh = (-h_2, 2 h_2 - h_1)`` and ``dh_l/dQ = x_l / sqrt(d)``."""
    Z, X, T = paper_literal(Z, q_star, params)
    d = Z.shape[-1]
    h = X @ Q / np.sqrt(d)
    S = softmax_L2(h)
    E = T @ Z - S @ X
    R = np.sum(E ** 2) / (2 * d) + 0.5 * params.lam * Q @ Q
    Sbar = -np.einsum("nid,njd->nij", E, X) / d
    ga = (Sbar[:, 0, 0] - Sbar[:, 0, 1]) * S[:, 0, 0] * S[:, 0, 1]
    gb = (Sbar[:, 1, 1] - Sbar[:, 1, 0]) * S[:, 1, 1] * S[:, 1, 0]
    h1, h2 = h[:, 0], h[:, 1]
    gh1 = ga * (2 * h1 - h2) - gb * h2
    gh2 = -ga * h1 + gb * (2 * h2 - h1)
    return R, (gh1 @ X[:, 0] + gh2 @ X[:, 1]) / np.sqrt(d) + params.lam * Q


# ----------------------------------------------------------------------------- positional encodings
@pytest.mark.parametrize("L, Pi", [(2, "antipodal"), (2, "orthogonal"), (3, "simplex"), (4, "simplex"),
                                   (3, "orthogonal"), (4, "cyclic"), (3, "none"), (4, "custom")])
def test_encodings_have_the_gram_matrix_pi(L, Pi):
    Pi = custom_gram(L, 2, 0) if Pi == "custom" else Pi
    p = ModelParams(A=uniform_A(L), Pi=Pi)
    d = 50
    P = gen.positional_encodings(p.Pi_array, d)
    F = gen.position_factor(p.Pi_array)
    E = gen.positional_directions(d, F.shape[1])
    assert P.shape == (L, d) and F.shape[1] == np.linalg.matrix_rank(p.Pi_array, tol=1e-10)
    # each entry of P P^T is a sum of d = 50 products of O(1) numbers: rounding <= ~50 eps
    assert np.allclose(P @ P.T / d, p.Pi_array, rtol=0, atol=1e-13)
    assert np.allclose(E.T @ E / d, np.eye(E.shape[1]), rtol=0, atol=1e-13)
    if E.shape[1]:
        assert np.array_equal(E[:, 0], np.ones(d))
    else:                                      # Pi = 0: no encodings at all
        assert np.array_equal(P, np.zeros((L, d)))
    # deterministic: a function of (Pi, d) only
    assert np.array_equal(P, gen.positional_encodings(p.Pi_array, d))


def test_paper_encodings_are_exactly_plus_minus_ones():
    for d in (2, 7, 1000):
        P = gen.positional_encodings(ModelParams().Pi_array, d)
        assert np.array_equal(P[0], np.ones(d)) and np.array_equal(P[1], -np.ones(d))


def test_encodings_refuse_a_dimension_below_the_rank():
    p = ModelParams(A=uniform_A(4), Pi="orthogonal")
    with pytest.raises(ParameterError, match="rank"):
        gen.make_dataset(p, 3, 2.0)


def test_positional_start_basis_is_canonical_eigenbasis():
    # paper: u = (1, -1)/sqrt(2), w = 2
    w, U = gen.positional_start_basis(ModelParams().Pi_array)
    assert np.allclose(w, [2.0], rtol=1e-15) and np.allclose(U[:, 0], [2**-0.5, -(2**-0.5)], rtol=1e-15)
    # simplex L = 3: one 2-dim eigenspace (w = 3/2); e_1 projected first, so u_1 ~ (2, -1, -1)
    Pi = ModelParams(A=uniform_A(3), Pi="simplex").Pi_array
    w, U = gen.positional_start_basis(Pi)
    assert np.allclose(w, [1.5, 1.5], rtol=1e-14)
    assert np.allclose(U.T @ U, np.eye(2), atol=1e-14) and np.allclose(Pi @ U, U * w, atol=1e-14)
    assert np.allclose(U[:, 0], np.array([2.0, -1.0, -1.0]) / np.sqrt(6), atol=1e-14)
    # non-degenerate custom Pi: eigenvectors, decreasing eigenvalues, first non-zero entry positive
    Pi = np.array(custom_gram(4, 3, 1))
    w, U = gen.positional_start_basis(Pi)
    assert w.size == 3 and np.all(np.diff(w) < 0) and np.allclose(Pi @ U, U * w, atol=1e-13)
    assert np.all(U[np.argmax(np.abs(U) > 1e-8, axis=0), range(3)] > 0)


# ----------------------------------------------------------------------------- data
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_paper_data_follow_the_documented_draws(dtype):
    """The paper's data set drawn here, in one piece, from the seed's streams (module doc,
    Randomness): ``Q*`` first (``standard_normal(d)``), then ``standard_normal((n, 2, d)) * sigma``
    (stored as ``dtype``); the test sentences from the second stream; ``T``, ``Gamma = Z Z^T`` and
    ``C = c s^T`` (``c = Z p_1 / sqrt(d)``) by the ``L = 2`` formulas."""
    p = ModelParams()
    d, alpha, seed = 30, 1.7, 3
    train_stream, test_stream, _ = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(train_stream)
    q_star = rng.standard_normal(d)
    Z = (rng.standard_normal((round(alpha * d), 2, d)) * p.sigma).astype(dtype)
    Z64, _, T = paper_literal(Z, q_star, p)
    new = gen.make_dataset(p, d, alpha, seed, dtype=dtype, chunk_size=7)
    assert new.Z.dtype == dtype and new.Q_star.shape == (d, 1)
    assert np.array_equal(new.Z, Z) and np.array_equal(new.Q_star[:, 0], q_star)
    # Gram quantities: same numbers by another formula (C = c s^T): rounding only
    assert np.allclose(new.T, T, rtol=0, atol=1e-15)
    assert np.allclose(new.gram, Z64 @ Z64.transpose(0, 2, 1), rtol=1e-14, atol=0)
    c = Z64.sum(axis=-1) / np.sqrt(d)
    assert np.allclose(new.C, c[:, :, None] * np.array([1.0, -1.0]), rtol=1e-13, atol=1e-15)
    # fresh test sentences: the test stream, drawn here in one piece
    a = np.random.default_rng(test_stream).standard_normal((50, 2, d)) * p.sigma
    b = np.concatenate([b.Z for b in gen.fresh_sentences(new, 50, chunk_size=9)])
    assert np.array_equal(a, b)


def test_general_data_conventions_and_chunk_independence():
    p = ModelParams(A=A3, Pi="simplex", r=2, r_t=2)
    d, alpha = 40, 1.3
    a = gen.make_dataset(p, d, alpha, seed=5)
    b = gen.make_dataset(p, d, alpha, seed=5, chunk_size=3)
    n = round(alpha * d)
    assert a.Z.shape == (n, 3, d) and a.Q_star.shape == (d, 2) and a.T.shape == (n, 3, 3)
    assert np.array_equal(a.Z, b.Z) and np.array_equal(a.Q_star, b.Q_star)
    # x_l = z_l + p_l / sqrt(d); Y = T(Z Q* / sqrt(d)) Z with the teacher read on Z, T row-stochastic
    assert np.allclose(a.X() - a.Z, a.P / np.sqrt(d), atol=1e-15)
    hs = a.Z @ a.Q_star / np.sqrt(d)
    T = (1 - p.omega) * softmax_rows(hs @ hs.transpose(0, 2, 1)) + p.omega * np.array(A3)
    assert np.allclose(a.T, T, atol=1e-15) and np.allclose(a.T.sum(-1), 1.0, atol=1e-15)
    # first Q* (d x r_t), then the sentences: a different r_t changes the sentences' draws
    c = gen.make_dataset(ModelParams(A=A3, Pi="simplex", r=2, r_t=1), d, alpha, seed=5)
    assert np.array_equal(c.Q_star.ravel(), a.Q_star.ravel()[:d]) and not np.allclose(c.Z, a.Z)
    # omega = 1: the teacher is A, exactly
    one = gen.make_dataset(ModelParams(A=A3, omega=1.0), 20, 1.0)
    assert np.array_equal(one.T, np.broadcast_to(np.array(A3), one.T.shape))


# ----------------------------------------------------------------------------- risk and gradient
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_paper_risk_and_gradient_equal_the_literal_formulas(dtype):
    p = ModelParams(omega=0.5, A=((0.3, 0.7), (0.8, 0.2)))
    new = gen.make_dataset(p, 40, 2.0, seed=1, dtype=dtype)
    q_star = new.Q_star[:, 0]
    rng = np.random.default_rng(0)
    for Q in (rng.standard_normal(40), q_star, np.ones(40) + 0.3 * rng.standard_normal(40)):
        R0, g0 = paper_literal_risk_and_grad(Q, new.Z, q_star, p)
        R1, g1 = gen.risk_and_grad(Q[:, None], new)
        # same sums in a different order (Gram forms with C, Pi vs explicit residuals and the
        # logistic chain rule): a few ulp per term
        assert R1 == pytest.approx(R0, rel=1e-12)
        assert g1.shape == (40, 1)
        assert np.max(np.abs(g1[:, 0] - g0)) < 1e-12 * np.max(np.abs(g0))


@pytest.mark.parametrize("L, r, r_t, Pi", [(3, 2, 1, "simplex"), (2, 2, 2, "antipodal"),
                                           (4, 3, 2, "custom"), (3, 1, 3, "orthogonal")])
def test_risk_equals_the_literal_risk(L, r, r_t, Pi):
    A = A3 if L == 3 else uniform_A(L) if L != 2 else ((0.3, 0.7), (0.8, 0.2))
    Pi = custom_gram(L, 2, 2) if Pi == "custom" else Pi
    p = ModelParams(A=A, Pi=Pi, r=r, r_t=r_t, omega=0.4)
    data = gen.make_dataset(p, 30, 1.5, seed=2)
    rng = np.random.default_rng(1)
    for Q in (rng.standard_normal((30, r)), gen.warm_start(data, "positional"),
              gen.warm_start(data, "semantic")):
        # Gram form (tr D Gamma D^T - 2 tr D C S^T + tr S Pi S^T) vs explicit d-dim residuals
        assert gen.risk(Q, data) == pytest.approx(literal_risk(Q, data), rel=1e-12)
        assert gen.risk_and_grad(Q, data)[0] == pytest.approx(gen.risk(Q, data), rel=1e-14)
        for cs in (1, 7):
            assert gen.risk(Q, data, chunk_size=cs) == pytest.approx(gen.risk(Q, data), rel=1e-13)


@pytest.mark.parametrize("L, r, r_t", [(3, 2, 1), (2, 2, 2)])
def test_gradient_equals_central_differences(L, r, r_t):
    p = ModelParams(A=A3 if L == 3 else ((0.3, 0.7), (0.8, 0.2)), r=r, r_t=r_t)
    data = gen.make_dataset(p, 40, 2.0, seed=1)
    rng = np.random.default_rng(0)
    for Q in (rng.standard_normal((40, r)),
              gen.warm_start(data, "positional") + 0.3 * rng.standard_normal((40, r))):
        R, G = gen.risk_and_grad(Q, data)
        for _ in range(3):
            V = rng.standard_normal(Q.shape)
            V /= np.linalg.norm(V)                      # unit direction in R^{d x r}
            t = 1e-4
            fd = (literal_risk(Q + t * V, data) - literal_risk(Q - t * V, data)) / (2 * t)
            # central differences along a unit direction: truncation t^2 |R'''| / 6, with |R'''|/6
            # measured <= 4e-4 (error 3.5e-8 at t = 1e-2, scaling as t^2), i.e. <= 4e-12 here;
            # round-off eps |R| / t <= 2.2e-16 * 10 / 1e-4 = 2.2e-11.  1e-9 (1 + |R|) is 40 times
            # above both, while a wrong gradient term is O(|G|) ~ 0.1-1.
            assert abs(fd - np.sum(G * V)) < 1e-9 * (1 + abs(R))


def test_a_zero_column_is_a_critical_point():
    """Why the warm starts nudge the columns they leave at zero (module doc)."""
    p = ModelParams(A=A3, r=2)
    data = gen.make_dataset(p, 30, 1.0, seed=0)
    Q = np.column_stack([data.Q_star[:, 0], np.zeros(30)])
    _, G = gen.risk_and_grad(Q, data)
    assert np.all(G[:, 1] == 0.0) and np.max(np.abs(G[:, 0])) > 1e-3


def test_relabelling_the_tokens_leaves_the_risk_unchanged():
    Pi = np.array(custom_gram(3, 3, 4))
    p = ModelParams(A=A3, Pi=tuple(map(tuple, Pi)), r=2, omega=0.5)
    data = gen.make_dataset(p, 30, 1.0, seed=3)
    perm = [2, 0, 1]
    A = np.array(A3)
    p2 = ModelParams(A=tuple(map(tuple, A[perm][:, perm])), Pi=tuple(map(tuple, Pi[perm][:, perm])),
                     r=2, omega=0.5)
    data2 = gen.dataset_from_arrays(p2, data.Z[:, perm], data.Q_star, data.P[perm])
    Q = np.random.default_rng(2).standard_normal((30, 2))
    R1, G1 = gen.risk_and_grad(Q, data)
    R2, G2 = gen.risk_and_grad(Q, data2)
    # same sums, terms reordered: rounding only
    assert R2 == pytest.approx(R1, rel=1e-12) and np.allclose(G2, G1, rtol=1e-10, atol=1e-14)
    # the test has teeth: permuting the tokens but not A changes the risk
    p3 = ModelParams(A=A3, Pi=tuple(map(tuple, Pi[perm][:, perm])), r=2, omega=0.5)
    data3 = gen.dataset_from_arrays(p3, data.Z[:, perm], data.Q_star, data.P[perm])
    assert abs(gen.risk(Q, data3) / R1 - 1) > 1e-4


def test_rotating_q_leaves_the_risk_unchanged_and_transforms_the_overlaps():
    p = ModelParams(A=A3, r=2, r_t=2)
    data = gen.make_dataset(p, 30, 1.0, seed=4)
    rng = np.random.default_rng(5)
    Q = rng.standard_normal((30, 2)) * [1.0, 0.4]
    O, _ = np.linalg.qr(rng.standard_normal((2, 2)))
    R1, G1 = gen.risk_and_grad(Q, data)
    R2, G2 = gen.risk_and_grad(Q @ O, data)
    assert R2 == pytest.approx(R1, rel=1e-12)
    assert np.allclose(G2, G1 @ O, rtol=0, atol=1e-12 * np.abs(G1).max())
    a, b = gen.order_parameters(Q, data), gen.order_parameters(Q @ O, data)
    assert np.allclose(b["q"], O.T @ a["q"] @ O, atol=1e-14)
    assert np.allclose(b["M"], a["M"] @ O, atol=1e-14)
    assert np.allclose(b["theta"], a["theta"] @ O, atol=1e-14)
    for k in ("q_eigs", "MM", "thth", "thM"):
        assert np.allclose(b[k], a[k], atol=1e-14), k
    assert b["Tr_q"] == pytest.approx(a["Tr_q"], rel=1e-14)
    # closed forms in the theory's units
    s2 = p.sigma**2
    assert np.allclose(a["q"], s2 * Q.T @ Q / 30, atol=1e-15)
    assert np.allclose(a["M"], data.P @ Q / 30, atol=1e-15)
    assert np.allclose(a["theta"], s2 * data.Q_star.T @ Q / 30, atol=1e-15)
    # the gauge fixes one representative: the same for Q and Q O (q's eigenvalues are distinct)
    g1, g2 = gen.fix_gauge(Q, data), gen.fix_gauge(Q @ O, data)
    assert np.allclose(g1, g2, atol=1e-12)
    q = gen.order_parameters(g1, data)["q"]
    assert abs(q[0, 1]) < 1e-14 and q[0, 0] > q[1, 1]


# ----------------------------------------------------------------------------- warm starts
def test_warm_starts():
    # paper's shape (model page §6): Q = Q* (the first draws of the training stream), Q iid
    # N(0, 1) from the random-start stream, and Q = s (1, ..., 1)
    new = gen.make_dataset(ModelParams(), 50, 1.0, seed=6)
    train_stream, _, start_stream = np.random.SeedSequence(6).spawn(3)
    assert np.array_equal(gen.warm_start(new, "semantic")[:, 0],
                          np.random.default_rng(train_stream).standard_normal(50))
    assert np.array_equal(gen.warm_start(new, "random")[:, 0],
                          np.random.default_rng(start_stream).standard_normal(50))
    # (u_1 - u_2)/sqrt(w) = sqrt(2)/sqrt(2): one rounding away from 1
    assert np.allclose(gen.warm_start(new, "positional", 2.0)[:, 0],
                       np.full(50, 2.0), rtol=4e-16, atol=0)
    # r = 2 > r_t = 1: Q* then a deterministic 1e-3 nudge
    data = gen.make_dataset(ModelParams(A=A3, r=2), 400, 0.1, seed=7)
    Q0 = gen.warm_start(data, "semantic")
    assert np.array_equal(Q0[:, 0], data.Q_star[:, 0])
    assert np.array_equal(Q0, gen.warm_start(data, "semantic"))
    # std of 400 draws: relative error ~ 1/sqrt(800) = 3.5 %; allow 20 %
    assert abs(Q0[:, 1].std() / gen.NUDGE_SCALE - 1) < 0.2
    # the nudge comes from a child of the random-start stream, not from the random start's draws
    ss = np.random.SeedSequence(data.seed).spawn(3)[2]
    assert np.array_equal(Q0[:, 1], gen.NUDGE_SCALE * np.random.default_rng(ss.spawn(1)[0]).standard_normal(400))
    assert abs(np.corrcoef(Q0[:, 1], np.random.default_rng(ss).standard_normal(400))[0, 1]) < 0.2
    # positional: Q^T Q / d = s^2 I and M[:, a] = s sqrt(w_a) u_a (simplex L = 3, w = 3/2)
    Qp = gen.warm_start(data, "positional", 0.7)
    w, U = gen.positional_start_basis(data.params.Pi_array)
    assert np.allclose(Qp.T @ Qp / 400, 0.49 * np.eye(2), atol=1e-13)
    assert np.allclose(data.P @ Qp / 400, 0.7 * U * np.sqrt(w), atol=1e-13)
    # orthogonal encodings: the columns are the encodings themselves
    orth = gen.make_dataset(ModelParams(A=A3, Pi="orthogonal", r=3), 40, 0.5, seed=0)
    assert np.allclose(gen.warm_start(orth, "positional"), orth.P.T, atol=1e-14)
    # columns beyond the positional rank are nudged (here r = 2 > k = 1)
    Qa = gen.warm_start(gen.make_dataset(ModelParams(r=2), 40, 0.5), "positional")
    assert np.allclose(Qa[:, 0], 1.0, rtol=4e-16) and 0 < np.abs(Qa[:, 1]).max() < 1e-2
    # an explicit array, copied
    arr = np.ones((400, 2))
    got = gen.warm_start(data, arr)
    assert np.array_equal(got, arr) and got is not arr
    with pytest.raises(ParameterError, match="start"):
        gen.warm_start(data, np.ones(400))
    with pytest.raises(ParameterError, match="start"):
        gen.warm_start(data, "sideways")


# ----------------------------------------------------------------------------- test errors and baseline
def _literal_minimum(Q0, Z, q_star, params):
    """scipy's L-BFGS-B on the literal risk and gradient, with the options of ``gen.minimise``,
    reported with the paper's sign (theta >= 0 if |Q.Q*| >= |Q.p_1|, else m >= 0):
    ``Q, R, max|grad R|``."""
    res = minimize(lambda Q: paper_literal_risk_and_grad(Q, Z, q_star, params), Q0, jac=True,
                   method="L-BFGS-B", options={"maxiter": 10000, "maxfun": 100000, "gtol": 1e-8,
                                               "ftol": 0.0, "maxcor": 20, "maxls": 50})
    Q = res.x
    sem, pos = Q @ q_star, Q.sum()
    lead = sem if abs(sem) >= abs(pos) else pos
    return (-Q if lead < 0 else Q), float(res.fun), float(np.max(np.abs(res.jac)))


def test_paper_test_errors_baseline_and_minima_equal_literal_references():
    p = ModelParams()
    d = 60
    new = gen.make_dataset(p, d, 1.5, seed=1)
    q_star = new.Q_star[:, 0]
    # the minima, found here on the literal risk, from Q = Q* and Q = (1, ..., 1)
    ref = {s: _literal_minimum(Q0, new.Z, q_star, p)
           for s, Q0 in (("semantic", q_star.copy()), ("positional", np.ones(d)))}
    Qs = [ref["semantic"][0], ref["positional"][0]]
    # baseline: least squares on the stacked tokens, Y_mu^T = X_mu^T B^T for every mu
    Z, X, T = paper_literal(new.Z, q_star, p)
    Bt, *_ = np.linalg.lstsq(X.transpose(0, 2, 1).reshape(-1, 2),
                             (T @ Z).transpose(0, 2, 1).reshape(-1, 2), rcond=None)
    B_old, B_new = Bt.T, gen.linear_baseline(new)
    assert np.allclose(B_new, B_old, rtol=0, atol=1e-13)
    # test errors: 300 fresh sentences drawn here from the test stream of the seed
    Zt = np.random.default_rng(np.random.SeedSequence(1).spawn(3)[1]).standard_normal((300, 2, d)) * p.sigma
    Zt, Xt, Tt = paper_literal(Zt, q_star, p)

    def mean_se(x):
        return x.mean(), x.std(ddof=1) / np.sqrt(x.size)

    eg_old = [mean_se(paper_literal_losses(Q, Zt, q_star, p)) for Q in Qs]
    el_old = mean_se(np.sum((Tt @ Zt - B_old @ Xt) ** 2, axis=(1, 2)) / (2 * d))
    eg_new, el_new = gen.generalisation_errors(new, [Q[:, None] for Q in Qs], B_new, n_test=300,
                                               chunk_size=37)
    # same sentences, same losses by the Gram formula and explicitly: rounding only (values ~3e-3)
    for (a, sa), (b, sb) in zip(eg_old, eg_new):
        assert abs(a - b) < 1e-10 * a and abs(sa - sb) < 1e-10 * sa
    assert abs(el_old[0] - el_new[0]) < 1e-10 * el_old[0] and abs(el_old[1] - el_new[1]) < 1e-10 * el_old[1]
    # and the trained minima agree: same start, same function, L-BFGS paths equal up to rounding
    mine = gen.train_starts(new, n_test=300)
    s2 = p.sigma ** 2
    for s in ("semantic", "positional"):
        (Q, R, gnorm), b = ref[s], mine[s]
        a_m, a_theta, a_q = Q.sum() / d, s2 * Q @ q_star / d, s2 * Q @ Q / d
        assert b.converged and gnorm <= 1e-8
        assert np.allclose(b.Q[:, 0], Q, rtol=0, atol=1e-6)
        assert b.eps_t == pytest.approx(R / d, rel=1e-10)
        assert b.M[0, 0] == pytest.approx(a_m, rel=1e-6) and b.M[1, 0] == pytest.approx(-a_m, rel=1e-6)
        assert b.theta[0, 0] == pytest.approx(a_theta, rel=1e-6) and b.q[0, 0] == pytest.approx(a_q, rel=1e-6)
        assert b.eps_lin == pytest.approx(el_old[0], rel=1e-10)


def test_test_error_and_baseline_equal_literal_formulas():
    p = ModelParams(A=A3, Pi="simplex", r=2, r_t=2, omega=0.6)
    data = gen.make_dataset(p, 30, 2.0, seed=8)
    Q = np.random.default_rng(3).standard_normal((30, 2))
    B = gen.linear_baseline(data)
    # baseline: least squares on the stacked tokens, Y_mu^T = X_mu^T B^T for every mu
    X, Y = data.X(), data.Y()
    Bt, *_ = np.linalg.lstsq(X.transpose(0, 2, 1).reshape(-1, 3), Y.transpose(0, 2, 1).reshape(-1, 3),
                             rcond=None)
    assert np.allclose(B, Bt.T, rtol=0, atol=1e-12)
    # fresh sentences drawn here from the test stream of the seed, in one piece
    n_test = 500
    rng = np.random.default_rng(np.random.SeedSequence(data.seed).spawn(3)[1])
    Zt = rng.standard_normal((n_test, 3, 30)) * p.sigma
    ref = literal_losses(Q, Zt, data.Q_star, data.P, p)
    hs = Zt @ data.Q_star / np.sqrt(30)
    T = (1 - p.omega) * softmax_rows(hs @ hs.transpose(0, 2, 1)) + p.omega * np.array(A3)
    Xt = Zt + data.P / np.sqrt(30)
    ref_lin = np.sum((T @ Zt - B @ Xt) ** 2, axis=(1, 2)) / 60
    [(eg, se)], (el, sel) = gen.generalisation_errors(data, [Q], B, n_test=n_test, chunk_size=64)
    assert eg == pytest.approx(ref.mean(), rel=1e-12) and se == pytest.approx(ref.std(ddof=1) / np.sqrt(n_test), rel=1e-9)
    assert el == pytest.approx(ref_lin.mean(), rel=1e-12)


def test_baseline_is_A_without_positions_and_semantic_part():
    """omega = 1 and Pi = 0: Y = A Z and X = Z, so least squares gives B = A exactly."""
    p = ModelParams(A=A3, Pi="none", omega=1.0)
    data = gen.make_dataset(p, 30, 1.0, seed=0)
    assert np.allclose(gen.linear_baseline(data), np.array(A3), rtol=0, atol=1e-14)
    _, (el, _) = gen.generalisation_errors(data, [], gen.linear_baseline(data), n_test=100)
    assert el < 1e-25


# ----------------------------------------------------------------------------- training
def test_training_the_general_model_reaches_a_small_gradient():
    p = ModelParams(A=A3_SYM, Pi="simplex", r=2, r_t=1)
    data = gen.make_dataset(p, 60, 1.5, seed=2)
    out = gen.train_starts(data, ("semantic", "positional", "random"), n_test=200)
    for name, res in out.items():
        assert res.converged and res.grad_norm <= 1e-8, (name, res.message)
        R, G = gen.risk_and_grad(res.Q, data)
        # the reported Q is the solver's point rotated into the gauge: the max-norm of the
        # gradient grows by at most sqrt(r) (plus rounding of the rotation)
        assert np.max(np.abs(G)) <= np.sqrt(2) * 1e-8 * (1 + 1e-6) + 1e-14
        assert res.eps_t == pytest.approx(R / data.d, rel=1e-12)
        assert R < gen.risk(gen.warm_start(data, name), data)
        # reported gauge: q diagonal, decreasing; invariants consistent with the matrices
        assert abs(res.q[0, 1]) < 1e-12 and res.q[0, 0] >= res.q[1, 1]
        assert np.allclose(res.q_eigs, np.sort(np.diag(res.q)), atol=1e-14)
        assert np.allclose(res.MM, res.M @ res.M.T) and np.allclose(res.thM, res.theta @ res.M.T)
        assert res.Tr_q == pytest.approx(np.trace(res.q))
        d = res.as_dict()
        assert tuple(d) == gen.RESULT_KEYS and json.dumps(d)
    # paired: one baseline for all starts
    assert len({r.eps_lin for r in out.values()}) == 1


def test_an_unconverged_solve_is_never_reported_as_converged():
    p = ModelParams(A=A3_SYM, r=2)
    data = gen.make_dataset(p, 40, 1.0, seed=0)
    mn = gen.minimise(data, gen.warm_start(data, "random"), maxiter=2)
    assert not mn.converged and mn.grad_norm > 1e-8
    out = gen.simulate(p, 40, 1.0, "random", seeds=1, n_test=50, maxiter=2)
    assert out["converged"] is False and out["n_converged"] == 0
    assert len(out["failures"]) == 1 and "not converged" in out["failures"][0]


# ----------------------------------------------------------------------------- summaries
def test_simulate_reproduces_the_paper_summary():
    """The matrix summary (:func:`gen.simulate`) against the paper's table
    (:func:`simulate_seeds`): two tabulations of the same instances by the one simulator, so this
    checks the seed convention, the pairing, the means and the units (``m = M[0][0]``); the
    numbers themselves are checked against independent references above."""
    p = ModelParams()
    calls = []
    out = gen.simulate(p, 40, 1.0, "semantic", seeds=2, n_test=200,
                               progress=lambda k, K, s: calls.append((k, K)))
    ref = simulate_seeds(p, 40, 1.0, "semantic", 2, n_test=200)
    assert calls == [(1, 2), (2, 2)]
    json.dumps(out, allow_nan=False)                     # strict JSON: nan became null
    assert out["seeds"] == [0, 1] and len(out["instances"]) == 4 and out["failures"] == []
    assert out["converged"] and out["paired"]["positional"]["n_converged"] == 2
    # same data sets (data_seed), same starts, same minima: equal to L-BFGS rounding
    assert out["eps_t"] == pytest.approx(ref["eps_t"], rel=1e-9)
    assert out["eps_g"] == pytest.approx(ref["eps_g"], rel=1e-7)
    assert out["eps_lin"] == pytest.approx(ref["eps_lin"], rel=1e-10)
    assert out["theta"][0][0] == pytest.approx(ref["theta"], rel=1e-6)
    assert out["M"][0][0] == pytest.approx(ref["m"], rel=1e-6, abs=1e-9)
    assert out["delta_eps_t"] == pytest.approx(ref["delta_eps_t"], rel=1e-6)
    assert out["semantic_lower"] == ref["semantic_lower"]
    # matrix means and errors, entry by entry
    inst = [r for r in out["instances"] if r["start"] == "semantic"]
    mean_M = np.mean([r["M"] for r in inst], axis=0)
    assert np.allclose(out["M"], mean_M) and np.array(out["M_err"]).shape == (2, 1)


def test_simulate_single_seed_and_general_shape():
    p = ModelParams(A=A3_SYM, r=2, r_t=2)
    out = gen.simulate(p, 30, 1.0, "positional", seeds=[3], n_test=50, paired=False)
    json.dumps(out, allow_nan=False)
    assert out["eps_t_err"] is None                      # one instance: no standard error
    assert "paired" not in out and len(out["instances"]) == 1
    assert out["instances"][0]["data_seed"] == 1_000_000 * 30 + 3
    assert np.array(out["theta"]).shape == (2, 2) and np.array(out["M"]).shape == (3, 2)
    assert out["params"]["r"] == 2 and out["L"] == 3


@pytest.mark.parametrize("kwargs, name", [
    ({"d": 1}, "d"), ({"d": 2.5}, "d"), ({"alpha": 0.0}, "alpha"), ({"alpha": -1.0}, "alpha"),
    ({"alpha": 1e-3}, "alpha"), ({"start": "sideways"}, "start"), ({"start": np.ones(20)}, "start"),
    ({"n_test": 0}, "n_test"), ({"seeds": 0}, "seeds"), ({"seeds": [-1]}, "seeds"),
    ({"params": {"sigma": -1}}, "sigma"), ({"dtype": "float16"}, "dtype"),
])
def test_bad_input_is_refused_naming_the_parameter(kwargs, name):
    args = {"params": ModelParams(), "d": 20, "alpha": 1.0, "start": "semantic", "seeds": 1,
            "n_test": 10, **kwargs}
    with pytest.raises(ParameterError) as err:
        gen.simulate(**args)
    assert err.value.name == name
    if name in ("d", "alpha") or isinstance(args["start"], str) and name == "start":
        one = {k: v for k, v in args.items() if k in ("params", "d", "alpha", "start")}
        with pytest.raises(ParameterError) as err:
            gen.run(**one, seed=0, n_test=10)
        assert err.value.name == name
