r"""Gaussian expectations over the output-channel nodes, and Stein's lemma, as SymPy rewrites.

The output channel of model page §4 averages functions of the node variables
:math:`\xi_l, \eta_l \sim N(0,1)` that enter through

.. math::

    w_l = \sqrt{q}\,\xi_l + s_l m, \qquad
    h^*_l = \frac{\theta}{\sqrt q}\,\xi_l + \sqrt{\rho - \theta^2/q}\;\eta_l .

:class:`GaussianNodes` keeps this map and implements, on unevaluated expectations
:class:`Expect`, the three operations the derivation needs:

* linearity: constants (anything free of the node variables) leave the expectation;
* the total derivative in an order parameter, by the chain rule through ``w`` and ``h*``;
* Stein's lemma, :math:`\mathbb{E}[z\,G] = \mathbb{E}[\mathrm{d}G/\mathrm{d}z]` for a standard
  Gaussian ``z``, with ``d/dz`` again through the node map.

Functions of the nodes (the Moreau envelope, the ``f_l``) stay abstract: SymPy applied
undefined functions of the symbols ``w_l, h*_l, V``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

__all__ = ["Expect", "GaussianNodes", "OutputF"]


class Expect(sp.Function):
    r"""Unevaluated Gaussian expectation :math:`\mathbb{E}[\cdot]` over the node variables."""

    nargs = 1

    def _latex(self, printer):
        return r"\mathbb{E}\left[%s\right]" % printer._print(self.args[0])


class OutputF(sp.Function):
    r"""Abstract :math:`f_l(w, h^*, V) = (\mathrm{prox}_l - w_l)/V`; first argument is ``l``."""

    def _latex(self, printer, exp=None):
        l = printer._print(self.args[0])
        base = "f_{%s}" % l
        return base if exp is None else "%s^{%s}" % (base, exp)


@dataclass(frozen=True)
class GaussianNodes:
    """The node map ``X -> expression(xi, eta, order parameters)`` for ``X`` in ``w`` and ``h*``.

    Attributes
    ----------
    xi, eta : tuple of symbols
        Independent standard Gaussian node variables.
    node_map : dict
        ``symbol -> expression``; the symbols are the arguments of the abstract node functions.
    """

    xi: tuple
    eta: tuple
    node_map: dict

    @property
    def gaussians(self):
        return tuple(self.xi) + tuple(self.eta)

    def is_random(self, expr) -> bool:
        """True if ``expr`` depends on the nodes (node variables or node-function symbols)."""
        return bool(expr.free_symbols & (set(self.gaussians) | set(self.node_map)))

    # -- linearity -----------------------------------------------------------------------
    def linear(self, expr):
        """Expand every :class:`Expect` linearly and pull out node-independent factors."""
        def split(arg):
            total = sp.Integer(0)
            for term in sp.Add.make_args(sp.expand(arg)):
                const, rand = [], []
                for fac in sp.Mul.make_args(term):
                    (rand if self.is_random(fac) else const).append(fac)
                c = sp.Mul(*const)
                total += c * (Expect(sp.Mul(*rand)) if rand else 1)
            return total
        return sp.expand(expr.replace(lambda e: isinstance(e, Expect), lambda e: split(e.args[0])))

    def atoms(self, expr) -> list:
        """The distinct :class:`Expect` atoms of ``expr``, in a stable order."""
        return sorted(expr.atoms(Expect), key=sp.default_sort_key)

    def collect(self, expr):
        """``sum_k c_k E[a_k]`` with each coefficient ``c_k`` simplified (zero terms dropped)."""
        expr = self.linear(expr)
        atoms = self.atoms(expr)
        coll = sp.collect(expr, atoms, evaluate=False)
        out = sp.Integer(0)
        for key, coeff in coll.items():
            c = sp.simplify(coeff)
            if c != 0:
                out += c * key
        return out

    # -- differentiation -----------------------------------------------------------------
    def _chain(self, G, var):
        """dG/dvar with the node-function arguments depending on ``var`` through the node map."""
        out = sp.diff(G, var)
        for X, Xexpr in self.node_map.items():
            dX = sp.diff(Xexpr, var)
            if dX != 0:
                out += sp.diff(G, X) * dX
        return out

    def derivative(self, expr, param):
        r""":math:`\partial_p \mathbb{E}[G] = \mathbb{E}[\mathrm{d}G/\mathrm{d}p]` (Gaussian weight is ``p``-free)."""
        d_explicit = sp.diff(expr.replace(lambda e: isinstance(e, Expect), lambda e: sp.Integer(0)),
                             param)
        d_expect = sp.Integer(0)
        for term in sp.Add.make_args(self.linear(expr)):
            ex = [f for f in sp.Mul.make_args(term) if isinstance(f, Expect)]
            if not ex:
                continue
            (E,) = ex
            c = term / E
            d_expect += sp.diff(c, param) * E + c * Expect(self._chain(E.args[0], param))
        return self.linear(d_explicit + d_expect)

    def stein(self, expr, select=lambda G: True):
        r"""Apply :math:`\mathbb{E}[z\,G] = \mathbb{E}[\mathrm{d}G/\mathrm{d}z]` to every atom
        ``E[z G]`` (``z`` a node Gaussian to the first power) for which ``select(G)`` holds."""
        expr = self.linear(expr)

        def rewrite(E):
            arg = E.args[0]
            for z in self.gaussians:
                if arg.has(z):
                    G = sp.powsimp(arg / z)
                    if not G.has(z) and select(G):
                        return Expect(self._chain(G, z))
            return E
        return self.linear(expr.replace(lambda e: isinstance(e, Expect), rewrite))
