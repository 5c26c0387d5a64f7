"""What every derivation script shares: printing a step, exact equality, Gaussian moments.

Importing this module refuses ``python -O``, which would strip the scripts' asserts.
"""

import functools

import sympy as sp

if not __debug__:
    raise SystemExit("run without -O: the identities are checked with assert")

#: argument lists of the abstract node functions (M, f_l, prox), dropped when printing
_ARGS = (r"\left(w_{1}, w_{2}, h^{*}_{1}, h^{*}_{2}, V\right)",
         r"{\left(w_{1},w_{2},h^{*}_{1},h^{*}_{2},V \right)}")


def show(title, expr=None, note=""):
    """Print a step: its title, an optional note, and ``expr`` as LaTeX."""
    print(f"\n== {title}")
    if note:
        print(note)
    if expr is not None:
        text = sp.latex(expr)
        for args in _ARGS:   # for reading
            text = text.replace(args, "")
        print("   " + text)


def same(a, b) -> bool:
    """Exact equality, by simplifying the difference."""
    return sp.simplify(a - b) == 0


_x = sp.Symbol("x", real=True)
#: the standard Gaussian density
density = sp.exp(-_x**2 / 2) / sp.sqrt(2 * sp.pi)


@functools.cache
def moment(k):
    """E[x^k], x ~ N(0, 1), by integrating against the Gaussian density."""
    return sp.integrate(_x**k * density, (_x, -sp.oo, sp.oo))


def gauss_E(expr, *gens):
    """E of a polynomial in the independent standard Gaussians ``gens``, monomial by monomial."""
    poly = sp.Poly(sp.expand(expr), *gens)
    return sp.simplify(sum(c * sp.Mul(*(moment(k) for k in ks)) for ks, c in poly.terms()))
