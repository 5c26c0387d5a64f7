r"""Step 1: from the loss of one sentence to loss(h, h*) in the high-dimensional limit.

One sentence, L = 2 tokens of dimension d (model page §2 and §3).  The teacher output is
Y = T Z, the student output S X with X = Z + P / sqrt(d), the rows of P being s_l p_1 with
p_1 = (1, ..., 1) and s = (+1, -1), so that P P^T / d = s s^T.  The residual is

    E = T Z - S X = D Z - S P / sqrt(d),      D = T - S,

and with G = Z Z^T and c = Z p_1 / sqrt(d) its norm takes the Gram form used by the simulator
(symattn/simulation/general.py, its L = 2 case: C = c s^T, s = (1, -1))

    ||E||_F^2 / (2d) = [ tr(D G D^T) - 2 (D c).(S s) + ||S s||^2 ] / (2d).

The law of large numbers G / d -> sigma^2 I, with c = O(1), leaves

    loss(h, h*) = (sigma^2 / 2) ||S(h) - T(h*)||_F^2 + O(1/d),

S(h) = softmax(h h^T), T(h*) = (1 - omega) softmax(h* h*^T) + omega A.  For L = 2 the softmax rows
are logistic functions and loss = sigma^2 [(S_11 - T_11)^2 + (S_22 - T_22)^2].  The loss is even
in h.  Every step is asserted with SymPy.
"""

import random

import sympy as sp

from symattn.model.symbols import attention_matrix_symbols, omega, sigma
from symattn.symbolic.attention import (Logistic, loss_closed_form_L2_equals_general, loss_general,
                                        loss_L2_closed_form, student_attention, teacher_attention)

from _steps import show  # derivations/_steps.py

def matrix(name):
    return sp.Matrix(2, 2, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


S, T = matrix("S"), matrix("T")
D = T - S
s = sp.Matrix([1, -1])

# -- 1. the Gram form is an exact identity (checked at several explicit d)
for d_val in (2, 3, 5):
    Z = sp.Matrix(2, d_val, lambda i, k: sp.Symbol(f"z_{i + 1}{k + 1}", real=True))
    p1 = sp.ones(d_val, 1)
    P = s * p1.T
    assert P * P.T / d_val == s * s.T, "P P^T / d must be s s^T"
    assert sp.expand(Z * P.T / sp.sqrt(d_val) - Z * p1 * s.T / sp.sqrt(d_val)) == sp.zeros(2, 2)
    E = T * Z - S * (Z + P / sp.sqrt(d_val))
    G, c = Z * Z.T, Z * p1 / sp.sqrt(d_val)
    gram = (D * G * D.T).trace() - 2 * (D * c).dot(S * s) + (S * s).dot(S * s)
    assert sp.expand(sum(e**2 for e in E) - gram) == 0, f"Gram form fails at d = {d_val}"
show("Gram form ||E||_F^2 = tr(D G D^T) - 2 (Dc).(Ss) + ||Ss||^2: exact at d = 2, 3, 5",
     note="It uses only P P^T/d = s s^T and Z P^T/sqrt(d) = c s^T, so it holds for every d.")

# -- 2. the law of large numbers: G = d sigma^2 I (+ sqrt(d) Gamma, CLT fluctuation), c = O(1)
d = sp.Symbol("d", positive=True)
c = sp.Matrix(sp.symbols("c_1 c_2", real=True))
Gamma = sp.Matrix(2, 2, lambda i, j: sp.Symbol(f"gamma_{min(i, j) + 1}{max(i, j) + 1}", real=True))


def gram_loss(G):
    return ((D * G * D.T).trace() - 2 * (D * c).dot(S * s) + (S * s).dot(S * s)) / (2 * d)


limit_form = sigma**2 / 2 * sum(x**2 for x in (S - T))
lln = gram_loss(d * sigma**2 * sp.eye(2))
assert sp.simplify(sp.limit(lln, d, sp.oo) - limit_form) == 0
remainder = (-2 * (D * c).dot(S * s) + (S * s).dot(S * s)) / 2
assert sp.expand(d * (lln - limit_form) - remainder) == 0, "the remainder must be exactly O(1/d)"
show("d -> oo with G = d sigma^2 I gives (sigma^2/2) ||S - T||_F^2 =", limit_form,
     note="exact remainder: [ -2 (D c).(S s) + ||S s||^2 ] / (2d) = O(1/d) since c = O(1)")
fluct = gram_loss(d * sigma**2 * sp.eye(2) + sp.sqrt(d) * Gamma)
assert sp.simplify(sp.limit(fluct, d, sp.oo) - limit_form) == 0
clt = sp.limit(sp.sqrt(d) * (fluct - limit_form), d, sp.oo)
assert sp.expand(clt - (D * Gamma * D.T).trace() / 2) == 0
show("with CLT fluctuations G = d sigma^2 I + sqrt(d) Gamma the limit is the same",
     note="the extra correction is tr(D Gamma D^T) / (2 sqrt(d)) = O(1/sqrt(d)), zero-mean")

# -- 3. for L = 2 every softmax entry is a logistic of a logit difference (one entry by hand)
h1, h2, a1, a2 = sp.symbols("h_1 h_2 h^*_1 h^*_2", real=True)
S11 = sp.exp(h1**2) / (sp.exp(h1**2) + sp.exp(h1 * h2))        # softmax(h h^T)_11 written out
by_hand = 1 / (1 + sp.exp(h1 * h2 - h1**2))                     # divide by exp(h_1^2)
assert sp.simplify(S11 - by_hand) == 0
assert sp.simplify(by_hand - Logistic(h1**2 - h1 * h2).rewrite(sp.exp)) == 0
assert sp.simplify(student_attention((h1, h2))[0, 0] - S11) == 0
show("S_11 = e^{h_1^2} / (e^{h_1^2} + e^{h_1 h_2}) = logistic(h_1^2 - h_1 h_2)",
     Logistic(h1**2 - h1 * h2))

# -- 4. rows of T sum to one when A is row-stochastic
A = attention_matrix_symbols(2)
A_row = sp.Matrix([[A[0, 0], 1 - A[0, 0]], [1 - A[1, 1], A[1, 1]]])
Tmat = teacher_attention((a1, a2), A_row)
assert all(sp.simplify(Tmat[i, 0] + Tmat[i, 1] - 1) == 0 for i in range(2))
show("T(h*) = (1 - omega) softmax(h* h*^T) + omega A has rows summing to 1")

# -- 5. Frobenius norm collapses to the diagonal: S_12 = 1 - S_11, T_12 = 1 - T_11, ...
s11, s22, t11, t22 = sp.symbols("S_11 S_22 T_11 T_22", real=True)
Sr = sp.Matrix([[s11, 1 - s11], [1 - s22, s22]])
Tr = sp.Matrix([[t11, 1 - t11], [1 - t22, t22]])
frob = sigma**2 / 2 * sum(x**2 for x in (Sr - Tr))
closed = sigma**2 * ((s11 - t11) ** 2 + (s22 - t22) ** 2)
assert sp.expand(frob - closed) == 0
assert sp.expand(frob - closed / 2) != 0, "mutation (sigma^2/2 in front) must be rejected"
show("(sigma^2/2) ||S - T||_F^2 with stochastic rows =", closed,
     note="(the mutated form with sigma^2/2 in front is rejected by the same assertion)")

# -- 6. the library's proof and an independent 50-digit evaluation at random points
H, HS = (h1, h2), (a1, a2)
assert loss_closed_form_L2_equals_general(H, HS, A) is True
general, lib_closed = loss_general(H, HS, A_row), loss_L2_closed_form(H, HS, A_row)
rng = random.Random(1)
for _ in range(5):
    point = {x: sp.Rational(rng.randint(-250, 250), 100) for x in (h1, h2, a1, a2)}
    point.update({omega: sp.Rational(rng.randint(0, 100), 100), sigma: sp.Rational(1, 2),
                  A[0, 0]: sp.Rational(rng.randint(0, 100), 100),
                  A[1, 1]: sp.Rational(rng.randint(0, 100), 100)})
    gap = (general - lib_closed.rewrite(sp.exp)).subs(point).evalf(50)
    assert abs(gap) < 1e-40, f"closed form differs from softmax loss at {point}: {gap}"
show("library: loss_closed_form_L2_equals_general is True; 50-digit check at 5 points passes",
     lib_closed)

# -- 7. the loss is even in h (and the teacher is even in h*)
assert sp.simplify(loss_general((-h1, -h2), HS, A_row) - general) == 0
assert sp.simplify(loss_L2_closed_form((-h1, -h2), HS, A_row) - lib_closed) == 0
assert sp.simplify(teacher_attention((-a1, -a2), A_row) - Tmat) == sp.zeros(2, 2)
show("loss(-h, h*) = loss(h, h*) and T(-h*) = T(h*): (-h)(-h)^T = h h^T",
     note="so the Moreau objective has mirror-image minima, and theta = 0 is exact on the "
          "positional branch.")
print("\nstep 1: all identities hold")
