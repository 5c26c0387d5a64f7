r"""Step 8: the replicon (de Almeida-Thouless) eigenvalue of the RS saddle point (model page §8).

1. Replicon vectors (symmetric, zero diagonal, zero row sums) diagonalise every replica-symmetric
   matrix on replica pairs, with eigenvalue P - 2Q + R (explicit n = 4, 5, 6; library).
2. The output term: by Price's theorem d/dQ_ab E F = E sum_l d^2 F/dh^a_l dh^b_l; at the RS point
   the derivatives of the replicas' factors become derivatives of Z(w), and n -> 0 leaves
   P - 2Q + R = E ||Hess_w log Z||_F^2 (library).  Redone here by an independent route for a
   Gaussian loss l(h) = (h - y)^2 / 2, L = 1: the n = 4 replica integral is log det, its second
   derivative along a replicon direction is computed directly.
3. The prior term: sigma^4/A^2 = (V/beta)^2 on explicit matrices (library).
4. lambda_R = alpha E||beta C/V - I||_F^2 at finite beta (C the Gibbs covariance at a node), and
   alpha E||J - I||_F^2 at zero temperature (J the prox's Jacobian) where the prox is continuous.
   The square loss (convex): lambda_R = (1 - lambda V/sigma^2) V/(1 + V) < 1 at the ridge fixed
   point -- RS is stable, as it must be for a convex problem.
5. Where the prox jumps by Delta across a surface, lambda_R grows like beta |Delta|^3/(6V) per unit
   surface measure: int p^2 (1-p)^2 dx = 1/6 (library).
"""

import sympy as sp

from symattn.model.symbols import V, alpha, lam, sigma
from symattn.symbolic.finite_temperature import beta
from symattn.symbolic.replicon import (derive_replicon, jump_growth, log_z_hessian,
                                       output_replicon, prior_replicon, replicon_sector)

from _steps import same, show  # derivations/_steps.py

# -- 1. the replicon sector
show("eigenvalue of a replica-symmetric pair matrix on replicon vectors", replicon_sector())

# -- 2. the output term: library, then a Gaussian loss by direct n = 4 integration
out = output_replicon(2)
show("output replicon P - 2Q + R (integrand of E_w), in H = Hess_w log Z", out.replicon)
n = 4
qd, q0, eps, y = sp.symbols("Q_d q epsilon y", real=True)
pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
v = {(0, 1): 1, (2, 3): 1, (0, 2): -1, (1, 3): -1}
Qm = sp.Matrix(n, n, lambda a, b: qd if a == b else q0)
Dm = sp.Matrix(n, n, lambda a, b: v.get((min(a, b), max(a, b)), 0))
# log E_{h ~ N(0, Q)} prod_a exp(-beta (h_a - y)^2 / 2) = -log det(I + beta Q)/2 + (y terms)
Qe = Qm + eps * Dm
M = sp.eye(n) + beta * Qe
one = sp.ones(n, 1)
log_int = -sp.log(M.det()) / 2 - beta * y**2 / 2 * (one.T * (sp.eye(n) - beta * M.inv()) * one)[0, 0]
d2 = sp.simplify(sp.diff(log_int, eps, 2).subs(eps, 0) / sum(c**2 for c in v.values()))
# the library's formula for this loss: log Z(w) = -beta (w - y)^2 / (2 (1 + beta (Q_d - q)))
w = sp.Symbol("w", real=True)
logZ = -beta * (w - y)**2 / (2 * (1 + beta * (qd - q0)))
formula = sp.diff(logZ, w, 2)**2
show("Gaussian loss, n = 4: d^2/d eps^2 of the replica integral along a replicon vector, per |v|^2",
     d2)
assert same(d2, formula), (d2, formula)
print("   = (d^2 log Z/dw^2)^2, the library's E||Hess log Z||^2 for this loss (n-independent)")

# -- 3. the prior term
show("prior replicon sigma^4/A^2, with the prior equation for V", prior_replicon())

# -- 4. lambda_R
hess, C = log_z_hessian(2)
show("Hess_w log Z in the Gibbs covariance C", hess)
eq = derive_replicon(2)
show("lambda_R at finite beta", eq.finite_beta)
show("lambda_R at zero temperature, continuous prox (J = d prox / dw)", eq.zero_temperature)
cov = (V / beta) / (1 + V)             # the Gibbs covariance of the square loss, per token
lam_R = eq.finite_beta.subs({eq.C[0, 0]: cov, eq.C[1, 1]: cov, eq.C[0, 1]: 0})
Vh = alpha * 2 / (1 + V)               # its V_hat equation, L = 2
a_star = sp.solve(sp.Eq(V * (lam + sigma**2 * Vh), sigma**2), alpha)[0]
closed = sp.simplify(lam_R.subs(alpha, a_star))
show("square loss at the ridge fixed point", closed)
assert same(closed, (1 - lam * V / sigma**2) * V / (1 + V))
print("   < 1: RS is stable for the convex loss")

# -- 5. jumps
per_surface, per_slab = jump_growth()
show("coefficient of beta in lambda_R per unit surface of a jump (times alpha)", per_surface)
show("... per unit Gaussian weight of the slab gap < delta", per_slab)
print("\nstep 8: all identities hold")
