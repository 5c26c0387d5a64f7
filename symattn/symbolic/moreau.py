r"""The Moreau objective, its derivatives in ``h``, and the envelope theorem (model page §4).

.. math::

    \mathcal{G}(h; w, h^*, V) = \sum_l \frac{(h_l - w_l)^2}{2V} + \ell(h, h^*), \qquad
    \mathcal{M}(w, h^*, V) = \min_h \mathcal{G}, \qquad
    \mathrm{prox} = \operatorname{argmin}_h \mathcal{G}, \qquad
    f_l = \frac{\mathrm{prox}_l - w_l}{V}.

The envelope theorem gives :math:`\partial_{w_l}\mathcal{M} = -f_l` and
:math:`\partial_V \mathcal{M} = -\tfrac12\sum_l f_l^2`; :func:`envelope_derivatives` derives both
from :math:`\mathcal{G}` by the chain rule and the first-order optimality condition
:math:`\nabla_h \mathcal{G} = 0` at the prox, rather than assuming them.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..model.symbols import V

__all__ = ["MoreauObjective", "envelope_derivatives", "MoreauEnvelope", "Prox"]


class MoreauEnvelope(sp.Function):
    r"""Abstract :math:`\mathcal{M}(w_1..w_L, h^*_1..h^*_L, V)`, printed as ``\mathcal{M}``."""

    def _latex(self, printer):
        return r"\mathcal{M}\left(%s\right)" % ", ".join(printer._print(a) for a in self.args)


class Prox(sp.Function):
    r"""Abstract component of :math:`\mathrm{prox}(w, h^*, V)`; first argument is the token index."""

    def _latex(self, printer):
        l, *rest = self.args
        return r"\mathrm{prox}_{%s}\left(%s\right)" % (printer._print(l),
                                                       ", ".join(printer._print(a) for a in rest))


@dataclass(frozen=True)
class MoreauObjective:
    r"""The Moreau objective :math:`\mathcal{G}(h; w, \cdot, V)` for a given loss expression.

    Parameters
    ----------
    h, w : tuples of symbols
        Student pre-activations (the minimisation variable) and their means.
    loss : sympy expression
        :math:`\ell(h, \cdot)`; its other arguments (``h*`` or target entries) are free symbols.
    """

    h: tuple
    w: tuple
    loss: sp.Expr

    @property
    def expr(self) -> sp.Expr:
        """:math:`\\sum_l (h_l-w_l)^2/(2V) + \\ell`."""
        return sum((hl - wl) ** 2 for hl, wl in zip(self.h, self.w)) / (2 * V) + self.loss

    def gradient(self) -> list:
        """:math:`\\nabla_h \\mathcal{G}` as a list of expressions."""
        return [sp.diff(self.expr, hl) for hl in self.h]

    def hessian(self) -> sp.Matrix:
        """:math:`\\nabla_h^2 \\mathcal{G}`, symmetric ``L x L``."""
        return sp.hessian(self.expr, self.h)


def envelope_derivatives(obj: MoreauObjective, params) -> dict:
    r"""Derive :math:`\partial \mathcal{M}/\partial x` for each symbol ``x`` in ``params``.

    :math:`\mathcal{M}(x) = \mathcal{G}(P(x); x)` with ``P`` the (abstract, differentiable) prox.
    The chain rule gives :math:`\partial_x \mathcal{M} = \partial_x \mathcal{G}|_{h=P}
    + \sum_l \partial_{h_l}\mathcal{G}|_{h=P}\,\partial_x P_l`; the coefficients of
    :math:`\partial_x P_l` are checked to be exactly the optimality conditions
    :math:`\partial_{h_l}\mathcal{G}|_{h=P} = 0` and dropped.

    Returns
    -------
    dict
        ``x -> expression`` in terms of the prox components ``Prox(l, *args)``.
    """
    args = tuple(obj.w) + tuple(sorted(obj.loss.free_symbols - set(obj.h) - set(obj.w) - {V},
                                       key=str)) + (V,)
    P = [Prox(sp.Integer(l + 1), *args) for l in range(len(obj.h))]
    at_prox = dict(zip(obj.h, P))
    M = obj.expr.subs(at_prox)
    optimality = [g.subs(at_prox) for g in obj.gradient()]
    out = {}
    for x in params:
        dM = sp.expand(sp.diff(M, x))
        partial = sp.expand(sp.diff(obj.expr, x).subs(at_prox))
        for l, Pl in enumerate(P):
            dP = sp.diff(Pl, x)
            coeff = dM.coeff(dP)
            if not _is_zero(coeff - optimality[l]):
                raise AssertionError(f"envelope theorem: coefficient of dP_{l + 1}/d{x} is not the "
                                     f"optimality condition")
            dM = sp.expand(dM - coeff * dP)
        if not _is_zero(dM - partial):
            raise AssertionError(f"envelope theorem failed for {x}")
        out[x] = sp.factor(dM)
    return out


def _is_zero(expr) -> bool:
    """Exact zero test: cheap canonical expansion first, full simplification as fallback."""
    return sp.expand(expr) == 0 or sp.simplify(expr) == 0
