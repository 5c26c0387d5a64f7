"""Shared fixtures and independent reference implementations for the theory tests.

Everything defined here is written from the model page, not from :mod:`symattn`: the logistic form of the
``L = 2`` softmax (model page §3), the node map and the hat / prior equations of the model page
section 4.  The tests use these as the independent route against which the library is compared.
Expensive library objects (a Sobol channel and the two branches' fixed points at ``alpha = 1.3``)
are built once per session.
"""

import numpy as np
import pytest

from symattn import ModelParams

#: positional signs s_l of model page §4 (p_2 = -p_1)
SIGNS = np.array([1.0, -1.0])
#: alpha at which the branch tests solve (both branches exist there on a 2^12 Sobol rule)
ALPHA = 1.3


# ----------------------------------------------------------------------------- references
def logistic(x):
    """1 / (1 + e^{-x}) without overflow (tanh form)."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, float)))


def softmax_rows(M):
    """Row softmax of a stack of square matrices ``(..., L, L)``, written out."""
    E = np.exp(M - M.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def attention_full(h):
    """``softmax(h h^T)`` for ``h`` of shape ``(..., 2)``: the full 2 x 2 matrix (model page §3)."""
    return softmax_rows(h[..., :, None] * h[..., None, :])


def teacher_diag(hs, params):
    """``(T_11, T_22)`` = (1 - omega) logistic(h*_l^2 - h*_1 h*_2) + omega A_ll (model page §3)."""
    a1 = hs[..., 0] ** 2 - hs[..., 0] * hs[..., 1]
    a2 = hs[..., 1] ** 2 - hs[..., 0] * hs[..., 1]
    om = params.omega
    return np.stack([(1 - om) * logistic(a1) + om * params.A[0][0],
                     (1 - om) * logistic(a2) + om * params.A[1][1]], axis=-1)


def moreau_objective(h1, h2, w, t, V, sigma):
    """G(h) = |h - w|^2 / (2V) + sigma^2 sum_l (logistic(h_l^2 - h_1 h_2) - T_ll)^2 (model page §4)."""
    a1 = h1 * h1 - h1 * h2
    a2 = h2 * h2 - h1 * h2
    return (((h1 - w[0]) ** 2 + (h2 - w[1]) ** 2) / (2 * V)
            + sigma**2 * ((logistic(a1) - t[0]) ** 2 + (logistic(a2) - t[1]) ** 2))


def moreau_gradient(h, w, t, V, sigma):
    """Hand-derived gradient of :func:`moreau_objective` in ``h``."""
    h1, h2 = h
    s1, s2 = logistic(h1 * h1 - h1 * h2), logistic(h2 * h2 - h1 * h2)
    c1 = 2 * sigma**2 * (s1 - t[0]) * s1 * (1 - s1)
    c2 = 2 * sigma**2 * (s2 - t[1]) * s2 * (1 - s2)
    return np.array([(h1 - w[0]) / V + c1 * (2 * h1 - h2) - c2 * h2,
                     (h2 - w[1]) / V - c1 * h1 + c2 * (2 * h2 - h1)])


def node_map(points, q, m, theta, rho):
    """``(w, h*)`` of model page §4 at nodes ``(xi_1, xi_2, eta_1, eta_2)``."""
    xi, eta = points[:, :2], points[:, 2:]
    w = np.sqrt(q) * xi + SIGNS * m
    hs = theta / np.sqrt(q) * xi + np.sqrt(rho - theta**2 / q) * eta
    return w, hs


def hats_model_md(E, x, alpha, rho):
    """The output equations of model page §4, typed from the page.

    ``E`` maps ``"f2", "f1-f2", "eta_f", "xi_f"`` to ``E[f_1^2 + f_2^2]``, ``E[f_1 - f_2]``,
    ``E[f_1 eta_1 + f_2 eta_2]``, ``E[f_1 xi_1 + f_2 xi_2]``.
    """
    q, m, theta, V = x
    q_hat = alpha * E["f2"]
    m_hat = alpha * E["f1-f2"]
    theta_hat = alpha * E["eta_f"] / np.sqrt(rho - theta**2 / q)
    V_hat = -alpha * E["xi_f"] / np.sqrt(q) + theta * theta_hat / q
    return np.array([q_hat, m_hat, theta_hat, V_hat])


def prior_model_md(hats, sigma, lam, rho):
    """The prior equations of model page §4, typed from the page."""
    q_hat, m_hat, theta_hat, V_hat = hats
    D = lam + V_hat * sigma**2
    return np.array([sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho) / D**2,
                     m_hat / D,
                     sigma**2 * rho * theta_hat / D,
                     sigma**2 / D])


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def paper_params():
    return ModelParams()


@pytest.fixture(scope="session")
def sobol12_nodes():
    from symattn.numerics.quadrature import SobolRule
    return SobolRule(12, 0).nodes()


@pytest.fixture(scope="session")
def sobol12_channel(paper_params, sobol12_nodes):
    from symattn.numerics.channel import OutputChannel
    return OutputChannel(paper_params, sobol12_nodes)


@pytest.fixture(scope="session")
def branch_points(paper_params, sobol12_channel):
    """``{branch: FixedPoint}`` at ``alpha = ALPHA`` on the 2^12 Sobol rule (solved once)."""
    from symattn.numerics.branches import solve_branch
    return {b: solve_branch(paper_params, b, ALPHA, sobol12_channel, with_eps_g=False)
            for b in ("positional", "semantic")}


def assert_one_line_error(capsys, name):
    """The CLI's contract for bad input: nothing on stdout, one line on stderr naming ``name``."""
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert name in lines[0] and "Traceback" not in err
