r"""The thresholds ``alpha_c`` and ``alpha_l`` with error bars (model page §5).

* :math:`\alpha_c`: root of :math:`\Delta(\alpha) = \varepsilon_t^{\rm pos}(\alpha) -
  \varepsilon_t^{\rm sem}(\alpha)`, by Newton's method with the derivative
  :math:`\mathrm{d}\varepsilon_t/\mathrm{d}\alpha = \mathbb{E}[\mathcal{M}]` at a fixed point
  (envelope theorem on :math:`\Phi`; exact on the positional branch, exact up to the
  integration error on the semantic one, which only slows Newton from quadratic to fast
  linear convergence, not the root it converges to), both branches warm-started along ``alpha``.
* :math:`\alpha_l`: where the global minimum's :math:`\varepsilon_g` crosses
  :math:`\varepsilon_{\rm lin}`, by Brent's method on the branch that is global there.

**Error bars.**  The expectations are computed with ``rules`` independent scrambles of a
Sobol rule; each scramble gives a full, independent estimate of each threshold.  The reported
value is their mean and the error bar is

``err = t * std / sqrt(rules) + root-finding error``

with ``t = 1`` (one standard error).  The root-finding error is the last Newton step (Brent's
bound for ``alpha_l``).  The fixed-point contribution (residual <= ``tol`` times the sensitivity
of the threshold to it) and floating point are orders of magnitude smaller and are not included
(:meth:`Thresholds.error_budget`; measured in ``docs/numerics.md``).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize

from ..model.params import ModelParams, ParameterError
from ..runs.executors import map_tasks
from ..results import Estimate, Status, format_estimate
from ..stats import mean_se
from .branches import BranchNotFound, positional_excluded, solve_branch
from .channel import InvalidOrderParameters, OutputChannel
from .estimates import fixed_point_means
from .observables import generalisation_error, linear_baseline_error
from .quadrature import SobolRule
from .saddle import FixedPoint
from .settings import NumericalSettings

__all__ = ["NumericalSettings", "ThresholdSettings", "RuleThresholds", "Thresholds",
           "thresholds_for_rule", "thresholds_on_nodes", "compute_thresholds", "ThresholdNotFound"]


class ThresholdNotFound(RuntimeError):
    """A threshold could not be located (branch missing, no sign change, no convergence)."""


#: The settings of :func:`compute_thresholds` (the name this module used before
#: :class:`~symattn.numerics.settings.NumericalSettings` served every solver).
ThresholdSettings = NumericalSettings


@dataclass
class RuleThresholds:
    """Thresholds from one scramble, with the fixed points at ``alpha_c``.

    Where ``alpha_c`` is undefined (no positional branch, :func:`~symattn.numerics.branches.
    positional_excluded`), ``alpha_c`` and ``alpha_c_step`` are ``nan``, ``positional`` is
    ``None`` and ``semantic`` is the fixed point at ``alpha_l``.
    """

    seed: int
    alpha_c: float
    alpha_c_step: float
    alpha_l: float
    alpha_l_step: float
    alpha_l_branch: str
    positional: FixedPoint | None
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
    per_rule: list = field(repr=False)
    wall_time: float = 0.0
    #: why ``alpha_c`` is undefined (then ``alpha_c`` is ``nan``), or ""
    alpha_c_note: str = ""
    #: RS-stability reports (:func:`threshold_stability`) of the reported fixed points
    rs_stability: dict = field(default_factory=dict, repr=False)

    def at_alpha_c(self, branch: str) -> dict | None:
        """Mean and standard error over scrambles of each order parameter at ``alpha_c``
        (``None`` where ``alpha_c`` is undefined)."""
        if self.alpha_c_note:
            return None
        return fixed_point_means([getattr(r, branch) for r in self.per_rule])

    def estimate(self, name: str) -> Estimate:
        """``alpha_c``, ``alpha_l`` or ``eps_lin`` as an :class:`~symattn.results.Estimate`."""
        if name not in ("alpha_c", "alpha_l", "eps_lin"):
            raise KeyError(f"{name!r}; one of alpha_c, alpha_l, eps_lin")
        if name == "alpha_c" and self.alpha_c_note:
            return Estimate(math.nan, math.nan, Status(False, message=self.alpha_c_note))
        its = sum(r.newton_iterations for r in self.per_rule)
        return Estimate(getattr(self, name), getattr(self, name + "_err"),
                        Status(True, iterations=its, message=f"mean over {len(self.per_rule)} "
                               f"scrambles of 2^{self.settings['log2n']} points"))

    def __repr__(self) -> str:
        s = self.settings
        ac = (f"undefined ({self.alpha_c_note})" if self.alpha_c_note
              else format_estimate(self.alpha_c, self.alpha_c_err))
        return (f"Thresholds(alpha_c = {ac}, alpha_l = "
                f"{format_estimate(self.alpha_l, self.alpha_l_err)}, eps_lin = "
                f"{self.eps_lin:.10f}; {s['rules']} scrambles of 2^{s['log2n']} points, "
                f"{self.wall_time:.1f} s)")

    def error_budget(self) -> dict:
        """The components of ``alpha_c_err`` and ``alpha_l_err`` (their sum).

        ``integration``: one standard error over the scrambles (infinite for a single rule);
        ``root_finding``: the largest last step of the root finders.  The fixed-point tolerance
        and floating point contribute ~1e-12 or less at the defaults
        (``studies/error_budget.py``) and are not included.
        """
        out = {}
        for key, step in (("alpha_c", "alpha_c_step"), ("alpha_l", "alpha_l_step")):
            se = mean_se([getattr(r, key) for r in self.per_rule])[1] if len(self.per_rule) > 1 \
                else math.inf
            out[key] = {"integration": se,
                        "root_finding": max(getattr(r, step) for r in self.per_rule)}
        return out

    def to_dict(self) -> dict:
        """The JSON of ``symattn thresholds --json``."""
        d = self.as_dict()
        if self.alpha_c_note:
            d["alpha_c"] = d["alpha_c_err"] = None
            d["alpha_c_note"] = self.alpha_c_note
            d["semantic_at_alpha_l"] = fixed_point_means([r.semantic for r in self.per_rule])
            for r in d["per_rule"]:
                r["alpha_c"] = None
            d["error_budget"]["alpha_c"] = None
        return d

    def as_dict(self) -> dict:
        return {"alpha_c": self.alpha_c, "alpha_c_err": self.alpha_c_err,
                "alpha_l": self.alpha_l, "alpha_l_err": self.alpha_l_err,
                "eps_lin": self.eps_lin, "eps_lin_err": self.eps_lin_err,
                "params": self.params, "settings": self.settings,
                "per_rule": [{"seed": r.seed, "alpha_c": r.alpha_c, "alpha_l": r.alpha_l,
                              "alpha_l_branch": r.alpha_l_branch} for r in self.per_rule],
                "error_budget": self.error_budget(),
                "positional_at_alpha_c": self.at_alpha_c("positional"),
                "semantic_at_alpha_c": self.at_alpha_c("semantic"),
                "rs_stability": {b: r.to_dict() for b, r in self.rs_stability.items()},
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
            new = 1.25 * alpha   # positional still global: alpha_c lies above (model page §5)
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
        return fp.eps_g - eps_lin

    ga = g(a)
    gb = g(b)
    a0, b0 = a, b
    # the bracket comes from alpha_c (noisy on small rules): widen it away from alpha_c, by
    # factors of 1.25 (up to _ALPHA_SCAN_MAX, resp. down to a tenth of the first bound)
    while np.sign(ga) == np.sign(gb):
        if branch == "semantic" and b * 1.25 <= _ALPHA_SCAN_MAX:
            a, ga, b = b, gb, b * 1.25
            gb = g(b)
        elif branch == "positional" and a / 1.25 >= a0 / 10:
            warm["x"] = x_a
            b, gb, a = a, ga, a / 1.25
            ga = g(a)
        else:
            raise ThresholdNotFound(f"alpha_l: eps_g - eps_lin does not change sign on the "
                                    f"{branch} branch between alpha = {min(a, a0):g} and "
                                    f"{max(b, b0):g}")
    root, info = optimize.brentq(g, a, b, xtol=root_tol, rtol=4 * np.finfo(float).eps,
                                 full_output=True, disp=False)
    if not info.converged:
        raise ThresholdNotFound(f"alpha_l: Brent's method did not converge ({info.flag})")
    return root, root_tol + 4 * np.finfo(float).eps * abs(root)


def thresholds_for_rule(params: ModelParams, settings: NumericalSettings, seed: int,
                        alpha0: float | None = None, warm=(None, None)) -> RuleThresholds:
    """``alpha_c`` and ``alpha_l`` on the scrambled Sobol rule ``seed``."""
    return thresholds_on_nodes(params, SobolRule(settings.log2n, seed).nodes(), settings,
                               seed=seed, alpha0=alpha0, warm=warm)


def _semantic_only(params, channel, settings, seed, alpha0, x_sem, t0) -> RuleThresholds:
    """No positional branch: ``alpha_c`` is undefined; ``alpha_l`` is where the semantic
    branch's ``eps_g`` falls below ``eps_lin`` (the trivial point's ``eps_g`` never does:
    uniform attention is no better than the best positional baseline)."""
    eps_lin, _ = linear_baseline_error(params)
    tol, alpha = settings.tol, alpha0
    while True:                        # up to the first alpha where the semantic branch exists
        try:
            sem = solve_branch(params, "semantic", alpha, channel, x0=x_sem, tol=tol)
            break
        except BranchNotFound as exc:
            alpha *= 1.25
            if alpha > _ALPHA_SCAN_MAX:
                raise ThresholdNotFound(f"alpha_l: no semantic branch in [{alpha0:g}, "
                                        f"{_ALPHA_SCAN_MAX:g}] (last: {exc})") from exc
    a, x_a = alpha, sem.x
    if sem.eps_g - eps_lin <= 0:
        raise ThresholdNotFound(f"alpha_l: the semantic branch already beats the linear baseline "
                                f"where it is first found (alpha = {alpha:g}); scan from a "
                                "smaller alpha_start")
    b = a * 1.25
    while True:                        # bracket the crossing above
        fp = solve_branch(params, "semantic", b, channel, x0=x_a, tol=tol)
        if fp.eps_g - eps_lin <= 0:
            break
        a, x_a, b = b, fp.x, b * 1.25
        if b > _ALPHA_SCAN_MAX:
            raise ThresholdNotFound(f"alpha_l: eps_g of the semantic branch stays above eps_lin "
                                    f"up to alpha = {_ALPHA_SCAN_MAX:g}")
    al, al_step = _crossing(params, channel, "semantic", a, b, x_a, eps_lin, tol,
                            settings.root_tol)
    sem = solve_branch(params, "semantic", al, channel, x0=x_a, tol=tol)
    triv = solve_branch(params, "trivial", al, channel, tol=tol, with_eps_g=False)
    if triv.eps_t < sem.eps_t:
        raise ThresholdNotFound(f"alpha_l: at alpha = {al:g} the trivial point's training loss "
                                "is below the semantic one's: the semantic point is not the "
                                "global minimum there")
    return RuleThresholds(seed=seed, alpha_c=math.nan, alpha_c_step=math.nan, alpha_l=al,
                          alpha_l_step=al_step, alpha_l_branch="semantic", positional=None,
                          semantic=sem, newton_iterations=0,
                          wall_time=time.perf_counter() - t0)


def thresholds_on_nodes(params: ModelParams, nodes, settings: NumericalSettings, seed: int = -1,
                        alpha0: float | None = None, warm=(None, None)) -> RuleThresholds:
    """``alpha_c`` and ``alpha_l`` on any :class:`~symattn.numerics.quadrature.NodeSet`.

    Where the model has no positional branch (:func:`~symattn.numerics.branches.
    positional_excluded`), ``alpha_c`` is undefined (``nan``) and only ``alpha_l`` is located.

    Every failure of the solvers comes out as :class:`ThresholdNotFound` with the reason (a
    branch not found, order parameters leaving their domain, a singular Jacobian, a non-finite
    value); floating-point overflow and invalid operations inside the solvers are not
    printed as warnings but show as non-finite values, which the convergence tests reject
    (at extreme ``sigma`` or ``lambda``: the limits in ``studies/solver_outcomes.py``).
    """
    try:
        with np.errstate(all="ignore"):
            return _thresholds_on_nodes(params, nodes, settings, seed, alpha0, warm)
    except (ThresholdNotFound, ParameterError):
        raise
    except (BranchNotFound, InvalidOrderParameters, ArithmeticError, np.linalg.LinAlgError,
            ValueError) as exc:
        raise ThresholdNotFound(f"the solver failed on scramble {seed}: "
                                f"{type(exc).__name__}: {exc}") from exc


def _thresholds_on_nodes(params, nodes, settings, seed, alpha0, warm):
    t0 = time.perf_counter()
    channel = OutputChannel(params, nodes, gtol=settings.prox_tol)
    excluded = positional_excluded(params)
    if excluded is not None:
        try:
            return _semantic_only(params, channel, settings, seed,
                                  settings.alpha_start if alpha0 is None or math.isnan(alpha0)
                                  else alpha0, warm[1], t0)
        except ThresholdNotFound as exc:
            raise ThresholdNotFound(f"alpha_c is undefined: {excluded}; and {exc}") from exc
    a0 = settings.alpha_start if alpha0 is None else alpha0
    ac, ac_step, pos, sem, its = _alpha_c(params, channel, settings.tol, settings.root_tol, a0,
                                          warm)
    eps_lin, _ = linear_baseline_error(params)
    for fp in (pos, sem):   # the converged points at alpha_c: add their test errors
        fp.eps_g, fp.eps_g_err = generalisation_error(params, fp.q, fp.m,
                                                                             fp.theta)
    g_pos = pos.eps_g - eps_lin
    g_sem = sem.eps_g - eps_lin
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


def _rule_task(args):
    params, settings, seed, alpha0, warm = args
    return thresholds_for_rule(params, settings, seed, alpha0, warm)


def compute_thresholds(params: ModelParams, settings: NumericalSettings = NumericalSettings(),
                       executor: Executor | None = None, progress=None, *,
                       first_only: bool = False) -> Thresholds:
    """``alpha_c``, ``alpha_l`` (mean over ``settings.rules`` scrambles) with error bars.

    The first scramble is solved from ``settings.alpha_start`` and cold starts; the others are
    warm-started from its result and run on ``executor`` (default: a process pool with one
    worker per core).  ``progress(k, n, rule)`` is called as each scramble finishes.
    ``first_only``: the first scramble alone (where the refined routes start,
    :mod:`symattn.refine.precise`); one scramble has no spread, so the error bars are infinite.
    """
    with np.errstate(all="ignore"):
        return _compute_thresholds(params, settings, executor, progress, first_only)


def _compute_thresholds(params, settings, executor, progress, first_only=False):
    t0 = time.perf_counter()
    first = thresholds_for_rule(params, settings, settings.seed)
    rules = [first]
    n = 1 if first_only else settings.rules
    if progress:
        progress(1, n, first)
    warm = (None if first.positional is None else first.positional.x, first.semantic.x)
    rest = [(params, settings, settings.seed + k, first.alpha_c, warm) for k in range(1, n)]
    if rest:
        rules += map_tasks(_rule_task, rest, executor, progress, total=n, done=1)
    eps_lin, eps_lin_err = linear_baseline_error(params)
    ac, ac_se = mean_se([r.alpha_c for r in rules])
    al, al_se = mean_se([r.alpha_l for r in rules])
    note = positional_excluded(params) or ""
    if not (math.isfinite(al) and (note or math.isfinite(ac)) and math.isfinite(eps_lin)):
        raise ThresholdNotFound(f"non-finite result (alpha_c = {ac}, alpha_l = {al}, eps_lin = "
                                f"{eps_lin}): the numerics break down at these parameters")
    res = Thresholds(
        # one rule has no spread to measure: its error bar is unknown, reported as infinite
        alpha_c=ac, alpha_c_err=(ac_se if len(rules) > 1 else math.inf)
        + max(r.alpha_c_step for r in rules),
        alpha_l=al, alpha_l_err=(al_se if len(rules) > 1 else math.inf)
        + max(r.alpha_l_step for r in rules),
        eps_lin=eps_lin, eps_lin_err=eps_lin_err, params=params.as_dict(),
        settings={**asdict(settings), "rules": n}, per_rule=rules,
        wall_time=time.perf_counter() - t0,
        alpha_c_note=note and f"alpha_c is undefined: {note}")
    res.rs_stability = threshold_stability(params, res)
    res.wall_time = time.perf_counter() - t0
    return res


def threshold_stability(params: ModelParams, th: Thresholds) -> dict:
    """The RS-stability reports (:func:`symattn.numerics.stability.stability_at`, four fresh
    scrambles of 2^14 points) of the fixed points ``th`` reports: both branches at ``alpha_c``,
    or, where ``alpha_c`` is undefined, the semantic one at ``alpha_l``; keyed by branch."""
    from .stability import stability_at
    if th.alpha_c_note:
        points = {"semantic": (th.alpha_l, fixed_point_means([r.semantic for r in th.per_rule]))}
    else:
        points = {b: (th.alpha_c, th.at_alpha_c(b)) for b in ("positional", "semantic")}
    return {b: stability_at(params, a, [x[k] for k in ("q", "m", "theta", "V")])
            for b, (a, x) in points.items()}
