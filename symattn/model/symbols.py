r"""The SymPy symbols of the model page (docs/model.md), one place, named as the paper writes them.

Order parameters (rank 1, model page §3) and their conjugates:

==============  ===============================================  ==================
symbol          meaning                                          JSON key
==============  ===============================================  ==================
``q``           student pre-activation variance sigma^2|Q|^2/d   ``q``
``m``           positional overlap p_1.Q/d                       ``m``
``theta``       semantic overlap sigma^2 Q.Q*/d                  ``theta``
``V``           response ("chi")                                 ``V``
``q_hat`` ...   conjugates                                       ``q_hat`` ...
``rho``         teacher variance sigma^2|Q*|^2/d = sigma^2       --
==============  ===============================================  ==================

Node variables of the output channel: ``xi_l, eta_l`` (independent standard Gaussians),
the student mean pre-activation ``w_l``, the teacher pre-activation ``hs_l`` (h*_l) and
the student pre-activation ``h_l`` (the variable of the Moreau objective).
"""

from __future__ import annotations

import sympy as sp

# model parameters
sigma, lam, rho, alpha = sp.symbols("sigma lambda rho alpha", positive=True)
omega = sp.Symbol("omega", nonnegative=True)

# order parameters and conjugates
q, V = sp.symbols("q V", positive=True)
m, theta = sp.symbols("m theta", real=True)
q_hat = sp.Symbol(r"\hat{q}", real=True)
m_hat = sp.Symbol(r"\hat{m}", real=True)
theta_hat = sp.Symbol(r"\hat{\theta}", real=True)
V_hat = sp.Symbol(r"\hat{V}", real=True)

ORDER_PARAMS = (q, m, theta, V)
CONJUGATES = (q_hat, m_hat, theta_hat, V_hat)
#: python names used for keys, lambdify argument names and JSON
NAMES = {q: "q", m: "m", theta: "theta", V: "V", q_hat: "q_hat", m_hat: "m_hat",
         theta_hat: "theta_hat", V_hat: "V_hat", sigma: "sigma", lam: "lam", rho: "rho",
         alpha: "alpha", omega: "omega"}


def node_symbols(L: int):
    """Per-token symbols ``(xi, eta, w, hs, h)`` for a sentence of ``L`` tokens."""
    xi = sp.symbols(f"xi_1:{L + 1}", real=True)
    eta = sp.symbols(f"eta_1:{L + 1}", real=True)
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    hs = sp.symbols(f"h^*_1:{L + 1}", real=True)
    h = sp.symbols(f"h_1:{L + 1}", real=True)
    return xi, eta, w, hs, h


def attention_matrix_symbols(L: int, name: str = "A") -> sp.Matrix:
    """An ``L x L`` matrix of real symbols ``name_ij``."""
    return sp.Matrix(L, L, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))
