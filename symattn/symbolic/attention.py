r"""Attention maps and the per-sentence loss in the high-dimensional limit (model page §3).

For a sentence of ``L`` tokens with rank-``r`` pre-activations ``h`` (an ``L x r`` matrix),

.. math::

    S(h) = \mathrm{softmax}(h h^\top), \qquad
    T(h^*) = (1-\omega)\,\mathrm{softmax}(h^* h^{*\top}) + \omega A, \qquad
    \ell(h, h^*) = \frac{\sigma^2}{2}\,\lVert S(h) - T(h^*)\rVert_F^2 ,

softmax taken row by row.  For ``L = 2``, ``r = 1`` and rows summing to one,

.. math::

    S_{11} = \mathrm{logistic}(h_1^2 - h_1 h_2),\quad S_{22} = \mathrm{logistic}(h_2^2 - h_1 h_2),
    \qquad \ell = \sigma^2\left[(S_{11}-T_{11})^2 + (S_{22}-T_{22})^2\right].

:func:`loss_closed_form_L2_equals_general` proves the two forms equal with SymPy.
"""

from __future__ import annotations

import sympy as sp

from ..model.symbols import omega, sigma

__all__ = [
    "Softmax", "Logistic", "logistic", "row_softmax", "student_attention", "teacher_attention",
    "loss_general", "loss_L2_closed_form", "loss_L2_from_targets",
    "loss_closed_form_L2_equals_general", "SoftmaxEntry", "softmax_rows", "loss_from_targets",
    "teacher_targets",
]


class Softmax(sp.Function):
    r"""Row softmax of a square matrix argument, printed as ``\mathrm{softmax}``.

    ``Softmax(M).doit()`` returns the explicit matrix of ``exp(M_ij) / sum_k exp(M_ik)``.
    """

    nargs = 1

    def doit(self, **hints):
        return row_softmax(sp.Matrix(self.args[0]))

    def _latex(self, printer):
        return r"\mathrm{softmax}\left(%s\right)" % printer._print(self.args[0])


class Logistic(sp.Function):
    r"""The logistic function :math:`\mathrm{logistic}(x) = 1/(1+e^{-x})`.

    Kept as a function (not expanded into exponentials) so that derivatives stay in the
    numerically stable form :math:`\mathrm{logistic}'(x) = \mathrm{logistic}(x)(1-\mathrm{logistic}(x))`
    and compiled code calls ``scipy.special.expit``; ``.rewrite(sp.exp)`` gives the explicit form.
    """

    nargs = 1

    def fdiff(self, argindex=1):
        s = Logistic(self.args[0])
        return s * (1 - s)

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sp.Rational(1, 2)

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return 1 / (1 + sp.exp(-x))

    def _eval_is_real(self):
        return self.args[0].is_real

    def _latex(self, printer, exp=None):
        base = r"\mathrm{logistic}\left(%s\right)" % printer._print(self.args[0])
        return base if exp is None else r"%s^{%s}" % (base, exp)


logistic = Logistic


class SoftmaxEntry(sp.Function):
    r"""Entry ``j`` of the softmax of the logits ``a_1..a_L``: :math:`e^{a_j}/\sum_k e^{a_k}`.

    Arguments ``(j, a_1, ..., a_L)`` with ``j`` a positive integer.  Kept as a function so that
    derivatives stay in terms of the entries themselves,
    :math:`\partial S_j/\partial a_k = S_j(\delta_{jk} - S_k)`, and compiled code evaluates it
    in the overflow-free form :math:`1/\sum_k e^{a_k - a_j}`.  With two logits it is the
    logistic of their difference, :math:`S_1 = \mathrm{logistic}(a_1 - a_2)`, so the paper's
    ``L = 2`` expressions come out in :class:`Logistic` form.
    """

    @classmethod
    def eval(cls, j, *a):
        if not (j.is_Integer and 1 <= j <= len(a)):
            raise ValueError(f"SoftmaxEntry: index {j} is not one of 1..{len(a)}")
        if len(a) == 2:   # both entries through one logistic (one exponential per row)
            return Logistic(a[0] - a[1]) if j == 1 else 1 - Logistic(a[0] - a[1])

    def fdiff(self, argindex=1):
        j, *a = self.args
        if argindex == 1:
            raise sp.ArgumentIndexError(self, argindex)
        k = argindex - 1
        return self * ((1 if k == int(j) else 0) - SoftmaxEntry(k, *a))

    def _eval_rewrite_as_exp(self, j, *a, **kwargs):
        return sp.exp(a[int(j) - 1]) / sum(sp.exp(ak) for ak in a)

    def _eval_is_real(self):
        return all(ak.is_real for ak in self.args[1:])

    def _latex(self, printer, exp=None):
        j, *a = self.args
        base = r"\mathrm{softmax}_{%s}\left(%s\right)" % (printer._print(j),
                                                          ", ".join(printer._print(x) for x in a))
        return base if exp is None else r"\left(%s\right)^{%s}" % (base, exp)


def softmax_rows(M: sp.Matrix) -> sp.Matrix:
    """Row-wise softmax of ``M`` with :class:`SoftmaxEntry` entries (equal to :func:`row_softmax`)."""
    M = sp.Matrix(M)
    return sp.Matrix(M.rows, M.cols, lambda i, j: SoftmaxEntry(j + 1, *M.row(i)))


def row_softmax(M: sp.Matrix) -> sp.Matrix:
    """Explicit row-wise softmax of a SymPy matrix."""
    M = sp.Matrix(M)
    out = sp.zeros(*M.shape)
    for i in range(M.rows):
        den = sum(sp.exp(M[i, k]) for k in range(M.cols))
        for j in range(M.cols):
            out[i, j] = sp.exp(M[i, j]) / den
    return out


def _as_column_matrix(h) -> sp.Matrix:
    H = sp.Matrix(h)
    return H if H.cols >= 1 else H.T


def student_attention(h) -> sp.Matrix:
    r""":math:`S(h) = \mathrm{softmax}(h h^\top)` for ``h`` an ``L``-vector or ``L x r`` matrix."""
    H = _as_column_matrix(h)
    return row_softmax(H * H.T)


def teacher_attention(hs, A: sp.Matrix) -> sp.Matrix:
    r""":math:`T(h^*) = (1-\omega)\,\mathrm{softmax}(h^* h^{*\top}) + \omega A`."""
    H = _as_column_matrix(hs)
    return (1 - omega) * row_softmax(H * H.T) + omega * sp.Matrix(A)


def loss_general(h, hs, A: sp.Matrix):
    r""":math:`\ell(h,h^*) = \tfrac{\sigma^2}{2}\lVert S(h) - T(h^*)\rVert_F^2` for any ``L`` and rank."""
    D = student_attention(h) - teacher_attention(hs, A)
    return sigma**2 / 2 * sum(D[i, j] ** 2 for i in range(D.rows) for j in range(D.cols))


def loss_from_targets(h, T: sp.Matrix):
    r""":math:`\ell = \tfrac{\sigma^2}{2}\lVert \mathrm{softmax}(hh^\top) - T\rVert_F^2` for any ``L`` and
    rank, given the target matrix ``T`` (``L x L``, any entries); the softmax as
    :class:`SoftmaxEntry`.  This is the form the compiled kernels are generated from."""
    H = _as_column_matrix(h)
    D = softmax_rows(H * H.T) - sp.Matrix(T)
    return sigma**2 / 2 * sum(D[i, j] ** 2 for i in range(D.rows) for j in range(D.cols))


def teacher_targets(hs, A: sp.Matrix) -> sp.Matrix:
    r""":math:`T(h^*) = (1-\omega)\,\mathrm{softmax}(h^* h^{*\top}) + \omega A` with
    :class:`SoftmaxEntry` entries (equal to :func:`teacher_attention`)."""
    H = _as_column_matrix(hs)
    return (1 - omega) * softmax_rows(H * H.T) + omega * sp.Matrix(A)


def loss_L2_from_targets(h, t11, t22):
    r"""Closed form for ``L = 2``, ``r = 1`` given the target diagonal ``T_11, T_22``.

    :math:`\ell = \sigma^2[(\mathrm{logistic}(h_1^2-h_1h_2)-T_{11})^2 + (\mathrm{logistic}(h_2^2-h_1h_2)-T_{22})^2]`,
    valid whenever the rows of ``T`` sum to one.  This is the form the prox is compiled from.
    """
    h1, h2 = h
    return sigma**2 * ((logistic(h1**2 - h1 * h2) - t11) ** 2 + (logistic(h2**2 - h1 * h2) - t22) ** 2)


def teacher_diagonal_L2(hs, A: sp.Matrix):
    r"""``(T_11, T_22)`` for ``L = 2``: :math:`(1-\omega)\,\mathrm{logistic}(h^{*2}_l - h^*_1h^*_2) + \omega A_{ll}`."""
    a1, a2 = hs
    return ((1 - omega) * logistic(a1**2 - a1 * a2) + omega * A[0, 0],
            (1 - omega) * logistic(a2**2 - a1 * a2) + omega * A[1, 1])


def loss_L2_closed_form(h, hs, A: sp.Matrix):
    """The ``L = 2`` closed form of model page §3 as a function of ``h`` and ``h*``."""
    return loss_L2_from_targets(h, *teacher_diagonal_L2(hs, A))


def _softmax_entry_is_logistic(general, logit) -> bool:
    """``exp(a)/(exp(a)+exp(b)) == logistic(a-b)``, proved by cross-multiplying."""
    num, den = sp.fraction(sp.together(general - logistic(logit).rewrite(sp.exp)))
    return sp.expand(sp.powsimp(sp.expand(num), combine="exp")) == 0


def loss_closed_form_L2_equals_general(h, hs, A: sp.Matrix) -> bool:
    r"""Prove with SymPy that the ``L = 2`` closed form equals the general softmax loss.

    Two steps, each an exact SymPy identity:

    1. every entry of :math:`\mathrm{softmax}(hh^\top)` is a logistic of a logit difference,
       :math:`S_{11} = \mathrm{logistic}(h_1^2-h_1h_2)`, :math:`S_{12} = 1 - S_{11}`, etc.
       (same for the teacher's softmax);
    2. with those entries and ``A`` row-stochastic (``A_12 = 1 - A_11``, ``A_21 = 1 - A_22``),
       the Frobenius norm collapses to twice the diagonal terms: a polynomial identity.
    """
    A = sp.Matrix(A)
    for vec in (h, hs):
        S = student_attention(vec)
        a1, a2 = vec
        logits = {(0, 0): a1**2 - a1 * a2, (0, 1): a1 * a2 - a1**2,
                  (1, 0): a1 * a2 - a2**2, (1, 1): a2**2 - a1 * a2}
        if not all(_softmax_entry_is_logistic(S[i, j], z) for (i, j), z in logits.items()):
            return False
    s1, s2, t1, t2 = sp.symbols("s_1 s_2 t_1 t_2")   # stand-ins for the four logistics
    S = sp.Matrix([[s1, 1 - s1], [1 - s2, s2]])
    Tsoft = sp.Matrix([[t1, 1 - t1], [1 - t2, t2]])
    Arow = sp.Matrix([[A[0, 0], 1 - A[0, 0]], [1 - A[1, 1], A[1, 1]]])
    D = S - ((1 - omega) * Tsoft + omega * Arow)
    general = sigma**2 / 2 * sum(D[i, j] ** 2 for i in range(2) for j in range(2))
    (h1, h2), (a1, a2) = h, hs
    closed = loss_L2_closed_form(h, hs, A).xreplace({
        logistic(h1**2 - h1 * h2): s1, logistic(h2**2 - h1 * h2): s2,
        logistic(a1**2 - a1 * a2): t1, logistic(a2**2 - a1 * a2): t2})
    if closed.free_symbols & set(h) | closed.free_symbols & set(hs):
        return False
    return sp.expand(general - closed) == 0
