r"""One-step replica symmetry breaking (1RSB) at zero temperature (model page §8), derived.
Single weight vector (``r = 1``), ridge prior, ``L`` tokens (:class:`~.free_energy.ChannelSetting`).

The ``n`` replicas fall into blocks of :math:`x_P` (Parisi's parameter); fields of replicas in one
block overlap by :math:`q_1`, in different blocks by :math:`q_0 \le q_1`.  At zero temperature
the scalings

.. math::

    Q_d = q_1 + V/\beta,\quad x_P = x/\beta,\quad \hat Q_d = \beta\hat V - \beta^2\hat q_1,\quad
    \hat q_{1,\rm raw} = \beta^2\hat q_1,\quad \hat q_{0,\rm raw} = \beta^2\hat q_0,\quad
    \hat m_{\rm raw} = \beta\hat m,\quad \hat\theta_{\rm raw} = \beta\hat\theta

keep the free entropy per :math:`\beta` finite (:func:`rsb_prior` derives its prior and pairing
part from the ``n``-replica Gaussian integral, whose block-structured precision is checked on
explicit matrices), and the output term becomes

.. math::

    -\alpha\,\mathbb E_{\xi_0,\eta}\,\mathcal M_x(w_0, h^*, V, q_1 - q_0),\qquad
    \mathcal M_x = -\frac1x\log\mathbb E_{\xi_1}\,e^{-x\,\mathcal M(w_0 + \sqrt{q_1-q_0}\,\xi_1,\,
    h^*,\,V)},

:math:`w_{0,l} = \sqrt{q_0}\,\xi_{0,l} + s_lm`, :math:`h^*_l = (\theta/\sqrt{q_0})\xi_{0,l} +
\sqrt{\rho-\theta^2/q_0}\,\eta_l` (the teacher is the same for all replicas, so it correlates
with the part of the field they share).  :func:`rsb_output_rules` derives the derivatives of
:math:`\mathcal M_x` from its integrand and the zero-temperature envelope rules: with
:math:`\langle\cdot\rangle` the average over :math:`\xi_1` tilted by :math:`e^{-x\mathcal M}`,

.. math::

    \partial_{w_{0,l}}\mathcal M_x = -\langle f_l\rangle,\quad
    \partial_V\mathcal M_x = -\tfrac12\langle\textstyle\sum_l f_l^2\rangle,\quad
    \partial_{q_1-q_0}\mathcal M_x = -\frac{\langle\sum_l\xi_{1,l}f_l\rangle}{2\sqrt{q_1-q_0}},\quad
    \partial_x\mathcal M_x = \frac{\langle\mathcal M\rangle - \mathcal M_x}{x}

(the :math:`\xi_1`-weighted form, not :math:`\mathrm{tr}\,\partial f/\partial w`, so that the
prox's jumps are integrated, not differentiated).  :func:`derive_one_step_rsb` takes the
stationarity conditions through the same chain rule, Stein's lemma and :math:`\eta`-form as the
replica-symmetric derivation: the prior equations give ``q_0, q_1, m, theta, V`` from the
conjugates and ``x``; the output equations the conjugates; and the stationarity in ``x`` is a
sixth equation, kept as an expression.

**Reductions to RS** (``tests/test_one_step_rsb.py``): as :math:`x\to0` the prior part tends
to the RS one at :math:`q = q_1, \hat q = \hat q_1`, and :math:`\mathcal M_x \to
\mathbb E_{\xi_1}\mathcal M`; at :math:`q_1 = q_0` (and :math:`\hat q_1 = \hat q_0`) the prior
part is the RS one for every ``x`` and :math:`\mathcal M_x = \mathcal M(w_0)`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from ..model.symbols import V, V_hat, alpha, lam, m, m_hat, sigma, theta, theta_hat
from .expectation import Expect, OutputF
from .finite_temperature import beta, teacher_average
from .free_energy import (PAPER_SETTING, ChannelSetting, _envelope_rules, _eta_form,
                          _has_hs_derivative_of_M, _node_setup, apply_derivative_rules)
from .moreau import MoreauEnvelope

__all__ = ["q0", "q1", "q0_hat", "q1_hat", "x", "D", "ORDER", "HATS", "RSBEnvelope",
           "TiltedF", "TiltedF2", "TiltedXiF", "TiltedM", "RSBPrior", "rsb_prior",
           "rsb_output_rules", "tilted_shift_rule", "OneStepRSBEquations",
           "derive_one_step_rsb"]

q0, q1 = sp.symbols("q_0 q_1", positive=True)
q0_hat, q1_hat = sp.symbols(r"\hat{q}_0 \hat{q}_1", real=True)
#: the scaled Parisi parameter (x_P = x / beta)
x = sp.Symbol("x", positive=True)
#: q_1 - q_0 as an argument of the node functions
D = sp.Symbol("D", positive=True)

ORDER = (q0, q1, m, theta, V)
HATS = (q0_hat, q1_hat, m_hat, theta_hat, V_hat)


class RSBEnvelope(sp.Function):
    r"""Abstract :math:`\mathcal M_x(w_0, h^*, V, D, x) = -\frac1x\log\mathbb E_{\xi_1}
    e^{-x\mathcal M(w_0+\sqrt D\xi_1, h^*, V)}`."""

    def _latex(self, printer):
        return r"\mathcal{M}_x\left(%s\right)" % ", ".join(printer._print(a) for a in self.args)


class TiltedF(OutputF):
    r"""Abstract :math:`\langle f_l\rangle` (tilted average over :math:`\xi_1`); first argument
    ``l``."""

    def _latex(self, printer, exp=None):
        base = r"\langle f_{%s}\rangle" % printer._print(self.args[0])
        return base if exp is None else "%s^{%s}" % (base, exp)


class TiltedF2(sp.Function):
    r"""Abstract :math:`\langle\sum_l f_l^2\rangle`."""

    def _latex(self, printer, exp=None):
        return r"\langle |f|^2\rangle"


class TiltedXiF(sp.Function):
    r"""Abstract :math:`\langle\xi_{1,l}f_l\rangle`; first argument ``l``."""

    def _latex(self, printer, exp=None):
        return r"\langle \xi_{1,%s} f_{%s}\rangle" % ((printer._print(self.args[0]),) * 2)


class TiltedM(sp.Function):
    r"""Abstract :math:`\langle\mathcal M\rangle`."""

    def _latex(self, printer, exp=None):
        return r"\langle \mathcal{M}\rangle"


# --------------------------------------------------------------------------------------
# prior and pairing
# --------------------------------------------------------------------------------------
def _check_block_precision(cases=((4, 2), (6, 2), (6, 3))):
    r"""``K = a I - c_1 B - c_0 J`` (``B`` block-diagonal ones in blocks of ``x_P``, ``J`` all
    ones): :math:`\det K = a^{n-n/x_P}(a-x_Pc_1)^{n/x_P-1}(a-x_Pc_1-nc_0)` and
    :math:`\mathbf 1^\top K^{-1}\mathbf 1 = n/(a-x_Pc_1-nc_0)`, on explicit matrices."""
    a, c1, c0 = sp.symbols("a c_1 c_0", positive=True)
    for n, xp in cases:
        B = sp.zeros(n, n)
        for blk in range(n // xp):
            B[blk * xp:(blk + 1) * xp, blk * xp:(blk + 1) * xp] = sp.ones(xp, xp)
        K = a * sp.eye(n) - c1 * B - c0 * sp.ones(n, n)
        det = a**(n - n // xp) * (a - xp * c1)**(n // xp - 1) * (a - xp * c1 - n * c0)
        if sp.simplify(K.det() - det) != 0:
            raise AssertionError(f"1RSB precision: det at n = {n}, x_P = {xp}")
        one = sp.ones(n, 1)
        if sp.simplify((one.T * K.inv() * one)[0, 0] - n / (a - xp * c1 - n * c0)) != 0:
            raise AssertionError(f"1RSB precision: 1^T K^-1 1 at n = {n}, x_P = {xp}")


@dataclass(frozen=True)
class RSBPrior:
    """The prior and pairing part of the 1RSB free entropy per beta."""

    exact_n: sp.Expr          #: n-replica log-integral plus pairing, before n -> 0
    phi_beta: sp.Expr         #: per beta, in the scaled variables, finite beta
    zero_temperature: sp.Expr  #: its beta -> infinity limit


@functools.lru_cache(maxsize=None)
def rsb_prior() -> RSBPrior:
    r"""Derive the 1RSB prior and pairing (module doc).  One weight's replicas see the Gaussian
    of precision :math:`aI - c_1B - c_0J` with :math:`a = \beta\lambda + \sigma^2(\hat Q_d +
    \hat q_{1,\rm raw})`, :math:`c_1 = \sigma^2(\hat q_{1,\rm raw} - \hat q_{0,\rm raw})`,
    :math:`c_0 = \sigma^2\hat q_{0,\rm raw}` and the field :math:`(\hat m_{\rm raw} +
    \hat\theta_{\rm raw}\sigma^2Q^*)\mathbf 1`; the pairing is :math:`\tfrac n2\hat Q_dQ_d -
    \tfrac{n(x_P-1)}2\hat q_{1,\rm raw}q_1 - \tfrac{n(n-x_P)}2\hat q_{0,\rm raw}q_0 -
    n\hat m_{\rm raw}m - n\hat\theta_{\rm raw}\theta`."""
    _check_block_precision()
    n, xp = sp.symbols("n x_P", positive=True)
    Qd_hat, q1r, q0r, mr, thr, Qd = sp.symbols(r"\hat{Q}_d \hat{q}_{1r} \hat{q}_{0r} \hat{m}_r "
                                               r"\hat{\theta}_r Q_d", real=True)
    a = beta * lam + sigma**2 * (Qd_hat + q1r)
    c1 = sigma**2 * (q1r - q0r)
    c0 = sigma**2 * q0r
    top = a - xp * c1 - n * c0
    teacher = teacher_average(n / (2 * top), mr, thr * sigma**2)
    log_integral = (n / 2 * sp.log(2 * sp.pi) - (n - n / xp) / 2 * sp.log(a)
                    - (n / xp - 1) / 2 * sp.log(a - xp * c1) - sp.log(top) / 2
                    + sp.log(teacher))
    pairing = (n * Qd_hat * Qd / 2 - n * (xp - 1) / 2 * q1r * q1 - n * (n - xp) / 2 * q0r * q0
               - n * mr * m - n * thr * theta)
    exact = log_integral + pairing
    if sp.simplify(exact.subs(n, 0)) != 0:
        raise AssertionError("the n-replica integral is not 1 at n = 0")
    per_replica = sp.diff(exact, n).subs(n, 0)
    scaled = per_replica.subs({Qd_hat: beta * V_hat - beta**2 * q1_hat, q1r: beta**2 * q1_hat,
                               q0r: beta**2 * q0_hat, mr: beta * m_hat, thr: beta * theta_hat,
                               Qd: q1 + V / beta, xp: x / beta})
    phi = sp.expand(sp.expand_log(sp.simplify(scaled / beta), force=True))
    zero_t = sp.simplify(sp.limit(phi, beta, sp.oo))
    return RSBPrior(exact_n=exact, phi_beta=phi, zero_temperature=zero_t)


# --------------------------------------------------------------------------------------
# the output term
# --------------------------------------------------------------------------------------
def rsb_output_rules(setting: ChannelSetting, w, hs):
    r"""Derive the derivatives of :math:`\mathcal M_x` in ``w_0``, ``V``, ``D``, ``x`` (module
    doc).  Returns ``(Mfun, tilted, rules)`` with ``tilted`` the abstract
    ``(<f_l>..., <|f|^2>, <xi_1.f>, <M>)``."""
    L = setting.L
    args = (*w, *hs, V, D, x)
    Mfun = RSBEnvelope(*args)
    Fbar = tuple(TiltedF(sp.Integer(l + 1), *args) for l in range(L))
    F2, Mbar = TiltedF2(*args), TiltedM(*args)
    XiF = tuple(TiltedXiF(sp.Integer(l + 1), *args) for l in range(L))
    # the zero-temperature envelope rules at the inner field u = w_0 + sqrt(D) zeta
    u = sp.symbols(f"u_1:{L + 1}", real=True)
    zeta = sp.symbols(f"zeta_1:{L + 1}", real=True)
    F, env = _envelope_rules(setting, u, hs)
    M = MoreauEnvelope(*u, *hs, V)
    W = sp.exp(-x * M)
    inner = {u[l]: w[l] + sp.sqrt(D) * zeta[l] for l in range(L)}
    rules = {}
    for var in (*w, V, D):
        # d log W / d var: through the inner field (chain rule) and explicitly
        obs = sp.diff(W, var) / W + sum(sp.diff(inner[u[l]], var) * sp.diff(W, u[l]) / W
                                        for l in range(L))
        obs = obs.replace(lambda e: isinstance(e, sp.Derivative) and e.expr == M,
                          lambda e: env[e.variables[0]])
        rules[var] = sp.expand(-obs / x)      # -(1/x) d log W/d var; tilted average pending
    expected = {**{w[l]: -F[l] for l in range(L)},
                V: -sum(f**2 for f in F) / 2,
                D: -sum(zeta[l] * F[l] for l in range(L)) / (2 * sp.sqrt(D))}
    for var, rule in rules.items():
        if sp.simplify(rule - expected[var]) != 0:
            raise AssertionError(f"dM_x/d{var}: derived {rule}, expected {expected[var]}")
    tilt = {**{w[l]: -Fbar[l] for l in range(L)}, V: -F2 / 2,
            D: -sum(XiF) / (2 * sp.sqrt(D))}
    # x: M_x = -(1/x) log Z(x), Z'/Z = <d log W/dx> = <-M>
    Z = sp.Function("Z")(x)
    Mx = -sp.log(Z) / x
    dx = sp.diff(Mx, x).subs(sp.Derivative(Z, x), Z * (-Mbar)).subs(sp.log(Z), -x * Mfun)
    if sp.simplify(dx - (Mbar - Mfun) / x) != 0:
        raise AssertionError(f"dM_x/dx = {dx}")
    tilt[x] = sp.simplify(dx)
    return Mfun, (*Fbar, F2, *XiF, Mbar), tilt


def tilted_shift_rule(setting: ChannelSetting, w, hs):
    r"""Derive :math:`\partial_{w_{0,l}}\langle f_l\rangle = \langle\xi_{1,l}f_l\rangle/\sqrt D
    - x\langle f_l\rangle^2` without differentiating ``f`` (which jumps): the tilted average is
    :math:`\langle F\rangle = \int F(u)\,\mathcal N(u; w_0, D)e^{-x\mathcal M(u)}\mathrm du/\mathcal Z`,
    so :math:`\partial_{w_{0,l}}\langle F\rangle = \mathrm{Cov}(F, \partial_{w_{0,l}}\log
    \mathcal N)` with :math:`\partial_{w_{0,l}}\log\mathcal N = (u_l - w_{0,l})/D =
    \xi_{1,l}/\sqrt D` (derived here), and :math:`\langle\xi_{1,l}\rangle/\sqrt D =
    \partial_{w_{0,l}}\log\mathcal Z = x\langle f_l\rangle` (the envelope rule of
    :func:`rsb_output_rules`).  Returns ``{(l, l): rule}`` for ``Derivative(<f_l>, w_{0,l})``."""
    L = setting.L
    u = sp.symbols(f"u_1:{L + 1}", real=True)
    dens = sp.Mul(*[sp.exp(-(u[l] - w[l])**2 / (2 * D)) / sp.sqrt(2 * sp.pi * D)
                    for l in range(L)])
    for l in range(L):
        score = sp.simplify(sp.diff(dens, w[l]) / dens)
        if sp.simplify(score - (u[l] - w[l]) / D) != 0:
            raise AssertionError(f"d log N/dw_0{l + 1} = {score}")
    args = (*w, *hs, V, D, x)
    out = {}
    for l in range(L):
        Fl = TiltedF(sp.Integer(l + 1), *args)
        Xl = TiltedXiF(sp.Integer(l + 1), *args)
        # Cov(f_l, xi_1l / sqrt D) = <xi_1l f_l>/sqrt D - <f_l> <xi_1l>/sqrt D
        out[l] = Xl / sp.sqrt(D) - Fl * x * Fl
    return out


# --------------------------------------------------------------------------------------
# the saddle point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OneStepRSBEquations:
    """The derived 1RSB system: ``prior`` (order parameters from hats and ``x``), ``output``
    (hats from the Gaussian ``atoms``), ``x_equation`` (dPhi/dx, in atoms, order parameters,
    hats and ``x``), ``phi`` (the free entropy per beta at zero temperature)."""

    setting: ChannelSetting
    phi: sp.Expr
    prior: dict
    output: dict
    x_equation: sp.Expr
    atoms: tuple
    nodes: object
    M: sp.Expr
    tilted: tuple
    w: tuple
    hs: tuple


@functools.lru_cache(maxsize=None)
def derive_one_step_rsb(setting: ChannelSetting = PAPER_SETTING) -> OneStepRSBEquations:
    """Derive the zero-temperature 1RSB saddle-point equations (module doc; cached)."""
    nodes, w, hs = _node_setup(setting, q0, {D: q1 - q0})
    Mfun, tilted, rules = rsb_output_rules(setting, w, hs)
    shift = tilted_shift_rule(setting, w, hs)
    phi = rsb_prior().zero_temperature - alpha * Expect(Mfun)
    # conjugate stationarity: the prior equations
    sol = sp.solve([sp.diff(phi, h_) for h_ in HATS], ORDER, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"1RSB prior equations: expected one solution, got {sol}")
    prior = {k: sp.factor(v) for k, v in sol[0].items()}
    is_hs_term = functools.partial(_has_hs_derivative_of_M, Mfun=Mfun, hs=hs)
    Fbar = tilted[:setting.L]

    def stationary(var):
        d = nodes.derivative(phi, var)
        d = nodes.linear(apply_derivative_rules(d, Mfun, rules))
        d = nodes.collect(nodes.stein(d, select=is_hs_term))
        d = nodes.collect(apply_derivative_rules(d, Mfun, rules))
        # the atoms E[xi_0l <f_l>]: Stein's lemma in xi_0, the shift rule for d<f_l>/dw_0l
        d = nodes.collect(nodes.stein(d, select=lambda G: isinstance(G, TiltedF)))
        d = d.replace(lambda e: isinstance(e, sp.Derivative) and isinstance(e.expr, TiltedF)
                      and e.variables == (w[int(e.expr.args[0]) - 1],),
                      lambda e: shift[int(e.expr.args[0]) - 1])
        d = _eta_form(nodes.collect(d), nodes, Fbar, hs)
        if any(a.expr == Mfun or (isinstance(a.expr, TiltedF) and set(a.variables) & set(w))
               for a in d.atoms(sp.Derivative)):
            raise AssertionError(f"dPhi/d{var}: derivatives survive: {d}")
        return d

    eqs = [stationary(v) for v in ORDER]
    sol = sp.solve(eqs, HATS, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"1RSB output equations: expected one solution, got {sol}")
    output = {k: nodes.collect(v) for k, v in sol[0].items()}
    x_eq = stationary(x)
    atoms = tuple(sorted(set().union(*(nodes.atoms(v) for v in (*output.values(), x_eq))),
                         key=sp.default_sort_key))
    return OneStepRSBEquations(setting=setting, phi=phi, prior=prior, output=output,
                               x_equation=x_eq, atoms=atoms, nodes=nodes, M=Mfun,
                               tilted=tilted, w=w, hs=hs)
