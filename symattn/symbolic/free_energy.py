r"""The free-entropy functional and its saddle-point equations, derived (model page §4).

.. math::

    \Phi = \frac{\hat V q - \hat q V}{2} - m\hat m - \theta\hat\theta + \Psi_{\rm prior}(\hat q,\hat m,\hat\theta,\hat V)
           - \alpha\,\mathbb{E}_{\xi,\eta}\left[\mathcal{M}(w, h^*, V)\right].

* The **regulariser (prior) channel** :math:`\Psi_{\rm prior}` is derived from the scalar problem
  of one weight under the ridge penalty and the conjugate fields,
  :math:`\max_Q [-(\lambda+\hat V\sigma^2) Q^2/2 + Q B]` with
  :math:`B = \sigma\sqrt{\hat q}\,g + \hat m\,p + \hat\theta\sigma^2 Q^*`, averaged over
  :math:`g\sim N(0,1)`, :math:`Q^*\sim N(0,\rho/\sigma^2)` (:func:`prior_channel`).
* Stationarity in the conjugates gives the prior equations for ``q, m, theta, V``.
* Stationarity in ``q, m, theta, V`` differentiates :math:`\mathbb{E}[\mathcal{M}]` through the
  node map; the envelope theorem turns :math:`\partial_w \mathcal{M}` into :math:`-f` and
  :math:`\partial_V\mathcal{M}` into :math:`-\tfrac12\sum f^2`; Stein's lemma removes every
  :math:`\partial_{h^*}\mathcal{M}` (the second derivatives in ``h*`` cancel) and turns
  :math:`\mathbb{E}[\partial_{h^*_l} f_l]` into :math:`\mathbb{E}[\eta_l f_l]/\sqrt{\rho-\theta^2/q}`.

:func:`derive_saddle_point` returns the result as :class:`SaddlePointEquations`; the numerical
solvers are compiled from exactly these expressions (``symattn.compile``).

The derivation holds for any number of tokens ``L`` with positional encodings ``p_l = s_l p_1``
(:class:`ChannelSetting`); the numerics currently use ``L = 2``, ``s = (+1, -1)``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import sympy as sp

from ..model.symbols import (CONJUGATES, ORDER_PARAMS, V, V_hat, alpha, lam, m, m_hat, q, q_hat,
                             rho, sigma, theta, theta_hat)
from .expectation import Expect, GaussianNodes, OutputF
from .moreau import MoreauEnvelope, MoreauObjective, envelope_derivatives

__all__ = ["ChannelSetting", "PAPER_SETTING", "prior_channel", "gaussian_moment",
           "SaddlePointEquations", "solve_stationarity", "derive_saddle_point",
           "apply_derivative_rules"]


@dataclass(frozen=True)
class ChannelSetting:
    """Shape of the output channel: ``L`` tokens, positional signs ``s_l`` (``p_l = s_l p_1``).

    This is the single place where the numerics' specialisation (model page §4) is stated.
    """

    L: int = 2
    signs: tuple = (1, -1)

    def __post_init__(self):
        if len(self.signs) != self.L:
            raise ValueError("one positional sign per token")


PAPER_SETTING = ChannelSetting()


# --------------------------------------------------------------------------------------
# regulariser channel
# --------------------------------------------------------------------------------------
def gaussian_moment(poly_expr, variances: dict):
    r"""Exact :math:`\mathbb{E}` of a polynomial in independent centred Gaussians.

    ``variances`` maps each Gaussian symbol to its variance; :math:`\mathbb{E}[z^{2k}] =
    (2k-1)!!\,v^k`, odd moments vanish.
    """
    gens = list(variances)
    P = sp.Poly(sp.expand(poly_expr), *gens)
    out = sp.Integer(0)
    for monom, coeff in P.terms():
        term = coeff
        for z, k in zip(gens, monom):
            term *= 0 if k % 2 else sp.factorial2(k - 1) * variances[z] ** (k // 2)
        out += term
    return sp.simplify(out)


@dataclass(frozen=True)
class PriorChannel:
    """Result of the scalar ridge problem: free entropy and the weight's moments."""

    psi: sp.Expr            #: Psi_prior(q_hat, m_hat, theta_hat, V_hat)
    weight: sp.Expr         #: optimal weight Q(B)
    moments: dict           #: q, m, theta, V computed as moments of the optimal weight


def prior_channel() -> PriorChannel:
    r"""Derive the regulariser channel from the scalar ridge problem.

    :math:`Q(B) = \operatorname{argmax}_Q[-(\lambda+\hat V\sigma^2)Q^2/2 + QB]`,
    :math:`\Psi_{\rm prior} = \mathbb{E}[\max_Q(\cdot)]`, and the weight's moments
    :math:`q = \sigma^2\mathbb{E}[Q^2]`, :math:`m = \mathbb{E}[pQ]`,
    :math:`\theta = \sigma^2\mathbb{E}[QQ^*]`, :math:`V = \sigma^2\,\partial Q/\partial B`.
    """
    g, Qs, Qw, B = sp.symbols("g Q^* Q B", real=True)
    p = sp.Integer(1)  # the p_1 entry: p_1 = (1, ..., 1)
    field_ = sigma * sp.sqrt(q_hat) * g + m_hat * p + theta_hat * sigma**2 * Qs
    objective = -(lam + V_hat * sigma**2) * Qw**2 / 2 + Qw * B
    (Qopt,) = sp.solve(sp.diff(objective, Qw), Qw)
    # concave (a maximum) iff lambda + V_hat sigma^2 > 0, i.e. iff V = sigma^2/(lambda + V_hat
    # sigma^2) > 0, which the numerics enforce (InvalidOrderParameters)
    if sp.simplify(sp.diff(objective, Qw, 2) + lam + V_hat * sigma**2) != 0:
        raise AssertionError("prior channel: the scalar problem's curvature is not -(lambda + V_hat sigma^2)")
    variances = {g: sp.Integer(1), Qs: rho / sigma**2}
    Qfield = Qopt.subs(B, field_)
    psi = gaussian_moment(objective.subs(Qw, Qopt).subs(B, field_), variances)
    moments = {
        q: gaussian_moment(sigma**2 * Qfield**2, variances),
        m: gaussian_moment(p * Qfield, variances),
        theta: gaussian_moment(sigma**2 * Qfield * Qs, variances),
        V: sp.simplify(sigma**2 * sp.diff(Qopt, B)),
    }
    return PriorChannel(psi=sp.factor(psi), weight=Qopt, moments=moments)


# --------------------------------------------------------------------------------------
# output channel and the saddle point
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SaddlePointEquations:
    """The derived saddle-point system.

    Attributes
    ----------
    phi : expr
        :math:`\\Phi` with the atom ``E[M]``.
    prior : dict
        ``{q, m, theta, V} -> expr(hats, sigma, lambda, rho)``.
    output : dict
        ``{q_hat, m_hat, theta_hat, V_hat} -> expr(atoms, q, m, theta, V, alpha, rho)``.
    atoms : tuple
        The :class:`Expect` atoms the output equations need (plus ``E[M]`` for ``phi``).
    nodes : GaussianNodes
    M : the abstract Moreau envelope applied to the node symbols
    F : tuple of the abstract ``f_l``
    """

    setting: ChannelSetting
    phi: sp.Expr
    prior: dict
    output: dict
    atoms: tuple
    nodes: GaussianNodes
    M: sp.Expr
    F: tuple
    w: tuple
    hs: tuple
    envelope: dict = field(repr=False)


def _node_setup(setting: ChannelSetting, overlap=q, extra=None):
    """The node map ``w_l = sqrt(overlap) xi_l + s_l m``, ``h*_l`` correlated with ``xi_l``
    through ``theta``, plus the ``extra`` entries (e.g. 1RSB's ``D = q_1 - q_0``)."""
    L = setting.L
    q = overlap
    xi = sp.symbols(f"xi_1:{L + 1}", real=True)
    eta = sp.symbols(f"eta_1:{L + 1}", real=True)
    w = sp.symbols(f"w_1:{L + 1}", real=True)
    hs = sp.symbols(f"h^*_1:{L + 1}", real=True)
    node_map = dict(extra or {})
    for l in range(L):
        node_map[w[l]] = sp.sqrt(q) * xi[l] + setting.signs[l] * m
        node_map[hs[l]] = theta / sp.sqrt(q) * xi[l] + sp.sqrt(rho - theta**2 / q) * eta[l]
    return GaussianNodes(xi=xi, eta=eta, node_map=node_map), w, hs


def _envelope_rules(setting, w, hs):
    """Derive dM/dw_l = -f_l and dM/dV = -sum f_l^2 / 2 for an arbitrary loss ell(h, h*)."""
    L = setting.L
    h = sp.symbols(f"h_1:{L + 1}", real=True)
    ell = sp.Function(r"\ell")(*h, *hs)
    obj = MoreauObjective(h=h, w=w, loss=ell)
    d = envelope_derivatives(obj, list(w) + [V])
    args = (*w, *hs, V)
    F = tuple(OutputF(sp.Integer(l + 1), *args) for l in range(L))
    # identify the derived expressions with f_l = (prox_l - w_l)/V
    prox = [next(iter(e for e in d[w[l]].atoms(sp.Function) if e.func.__name__ == "Prox"
                       and e.args[0] == l + 1)) for l in range(L)]
    f_def = {F[l]: (prox[l] - w[l]) / V for l in range(L)}
    rules = {w[l]: -F[l] for l in range(L)}
    rules[V] = -sum(Fl**2 for Fl in F) / 2
    for x, rule in rules.items():
        if sp.simplify(d[x] - rule.subs(f_def)) != 0:
            raise AssertionError(f"envelope theorem: dM/d{x} is not {rule}")
    return F, rules


def apply_derivative_rules(expr, Mfun, rules):
    """Replace the derivatives of the abstract node function ``Mfun`` by ``rules``
    (``{variable: derivative}``, tried in their order): the first variable of a derivative that
    has a rule is replaced by it, the remaining ones differentiate the result (mixed
    derivatives, e.g. in ``w_l`` and ``h*_k``); derivatives in variables without a rule stay."""
    def rewrite(d):
        if d.expr != Mfun:
            return d
        vars_ = list(d.variables)
        for var in rules:
            if var in vars_:
                vars_.remove(var)
                return sp.diff(rules[var], *vars_) if vars_ else rules[var]
        return d
    return expr.replace(lambda e: isinstance(e, sp.Derivative), rewrite)


def _has_hs_derivative_of_M(G, Mfun, hs) -> bool:
    return any(d.expr == Mfun and set(d.variables) & set(hs) for d in G.atoms(sp.Derivative))


def _eta_form(expr, nodes, F, hs):
    r"""Rewrite atoms :math:`\mathbb{E}[\partial_{h^*_k} f_l]` as :math:`\mathbb{E}[\eta_k f_l]/c`.

    Stein's lemma on :math:`\mathbb{E}[\eta_k f_l]` gives exactly
    :math:`c\,\mathbb{E}[\partial_{h^*_k} f_l]` with :math:`c = \sqrt{\rho-\theta^2/q}`.
    """
    subs = {}
    for E in nodes.atoms(expr):
        arg = E.args[0]
        if isinstance(arg, sp.Derivative) and isinstance(arg.expr, OutputF):
            (k_var,) = arg.variables
            k = hs.index(k_var)
            target = Expect(nodes.eta[k] * arg.expr)
            stein = nodes.collect(nodes.stein(target))
            coeff = stein.coeff(E)
            if sp.simplify(stein - coeff * E) != 0:
                raise AssertionError(f"Stein's lemma on {target} gave more than {E}")
            subs[E] = target / coeff
    return nodes.collect(expr.xreplace(subs))


def solve_stationarity(phi, nodes, Mfun, F, rules, w, hs):
    """``(prior, output, atoms)`` from the stationarity of ``phi``: in the conjugates, solved
    for the order parameters (the prior equations); in the order parameters, through the node
    map, the output term's derivative ``rules`` (``{w_l: ..., V: ...}`` for the abstract
    ``Mfun``), Stein's lemma and the eta-form, solved for the conjugates (the output
    equations, in terms of the Gaussian ``atoms``)."""
    prior_eqs = [sp.diff(phi, h_) for h_ in CONJUGATES]
    sol = sp.solve(prior_eqs, ORDER_PARAMS, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"prior equations: expected one solution, got {sol}")
    prior = {k: sp.factor(v) for k, v in sol[0].items()}

    is_hs_term = functools.partial(_has_hs_derivative_of_M, Mfun=Mfun, hs=hs)
    stationarity = []
    for x in ORDER_PARAMS:
        d = nodes.derivative(phi, x)
        d = nodes.linear(apply_derivative_rules(d, Mfun, rules))
        d = nodes.collect(nodes.stein(d, select=is_hs_term))
        d = nodes.collect(apply_derivative_rules(d, Mfun, rules))
        d = _eta_form(d, nodes, F, hs)
        if d.has(Mfun.func):
            raise AssertionError(f"dPhi/d{x}: derivatives of {Mfun.func.__name__} survive: {d}")
        stationarity.append(d)
    sol = sp.solve(stationarity, CONJUGATES, dict=True)
    if len(sol) != 1:
        raise AssertionError(f"output equations: expected one solution, got {sol}")
    output = {k: nodes.collect(v) for k, v in sol[0].items()}
    atoms = tuple(sorted(set().union(*(nodes.atoms(v) for v in output.values())),
                         key=sp.default_sort_key))
    return prior, output, atoms


@functools.lru_cache(maxsize=None)
def derive_saddle_point(setting: ChannelSetting = PAPER_SETTING) -> SaddlePointEquations:
    """Derive the saddle-point equations of model page §4 from :math:`\\Phi` (cached)."""
    nodes, w, hs = _node_setup(setting)
    Mfun = MoreauEnvelope(*w, *hs, V)
    F, rules = _envelope_rules(setting, w, hs)
    prior = prior_channel()
    phi = ((V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat + prior.psi
           - alpha * Expect(Mfun))

    prior_sol, output, atoms = solve_stationarity(phi, nodes, Mfun, F, rules, w, hs)
    for k, v in prior.moments.items():  # the conjugate structure matches the weight's moments
        if sp.simplify(prior_sol[k] - v) != 0:
            raise AssertionError(f"prior channel: {k} from stationarity != moment of the weight")
    return SaddlePointEquations(setting=setting, phi=phi, prior=prior_sol, output=output,
                                atoms=atoms, nodes=nodes, M=Mfun, F=F, w=w, hs=hs,
                                envelope=rules)
