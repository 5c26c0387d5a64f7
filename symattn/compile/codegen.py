r"""SymPy expressions printed as scalar Python source for numba, and vectorised over nodes.

Two kinds of generated function, both ``@njit(cache=True)``:

* :func:`scalar_function` -- one evaluation: array arguments are unpacked into scalars, the
  expressions are evaluated after common-subexpression elimination, and the results are
  returned (one output) or written into output arrays (``g[i] = ...``, ``H[i, j] = ...``);
* :func:`node_function` -- the same evaluation at every node of a set, ``prange`` over nodes
  (both cores): arguments ``(n, a_j)`` arrays and scalars, one output array ``(n, m)``.

:class:`Logistic` prints as the overflow-free ``_logistic`` of the module header, and a
:class:`SoftmaxEntry` with ``L > 2`` logits as :math:`1/\sum_k e^{a_k-a_j}` (the term
``k = j`` is ``1``), which neither overflows nor divides ``inf`` by ``inf``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from ..symbolic.attention import Logistic, SoftmaxEntry

__all__ = ["HEADER", "Argument", "scalar_function", "node_function", "chain_derivatives"]

HEADER = '''import math

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _logistic(x):
    """1 / (1 + exp(-x)) without overflow."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)
'''


class _Printer(PythonCodePrinter):
    """Python's ``math`` printer plus the model's functions."""

    def __init__(self):
        super().__init__({"fully_qualified_modules": True, "standard": "python3"})

    def _print_Logistic(self, expr):
        return f"_logistic({self._print(expr.args[0])})"

    def _print_SoftmaxEntry(self, expr):
        j, *a = expr.args
        aj = a[int(j) - 1]
        terms = ["1.0" if ak == aj else f"math.exp({self._print(ak - aj)})" for ak in a]
        return f"(1.0/({' + '.join(terms)}))"


@dataclass(frozen=True)
class Argument:
    """An argument of a generated function: a scalar (``symbols`` one symbol) or an array
    whose entries, in C order, are ``symbols`` (``shape`` given).  In a
    :func:`node_function` an array has a leading node axis unless ``shared``."""

    name: str
    symbols: tuple
    shape: tuple = ()
    shared: bool = False

    @property
    def is_array(self) -> bool:
        return bool(self.shape)

    def entries(self):
        """``(symbol, index text)`` for each entry, e.g. ``(h_1, "[0]")``."""
        if not self.is_array:
            return [(self.symbols[0], "")]
        out = []
        for flat, s in enumerate(self.symbols):
            idx, rest = [], flat
            for dim in reversed(self.shape):
                idx.append(rest % dim)
                rest //= dim
            out.append((s, "[" + ", ".join(str(i) for i in reversed(idx)) + "]"))
        return out


def _clean(args, prefix="    "):
    """Plain identifiers for the argument symbols: (unpacking lines, substitution)."""
    sub, lines = {}, []
    for arg in args:
        for k, (s, index) in enumerate(arg.entries()):
            name = arg.name if not arg.is_array else f"{arg.name}_{k}"
            plain = sp.Symbol("_" + name, real=True)
            sub[s] = plain
            if arg.is_array:
                lines.append(f"{prefix}_{name} = {arg.name}{index}")
            else:
                lines.append(f"{prefix}_{name} = {arg.name}")
    return lines, sub


def _body(exprs, indent, stages=()):
    """CSE assignments and the printed outputs.

    ``stages``: lists of ``(symbol, expression)`` assigned, stage by stage, before the outputs
    (each stage CSE'd on its own); later stages and the outputs use the symbols.
    """
    printer = _Printer()
    names = sp.numbered_symbols("_c")
    lines = []
    for stage in stages:
        syms, vals = zip(*stage)
        reps, reduced = sp.cse(list(vals), symbols=names)
        lines += [f"{indent}{printer.doprint(v)} = {printer.doprint(e)}" for v, e in reps]
        lines += [f"{indent}{printer.doprint(v)} = {printer.doprint(e)}"
                  for v, e in zip(syms, reduced)]
    reps, reduced = sp.cse(exprs, symbols=names)
    lines += [f"{indent}{printer.doprint(v)} = {printer.doprint(e)}" for v, e in reps]
    return lines, [printer.doprint(e) for e in reduced]


def chain_derivatives(expr, x):
    r"""Value, gradient and Hessian of ``expr`` in the variables ``x``, by the chain rule
    through its function atoms (:class:`Logistic`, :class:`SoftmaxEntry`).

    Each atom :math:`u_k(x)` becomes a symbol; with :math:`E(x, u)` the expression in those
    symbols,

    .. math::

        \partial_i E_{\rm tot} = E_{,i} + \sum_k E_{,u_k} u_{k,i}, \qquad
        \partial_{ij} E_{\rm tot} = E_{,ij} + \sum_k (E_{,iu_k} u_{k,j} + E_{,ju_k} u_{k,i}
          + E_{,u_k} u_{k,ij}) + \sum_{kl} E_{,u_ku_l} u_{k,i} u_{l,j},

    where the atoms' own derivatives :math:`u_{k,i}, u_{k,ij}` are SymPy's (through the
    atoms' ``fdiff``), written in the atoms again.  The result is the same function as
    differentiating ``expr`` directly, but the generated code computes each atom and its
    derivatives once instead of expanding products of them.  Returns ``(stages, value,
    gradient, hessian)`` for :func:`scalar_function` (``hessian`` as ``len(x)**2`` entries in C
    order).
    """
    x = list(x)
    n = len(x)
    def canonical(a):       # SymPy may write an atom's argument in another form
        return a.func(*[sp.expand(z) for z in a.args])

    atoms = sorted({canonical(a) for a in sp.sympify(expr).atoms(Logistic, SoftmaxEntry)},
                   key=sp.default_sort_key)
    u = [sp.Symbol(f"_u{k}", real=True) for k in range(len(atoms))]
    to_u = dict(zip(atoms, u))

    def in_u(e):
        found = e.atoms(Logistic, SoftmaxEntry)
        missing = {a for a in found if canonical(a) not in to_u}
        if missing:
            raise ValueError(f"chain_derivatives: atoms {missing} appear only in derivatives")
        return e.xreplace({a: to_u[canonical(a)] for a in found})

    E = in_u(sp.sympify(expr))
    du = [[sp.Symbol(f"_du{k}_{i}", real=True) for i in range(n)] for k in range(len(atoms))]
    d2u = [[[sp.Symbol(f"_d2u{k}_{min(i, j)}{max(i, j)}", real=True) for j in range(n)]
            for i in range(n)] for k in range(len(atoms))]
    first = [(du[k][i], in_u(sp.diff(a, x[i]))) for k, a in enumerate(atoms) for i in range(n)]
    second = [(d2u[k][i][j], in_u(sp.diff(a, x[i], x[j])))
              for k, a in enumerate(atoms) for i in range(n) for j in range(i, n)]
    Eu = [sp.diff(E, uk) for uk in u]
    grad = [sp.diff(E, x[i]) + sum(Eu[k] * du[k][i] for k in range(len(u))) for i in range(n)]
    hess = []
    for i in range(n):
        for j in range(n):
            h = sp.diff(E, x[i], x[j])
            for k, uk in enumerate(u):
                h += (sp.diff(E, x[i], uk) * du[k][j] + sp.diff(E, x[j], uk) * du[k][i]
                      + Eu[k] * d2u[k][i][j])
                for l, ul in enumerate(u):
                    h += sp.diff(E, uk, ul) * du[k][i] * du[l][j]
            hess.append(h)
    stages = [list(zip(u, atoms))] + ([first + second] if atoms else [])
    stages = [st for st in stages if st]
    return stages, E, grad, hess


def _check_free(args, exprs, name, extra=frozenset()):
    known = {s for a in args for s in a.symbols} | set(extra)
    free = set().union(*(sp.sympify(e).free_symbols for e in exprs)) - known
    if free:
        raise ValueError(f"{name}: symbols {sorted(map(str, free))} are not arguments")


def scalar_function(name: str, args, outputs, doc: str, jit: bool = True, stages=()) -> str:
    """Source of ``name(*args, *output arrays)``.

    ``outputs``: a list of ``(array name or None, shape, expressions)``; a ``None`` name is the
    return value (one expression, or a tuple of several).  The generated function returns that
    value (or ``None``).  ``jit=False``: plain Python (scalar arguments only), for functions
    called a few times per solver step, where compiling would cost more than it saves.
    ``stages``: assignments before the outputs (:func:`_body`), e.g. from
    :func:`chain_derivatives`.
    """
    exprs = [e for _, _, es in outputs for e in es]
    staged = [v for st in stages for _, v in st]
    _check_free(args, staged + exprs, name, {s for st in stages for s, _ in st})
    unpack, sub = _clean(args)
    stages = [[(s, sp.sympify(v).xreplace(sub)) for s, v in st] for st in stages]
    lines, printed = _body([sp.sympify(e).xreplace(sub) for e in exprs], "    ", stages)
    out_names = [o for o, _, _ in outputs if o is not None]
    sig = ", ".join([a.name for a in args] + out_names)
    src = (["@njit(cache=True)"] if jit else []) + [f"def {name}({sig}):", f'    """{doc}"""',
                                                     *unpack, *lines]
    k, ret = 0, None
    for oname, shape, es in outputs:
        if oname is None:
            ret = printed[k] if len(es) == 1 else "(" + ", ".join(printed[k:k + len(es)]) + ")"
            k += len(es)
            continue
        for e_flat, index in Argument(oname, tuple(es), shape).entries():
            src.append(f"    {oname}{index} = {printed[k]}")
            k += 1
    src.append(f"    return {ret}" if ret is not None else "    return None")
    return "\n".join(src) + "\n"


def node_function(name: str, args, exprs, doc: str) -> str:
    """Source of ``name(*args, out)`` evaluating ``exprs`` at every node, in parallel.

    Array arguments have shape ``(n, *shape)`` (``shape`` is the per-node one), or ``shape``
    if ``shared``; scalars are shared; ``out`` has shape ``(n, len(exprs))``.
    """
    _check_free(args, exprs, name)
    sub, unpack = {}, []
    for arg in args:
        for k, (s, index) in enumerate(arg.entries()):
            plain = sp.Symbol(f"_{arg.name}_{k}" if arg.is_array else f"_{arg.name}", real=True)
            sub[s] = plain
            at = (arg.name if not arg.is_array else f"{arg.name}{index}" if arg.shared
                  else f"{arg.name}[i, {index[1:-1]}]")
            unpack.append(f"        {plain} = {at}")
    exprs = [sp.sympify(e).xreplace(sub) for e in exprs]
    lines, printed = _body(exprs, "        ")
    first = next(a.name for a in args if a.is_array and not a.shared)
    sig = ", ".join([a.name for a in args] + ["out"])
    src = ["@njit(cache=True, parallel=True)", f"def {name}({sig}):", f'    """{doc}"""',
           f"    for i in prange({first}.shape[0]):", *unpack, *lines]
    src += [f"        out[i, {k}] = {p}" for k, p in enumerate(printed)]
    return "\n".join(src) + "\n"
