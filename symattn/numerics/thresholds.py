r"""The thresholds ``alpha_c`` and ``alpha_l`` with error bars (MODEL.md section 5).

* :math:`\alpha_c`: root of :math:`\Delta(\alpha) = \varepsilon_t^{\rm pos}(\alpha) -
  \varepsilon_t^{\rm sem}(\alpha)`, by Newton's method with the derivative
  :math:`\mathrm{d}\varepsilon_t/\mathrm{d}\alpha = \mathbb{E}[\mathcal{M}]` at a fixed point
  (envelope theorem on :math:`\Phi`; exact on the positional branch, exact up to the
  integration error on the semantic one, which only slows Newton from quadratic to fast
  linear convergence, not the root it converges to), both branches warm-started along ``alpha``.
* :math:`\alpha_l`: where the global minimum's :math:`\varepsilon_g` crosses
  :math:`\varepsilon_{\rm lin}`, by Brent's method on the branch that is global there.

**Error bars.**  The expectations are computed with ``n_rules`` independent scrambles of a
Sobol rule; each scramble gives a full, independent estimate of each threshold.  The reported
value is their mean and the error bar is

``err = t * std / sqrt(n_rules) + root-finding error``

with ``t = 1`` (one standard error).  The root-finding error is the last Newton step (Brent's bound for ``alpha_l``),
and the fixed-point contribution (residual <= ``tol``, default 1e-10, times the sensitivity of
the threshold to it) is orders of magnitude smaller and is included in that bound.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize

from ..model.params import ModelParams
from ..stats import mean_se
from .branches import BranchNotFound, solve_branch
from .channel import OutputChannel
from .observables import generalisation_error, linear_baseline_error
from .quadrature import SobolRule
from .saddle import FixedPoint

__all__ = ["ThresholdSettings", "RuleThresholds", "Thresholds", "thresholds_for_rule",
           "thresholds_on_nodes",
           "compute_thresholds", "ThresholdNotFound", "map_tasks"]


class ThresholdNotFound(RuntimeError):
    """A threshold could not be located (branch missing, no sign change, no convergence)."""


@dataclass(frozen=True)
class ThresholdSettings:
    """Numerical settings, one knob each; ``tol`` is threaded through prox and fixed points."""

    log2_n: int = 14          #: Sobol points per rule: 2**log2_n
    n_rules: int = 8          #: independent scrambles (the error bar's sample size)
    tol: float = 1e-10        #: fixed-point residual tolerance (and selection smoothing)
    root_tol: float = 1e-9    #: stopping step of the root finders in alpha
    alpha_start: float = 1.0  #: first guess for alpha_c (no knowledge of the answer assumed)
    seed: int = 0             #: seed of the first scramble; rule k uses seed + k


@dataclass
class RuleThresholds:
    """Thresholds from one scramble, with the fixed points at ``alpha_c``."""

    seed: int
    alpha_c: float
    alpha_c_step: float
    alpha_l: float
    alpha_l_step: float
    alpha_l_branch: str
    positional: FixedPoint
    semantic: FixedPoint
    newton_iterations: int
    wall_time: float


@dataclass
class Thresholds:
    """Mean over scrambles with error bars; see the module docstring for their meaning."""

    alpha_c: float
    alpha_c_err: float
    alpha_l: float
    alpha_l_err: float
    eps_lin: float
    eps_lin_err: float
    params: dict
    settings: dict
    rules: list = field(repr=False)
    wall_time: float = 0.0

    def at_alpha_c(self, branch: str) -> dict:
        """Mean and standard error over scrambles of each order parameter at ``alpha_c``."""
        return fixed_point_means([getattr(r, branch) for r in self.rules])

    def error_budget(self) -> dict:
        """The components of ``alpha_c_err`` and ``alpha_l_err`` (their sum).

        ``integration``: one standard error over the scrambles (infinite for a single rule);
        ``root_finding``: the largest last step of the root finders.  The fixed-point tolerance
        and floating point contribute ~1e-12 or less at the defaults
        (``benchmarks/bench_error_budget.py``) and are not included.
        """
        out = {}
        for key, step in (("alpha_c", "alpha_c_step"), ("alpha_l", "alpha_l_step")):
            se = mean_se([getattr(r, key) for r in self.rules])[1] if len(self.rules) > 1 \
                else math.inf
            out[key] = {"integration": se,
                        "root_finding": max(getattr(r, step) for r in self.rules)}
        return out

    def as_dict(self) -> dict:
        return {"alpha_c": self.alpha_c, "alpha_c_err": self.alpha_c_err,
                "alpha_l": self.alpha_l, "alpha_l_err": self.alpha_l_err,
                "eps_lin": self.eps_lin, "eps_lin_err": self.eps_lin_err,
                "params": self.params, "settings": self.settings,
                "per_rule": [{"seed": r.seed, "alpha_c": r.alpha_c, "alpha_l": r.alpha_l,
                              "alpha_l_branch": r.alpha_l_branch} for r in self.rules],
                "error_budget": self.error_budget(),
                "positional_at_alpha_c": self.at_alpha_c("positional"),
                "semantic_at_alpha_c": self.at_alpha_c("semantic"),
                "wall_time": self.wall_time}


_ALPHA_SCAN_MAX = 8.0
_MAX_ROOT_STEPS = 80


def _alpha_c(params, channel, tol, root_tol, alpha0, warm):
    """Safeguarded Newton on Delta(alpha), Delta' = E_M^pos - E_M^sem.

    Newton steps are taken while they stay inside the bracket of a sign change once one is
    known (otherwise bisection).  Before that, the search moves towards the sign change
    (positional global below ``alpha_c``, semantic above): a Newton step pointing the other
    way (``Delta`` need not be monotone far from the root) is replaced by a factor 1.25, and
    steps are clipped to half of alpha; a step into a region where a branch is missing is
    halved.
    """
    alpha = alpha0
    x_pos, x_sem = warm
    last_ok = None
    step = math.inf
    lo = hi = None          # alpha with Delta < 0 (positional global) / Delta > 0
    for it in range(1, _MAX_ROOT_STEPS + 1):
        try:
            pos = solve_branch(params, "positional", alpha, channel, x0=x_pos, tol=tol,
                               with_eps_g=False)
            sem = solve_branch(params, "semantic", alpha, channel, x0=x_sem, tol=tol,
                               with_eps_g=False)
        except BranchNotFound as exc:
            if last_ok is None:
                # no knowledge of where the branches live yet: move up, where both exist
                alpha *= 1.25
                if alpha > _ALPHA_SCAN_MAX:
                    raise ThresholdNotFound(
                        f"alpha_c: no alpha in [{alpha0:g}, {_ALPHA_SCAN_MAX:g}] where both "
                        f"branches were found (last: {exc})") from exc
                continue
            step /= 2
            alpha = last_ok - step
            continue
        delta = pos.eps_t - sem.eps_t
        slope = pos.E_M - sem.E_M
        x_pos, x_sem = pos.x, sem.x
        last_ok = alpha
        if delta < 0:
            lo = alpha
        else:
            hi = alpha
        step = delta / slope if slope != 0 else math.inf
        if abs(step) < root_tol:
            return alpha, abs(step), pos, sem, it
        new = alpha - float(np.clip(step, -0.5 * alpha, 0.5 * alpha))
        if lo is not None and hi is not None:
            a, b = min(lo, hi), max(lo, hi)
            if not a < new < b:
                new = 0.5 * (a + b)
            if b - a < root_tol:
                return alpha, b - a, pos, sem, it
        elif delta < 0 and not new > alpha:
            new = 1.25 * alpha   # positional still global: alpha_c lies above (MODEL.md 5)
        elif delta > 0 and not new < alpha:
            new = alpha / 1.25   # semantic already global: alpha_c lies below
        step = alpha - new
        alpha = new
    raise ThresholdNotFound(f"alpha_c: no convergence in {_MAX_ROOT_STEPS} steps")


def _crossing(params, channel, branch, a, b, x_a, eps_lin, tol, root_tol):
    """Root of eps_g(branch) - eps_lin on [a, b] by Brent's method; returns (root, bound)."""
    warm = {"x": x_a}

    def g(alpha):
        fp = solve_branch(params, branch, alpha, channel, x0=warm["x"], tol=tol)
        warm["x"] = fp.x
        return fp.extra["eps_g"] - eps_lin

    ga = g(a)
    gb = g(b)
    if np.sign(ga) == np.sign(gb):
        raise ThresholdNotFound(f"alpha_l: eps_g - eps_lin does not change sign on the {branch} "
                                f"branch between alpha = {a:g} and {b:g}")
    root, info = optimize.brentq(g, a, b, xtol=root_tol, rtol=4 * np.finfo(float).eps,
                                 full_output=True, disp=False)
    if not info.converged:
        raise ThresholdNotFound(f"alpha_l: Brent's method did not converge ({info.flag})")
    return root, root_tol + 4 * np.finfo(float).eps * abs(root)


def thresholds_for_rule(params: ModelParams, settings: ThresholdSettings, seed: int,
                        alpha0: float | None = None, warm=(None, None)) -> RuleThresholds:
    """``alpha_c`` and ``alpha_l`` on the scrambled Sobol rule ``seed``."""
    return thresholds_on_nodes(params, SobolRule(settings.log2_n, seed).nodes(), settings,
                               seed=seed, alpha0=alpha0, warm=warm)


def thresholds_on_nodes(params: ModelParams, nodes, settings: ThresholdSettings, seed: int = -1,
                        alpha0: float | None = None, warm=(None, None)) -> RuleThresholds:
    """``alpha_c`` and ``alpha_l`` on any :class:`~symattn.numerics.quadrature.NodeSet`."""
    t0 = time.perf_counter()
    channel = OutputChannel(params, nodes, gtol=max(settings.tol * 1e-3, 1e-14))
    a0 = settings.alpha_start if alpha0 is None else alpha0
    ac, ac_step, pos, sem, its = _alpha_c(params, channel, settings.tol, settings.root_tol, a0,
                                          warm)
    eps_lin, _ = linear_baseline_error(params)
    for fp in (pos, sem):   # the converged points at alpha_c: add their test errors
        fp.extra["eps_g"], fp.extra["eps_g_quad_err"] = generalisation_error(params, fp.q, fp.m,
                                                                             fp.theta)
    g_pos = pos.extra["eps_g"] - eps_lin
    g_sem = sem.extra["eps_g"] - eps_lin
    if g_pos > 0 and g_sem <= 0:
        al, al_step, branch = ac, ac_step, "at alpha_c"  # eps_g of the global min jumps below
    elif g_sem > 0:
        al, al_step = _crossing(params, channel, "semantic", ac, ac * 1.5, sem.x, eps_lin,
                                settings.tol, settings.root_tol)
        branch = "semantic"
    else:
        al, al_step = _crossing(params, channel, "positional", ac * 0.5, ac, pos.x, eps_lin,
                                settings.tol, settings.root_tol)
        branch = "positional"
    return RuleThresholds(seed=seed, alpha_c=ac, alpha_c_step=ac_step, alpha_l=al,
                          alpha_l_step=al_step, alpha_l_branch=branch, positional=pos,
                          semantic=sem, newton_iterations=its,
                          wall_time=time.perf_counter() - t0)


FIXED_POINT_KEYS = ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_t",
                    "eps_g")


def fixed_point_means(fps) -> dict:
    """Mean and standard error (``<key>_err``) over fixed points of independent rules.

    ``eps_g`` is read from ``extra`` (set by ``solve_branch`` / the threshold search).
    """
    out = {}
    for k in FIXED_POINT_KEYS:
        vals = [fp.extra["eps_g"] if k == "eps_g" else getattr(fp, k) for fp in fps]
        out[k], out[k + "_err"] = mean_se(vals)
    return out


def _rule_task(args):
    params, settings, seed, alpha0, warm = args
    return thresholds_for_rule(params, settings, seed, alpha0, warm)


def compute_thresholds(params: ModelParams, settings: ThresholdSettings = ThresholdSettings(),
                       executor: Executor | None = None, progress=None) -> Thresholds:
    """``alpha_c``, ``alpha_l`` (mean over ``settings.n_rules`` scrambles) with error bars.

    The first scramble is solved from ``settings.alpha_start`` and cold starts; the others are
    warm-started from its result and run on ``executor`` (default: a process pool with one
    worker per core).  ``progress(k, n, rule)`` is called as each scramble finishes.
    """
    t0 = time.perf_counter()
    first = thresholds_for_rule(params, settings, settings.seed)
    rules = [first]
    if progress:
        progress(1, settings.n_rules, first)
    rest = [(params, settings, settings.seed + k, first.alpha_c,
             (first.positional.x, first.semantic.x)) for k in range(1, settings.n_rules)]
    if rest:
        rules += map_tasks(_rule_task, rest, executor, progress, total=settings.n_rules,
                           done=1)
    eps_lin, eps_lin_err = linear_baseline_error(params)
    ac, ac_se = mean_se([r.alpha_c for r in rules])
    al, al_se = mean_se([r.alpha_l for r in rules])
    return Thresholds(
        # one rule has no spread to measure: its error bar is unknown, reported as infinite
        alpha_c=ac, alpha_c_err=(ac_se if len(rules) > 1 else math.inf)
        + max(r.alpha_c_step for r in rules),
        alpha_l=al, alpha_l_err=(al_se if len(rules) > 1 else math.inf)
        + max(r.alpha_l_step for r in rules),
        eps_lin=eps_lin, eps_lin_err=eps_lin_err, params=params.as_dict(),
        settings=asdict(settings), rules=rules, wall_time=time.perf_counter() - t0)


def map_tasks(fn, tasks, executor: Executor | None = None, progress=None, *, total=None,
              done: int = 0) -> list:
    """``[fn(t) for t in tasks]`` on ``executor`` (default: a process pool with one worker per
    core, shut down afterwards), in order; ``progress(k, total, result)`` is called as each
    result arrives, ``k`` counting from ``done + 1``."""
    own = executor is None
    ex = executor or ProcessPoolExecutor(max_workers=default_workers())
    results = []
    try:
        for k, r in enumerate(ex.map(fn, tasks), start=done + 1):
            results.append(r)
            if progress:
                progress(k, total, r)
    finally:
        if own:
            ex.shutdown()
    return results


def default_workers() -> int:
    """One worker process per core available to this process (at most 8)."""
    import os
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1), 8))
