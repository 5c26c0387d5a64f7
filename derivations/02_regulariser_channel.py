r"""Step 2: the regulariser ("prior") channel, from the scalar ridge problem.

Each coordinate Q of the student weight feels the ridge penalty and the conjugate fields:

    max_Q [ -(lambda + V_hat sigma^2) Q^2 / 2 + Q B ],
    B = sigma sqrt(q_hat) g + m_hat p + theta_hat sigma^2 Q*,

with g ~ N(0, 1), the positional entry p = 1 (p_1 = (1, ..., 1)) and the teacher weight
Q* ~ N(0, rho / sigma^2).  Its maximiser Q(B), the free entropy
Psi_prior = E[max_Q (...)], and the weight's moments

    q = sigma^2 E[Q^2],  m = E[p Q],  theta = sigma^2 E[Q Q*],  V = sigma^2 dQ/dB

(the order parameters of model page §3 per coordinate) give the first block of the model page
section 4.  The same block follows from stationarity of Phi in the conjugates, because
dPsi/dq_hat = V/2, dPsi/dm_hat = m, dPsi/dtheta_hat = theta, dPsi/dV_hat = -q/2.
Gaussian averages are done here by explicit integration, independently of the library.
"""

import sympy as sp

from symattn.model.symbols import (CONJUGATES, V, V_hat, lam, m, m_hat, q, q_hat, rho, sigma,
                                   theta, theta_hat)
from symattn.symbolic.free_energy import derive_saddle_point, prior_channel

from _steps import show, same, gauss_E  # derivations/_steps.py

g, z, Qw, B = sp.symbols("g z Q B", real=True)
Qs = sp.sqrt(rho) / sigma * z                      # Q* = (sqrt(rho)/sigma) z, z ~ N(0, 1)


def E_gz(expr):
    """E over independent g, z ~ N(0, 1) of a polynomial in g, z."""
    return gauss_E(expr, g, z)


Dn = lam + V_hat * sigma**2                          # the effective curvature
lib = prior_channel()

# -- 1. the scalar problem and its maximiser
objective = -Dn * Qw**2 / 2 + Qw * B
(Q_opt,) = sp.solve(sp.diff(objective, Qw), Qw)
assert same(sp.diff(objective, Qw, 2), -Dn), "concave for lambda + V_hat sigma^2 > 0: a maximum"
assert same(Q_opt, lib.weight)
show("d/dQ [-(lambda + V_hat sigma^2) Q^2/2 + Q B] = 0  =>  Q(B) =", Q_opt)

# -- 2. the free entropy: E of the maximum value over the field
field = sigma * sp.sqrt(q_hat) * g + m_hat * 1 + theta_hat * sigma**2 * Qs
max_value = sp.simplify(objective.subs(Qw, Q_opt))
assert same(max_value, B**2 / (2 * Dn))
psi = E_gz(max_value.subs(B, field))
psi_md = (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * rho * sigma**2) / (2 * Dn)  # the model page Phi
assert same(psi, psi_md) and same(psi, lib.psi)
show("max value B^2 / (2(lambda + V_hat sigma^2)), averaged over g and Q*:  Psi_prior =", psi,
     note="E[B^2] = sigma^2 q_hat + m_hat^2 + theta_hat^2 sigma^4 rho / sigma^2 "
          "(equals the term of Phi in the model page and prior_channel().psi)")

# -- 3. the weight's moments, against model page §4 (first block, typed from the page)
Qf = Q_opt.subs(B, field)
moments = {q: E_gz(sigma**2 * Qf**2), m: E_gz(1 * Qf), theta: E_gz(sigma**2 * Qf * Qs),
           V: sigma**2 * sp.diff(Q_opt, B)}
model_md = {V: sigma**2 / (lam + V_hat * sigma**2),
            m: m_hat / (lam + V_hat * sigma**2),
            theta: sigma**2 * rho * theta_hat / (lam + V_hat * sigma**2),
            q: sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho)
            / (lam + V_hat * sigma**2) ** 2}
eq = derive_saddle_point()
for k in (q, m, theta, V):
    assert same(moments[k], model_md[k]), f"moment {k} != model page"
    assert same(lib.moments[k], model_md[k]), f"prior_channel().moments[{k}] != model page"
    assert same(eq.prior[k], model_md[k]), f"derive_saddle_point().prior[{k}] != model page"
    show(f"{k} =", sp.factor(moments[k]))
print("   (each equals model page §4, prior_channel().moments and derive_saddle_point().prior)")

# -- 4. conjugate stationarity: dPsi/d(hat) are the same moments
dpsi = {q_hat: sp.diff(psi, q_hat), m_hat: sp.diff(psi, m_hat),
        theta_hat: sp.diff(psi, theta_hat), V_hat: sp.diff(psi, V_hat)}
assert same(dpsi[q_hat], model_md[V] / 2) and same(dpsi[m_hat], model_md[m])
assert same(dpsi[theta_hat], model_md[theta]) and same(dpsi[V_hat], -model_md[q] / 2)
show("dPsi/dq_hat = V/2, dPsi/dm_hat = m, dPsi/dtheta_hat = theta, dPsi/dV_hat = -q/2",
     sp.Matrix([dpsi[k] for k in CONJUGATES]))
phi_prior = (V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat + psi
(sol,) = sp.solve([sp.diff(phi_prior, k) for k in CONJUGATES], (q, m, theta, V), dict=True)
assert all(same(sol[k], model_md[k]) for k in (q, m, theta, V))
show("so dPhi/d(q_hat, m_hat, theta_hat, V_hat) = 0 reproduces the same four equations")

# -- 5. the comparison has teeth: a unit slip (q without the outer sigma^2) is rejected
wrong_q = model_md[q] / sigma**2
assert not same(moments[q], wrong_q)
show("mutation q = (q_hat sigma^2 + m_hat^2 + ...)/(lambda + V_hat sigma^2)^2 is rejected")
print("\nstep 2: all identities hold")
