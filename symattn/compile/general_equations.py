r"""The general model's saddle-point map, generated from its derivation for one :class:`Shape`.

:func:`general_equations` returns a module generated from
:func:`symattn.symbolic.general.derive_general_saddle_point` (model page §7) and cached on disk
like the kernels (:func:`~symattn.compile.generated.cached_module`), so a process that finds it
does not run the derivation.  Nothing of the map is typed by hand: the atoms, their
integrands, the output (conjugate) equations, the prior equations, :math:`\Phi` and the
linearisation of the prior in :math:`\hat\theta` are the derivation's expressions, printed.

**Atoms.**  The expectations the output equations contain, each of one token's variables
(:math:`\mathbb E[f_{la}f_{lb}]`, :math:`\mathbb E[f_{la}]`, :math:`\mathbb E[\xi_{la}f_{lb}]`,
:math:`\mathbb E[\eta_{lc}f_{lb}]`), in SymPy's canonical order (``ATOMS`` names them), then
:math:`\mathbb E\mathcal M` and :math:`\mathbb E\ell(\mathrm{prox})`.  Their integrands at a
node, with :math:`f_l = V^{-1}(\mathrm{prox}_l - w_l)` substituted, are compiled into the
fused channel pass (:func:`atom_rows_source`, :mod:`symattn.compile.general_channel`).

**Flat vectors.**  A matrix order parameter is passed and returned as its *free entries*
(:func:`symattn.symbolic.general.free_entries`): the upper triangle of a symmetric one
(``q, V, q_hat, V_hat, Pi``) row by row, every entry of the others (``M, theta`` and their
conjugates) row by row; :math:`K^{-\top}` and :math:`B^{-\top}` as their upper triangles.

Functions of the module (plain Python; arguments in this order):

* ``output_equations(a, KiT, BiT, q, theta, alpha, rho)``: the conjugates' free entries,
  ``(q_hat, M_hat, theta_hat, V_hat)`` concatenated, from the atom means ``a``;
* ``prior_equations(q_hat, M_hat, theta_hat, V_hat, Pi, sigma, lam, rho)``: the order
  parameters' free entries ``(q, M, theta, V)`` concatenated;
* ``phi(q, M, theta, V, q_hat, M_hat, theta_hat, V_hat, E_M, Pi, alpha, sigma, lam, rho)``:
  :math:`\Phi`;
* ``prior_theta_jacobian(V_hat, sigma, lam, rho)``: :math:`\partial\theta/\partial\hat\theta`
  (``(r_t r) x (r_t r)``, entries row by row);
* ``N_ATOMS``, ``ATOMS`` (the atoms' LaTeX), ``ATOM_KEYS`` (:func:`atom_key`), ``SIZES``
  (the free-entry counts of ``q, M, theta, V``).
"""

from __future__ import annotations

import functools

import sympy as sp

from ..model.symbols import alpha, lam, rho, sigma
from .codegen import Argument, scalar_function
from .generated import cached_module
from .shape import Shape, flat

__all__ = ["general_equations", "general_equations_source", "atoms_of", "atom_key"]


def _upper(X: sp.Matrix) -> tuple:
    return tuple(X[a, b] for a in range(X.rows) for b in range(a, X.cols))


def atom_key(atom) -> str:
    r"""A name of an expectation atom by its integrand's factors, the same for the paper's
    derivation (:class:`~symattn.symbolic.expectation.OutputF` ``f_l``, ``xi_l``, ``eta_l``) and
    the general one (``f_{la}``, ``xi_{la}``, ``eta_{lc}``): the sorted factors ``f[l,a]``,
    ``xi[l,a]``, ``eta[l,c]``, one per power, joined by ``*`` (e.g. ``eta[1,1]*f[1,1]``).  It
    matches the two atom orders without deriving anything at run time."""
    from ..symbolic.expectation import OutputF
    factors = []
    for base, power in atom.args[0].as_powers_dict().items():
        if isinstance(base, OutputF):
            name = f"f[{int(base.args[0])},1]"
        else:
            stem, _, idx = base.name.partition("_")
            idx = idx.strip("{}")
            name = f"{stem}[{idx[0]},{idx[1] if len(idx) > 1 else 1}]"
        factors += [name] * int(power)
    return "*".join(sorted(factors))


def atoms_of(eq) -> list:
    """The distinct expectation atoms of ``eq``'s output equations (module doc, 'Atoms'), in
    SymPy's canonical order."""
    from ..symbolic.expectation import Expect
    found = set()
    for X in eq.output.values():
        for e in X:
            found |= sp.sympify(e).atoms(Expect)
    return sorted(found, key=sp.default_sort_key)


def general_equations_source(shape: Shape) -> str:
    """The text of :func:`general_equations`' module for ``shape`` (derives; no cache)."""
    from ..symbolic.expectation import Expect
    from ..symbolic.general import derive_general_saddle_point, free_entries

    L, r, rt = shape.L, shape.r, shape.r_t
    eq = derive_general_saddle_point(L, r, rt)
    s = eq.symbols
    atoms = atoms_of(eq)
    a = sp.symbols(f"a_0:{len(atoms)}", real=True)
    to_a = dict(zip(atoms, a))

    def arg(name, X, upper=False):
        syms = _upper(X) if upper else free_entries(X)
        return Argument(name, syms, (len(syms),))

    KiT, BiT = arg("KiT", eq.KiT, upper=True), arg("BiT", eq.BiT, upper=True)
    q_, M_, th_, V_ = (arg("q", s.q), arg("M", s.M), arg("theta", s.theta), arg("V", s.V))
    qh, Mh, thh, Vh = (arg("q_hat", s.q_hat), arg("M_hat", s.M_hat),
                       arg("theta_hat", s.theta_hat), arg("V_hat", s.V_hat))
    Pi = arg("Pi", s.Pi)
    names = {alpha: "alpha", rho: "rho", sigma: "sigma", lam: "lam"}
    scal = lambda *syms: [Argument(names[x], (x,)) for x in syms]   # noqa: E731
    conj = [e.xreplace(to_a) for X in ("q_hat", "M_hat", "theta_hat", "V_hat")
            for e in free_entries_of(eq.output[X], getattr(s, X))]
    prior = [e for X in ("q", "M", "theta", "V")
             for e in free_entries_of(eq.prior[X], getattr(s, X))]
    EM = sp.Symbol("E_M")
    phi = eq.phi.xreplace({eq.atoms["EM"]: EM})
    if phi.has(Expect) or any(c.has(Expect) for c in conj):
        raise AssertionError("general equations: an expectation is not an atom")
    thv = free_entries(s.theta_hat)
    theta_prior = sp.Matrix([eq.prior["theta"][i, j] for i in range(rt) for j in range(r)])
    jac = theta_prior.jacobian(list(thv))
    if any(sp.diff(e, t) != 0 for e in jac for t in thv):
        raise AssertionError("general equations: the prior is not linear in theta_hat")

    sizes = tuple(len(free_entries(getattr(s, X))) for X in ("q", "M", "theta", "V"))
    parts = [f"# Generated by symattn.compile.general_equations for {shape}; do not edit.\n",
             "import math\n",
             f"N_ATOMS = {len(atoms)}\nATOMS = {tuple(sp.latex(E) for E in atoms)!r}\n"
             f"ATOM_KEYS = {tuple(atom_key(E) for E in atoms)!r}\n"
             f"SIZES = {sizes!r}\n",
             scalar_function("output_equations",
                             [Argument("a", a, (len(a),)), KiT, BiT, q_, th_, *scal(alpha, rho)],
                             [(None, (), conj)], "(q_hat, M_hat, theta_hat, V_hat) free entries",
                             jit=False),
             scalar_function("prior_equations", [qh, Mh, thh, Vh, Pi, *scal(sigma, lam, rho)],
                             [(None, (), prior)], "(q, M, theta, V) free entries", jit=False),
             scalar_function("phi", [q_, M_, th_, V_, qh, Mh, thh, Vh, Argument("E_M", (EM,)),
                                     Pi, *scal(alpha, sigma, lam, rho)],
                             [(None, (), [phi])], "Phi", jit=False),
             scalar_function("prior_theta_jacobian", [Vh, *scal(sigma, lam, rho)],
                             [(None, (), list(jac))], "d theta / d theta_hat, row by row",
                             jit=False),
             ]
    return "\n\n".join(parts)


def _rows(shape: Shape, eq, atoms) -> tuple:
    """``(arguments, expressions)`` of ``atom_rows`` (module doc): each atom's integrand with
    :math:`f_l = V^{-1}(h_l - w_l)` substituted, in the derivation's symbols, then the loss."""
    from ..symbolic.attention import loss_from_targets
    L, r, rt = shape.L, shape.r, shape.r_t
    h, w = shape.student("h"), shape.student("w")
    Vinv = sp.Matrix(r, r, lambda i, j: sp.Symbol(f"Vi_{i}{j}", real=True))
    F = (h - w) * Vinv.T               # rows f_l^T = (V^-1 (h_l - w_l))^T
    f = eq.atoms["f"]
    f_sub = {f[l][b]: F[l, b] for l in range(L) for b in range(r)}
    rows = [E.args[0].xreplace(f_sub) for E in atoms]
    T = shape.square("T")
    rows.append(loss_from_targets(h, T))
    xi = sp.Matrix(L, r, lambda l, b: eq.atoms["xi"][l][b])
    eta = sp.Matrix(L, rt, lambda l, c: eq.atoms["eta"][l][c])
    args = [Argument("xi", flat(xi), (L, r)), Argument("eta", flat(eta), (L, rt)),
            Argument("h", flat(h), (L * r,)), Argument("w", flat(w), (L * r,)),
            Argument("Vinv", flat(Vinv), (r, r)), Argument("T", flat(T), (L, L)),
            Argument("sigma", (sigma,))]
    return args, rows


def atom_rows_source(shape: Shape) -> str:
    """The source of the compiled ``atom_rows(xi, eta, h, w, Vinv, T, sigma, out)``: one
    node's atom integrands (``xi`` ``(L, r)``, ``eta`` ``(L, r_t)``, ``h``, ``w`` ``(L r)``,
    ``Vinv`` ``(r, r)``, ``T`` ``(L, L)``), then the loss at ``h``, into ``out``
    ``(N_ATOMS + 1)``; for fused drivers (:mod:`symattn.compile.general_channel`), whose
    module imports :data:`~symattn.compile.codegen.HEADER`'s names."""
    from ..symbolic.general import derive_general_saddle_point
    eq = derive_general_saddle_point(shape.L, shape.r, shape.r_t)
    args, rows = _rows(shape, eq, atoms_of(eq))
    return scalar_function("atom_rows", args, [("out", (len(rows),), rows)],
                           "One node's atom integrands, then the loss at h.")


def free_entries_of(X: sp.Matrix, like: sp.Matrix) -> tuple:
    """The entries of ``X`` at the positions of ``like``'s free entries (module doc)."""
    seen, out = set(), []
    for i in range(like.rows):
        for j in range(like.cols):
            if like[i, j] not in seen:
                seen.add(like[i, j])
                out.append(X[i, j])
    return tuple(out)


@functools.lru_cache(maxsize=None)
def general_equations(shape: Shape):
    """The generated saddle-point map of ``shape`` (module doc)."""
    return cached_module(f"equations_{shape.tag}", lambda: general_equations_source(shape))
