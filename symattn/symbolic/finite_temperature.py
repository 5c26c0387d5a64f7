r"""Replica-symmetric free entropy at inverse temperature :math:`\beta` (model page §8), derived.

The Gibbs measure :math:`\propto e^{-\beta R(Q)}` on the weights, :math:`R = \sum_\mu\ell_\mu +
\lambda\|Q\|^2/2` (so that :math:`R/d = \varepsilon_t`), is treated by the replica method at
replica-symmetric order parameters: self-overlap :math:`Q_d = \sigma^2 Q_a^2`, overlap
:math:`q = \sigma^2 Q_aQ_b`, :math:`m`, :math:`\theta`, and their conjugates.  With the scalings
that keep the zero-temperature limit finite,

.. math::

    Q_d = q + V/\beta,\quad \hat Q_d = \beta\hat V - \beta^2\hat q,\quad
    \hat q_{\rm raw} = \beta^2\hat q,\quad \hat m_{\rm raw} = \beta\hat m,\quad
    \hat\theta_{\rm raw} = \beta\hat\theta,

the free entropy divided by :math:`\beta` is

.. math::

    \Phi_\beta = \frac{\hat Vq - \hat qV}{2} + \frac{\hat VV}{2\beta} - m\hat m - \theta\hat\theta
      + \Psi_{\rm prior} + \frac{1}{2\beta}\log\frac{2\pi}{\beta(\lambda+\hat V\sigma^2)}
      - \alpha\,\mathbb E\,\mathcal M_\beta(w, h^*, V),

with :math:`\Psi_{\rm prior}` the zero-temperature prior channel and the output term

.. math::

    \mathcal M_\beta = -\frac1\beta\log\int\!\mathrm dh\;\mathcal N(h; w, \tfrac{V}{\beta}I_L)\,
    e^{-\beta\ell(h, h^*)} \;\xrightarrow{\beta\to\infty}\; \mathcal M(w, h^*, V).

* :func:`replica_prior` derives the prior and entropic terms: the ``n``-replica Gaussian
  integral over one weight (precision :math:`A I - C\mathbf 1\mathbf 1^\top`, whose determinant
  and :math:`\mathbf 1^\top(\cdot)^{-1}\mathbf 1` are checked on explicit matrices), the average
  over the teacher's weight by integration, the conjugate pairing of the ``n(n-1)/2`` replica
  pairs, and :math:`n\to0` as the derivative at ``n = 0``.
* :func:`output_rules` derives :math:`\partial_{w_l}\mathcal M_\beta = -f_l` and
  :math:`\partial_V\mathcal M_\beta = \frac{L}{2\beta V} - \frac12\sum_l\big(f_l^2 + c_l/V^2\big)`
  by differentiating the integrand of :math:`e^{-\beta\mathcal M_\beta}`, where now
  :math:`f_l = (\langle h_l\rangle - w_l)/V` and :math:`c_l = \langle h_l^2\rangle -
  \langle h_l\rangle^2` are the Gibbs mean and variance of the pre-activation at the node.
* :func:`derive_finite_temperature` takes the stationarity conditions through the same
  chain rule, Stein's lemma and :math:`\eta`-form as the zero-temperature derivation
  (:mod:`.free_energy`).  The prior equations come out *identical* to zero temperature (the
  :math:`1/\beta` terms of the prior and of the pairing cancel); the output equations change
  only through :math:`f\to f_\beta` and the :math:`\hat q` equation,

  .. math::

      \hat q = \alpha\,\mathbb E\sum_l\Big(f_l^2 + \frac{c_l}{V^2}\Big) - \frac{\alpha L}{\beta V}
               + \frac{\hat V}{\beta},

  which tends to today's as :math:`\beta\to\infty` because :math:`c_l = O(1/\beta)`
  (Laplace's method: ``tests/test_finite_temperature.py`` checks both limits).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from ..model.symbols import V, V_hat, alpha, lam, m, m_hat, q, q_hat, rho, sigma, theta, theta_hat
from .expectation import Expect, OutputF
from .free_energy import (PAPER_SETTING, ChannelSetting, _node_setup, prior_channel,
                          solve_stationarity)

__all__ = ["beta", "n_replicas", "GibbsOutput", "OutputVariance", "ReplicaPrior",
           "replica_prior", "output_rules", "FiniteTemperatureEquations",
           "derive_finite_temperature"]

#: inverse temperature and the number of replicas
beta = sp.Symbol("beta", positive=True)
n_replicas = sp.Symbol("n", positive=True)


class GibbsOutput(sp.Function):
    r"""Abstract :math:`\mathcal M_\beta(w_1..w_L, h^*_1..h^*_L, V)`."""

    def _latex(self, printer):
        return r"\mathcal{M}_\beta\left(%s\right)" % ", ".join(printer._print(a)
                                                              for a in self.args)


class OutputVariance(sp.Function):
    r"""Abstract :math:`c_l(w, h^*, V)`, the Gibbs variance of :math:`h_l` at a node; first
    argument is ``l``."""

    def _latex(self, printer, exp=None):
        base = "c_{%s}" % printer._print(self.args[0])
        return base if exp is None else "%s^{%s}" % (base, exp)


# --------------------------------------------------------------------------------------
# prior channel and conjugate pairing, n replicas
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _teacher_integral():
    k, u, v, s2 = sp.symbols("k u v s_2", positive=True)
    Qs = sp.Symbol("Q^*", real=True)
    # convergent for small k, which is all n -> 0 needs; SymPy's polar bookkeeping of the
    # square root it takes is dropped: its argument is positive there
    out = sp.integrate(sp.exp(k * (u + v * Qs)**2 - Qs**2 / (2 * s2)) / sp.sqrt(2 * sp.pi * s2),
                       (Qs, -sp.oo, sp.oo), conds="none").replace(sp.polar_lift, lambda a: a)
    return (k, u, v, s2), sp.simplify(out)


def teacher_average(kappa, u, v):
    r""":math:`\mathbb E_{Q^*}\exp(\kappa(u + vQ^*)^2)` over the teacher's weight
    :math:`Q^*\sim N(0, \rho/\sigma^2)`, a Gaussian integral done by SymPy once in plain
    symbols and substituted."""
    (k, uu, vv, s2), out = _teacher_integral()
    return out.subs({k: kappa, uu: u, vv: v, s2: rho / sigma**2}, simultaneous=True)


@dataclass(frozen=True)
class ReplicaPrior:
    """The prior and entropic part of :math:`\\Phi_\\beta` (everything but the output term)."""

    phi: sp.Expr            #: per beta, in the scaled variables
    exact_n: sp.Expr        #: the n-replica log-integral plus pairing, before n -> 0
    zero_temperature: sp.Expr   #: its beta -> infinity limit


def _check_rs_precision(n_max: int = 4):
    """``det(A I - C 11^T) = A^(n-1) (A - n C)`` and ``1^T (A I - C 11^T)^-1 1 = n/(A - n C)``
    on explicit ``n x n`` matrices."""
    A, C = sp.symbols("A C", positive=True)
    for k in range(1, n_max + 1):
        K = A * sp.eye(k) - C * sp.ones(k, k)
        one = sp.ones(k, 1)
        if sp.simplify(K.det() - A**(k - 1) * (A - k * C)) != 0:
            raise AssertionError(f"RS precision: det at n = {k}")
        if sp.simplify((one.T * K.inv() * one)[0, 0] - k / (A - k * C)) != 0:
            raise AssertionError(f"RS precision: 1^T K^-1 1 at n = {k}")


@functools.lru_cache(maxsize=None)
def replica_prior() -> ReplicaPrior:
    r"""Derive the prior and entropic terms of :math:`\Phi_\beta` (module doc).

    One weight's replicas :math:`Q_1..Q_n` see
    :math:`\exp[-\tfrac{\beta\lambda}2\sum Q_a^2 - \tfrac{\hat Q_d\sigma^2}2\sum Q_a^2
    + \tfrac{\hat q_{\rm raw}\sigma^2}{2}\sum_{a\ne b}Q_aQ_b + (\hat m_{\rm raw}
    + \hat\theta_{\rm raw}\sigma^2Q^*)\sum Q_a]`, a Gaussian of precision
    :math:`AI - C\mathbf1\mathbf1^\top` with :math:`A = \beta\lambda + \sigma^2(\hat Q_d +
    \hat q_{\rm raw})`, :math:`C = \sigma^2\hat q_{\rm raw}`; :math:`Q^*\sim N(0, \rho/\sigma^2)`.
    The pairing is :math:`\tfrac n2\hat Q_dQ_d - \tfrac{n(n-1)}2\hat q_{\rm raw}q
    - n\hat m_{\rm raw}m - n\hat\theta_{\rm raw}\theta`.
    """
    _check_rs_precision()
    n = n_replicas
    Qd_hat, qr_hat, mr_hat, thr_hat, Qd = sp.symbols(r"\hat{Q}_d \hat{q}_r \hat{m}_r "
                                                     r"\hat{\theta}_r Q_d", real=True)
    A = beta * lam + sigma**2 * (Qd_hat + qr_hat)
    C = sigma**2 * qr_hat
    kappa = n / (2 * (A - n * C))
    teacher = teacher_average(kappa, mr_hat, thr_hat * sigma**2)
    log_integral = (n / 2 * sp.log(2 * sp.pi) - (n - 1) / 2 * sp.log(A) - sp.log(A - n * C) / 2
                    + sp.log(teacher))
    pairing = n * Qd_hat * Qd / 2 - n * (n - 1) / 2 * qr_hat * q - n * mr_hat * m \
        - n * thr_hat * theta
    exact = log_integral + pairing
    if sp.simplify(exact.subs(n, 0)) != 0:
        raise AssertionError("the n-replica integral is not 1 at n = 0")
    per_replica = sp.diff(exact, n).subs(n, 0)            # lim (1/n) log E[...] as n -> 0
    scaled = per_replica.subs({Qd_hat: beta * V_hat - beta**2 * q_hat,
                               qr_hat: beta**2 * q_hat, mr_hat: beta * m_hat,
                               thr_hat: beta * theta_hat, Qd: q + V / beta})
    phi = sp.expand(sp.simplify(sp.expand_log(scaled / beta, force=True)))
    zero_t = sp.limit(phi, beta, sp.oo)
    return ReplicaPrior(phi=phi, exact_n=exact, zero_temperature=sp.simplify(zero_t))


# --------------------------------------------------------------------------------------
# the output term
# --------------------------------------------------------------------------------------
def output_rules(setting: ChannelSetting, w, hs):
    r"""Derive the derivatives of :math:`\mathcal M_\beta` in ``w_l`` and ``V`` (module doc).

    :math:`e^{-\beta\mathcal M_\beta} = \int\mathrm dh\,W(h)` with
    :math:`W = \prod_l(\beta/2\pi V)^{1/2}e^{-\beta(h_l-w_l)^2/2V}e^{-\beta\ell(h,h^*)}`, so
    :math:`\partial_x\mathcal M_\beta = -\beta^{-1}\langle\partial_x\log W\rangle`.  The
    observables :math:`\partial_x\log W` are derived; their Gibbs means are written with
    :math:`\langle h_l - w_l\rangle = Vf_l` and :math:`\langle(h_l-w_l)^2\rangle = V^2f_l^2 + c_l`.

    Returns ``(F, C, rules)``: the abstract ``f_l``, ``c_l`` and ``{w_l: -f_l, V: ...}``.
    """
    L = setting.L
    h = sp.symbols(f"h_1:{L + 1}", real=True)
    ell = sp.Function(r"\ell")(*h, *hs)
    W = sp.exp(-beta * ell) * sp.Mul(*[sp.sqrt(beta / (2 * sp.pi * V))
                                       * sp.exp(-beta * (h[l] - w[l])**2 / (2 * V))
                                       for l in range(L)])
    args = (*w, *hs, V)
    F = tuple(OutputF(sp.Integer(l + 1), *args) for l in range(L))
    C = tuple(OutputVariance(sp.Integer(l + 1), *args) for l in range(L))
    # Gibbs moments of u_l = h_l - w_l: first and second, as the observables need them
    u = sp.symbols(f"u_1:{L + 1}", real=True)
    mean1 = {u[l]: V * F[l] for l in range(L)}
    mean2 = {u[l]**2: V**2 * F[l]**2 + C[l] for l in range(L)}
    rules = {}
    for x in (*w, V):
        obs = sp.expand(sp.simplify(sp.diff(W, x) / W).subs({h[l]: w[l] + u[l]
                                                            for l in range(L)}))
        if obs.has(ell) or sp.Poly(obs, *u).total_degree() > 2:
            raise AssertionError(f"d log W/d{x} is not a quadratic in h - w: {obs}")
        gibbs = sp.Integer(0)
        for term in sp.Add.make_args(obs):
            powers = [k for k in range(L) if term.has(u[k])]
            if not powers:
                gibbs += term
                continue
            (k,) = powers
            deg = sp.degree(term, u[k])
            gibbs += term.subs(u[k]**deg, 1) * (mean1 if deg == 1 else mean2)[u[k]**deg]
        rules[x] = sp.expand(-gibbs / beta)
    expected = {**{w[l]: -F[l] for l in range(L)},
                V: L / (2 * beta * V) - sum(F[l]**2 + C[l] / V**2 for l in range(L)) / 2}
    for x, rule in rules.items():
        if sp.simplify(rule - expected[x]) != 0:
            raise AssertionError(f"dM_beta/d{x}: derived {rule}, expected {expected[x]}")
    return F, C, rules


# --------------------------------------------------------------------------------------
# the saddle point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FiniteTemperatureEquations:
    """The derived finite-temperature saddle-point system (same layout as
    :class:`~symattn.symbolic.free_energy.SaddlePointEquations`, plus ``C``, the ``c_l``)."""

    setting: ChannelSetting
    phi: sp.Expr
    prior: dict
    output: dict
    atoms: tuple
    nodes: object
    M: sp.Expr
    F: tuple
    C: tuple
    w: tuple
    hs: tuple
    rules: dict


@functools.lru_cache(maxsize=None)
def derive_finite_temperature(setting: ChannelSetting = PAPER_SETTING
                              ) -> FiniteTemperatureEquations:
    """Derive the saddle-point equations of :math:`\\Phi_\\beta` (module doc; cached)."""
    nodes, w, hs = _node_setup(setting)
    Mfun = GibbsOutput(*w, *hs, V)
    F, C, rules = output_rules(setting, w, hs)
    rp = replica_prior()
    if sp.simplify(rp.zero_temperature - ((V_hat * q - q_hat * V) / 2 - m * m_hat
                                          - theta * theta_hat + prior_channel().psi)) != 0:
        raise AssertionError("the replica prior's beta -> infinity limit is not the "
                             "zero-temperature prior and pairing")
    phi = rp.phi - alpha * Expect(Mfun)
    prior_sol, output, atoms = solve_stationarity(phi, nodes, Mfun, F, rules, w, hs)
    return FiniteTemperatureEquations(setting=setting, phi=phi, prior=prior_sol, output=output,
                                      atoms=atoms, nodes=nodes, M=Mfun, F=F, C=C, w=w, hs=hs,
                                      rules=rules)
