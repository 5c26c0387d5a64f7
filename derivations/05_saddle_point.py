r"""Step 5: stationarity of the free energy gives the full saddle-point system.

model page §4 (L = 2, s = (+1, -1)):

    Phi = (V_hat q - q_hat V)/2 - m m_hat - theta theta_hat
          + (q_hat sigma^2 + m_hat^2 + theta_hat^2 rho sigma^2) / (2 (lambda + V_hat sigma^2))
          - alpha E[M(w, h*, V)].

dPhi/d(conjugates) = 0 gives the prior block (step 2).  dPhi/d(q, m, theta, V) = 0 needs
d E[M]/dx, done in four moves, each printed below:

 (a) chain rule through the node map w_l(xi; q, m), h*_l(xi, eta; q, theta);
 (b) envelope theorem dM/dw_l = -f_l, dM/dV = -(f_1^2 + f_2^2)/2 (step 3);
 (c) Stein's lemma on every E[z dM/dh*_l] (step 4): the d^2M/dh*^2 terms cancel;
 (d) envelope again on d^2M/dw_l dh*_l = -df_l/dh*_l, and E[df_l/dh*_l] = E[eta_l f_l]/c,
     c = sqrt(rho - theta^2/q).

The four resulting equations, solved for the conjugates, are compared term by term with
model page §4 (typed below) and with derive_saddle_point().output / .prior.
"""

import sympy as sp

from symattn.model.symbols import (CONJUGATES, ORDER_PARAMS, V, V_hat, alpha, lam, m, m_hat, q,
                                   q_hat, rho, sigma, theta, theta_hat)
from symattn.symbolic.expectation import Expect
from symattn.symbolic.free_energy import derive_saddle_point

from _steps import show, same  # derivations/_steps.py

eq = derive_saddle_point()
nodes, M, (F1, F2), w, hs = eq.nodes, eq.M, eq.F, eq.w, eq.hs
(xi1, xi2), (eta1, eta2) = nodes.xi, nodes.eta
c = sp.sqrt(rho - theta**2 / q)
Dn = lam + V_hat * sigma**2

# -- 1. Phi, typed from model page §4
phi = ((V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat
       + (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * rho * sigma**2) / (2 * Dn) - alpha * Expect(M))
assert same(phi, eq.phi), "derive_saddle_point().phi differs from the model page"
show("Phi (model page §4; equals derive_saddle_point().phi) =", phi)

# -- 2. conjugate stationarity: the prior block (derived in detail in step 2)
prior_md = {V: sigma**2 / Dn, m: m_hat / Dn, theta: sigma**2 * rho * theta_hat / Dn,
            q: sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho) / Dn**2}
(prior,) = sp.solve([sp.diff(phi, k) for k in CONJUGATES], ORDER_PARAMS, dict=True)
for k in ORDER_PARAMS:
    assert same(prior[k], prior_md[k]) and same(eq.prior[k], prior_md[k]), k
show("dPhi/d(q_hat, m_hat, theta_hat, V_hat) = 0  =>  (q, m, theta, V) =",
     sp.Matrix([prior[k] for k in ORDER_PARAMS]))


# -- 3. order-parameter stationarity, move by move
def envelope(expr):
    """(b), (d): a derivative of M in w_l is -(that derivative of f_l); in V it is -sum f^2/2."""
    def rule(d):
        if d.expr != M:
            return d
        rest = list(d.variables)
        for wl, Fl in zip(w, (F1, F2)):
            if wl in rest:
                rest.remove(wl)
                return sp.diff(-Fl, *rest) if rest else -Fl
        return -(F1**2 + F2**2) / 2 if rest == [V] else d
    return nodes.linear(expr.replace(lambda e: isinstance(e, sp.Derivative), rule))


def has_dM_dhs(G):
    return any(d.expr == M and set(d.variables) & set(hs) for d in G.atoms(sp.Derivative))


eta_form = {Expect(sp.Derivative(F1, hs[0])): Expect(eta1 * F1) / c,     # (d), Stein backwards
            Expect(sp.Derivative(F2, hs[1])): Expect(eta2 * F2) / c}
for key, value in eta_form.items():
    assert same(nodes.stein(value), key), "E[eta_l f_l] = c E[df_l/dh*_l]"

node_map_md = {w[0]: sp.sqrt(q) * xi1 + m, w[1]: sp.sqrt(q) * xi2 - m,    # the model page, s = (+1, -1)
               hs[0]: theta / sp.sqrt(q) * xi1 + c * eta1, hs[1]: theta / sp.sqrt(q) * xi2 + c * eta2}
stationarity = {}
for x in ORDER_PARAMS:
    d = nodes.derivative(phi, x)                                         # (a)
    chain = sum(Expect(sp.Derivative(M, X) * sp.diff(Xx, x)) for X, Xx in node_map_md.items())
    chain += Expect(sp.Derivative(M, V)) if x == V else 0
    assert same(d, nodes.linear(sp.diff(phi.subs(Expect(M), 0), x) - alpha * chain)), x
    show(f"dPhi/d{x}, chain rule through the node map:", d)
    d = envelope(d)                                                      # (b)
    d = nodes.collect(nodes.stein(d, select=has_dM_dhs))                 # (c)
    assert not any(dv.expr == M and len([v for v in dv.variables if v in hs]) == 2
                   for dv in d.atoms(sp.Derivative)), "d^2M/dh*^2 must cancel"
    d = nodes.collect(envelope(d).xreplace(eta_form))                    # (d)
    assert not d.has(M), f"dPhi/d{x}: derivatives of M survive"
    assert set(nodes.atoms(d)) <= set(eq.atoms)
    stationarity[x] = d
    show(f"... after envelope theorem and Stein's lemma, dPhi/d{x} = 0 reads", sp.Eq(d, 0))

(output,) = sp.solve(list(stationarity.values()), CONJUGATES, dict=True)

# -- 4. term by term against model page §4 (typed from the page) and the library
E = Expect
th_hat_md = alpha * E(F1 * eta1 + F2 * eta2) / sp.sqrt(rho - theta**2 / q)
output_md = {q_hat: alpha * E(F1**2 + F2**2),
             m_hat: alpha * E(F1 - F2),
             theta_hat: th_hat_md,
             V_hat: -alpha * E(F1 * xi1 + F2 * xi2) / sp.sqrt(q) + theta * th_hat_md / q}
for k in CONJUGATES:
    md = nodes.linear(output_md[k])
    assert same(output[k], md), f"{k}: derived != model page"
    assert same(eq.output[k], md), f"{k}: derive_saddle_point().output != model page"
    show(f"{k} =", output[k])
print("   (each equals model page §4 and derive_saddle_point().output)")

# -- 5. the comparison has teeth: V_hat without the theta theta_hat / q term is rejected
wrong = nodes.linear(-alpha * E(F1 * xi1 + F2 * xi2) / sp.sqrt(q))
assert not same(output[V_hat], wrong)
assert not same(eq.output[V_hat], wrong)
show("mutation V_hat = -alpha E[f_1 xi_1 + f_2 xi_2]/sqrt(q) (no theta theta_hat/q) is rejected")
print("\nstep 5: all identities hold")
