r"""The naive baseline: how the saddle-point equations are solved today.

This is a deliberately plain, notebook-style solver for the saddle-point equations of model page §4
(L = 2, r = r_t = 1, p_2 = -p_1).  It is the reference point for symattn's benchmarks (time and answer) and an
independent cross-check: it is written by hand from the model page and imports nothing from ``symattn`` except
:class:`symattn.model.ModelParams` (for sigma, lam, omega, A and rho = sigma^2).

What makes it "naive" (on purpose -- do not optimise these away):

* **Prox**: at every quadrature node, ``scipy.optimize.minimize`` (default method, BFGS, finite-difference
  gradient) of

      sum_l (h_l - w_l)^2 / (2 V) + loss(h, h*)

  from the single start ``h = w``.  No multi-start, so where the Moreau objective has several local minima
  the prox is whichever one BFGS falls into, not necessarily the global one.
* **Quadrature**: a fixed degree-7 cubature: the 4 x 4 Gauss-Hermite product rule for xi = (xi1, xi2) and the
  same for eta = (eta1, eta2), nested: 16 x 16 = 256 nodes (probabilists' Hermite,
  ``numpy.polynomial.hermite_e.hermegauss(4)``, weights normalised to sum to 1).
* **Redundant work**: each of the four hat integrals is its own function and recomputes the prox at all 256
  nodes, i.e. 4 x 256 = 1024 BFGS solves per iteration.
* **Iteration**: plain damped fixed-point iteration on x = (q, m, theta, V).

Formulas (model page §3-§4), with s = (+1, -1) and rho = sigma^2:

    loss(h, h*) = sigma^2 [ (S11(h) - T11(h*))^2 + (S22(h) - T22(h*))^2 ]   (= (sigma^2/2) ||S - T||_F^2)
    S11 = logistic(h1^2 - h1 h2),  S22 = logistic(h2^2 - h1 h2)
    T11 = (1 - omega) logistic(h*1^2 - h*1 h*2) + omega A11,  T22 likewise with A22

    w_l  = sqrt(q) xi_l + s_l m
    h*_l = (theta / sqrt(q)) xi_l + sqrt(rho - theta^2 / q) eta_l
    f_l  = (prox_l - w_l) / V

    q_hat     = alpha E[f1^2 + f2^2]
    m_hat     = alpha E[f1 - f2]
    theta_hat = alpha E[f1 eta1 + f2 eta2] / sqrt(rho - theta^2 / q)
    V_hat     = -alpha E[f1 xi1 + f2 xi2] / sqrt(q) + theta theta_hat / q

    V     = sigma^2 / (lam + V_hat sigma^2)
    m     = m_hat / (lam + V_hat sigma^2)
    theta = sigma^2 rho theta_hat / (lam + V_hat sigma^2)
    q     = sigma^2 (q_hat sigma^2 + m_hat^2 + theta_hat^2 sigma^2 rho) / (lam + V_hat sigma^2)^2

    Phi = (V_hat q - q_hat V)/2 - m m_hat - theta theta_hat
          + (q_hat sigma^2 + m_hat^2 + theta_hat^2 rho sigma^2) / (2 (lam + V_hat sigma^2))
          - alpha E[M],        M = min_h [ sum_l (h_l - w_l)^2/(2V) + loss(h, h*) ],     eps_t = -Phi

    eps_g = E[ loss(h, h*) ],  h_l = s_l m + sqrt(q) u_l,
                               h*_l = (theta/sqrt(q)) u_l + sqrt(rho - theta^2/q) v_l,   u, v ~ N(0, I_2)

Run ``python benchmarks/naive.py`` for both branches at the paper's parameters and alpha = 1.24.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.optimize import minimize

from symattn.model import ModelParams

__all__ = ["naive_fixed_point", "POSITIONAL_INIT", "SEMANTIC_INIT", "cubature_nodes"]

#: Initial condition a notebook uses for the positional branch (theta = 0, m != 0).
POSITIONAL_INIT = {"q": 1.0, "m": 1.0, "theta": 0.0, "V": 10.0}
#: Initial condition a notebook uses for the semantic branch (m = 0, 0 < theta < sqrt(q rho)).
SEMANTIC_INIT = {"q": 1.0, "m": 0.0, "theta": 0.25, "V": 10.0}

#: Signs of the positional encodings, p_2 = -p_1.
S = np.array([1.0, -1.0])


# --------------------------------------------------------------------------------------------------
# The loss of one sentence in the high-dimensional limit
# --------------------------------------------------------------------------------------------------

def logistic(z):
    """logistic(z) = 1 / (1 + exp(-z))."""
    return 1.0 / (1.0 + np.exp(-z))


def student_diag(h):
    """(S11, S22) of S(h) = softmax(h h^T):  S11 = logistic(h1^2 - h1 h2),  S22 = logistic(h2^2 - h1 h2)."""
    h1, h2 = h[0], h[1]
    return logistic(h1 * h1 - h1 * h2), logistic(h2 * h2 - h1 * h2)


def teacher_diag(hs, params):
    """(T11, T22) of T(h*) = (1 - omega) softmax(h* h*^T) + omega A."""
    s11, s22 = student_diag(hs)
    om = params.omega
    return (1.0 - om) * s11 + om * params.A[0][0], (1.0 - om) * s22 + om * params.A[1][1]


def loss(h, hs, params):
    """loss(h, h*) = sigma^2 [(S11 - T11)^2 + (S22 - T22)^2] = (sigma^2/2) ||S(h) - T(h*)||_F^2.

    The off-diagonal terms equal the diagonal ones up to sign because the rows of S and T sum to one.
    """
    s11, s22 = student_diag(h)
    t11, t22 = teacher_diag(hs, params)
    return params.sigma ** 2 * ((s11 - t11) ** 2 + (s22 - t22) ** 2)


# --------------------------------------------------------------------------------------------------
# Moreau envelope / prox, single-start BFGS
# --------------------------------------------------------------------------------------------------

class _Counter:
    """Counts the number of prox (BFGS) solves."""

    def __init__(self):
        self.n = 0


def moreau_objective(h, w, hs, V, params):
    """sum_l (h_l - w_l)^2 / (2 V) + loss(h, h*)."""
    return np.sum((h - w) ** 2) / (2.0 * V) + loss(h, hs, params)


def prox(w, hs, V, params, counter):
    """Return (prox, M): BFGS minimiser of the Moreau objective from the single start h = w, and its value.

    Naive on purpose: a local minimiser, whichever basin h = w lies in; no check that it is global.
    """
    res = minimize(moreau_objective, x0=np.array(w, dtype=float), args=(w, hs, V, params))
    counter.n += 1
    return res.x, res.fun


# --------------------------------------------------------------------------------------------------
# Cubature: 4x4 Gauss-Hermite for xi, the same for eta, nested (256 nodes)
# --------------------------------------------------------------------------------------------------

def cubature_nodes():
    """Nodes and weights of the nested 4x4 (xi) x 4x4 (eta) Gauss-Hermite product rule for N(0, I_4).

    Returns ``xi`` (256, 2), ``eta`` (256, 2), ``weights`` (256,) with weights summing to 1.  Each 2-D factor
    integrates polynomials of degree <= 7 in each variable exactly against the standard Gaussian.
    """
    x, wt = hermegauss(4)
    wt = wt / wt.sum()
    # 2-D product rule
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    W2 = np.outer(wt, wt).ravel()
    nodes2 = np.column_stack([X1.ravel(), X2.ravel()])  # (16, 2)
    # nest: xi outer, eta inner
    xi = np.repeat(nodes2, len(nodes2), axis=0)
    eta = np.tile(nodes2, (len(nodes2), 1))
    weights = np.repeat(W2, len(W2)) * np.tile(W2, len(W2))
    return xi, eta, weights


XI, ETA, WEIGHTS = cubature_nodes()


def node_map(q, m, theta, rho, xi=XI, eta=ETA):
    """w_l = sqrt(q) xi_l + s_l m;  h*_l = (theta/sqrt(q)) xi_l + sqrt(rho - theta^2/q) eta_l."""
    w = np.sqrt(q) * xi + S * m
    hs = (theta / np.sqrt(q)) * xi + np.sqrt(rho - theta ** 2 / q) * eta
    return w, hs


def _f_at_nodes(x, params, counter):
    """f_l = (prox_l - w_l) / V at every node: one BFGS solve per node (256 solves)."""
    q, m, theta, V = x["q"], x["m"], x["theta"], x["V"]
    w, hs = node_map(q, m, theta, params.rho)
    f = np.empty_like(w)
    for i in range(len(w)):
        h, _ = prox(w[i], hs[i], V, params, counter)
        f[i] = (h - w[i]) / V
    return f


# --------------------------------------------------------------------------------------------------
# The four hat integrals ("output channel"), each recomputing the prox
# --------------------------------------------------------------------------------------------------

def q_hat_integral(x, params, alpha, counter):
    """q_hat = alpha E[f1^2 + f2^2]."""
    f = _f_at_nodes(x, params, counter)
    return alpha * np.sum(WEIGHTS * (f[:, 0] ** 2 + f[:, 1] ** 2))


def m_hat_integral(x, params, alpha, counter):
    """m_hat = alpha E[f1 - f2]."""
    f = _f_at_nodes(x, params, counter)
    return alpha * np.sum(WEIGHTS * (f[:, 0] - f[:, 1]))


def theta_hat_integral(x, params, alpha, counter):
    """theta_hat = alpha E[f1 eta1 + f2 eta2] / sqrt(rho - theta^2/q)."""
    f = _f_at_nodes(x, params, counter)
    spread = np.sqrt(params.rho - x["theta"] ** 2 / x["q"])
    return alpha * np.sum(WEIGHTS * (f[:, 0] * ETA[:, 0] + f[:, 1] * ETA[:, 1])) / spread


def V_hat_integral(x, params, alpha, theta_hat, counter):
    """V_hat = -alpha E[f1 xi1 + f2 xi2] / sqrt(q) + theta theta_hat / q."""
    f = _f_at_nodes(x, params, counter)
    e = np.sum(WEIGHTS * (f[:, 0] * XI[:, 0] + f[:, 1] * XI[:, 1]))
    return -alpha * e / np.sqrt(x["q"]) + x["theta"] * theta_hat / x["q"]


def hat_update(x, params, alpha, counter):
    """All four conjugates at x = (q, m, theta, V); 4 x 256 prox solves."""
    q_hat = q_hat_integral(x, params, alpha, counter)
    m_hat = m_hat_integral(x, params, alpha, counter)
    theta_hat = theta_hat_integral(x, params, alpha, counter)
    V_hat = V_hat_integral(x, params, alpha, theta_hat, counter)
    return {"q_hat": q_hat, "m_hat": m_hat, "theta_hat": theta_hat, "V_hat": V_hat}


# --------------------------------------------------------------------------------------------------
# Prior channel (closed form)
# --------------------------------------------------------------------------------------------------

def prior_update(hats, params):
    """V = s2/(lam + V_hat s2); m = m_hat/(lam + V_hat s2); theta = s2 rho theta_hat/(lam + V_hat s2);
    q = s2 (q_hat s2 + m_hat^2 + theta_hat^2 s2 rho)/(lam + V_hat s2)^2, with s2 = sigma^2."""
    s2, rho, lam = params.sigma ** 2, params.rho, params.lam
    D = lam + hats["V_hat"] * s2
    return {
        "q": s2 * (hats["q_hat"] * s2 + hats["m_hat"] ** 2 + hats["theta_hat"] ** 2 * s2 * rho) / D ** 2,
        "m": hats["m_hat"] / D,
        "theta": s2 * rho * hats["theta_hat"] / D,
        "V": s2 / D,
    }


# --------------------------------------------------------------------------------------------------
# Free energy and test error at the end
# --------------------------------------------------------------------------------------------------

def moreau_expectation(x, params, counter):
    """E[M(xi, eta)] on the same cubature, M from the same single-start BFGS prox (256 solves)."""
    w, hs = node_map(x["q"], x["m"], x["theta"], params.rho)
    M = np.empty(len(w))
    for i in range(len(w)):
        _, M[i] = prox(w[i], hs[i], x["V"], params, counter)
    return np.sum(WEIGHTS * M)


def free_entropy(x, hats, params, alpha, counter):
    """Phi = (V_hat q - q_hat V)/2 - m m_hat - theta theta_hat
             + (q_hat s2 + m_hat^2 + theta_hat^2 rho s2)/(2 (lam + V_hat s2)) - alpha E[M];  eps_t = -Phi."""
    s2, rho, lam = params.sigma ** 2, params.rho, params.lam
    q, m, theta, V = x["q"], x["m"], x["theta"], x["V"]
    qh, mh, th, Vh = hats["q_hat"], hats["m_hat"], hats["theta_hat"], hats["V_hat"]
    EM = moreau_expectation(x, params, counter)
    return ((Vh * q - qh * V) / 2 - m * mh - theta * th
            + (qh * s2 + mh ** 2 + th ** 2 * rho * s2) / (2 * (lam + Vh * s2))
            - alpha * EM)


def generalisation_error(x, params):
    """eps_g = E[loss(h, h*)] = (sigma^2/2) E||S(h) - T(h*)||_F^2 with h_l = s_l m + sqrt(q) u_l,
    h*_l = (theta/sqrt(q)) u_l + sqrt(rho - theta^2/q) v_l, on the same 256-node rule (u = xi, v = eta)."""
    h, hs = node_map(x["q"], x["m"], x["theta"], params.rho)
    return np.sum(WEIGHTS * loss(h.T, hs.T, params))


# --------------------------------------------------------------------------------------------------
# Damped fixed-point iteration
# --------------------------------------------------------------------------------------------------

_KEYS = ("q", "m", "theta", "V")


def _valid(x, params):
    return (np.all(np.isfinite([x[k] for k in _KEYS])) and x["q"] > 0 and x["V"] > 0
            and x["theta"] ** 2 < x["q"] * params.rho)


def naive_fixed_point(params, alpha, init, damping=0.5, tol=1e-4, max_iter=500, progress=False) -> dict:
    """Solve the saddle-point equations by damped iteration, the naive way.

    x_new = (1 - damping) x + damping T(x) on x = (q, m, theta, V), with T = prior_update o hat_update.
    Stops when the undamped residual max_k |T(x)_k - x_k| < tol (converged = True) or after max_iter
    iterations (converged = False).  The reported order parameters are the last x at which T was evaluated
    (so ``residual`` is |T(x) - x| at the reported x), with the conjugates computed there.

    Returns a dict with q, m, theta, V, q_hat, m_hat, theta_hat, V_hat, eps_t (= -Phi), eps_g, residual,
    iterations, converged, n_prox_solves, wall_time (seconds), message.
    """
    t0 = time.perf_counter()
    counter = _Counter()
    x = {k: float(init[k]) for k in _KEYS}
    if not _valid(x, params):
        raise ValueError(f"invalid init {x}: need q > 0, V > 0, theta^2 < q rho")
    hats, residual, converged, message = None, np.inf, False, "max_iter reached"
    it = 0
    for it in range(1, max_iter + 1):
        hats = hat_update(x, params, alpha, counter)
        Tx = prior_update(hats, params)
        residual = max(abs(Tx[k] - x[k]) for k in _KEYS)
        if progress:
            print(f"  it {it:3d}  q={x['q']:.6f} m={x['m']:.6f} theta={x['theta']:.6f} V={x['V']:.4f}"
                  f"  res={residual:.2e}  ({time.perf_counter() - t0:.1f}s)", flush=True)
        if residual < tol:
            converged, message = True, "converged"
            break
        x_new = {k: (1.0 - damping) * x[k] + damping * Tx[k] for k in _KEYS}
        if not _valid(x_new, params):
            message = f"iterate left the domain at iteration {it}: {x_new}"
            break
        x = x_new

    eps_t = -free_entropy(x, hats, params, alpha, counter)
    eps_g = generalisation_error(x, params)
    out = dict(x)
    out.update(hats)
    out.update(eps_t=float(eps_t), eps_g=float(eps_g), residual=float(residual), iterations=it,
               converged=converged, n_prox_solves=counter.n, wall_time=time.perf_counter() - t0,
               message=message)
    return out


if __name__ == "__main__":
    import sys

    params = ModelParams()
    alpha = 1.24
    verbose = "-v" in sys.argv
    print(f"naive baseline: sigma={params.sigma} lam={params.lam} omega={params.omega} A={params.A} "
          f"alpha={alpha}; 4x4 x 4x4 Gauss-Hermite (256 nodes), single-start BFGS prox, damping 0.5")
    rows = []
    for name, init in (("positional", POSITIONAL_INIT), ("semantic", SEMANTIC_INIT)):
        r = naive_fixed_point(params, alpha, init, progress=verbose)
        rows.append((name, r))
        print(f"{name}: done in {r['wall_time']:.1f} s ({r['message']})", flush=True)
    hdr = (f"{'branch':<11}{'q':>11}{'m':>11}{'theta':>11}{'V':>10}{'eps_t':>11}{'eps_g':>11}"
           f"{'iter':>6}{'conv':>6}{'residual':>10}{'prox':>8}{'time[s]':>9}")
    print(hdr)
    print("-" * len(hdr))
    for name, r in rows:
        print(f"{name:<11}{r['q']:11.6f}{r['m']:11.6f}{r['theta']:11.6f}{r['V']:10.4f}{r['eps_t']:11.6f}"
              f"{r['eps_g']:11.6f}{r['iterations']:6d}{str(r['converged']):>6}{r['residual']:10.1e}"
              f"{r['n_prox_solves']:8d}{r['wall_time']:9.1f}")
