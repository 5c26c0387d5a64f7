r"""Step 6: at a fixed point, Phi = -eps_t = -(alpha E[loss(h = prox)] + lambda q / (2 sigma^2)).

Per node the Moreau envelope is the loss at the prox plus the quadratic term,

    M = loss(prox) + sum_l (prox_l - w_l)^2 / (2V) = loss(prox) + (V/2) sum_l f_l^2,

so, with the q_hat equation q_hat = alpha E[f_1^2 + f_2^2],

    alpha E[M] = alpha E[loss(prox)] + V q_hat / 2.

Substituting this and the prior block (V, m, theta, q as functions of the conjugates) into Phi
leaves Phi = -(alpha E[loss(prox)] + lambda q / (2 sigma^2)): the training loss per dimension with
the ridge penalty (lambda/2)|Q|^2 / d = lambda q / (2 sigma^2), since q = sigma^2 |Q|^2 / d.
Only the q_hat equation and the prior block are used.  The last part confirms the identity
numerically at the two branches' fixed points of the solver (symattn.numerics).
"""

import numpy as np
import sympy as sp

from symattn import ModelParams
from symattn.model.symbols import V, V_hat, alpha, lam, m, m_hat, q, q_hat, rho, sigma, theta, theta_hat
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.prox import prox
from symattn.numerics.quadrature import SobolRule
from symattn.symbolic.expectation import Expect
from symattn.symbolic.free_energy import derive_saddle_point

from _steps import show  # derivations/_steps.py

# -- 1. per node: M = loss(prox) + (V/2) sum f_l^2
P = sp.symbols("P_1 P_2", real=True)
w = sp.symbols("w_1 w_2", real=True)
loss_at_prox = sp.Symbol(r"\ell(\mathrm{prox})")
f = [(P[l] - w[l]) / V for l in range(2)]
M_node = loss_at_prox + sum((P[l] - w[l]) ** 2 for l in range(2)) / (2 * V)
assert sp.simplify(M_node - (loss_at_prox + V / 2 * (f[0] ** 2 + f[1] ** 2))) == 0
show("M = loss(prox) + sum_l (prox_l - w_l)^2/(2V) = loss(prox) + (V/2)(f_1^2 + f_2^2)")

# -- 2. average, and use q_hat = alpha E[f_1^2 + f_2^2]
E_loss = sp.Symbol(r"\mathbb{E}[\ell(\mathrm{prox})]")
E_M = E_loss + V * q_hat / (2 * alpha)
show("alpha E[M] = alpha E[loss(prox)] + V q_hat / 2, i.e. E[M] =", E_M)

# -- 3. substitute into Phi (the model page, typed) and the prior block (the model page, typed)
Dn = lam + V_hat * sigma**2
phi_md = ((V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat
          + (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * rho * sigma**2) / (2 * Dn) - alpha * E_M)
prior_md = {V: sigma**2 / Dn, m: m_hat / Dn, theta: sigma**2 * rho * theta_hat / Dn,
            q: sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho) / Dn**2}
claim = -(alpha * E_loss + lam * q / (2 * sigma**2))
show("Phi with E[M] substituted =", phi_md)
show("Phi + alpha E[loss], with the prior block substituted =",
     sp.factor((phi_md + alpha * E_loss).subs(prior_md)),
     note="= -lambda q / (2 sigma^2), since q = sigma^2 (q_hat sigma^2 + m_hat^2 + "
          "theta_hat^2 sigma^2 rho) / (lambda + V_hat sigma^2)^2")
gap = sp.simplify((phi_md - claim).subs(prior_md))
assert gap == 0, f"Phi + eps_t = {gap} at the fixed point"
show("Phi - [-(alpha E[loss] + lambda q/(2 sigma^2))] with the prior block substituted =", gap)
eq = derive_saddle_point()      # the same with the library's Phi and prior block
lib_gap = (eq.phi.subs(Expect(eq.M), E_M) - claim).subs(eq.prior)
assert sp.simplify(lib_gap) == 0
show("the same holds for derive_saddle_point().phi and .prior")

# ... the penalty's units: (lambda/2)|Q|^2/d with q = sigma^2 |Q|^2/d
Q2 = sp.Symbol("|Q|^2/d", positive=True)
assert sp.simplify(lam * Q2 / 2 - (lam * q / (2 * sigma**2)).subs(q, sigma**2 * Q2)) == 0
wrong = -(alpha * E_loss + lam * q / 2)                  # mutation: penalty lambda q / 2
assert sp.simplify((phi_md - wrong).subs(prior_md)) != 0
show("(lambda/2)|Q|^2/d = lambda q/(2 sigma^2); the unit slip lambda q/2 is rejected")

# -- 4. numerically, at the solver's fixed points (alpha = 1.3, 2^10-point Sobol rule)
params, a = ModelParams(), 1.3
sig, lam_, rho_ = params.sigma, params.lam, params.rho
rule = SobolRule(10, 0).nodes()
channel = OutputChannel(params, rule)


def logistic(x):
    return 0.5 * (1 + np.tanh(x / 2))


print("\n== numerical check at the fixed points (node map, loss and Phi typed from the model page)")
for branch in ("positional", "semantic"):
    fp = solve_branch(params, branch, a, channel, with_eps_g=False)
    assert fp.converged, fp.message
    xi, eta = rule.points[:, :2], rule.points[:, 2:]
    wn = np.sqrt(fp.q) * xi + np.array([1.0, -1.0]) * fp.m
    hs = fp.theta / np.sqrt(fp.q) * xi + np.sqrt(rho_ - fp.theta**2 / fp.q) * eta
    om, A = params.omega, params.A
    T = np.stack([(1 - om) * logistic(hs[:, l] ** 2 - hs[:, 0] * hs[:, 1]) + om * A[l][l]
                  for l in range(2)], -1)
    h = prox(wn, T, fp.V, sig).h                                        # the global minimiser
    S = np.stack([logistic(h[:, l] ** 2 - h[:, 0] * h[:, 1]) for l in range(2)], -1)
    loss = sig**2 * ((S - T) ** 2).sum(-1)
    fn = (h - wn) / fp.V
    EL, EM = rule.expect(loss), rule.expect(loss + fp.V / 2 * (fn**2).sum(-1))
    assert abs(a * rule.expect((fn**2).sum(-1)) - fp.q_hat) <= 1e-12 * fp.q_hat
    D = lam_ + fp.V_hat * sig**2
    phi = ((fp.V_hat * fp.q - fp.q_hat * fp.V) / 2 - fp.m * fp.m_hat - fp.theta * fp.theta_hat
           + (fp.q_hat * sig**2 + fp.m_hat**2 + fp.theta_hat**2 * rho_ * sig**2) / (2 * D) - a * EM)
    eps_t = a * EL + lam_ * fp.q / (2 * sig**2)
    # the identity is exact at x = prior(hats); x is off by the residual r, and the gap is linear
    # in it with coefficients V_hat/2 + lambda/(2 sigma^2), m_hat, theta_hat, q_hat
    bound = (abs(fp.V_hat) / 2 + lam_ / (2 * sig**2) + abs(fp.m_hat) + abs(fp.theta_hat)
             + abs(fp.q_hat)) * fp.residual + 1e-15
    assert abs(-phi - eps_t) <= bound, (branch, -phi, eps_t, bound)
    assert abs(-phi - fp.eps_t) <= 1e-12 * fp.eps_t, "library Phi differs from the model page's"
    print(f"   {branch:10s} m = {fp.m:.4f}, theta = {fp.theta:.4f}:  -Phi = {-phi:.12e}, "
          f"alpha E[loss] + lambda q/(2 sigma^2) = {eps_t:.12e}  (|diff| {abs(-phi - eps_t):.1e} "
          f"<= {bound:.1e})")
print("\nstep 6: all identities hold")
