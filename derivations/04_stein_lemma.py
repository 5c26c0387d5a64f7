r"""Step 4: Stein's lemma, and why no second derivative of M in h* survives.

For z ~ N(0, 1) and G growing slower than exp(z^2/2), integration by parts with
z phi(z) = -phi'(z) (phi the standard normal density) gives

    E[z G(z)] = E[G'(z)].

On the output-channel nodes of model page §4,

    w_l = sqrt(q) xi_l + s_l m,        h*_l = (theta/sqrt(q)) xi_l + c eta_l,   c = sqrt(rho - theta^2/q),

d/deta_l acts on a node function only through h*_l, so

    E[eta_l f_l] = c E[d f_l / d h*_l],
    E[xi_l f_l]  = sqrt(q) E[d f_l / d w_l] + (theta/sqrt(q)) E[d f_l / d h*_l].

In dPhi/dtheta and dPhi/dq the order parameter moves h*_l, producing E[xi_l dM/dh*_l] and
E[eta_l dM/dh*_l].  After Stein's lemma the coefficient of E[d^2 M / dh*_l^2] is
(1/2) d Var(h*_l)/dx = (1/2) d rho/dx = 0: the second derivatives cancel.  What remains,
E[d^2 M/dw_l dh*_l] = -E[d f_l/dh*_l] = -E[eta_l f_l]/c, is the theta_hat equation.
"""

import sympy as sp

from symattn.model.symbols import alpha, m, q, rho, theta, theta_hat
from symattn.symbolic.expectation import Expect
from symattn.symbolic.free_energy import derive_saddle_point

from _steps import show, same, gauss_E  # derivations/_steps.py

z, a, b = sp.symbols("z a b", real=True)
density = sp.exp(-z**2 / 2) / sp.sqrt(2 * sp.pi)


# -- 1. Stein's lemma in one dimension, by explicit integration
assert sp.simplify(sp.diff(density, z) + z * density) == 0
show("z phi(z) = -phi'(z); integrating by parts, E[z G(z)] = E[G'(z)].  Checked for G =")
for G in (z**3 - 2 * z**2 + 5 * z + 1, sp.exp(a * z), sp.sin(b * z), z**2 * sp.exp(a * z)):
    lhs = sp.integrate(z * G * density, (z, -sp.oo, sp.oo), conds="none")
    rhs = sp.integrate(sp.diff(G, z) * density, (z, -sp.oo, sp.oo), conds="none")
    assert same(lhs, rhs), G
    print(f"   {G}:  E[z G] = E[G'] = {sp.simplify(lhs)}")

# -- 2. the node map of the library is the one of the model page
eq = derive_saddle_point()
nodes, (w1, w2), (hs1, hs2), (F1, F2), M = eq.nodes, eq.w, eq.hs, eq.F, eq.M
(xi1, xi2), (eta1, eta2) = nodes.xi, nodes.eta
c = sp.sqrt(rho - theta**2 / q)
typed = {w1: sp.sqrt(q) * xi1 + m, w2: sp.sqrt(q) * xi2 - m,             # s = (+1, -1)
         hs1: theta / sp.sqrt(q) * xi1 + c * eta1, hs2: theta / sp.sqrt(q) * xi2 + c * eta2}
assert all(same(nodes.node_map[X], typed[X]) for X in typed)
show("node map (w_1, h*_1) =", sp.Matrix([nodes.node_map[w1], nodes.node_map[hs1]]))

# -- 3. Stein through the node map, on the abstract f_1 (library GaussianNodes.stein)
for e, Fl, X in ((eta1, F1, hs1), (eta2, F2, hs2)):
    lhs = nodes.stein(Expect(e * Fl))
    assert same(lhs, c * Expect(sp.Derivative(Fl, X))), f"E[eta f] for {X}"
show("E[eta_l f_l] = c E[df_l/dh*_l]; for l = 1:", nodes.stein(Expect(eta1 * F1)))
lhs = nodes.stein(Expect(xi1 * F1))
assert same(lhs, sp.sqrt(q) * Expect(sp.Derivative(F1, w1))
            + theta / sp.sqrt(q) * Expect(sp.Derivative(F1, hs1)))
show("E[xi_1 f_1] =", lhs)

# ... and on an explicit polynomial node function, by explicit Gaussian integration
f = w1**2 * hs1 + hs1**3 - 2 * w1 * hs1


def E_node(expr):
    """E over xi_1, eta_1 of a polynomial in the node symbols, through the node map."""
    return gauss_E(expr.xreplace(nodes.node_map), xi1, eta1)


assert same(E_node(eta1 * f), c * E_node(sp.diff(f, hs1)))
assert same(E_node(xi1 * f), sp.sqrt(q) * E_node(sp.diff(f, w1))
            + theta / sp.sqrt(q) * E_node(sp.diff(f, hs1)))
show("both hold for f = w_1^2 h*_1 + h*_1^3 - 2 w_1 h*_1, integrated explicitly:  E[eta_1 f] =",
     E_node(eta1 * f))

# -- 4. d E[M]/d theta and d E[M]/d q: the d^2 M/dh*^2 terms cancel
Mh1 = sp.Derivative(M, hs1)
for x in (theta, q):
    dhs = sp.diff(nodes.node_map[hs1], x)                 # = a xi_1 + b eta_1
    a_x, b_x = dhs.coeff(xi1), dhs.coeff(eta1)
    assert same(dhs, a_x * xi1 + b_x * eta1)
    assert same(a_x * theta / sp.sqrt(q) + b_x * c, sp.diff(theta**2 / q + c**2, x) / 2)
    assert same(sp.diff(theta**2 / q + c**2, x), 0), "Var(h*_l) = rho for every theta, q"
    xi_part = nodes.collect(nodes.stein(Expect(a_x * xi1 * Mh1)))
    eta_part = nodes.collect(nodes.stein(Expect(b_x * eta1 * Mh1)))
    total = nodes.collect(xi_part + eta_part)
    assert xi_part.has(sp.Derivative(M, (hs1, 2))) and eta_part.has(sp.Derivative(M, (hs1, 2)))
    assert not total.has(sp.Derivative(M, (hs1, 2))), f"d^2M/dh*^2 survives in d/d{x}"
    show(f"d/d{x}, token 1: Stein on the xi- and on the eta-part of E[dM/dh*_1 dh*_1/d{x}]",
         sp.Matrix([xi_part, eta_part]))
    show("sum: the E[d^2M/dh*_1^2] terms cancel", total)

# -- 5. the theta_hat equation, spelled out: dPhi/dtheta = -theta_hat - alpha dE[M]/dtheta = 0
#    (a) chain rule through h*_l (w does not depend on theta), as the library computes it
dEM = nodes.derivative(Expect(M), theta)
hand = sum(Expect(sp.Derivative(M, X) * sp.diff(nodes.node_map[X], theta)) for X in (hs1, hs2))
assert same(dEM, nodes.linear(hand))
#    (b) Stein's lemma: only the mixed derivatives survive
dEM = nodes.collect(nodes.stein(dEM))
mixed = {l: Expect(sp.diff(M, X, w)) for l, X, w in ((1, hs1, w1), (2, hs2, w2))}  # d^2M/dh*_l dw_l
assert dEM - (mixed[1] + mixed[2]) == 0
#    (c) envelope theorem dM/dw_l = -f_l (script 03), then E[df_l/dh*_l] = E[eta_l f_l]/c
#        (section 3 above)
dEM = dEM.xreplace({mixed[1]: -Expect(sp.Derivative(F1, hs1)),
                    mixed[2]: -Expect(sp.Derivative(F2, hs2))})
dEM = dEM.xreplace({Expect(sp.Derivative(Fl, X)): Expect(e * Fl) / c
                    for X, e, Fl in ((hs1, eta1, F1), (hs2, eta2, F2))})
assert not dEM.has(M), "derivatives of M survive"
show("dE[M]/dtheta = sum_l E[d^2M/dw_l dh*_l] = -sum_l E[df_l/dh*_l] =", dEM)
(th_hat,) = sp.solve(-theta_hat - alpha * dEM, theta_hat)
model_md = alpha * (Expect(F1 * eta1) + Expect(F2 * eta2)) / sp.sqrt(rho - theta**2 / q)
assert same(th_hat, model_md), "theta_hat differs from the model page"
assert same(eq.output[theta_hat], model_md), "derive_saddle_point().output[theta_hat] differs"
assert not same(eq.output[theta_hat], model_md * c), "mutation (no 1/c) must be rejected"
show("theta_hat = alpha E[f_1 eta_1 + f_2 eta_2] / sqrt(rho - theta^2/q) =", th_hat,
     note="(equals the model page and derive_saddle_point().output; without the 1/c it is rejected)")
print("\nstep 4: all identities hold")
