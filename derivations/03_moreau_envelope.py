r"""Step 3: the Moreau envelope, the prox optimality condition and the envelope theorem.

For any loss ell(h, h*) (here an abstract SymPy Function) and L = 2 tokens (model page §4)

    G(h; w, h*, V) = sum_l (h_l - w_l)^2 / (2V) + ell(h, h*),
    M(w, h*, V) = min_h G = G(prox; w, h*, V),      f_l = (prox_l - w_l) / V.

The prox satisfies the optimality condition dG/dh_l = 0 at h = prox.  Differentiating
M = G(prox(x); x) by the chain rule, every dprox_l/dx is multiplied by dG/dh_l at the prox,
which is zero; what is left is the explicit partial derivative (envelope theorem):

    dM/dw_l = -f_l,        dM/dV = -sum_l f_l^2 / 2,        dM/dh*_l = d ell/dh*_l at prox.

The last part checks this numerically for the actual attention loss at one node, by 40-digit
finite differences of M computed with a global minimisation (grid search + Newton in mpmath).
"""

import itertools

import mpmath
import numpy as np
import sympy as sp

from symattn.model.symbols import V, omega, sigma
from symattn.symbolic.attention import loss_L2_closed_form
from symattn.symbolic.moreau import MoreauObjective, Prox, envelope_derivatives

from _steps import show  # derivations/_steps.py

h = sp.symbols("h_1 h_2", real=True)
w = sp.symbols("w_1 w_2", real=True)
hs = sp.symbols("h^*_1 h^*_2", real=True)
ell = sp.Function(r"\ell")(*h, *hs)

# -- 1. the Moreau objective and the optimality condition of the prox
G = sum((h[l] - w[l]) ** 2 for l in range(2)) / (2 * V) + ell
grad = [sp.diff(G, hl) for hl in h]
show("Moreau objective G(h) =", G)
show("optimality at the prox: dG/dh_l = (h_l - w_l)/V + d ell/dh_l = 0, i.e. "
     "f_l = -d ell/dh_l at h = prox", sp.Matrix(grad))

# -- 2. chain rule through an abstract prox P_l(w, h*, V)
args = (*w, *hs, V)
P = [sp.Function(f"P_{l + 1}")(*args) for l in range(2)]
at_prox = dict(zip(h, P))
M = G.subs(at_prox)
optimality = [gl.subs(at_prox) for gl in grad]
f = [(P[l] - w[l]) / V for l in range(2)]
f_sym = sp.symbols("f_1 f_2", real=True)
in_f = {P[l]: w[l] + V * f_sym[l] for l in range(2)}      # for display: P_l = w_l + V f_l
envelope = {}
for x in (*w, V, *hs):
    dM = sp.expand(sp.diff(M, x))
    if x == w[0]:
        dP = [sp.diff(Pl, x) for Pl in P]
        show("chain rule: dM/dw_1 =", sp.collect(dM, dP))
    for l in range(2):
        coeff = dM.coeff(sp.diff(P[l], x))
        assert sp.simplify(coeff - optimality[l]) == 0, f"coefficient of dP_{l + 1}/d{x}"
        dM = sp.expand(dM - coeff * sp.diff(P[l], x))
    envelope[x] = dM
    if x == w[0]:
        show("the coefficient of each dP_l/dw_1 is exactly dG/dh_l at the prox (zero), "
             "so dM/dw_1 =", sp.simplify(dM.subs(in_f)))
assert all(sp.simplify(envelope[w[l]] + f[l]) == 0 for l in range(2))
assert sp.simplify(envelope[V] + (f[0] ** 2 + f[1] ** 2) / 2) == 0
show("likewise dM/dw_2 = -f_2, and dM/dV =", sp.expand(envelope[V].subs(in_f)))
show("dM/dh*_1 keeps only the explicit dependence, d ell/dh*_1 at the prox (SymPy writes it as "
     "a Subs); Stein's lemma deals with it in step 4:",
     envelope[hs[0]])

# -- 3. the library's envelope_derivatives returns the same
lib = envelope_derivatives(MoreauObjective(h=h, w=w, loss=ell), [*w, V])
to_P = {Prox(l + 1, *args): P[l] for l in range(2)}
for x in (*w, V):
    assert sp.simplify(lib[x].xreplace(to_P) - envelope[x]) == 0, f"library dM/d{x} differs"
show("symattn.symbolic.moreau.envelope_derivatives gives the same three derivatives")

# -- 4. numerically, for the attention loss at one node (paper parameters), at 40 digits
mpmath.mp.dps = 40
A11, A22 = sp.symbols("A_11 A_22")
A = sp.Matrix([[A11, 1 - A11], [1 - A22, A22]])
obj = MoreauObjective(h=h, w=w, loss=loss_L2_closed_form(h, hs, A))
params = (*w, *hs, V, sigma, omega, A11, A22)
mp_mods = [{"Logistic": lambda x: 1 / (1 + mpmath.exp(-x))}, "mpmath"]
G_mp = sp.lambdify((*h, *params), obj.expr, modules=mp_mods)
grad_mp = sp.lambdify((*h, *params), obj.gradient(), modules=mp_mods)
hess_mp = sp.lambdify((*h, *params), obj.hessian(), modules=mp_mods)
G_np = sp.lambdify((*h, *params), obj.expr, modules=[{"Logistic": lambda x: 1 / (1 + np.exp(-x))},
                                                     "numpy"])
node = [mpmath.mpf(x) for x in ("0.05", "-0.05", "0.8", "-0.6", "15", "0.5", "0.3", "0.6", "0.6")]


def newton(h0, prm):
    x = mpmath.matrix(h0)
    for _ in range(60):
        step = mpmath.lu_solve(mpmath.matrix(hess_mp(*x, *prm)), mpmath.matrix(grad_mp(*x, *prm)))
        x -= step
        if mpmath.norm(step) < mpmath.mpf(10) ** -35:
            return x
    raise RuntimeError("Newton did not converge")


def local_minima(prm):
    """All local minima: Newton from every local minimum of G on a 0.05 grid over [-5, 5]^2.

    Enough for the global one: G(w) = loss(w) <= 2 sigma^2 = 1/2, so the global minimiser has
    |h - w|^2 / (2V) <= 1/2, i.e. |h - w| <= sqrt(V) < 4, inside the grid for |w| < 1.
    """
    grid = np.linspace(-5, 5, 201)
    H1, H2 = np.meshgrid(grid, grid, indexing="ij")
    Gg = G_np(H1, H2, *[float(p) for p in prm])
    found = []
    for i, j in itertools.product(range(1, 200), repeat=2):
        if Gg[i, j] <= Gg[i - 1:i + 2, j - 1:j + 2].min():
            x = newton([H1[i, j], H2[i, j]], prm)
            Hx = mpmath.matrix(hess_mp(*x, *prm))
            is_min = Hx[0, 0] > 0 and mpmath.det(Hx) > 0       # Newton may also find saddles
            if is_min and all(mpmath.norm(x - y) > 1e-20 for y in found):
                found.append(x)
    return sorted(found, key=lambda x: G_mp(*x, *prm))


minima = local_minima(node)
values = [G_mp(*x, *node) for x in minima]
assert len(minima) >= 2, "expected a non-convex objective at this node"
prox = minima[0]
print(f"\n== node w = (0.05, -0.05), h* = (0.8, -0.6), V = 15, paper parameters: {len(minima)} "
      f"local minima of G;\nthe global one (the prox) is ({mpmath.nstr(prox[0], 8)}, "
      f"{mpmath.nstr(prox[1], 8)}), {mpmath.nstr(values[1] - values[0], 3)} below the next")


def M_of(prm, start):
    return G_mp(*newton(start, prm), *prm)     # the global minimum persists under a tiny shift


delta = mpmath.mpf(10) ** -10
for k, name in ((0, "w_1"), (1, "w_2"), (4, "V")):
    up, down = list(node), list(node)
    up[k] += delta
    down[k] -= delta
    fd = (M_of(up, prox) - M_of(down, prox)) / (2 * delta)
    fl = [(prox[l] - node[l]) / node[4] for l in range(2)]
    exact = -fl[k] if k < 2 else -(fl[0] ** 2 + fl[1] ** 2) / 2
    # central difference: truncation delta^2 |M'''| / 6 ~ 1e-20, rounding 1e-40 / delta ~ 1e-30
    assert abs(fd - exact) < mpmath.mpf(10) ** -18, (name, fd, exact)
    print(f"   dM/d{name}: finite difference {mpmath.nstr(fd, 15)}, envelope theorem "
          f"{mpmath.nstr(exact, 15)}, |difference| {mpmath.nstr(abs(fd - exact), 2)}")
print("\nstep 3: all identities hold")
