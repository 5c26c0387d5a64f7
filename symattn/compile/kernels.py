r"""Compile the derived SymPy expressions into vectorised numpy (and mpmath) functions.

Everything here is built once per process (``functools.lru_cache``) from the objects of
:mod:`symattn.symbolic`; nothing is typed a second time.  All numpy kernels broadcast
over arrays of any common shape; their argument order is stated in each docstring.
Numerical constants are kept as symbols and bound at call time (see STYLE.md: lambdify
with ``modules="mpmath"`` would otherwise demote baked-in floats to double).

Specialisation to ``L = 2``, ``r = r_t = 1`` (model page §4) lives in this module's
:data:`SETTING` and in :mod:`symattn.numerics.prox`, nowhere else.
"""

from __future__ import annotations

import functools

import sympy as sp
from scipy import special

from ..model.symbols import (CONJUGATES, ORDER_PARAMS, V, alpha, lam, m, omega, q, rho, sigma,
                             theta)
from ..symbolic.attention import loss_L2_closed_form, loss_L2_from_targets, teacher_diagonal_L2
from ..symbolic.expectation import Expect, OutputF
from ..symbolic.free_energy import PAPER_SETTING, derive_saddle_point
from ..symbolic.moreau import MoreauEnvelope, MoreauObjective

__all__ = ["SETTING", "prox_kernel", "objective_kernel", "teacher_kernel", "output_equations",
           "prior_equations", "phi_kernel", "atom_list", "odd_atoms", "atom_integrands", "loss_kernel",
           "generalisation_integrand", "eps_g_nodes",
           "lambdify"]

SETTING = PAPER_SETTING

_h = sp.symbols("h_1:3", real=True)
_w = sp.symbols("w_1:3", real=True)
_t = sp.symbols("T_11 T_22", real=True)
_hs = sp.symbols("h^*_1:3", real=True)
_A = sp.symbols("A_11 A_22", real=True)


def _mp_logistic(x):
    import mpmath
    return 1 / (1 + mpmath.exp(-x))


_MODULES = {
    "numpy": [{"Logistic": special.expit}, "numpy"],
    "mpmath": [{"Logistic": _mp_logistic}, "mpmath"],
}


def lambdify(args, expr, module="numpy"):
    """``sympy.lambdify`` with common-subexpression elimination.

    ``module`` is ``"numpy"`` (vectorised, ``Logistic`` -> ``scipy.special.expit``) or
    ``"mpmath"`` (arbitrary precision at the current ``mpmath.mp.dps``).
    """
    return sp.lambdify(args, expr, modules=_MODULES[module], cse=True)


def _objective():
    return MoreauObjective(h=_h, w=_w, loss=loss_L2_from_targets(_h, *_t))


@functools.lru_cache(maxsize=None)
def prox_kernel(module: str = "numpy"):
    r"""``(h1, h2, w1, w2, T11, T22, V, sigma) -> (G, g1, g2, H11, H12, H22)``.

    Value, gradient and Hessian in ``h`` of the ``L = 2`` Moreau objective
    :math:`\mathcal{G} = \sum_l (h_l-w_l)^2/(2V) + \sigma^2\sum_l(\mathrm{logistic}(h_l^2-h_1h_2)-T_{ll})^2`.
    """
    obj = _objective()
    g = obj.gradient()
    H = obj.hessian()
    return lambdify((*_h, *_w, *_t, V, sigma), [obj.expr, g[0], g[1], H[0, 0], H[0, 1], H[1, 1]],
                    module)


@functools.lru_cache(maxsize=None)
def objective_kernel(module: str = "numpy"):
    """``(h1, h2, w1, w2, T11, T22, V, sigma) -> G`` (value only, for line searches)."""
    return lambdify((*_h, *_w, *_t, V, sigma), _objective().expr, module)


@functools.lru_cache(maxsize=None)
def loss_kernel(module: str = "numpy"):
    r"""``(h1, h2, T11, T22, sigma) -> loss``: :math:`\ell` given the target diagonal."""
    return lambdify((*_h, *_t, sigma), loss_L2_from_targets(_h, *_t), module)


@functools.lru_cache(maxsize=None)
def teacher_kernel(module: str = "numpy"):
    r"""``(hs1, hs2, omega, A11, A22) -> (T11, T22)``: :math:`(1-\omega)\,\mathrm{logistic}(\cdot) + \omega A_{ll}`."""
    A = sp.Matrix([[_A[0], 1 - _A[0]], [1 - _A[1], _A[1]]])
    return lambdify((*_hs, omega, *_A), list(teacher_diagonal_L2(_hs, A)), module)


@functools.lru_cache(maxsize=None)
def _equations():
    return derive_saddle_point(SETTING)


@functools.lru_cache(maxsize=None)
def output_equations(module: str = "numpy"):
    """``(*atoms, q, m, theta, V, alpha, rho) -> (q_hat, m_hat, theta_hat, V_hat)``.

    ``atoms`` in the order of :func:`atom_list`.
    """
    eq = _equations()
    a = sp.symbols(f"a_0:{len(eq.atoms)}", real=True)
    exprs = [eq.output[c].xreplace(dict(zip(eq.atoms, a))) for c in CONJUGATES]
    return lambdify((*a, q, m, theta, V, alpha, rho), exprs, module)


@functools.lru_cache(maxsize=None)
def prior_equations(module: str = "numpy"):
    """``(q_hat, m_hat, theta_hat, V_hat, sigma, lam, rho) -> (q, m, theta, V)``."""
    eq = _equations()
    return lambdify((*CONJUGATES, sigma, lam, rho), [eq.prior[x] for x in ORDER_PARAMS], module)


@functools.lru_cache(maxsize=None)
def phi_kernel(module: str = "numpy"):
    r"""``(q, m, theta, V, q_hat, m_hat, theta_hat, V_hat, E_M, alpha, sigma, lam, rho) -> Phi``."""
    eq = _equations()
    EM = sp.Symbol("E_M")
    expr = eq.phi.xreplace({Expect(eq.M): EM})
    return lambdify((*ORDER_PARAMS, *CONJUGATES, EM, alpha, sigma, lam, rho), expr, module)


def atom_list():
    """The expectation atoms of the output equations, in the order the kernels use."""
    return _equations().atoms


@functools.lru_cache(maxsize=None)
def odd_atoms(symmetry: str) -> tuple:
    r"""Indices of the atoms whose integrand is odd under a symmetry of the nodes.

    ``"eta_flip"``: :math:`\eta \to -\eta`, a symmetry of the integrands at ``theta = 0``
    (``h*`` enters only through the even ``T``), under which ``f`` is even.
    ``"full_flip"``: :math:`(\xi,\eta) \to -(\xi,\eta)`, a symmetry at ``m = 0`` (``w``,
    ``h*`` change sign, ``S`` and ``T`` are even, so the prox and ``f`` change sign).
    Averaging a rule over the symmetry sets exactly these atoms to zero.
    """
    eq = _equations()
    xi, eta = eq.nodes.xi, eq.nodes.eta
    flip = {z: -z for z in eta}
    if symmetry == "full_flip":
        flip.update({z: -z for z in xi})
        flip.update({F: -F for F in eq.F})
    elif symmetry != "eta_flip":
        raise ValueError(f"unknown symmetry {symmetry!r}")
    out = []
    for k, E in enumerate(eq.atoms):
        arg = E.args[0]
        image = arg.xreplace(flip)
        if sp.expand(image + arg) == 0:
            out.append(k)
        elif sp.expand(image - arg) != 0:
            raise AssertionError(f"atom {E} has no parity under {symmetry}")
    return tuple(out)


@functools.lru_cache(maxsize=None)
def atom_integrands(module: str = "numpy"):
    """``(xi1, xi2, eta1, eta2, p1, p2, w1, w2, V) -> [integrand of each atom]``.

    ``p`` is the prox; ``f_l = (p_l - w_l)/V`` is substituted into each atom's argument.
    """
    eq = _equations()
    xi, eta = eq.nodes.xi, eq.nodes.eta
    p = sp.symbols("p_1:3", real=True)
    f_sub = {eq.F[l]: (p[l] - eq.w[l]) / V for l in range(2)}
    integrands = [E.args[0].xreplace(f_sub) for E in eq.atoms]
    for it in integrands:
        if it.has(OutputF) or it.has(MoreauEnvelope):
            raise AssertionError(f"unresolved node function in {it}")
    return lambdify((*xi, *eta, *p, *eq.w, V), integrands, module)


def eps_g_nodes():
    r"""``(u, v, h, hs)``: the Gaussian variables of ``eps_g`` and the pre-activations built from them.

    :math:`h_l = s_l m + \sqrt q u_l`, :math:`h^*_l = (\theta/\sqrt q) u_l + \sqrt{\rho-\theta^2/q}\,v_l`
    (model page §4, ``eps_g``).
    """
    u = sp.symbols("u_1:3", real=True)
    v = sp.symbols("v_1:3", real=True)
    s = SETTING.signs
    h = tuple(s[l] * m + sp.sqrt(q) * u[l] for l in range(2))
    hs = tuple(theta / sp.sqrt(q) * u[l] + sp.sqrt(rho - theta**2 / q) * v[l] for l in range(2))
    return u, v, h, hs


@functools.lru_cache(maxsize=None)
def generalisation_integrand(module: str = "numpy"):
    """``(u1, u2, v1, v2, q, m, theta, rho, sigma, omega, A11, A22) -> loss(h, h*)`` at the
    nodes of :func:`eps_g_nodes`."""
    u, v, h, hs = eps_g_nodes()
    A = sp.Matrix([[_A[0], 1 - _A[0]], [1 - _A[1], _A[1]]])
    expr = loss_L2_closed_form(h, hs, A)
    return lambdify((*u, *v, q, m, theta, rho, sigma, omega, *_A), expr, module)
