r"""High-precision thresholds: the fast route's answer refined on large scrambled rules.

``symattn thresholds --precision high``.  Three facts make this cheap enough to run on a laptop:

1. **The training loss is stationary.**  :math:`\varepsilon_t = -\Phi` and :math:`\Phi` is
   stationary at a fixed point, so an error :math:`\delta` in the order parameters moves
   :math:`\varepsilon_t` by :math:`O(\delta^2)`: ``alpha_c`` needs :math:`\mathbb{E}[\mathcal{M}]`
   (continuous, with kinks only) to high accuracy, the jumping hat integrands only moderately.
2. **The root in alpha is Newton's method with the exact slope.**
   :math:`\mathrm{d}\varepsilon_t/\mathrm{d}\alpha = \mathbb{E}[\mathcal{M}]` at a fixed point, so
   from the fast route's ``alpha_c`` a step or two land on the root; after a step ``s`` what
   remains is bounded by :math:`|s|\,(|\Delta''|\,|s|/(2|\Delta'|) + e)`, with :math:`\Delta''`
   measured on the fast rule and ``e`` the slope's relative error measured by the secant over
   the last two solves (at least two are made).  That bound is the root-finding term.
3. **A large rule needs few map evaluations.**  The fixed point on a large rule is found by
   quasi-Newton iterations :math:`x \leftarrow x - J^{-1}(F(x) - x)` from the fast rule's fixed
   point, :math:`J` starting as the fast rule's Jacobian with the selection smoothed over
   ``jac_eps`` (that width captures, on average, the switching surfaces' contribution to the
   derivative, which a hard-selection Jacobian misses: the positional branch contracts faster
   per step than with ``eps = 1e-10``) and updated by Broyden's rule.
   Each step is one evaluation of the large rule, one compiled pass over its nodes.  After a branch's first evaluation every node's
   prox starts from its own minima of the previous evaluation (:class:`ChunkedChannel`,
   ``warm_starts``): faster than the multi-start.  The states that
   give results are recomputed with the multi-start, and the difference enters the
   fixed-point term.  (Contraction and speed-ups measured: docs/numerics.md, section 'The
   method, per large scramble'.)
4. **Each branch's rule is folded** onto the fundamental domain of its symmetries
   (:func:`branch_fold`, :data:`~symattn.numerics.quadrature.FOLDS`; ``fold``): with the
   paper's ``A``, a quarter of the space, so the same points are four times denser.

5. **Shared fixed points** (``shared``, the default).  Only the first large scramble is solved
   as above; every other one is evaluated at its last fixed points: a cold pass there and
   passes after chord steps (warm-started: the steps move the order parameters by the
   scatter of the scrambles' fixed points, about 1e-5), then one Newton step in alpha for
   ``alpha_c`` (``eps_t`` is stationary, so the fixed point's error enters squared) and a step
   and a secant step on the scramble's own ``eps_g`` for ``alpha_l``
   (:func:`_shared_rule_task`).  The fixed-point terms use the chord steps' measured
   contraction; a map that jumps across its fixed point (the steps alternate) gives the mean
   of its two states and their difference as the term; a chord that neither contracts nor
   alternates falls back to solving.  (Against solving every scramble: docs/numerics.md,
   section 'The main job'.)

``alpha_l`` is not stationary (``eps_g`` moves linearly with the order parameters), so there the
large rule's fixed point is converged until ``eps_g`` stops moving, and the crossing
:math:`\varepsilon_g = \varepsilon_{\rm lin}` is found by an implicit-function Newton step
followed by secant steps on the large rule.

With a ``checkpoint`` file, every large scramble's record is kept as it finishes and a rerun
computes only the missing ones (:func:`refine_thresholds`).

**Second route.**  :func:`confirm_alpha_c` recomputes ``alpha_c`` with ``E[M]`` integrated by
line preintegration on a Gauss-Hermite outer rule (:mod:`~symattn.refine.preintegration`),
at one large scramble's fixed points (they enter at second order), and
:func:`refine_thresholds` records whether the two routes agree within their error bars.
With ``confirm_alpha_l`` (off by default), :func:`confirm_alpha_l` does the same for
``alpha_l``, re-solving the fixed point with the preintegrated atoms (a much weaker check:
the atoms converge slowly; measured: docs/numerics.md, section 'The second route for
``alpha_l`` (``--second-route-alpha-l``)').  ``studies/plane_route.py`` computes ``alpha_c``
by a third route, plane preintegration (:mod:`~symattn.refine.plane`, every discontinuity
located), at the same fixed points with :func:`alpha_c_with`; it takes too long for this command.

**Error budget** (every term is reported; the error bar is their sum):

* ``integration``: one standard error of the threshold over the ``rules`` large scrambles
  (each gives an independent, unbiased estimate), a 68% interval;
  :attr:`PreciseThresholds.integration_95` gives the 95% one (Student's t), printed beside it;
* ``root_finding``: the Newton-step bound above (``alpha_c``); the last correction times the
  relative change of the slope estimate (``alpha_l``);
* ``fixed_point``: the change of :math:`\varepsilon_t` (resp. ``eps_g``) in the last
  quasi-Newton step, divided by the threshold's slope (the remaining chord error is a fraction of it),
  plus for ``alpha_l`` the bound of the ``eps_g`` quadrature, plus the change when the final
  states are recomputed with the multi-start prox (warm-start check);
* ``floating_point``: the rounding of the node sums, :math:`u\,\log_2 n` times the summed
  magnitudes, divided by the slope (``studies/double_precision.py`` measures the whole
  double-precision effect on the default route; measured: docs/numerics.md, sections 'What
  double precision contributes' and 'Error budget').
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import Executor
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import TypedDict
from pathlib import Path

import numpy as np

from ..model.params import ModelParams
from ..results import Estimate, Status, format_estimate
from ..stats import mean_se, t_halfwidth
from ..numerics.branches import BRANCHES, solve_branch
from ..numerics.channel import ChannelMeans, OutputChannel
from ..numerics.observables import generalisation_error, linear_baseline_error
from ..numerics.quadrature import NodeSet, SobolRule
from ..numerics.saddle import SaddlePointMap
from ..numerics.thresholds import ThresholdNotFound, Thresholds
from ..runs.executors import map_tasks
from ..runs.files import read_json, write_json
from ..runs.lock import output_lock

__all__ = [
    "STANDARD",
    "CheckpointMismatch",
    "ChunkedChannel",
    "HighPrecisionSettings",
    "NotConverged",
    "PreciseThresholds",
    "alpha_c_with",
    "alpha_l_goal",
    "branch_fold",
    "chord_solve",
    "confirm_alpha_c",
    "confirm_alpha_l",
    "refine_thresholds",
]


class NotConverged(ThresholdNotFound):
    """A chord iteration on a large rule did not reach its tolerance."""


@dataclass(frozen=True)
class HighPrecisionSettings:
    """Settings of the high-precision stage."""

    log2n: int = 22          #: points per large scramble: 2**log2n
    rules: int = 8          #: large scrambles (the integration error bar's sample size)
    seed: int = 1000          #: seed of the first large scramble (fast rules use 0, 1, ...)
    jac_eps: float = 1e-3     #: selection smoothing of the fast rule's chord Jacobian
    phi_tol: float = 1e-12    #: stop the chord when eps_t (resp. eps_g) moves less than this
    max_chord: int = 10       #: chord steps allowed per solve
    root_tol: float = 1e-8    #: bound on the remaining error of the root in alpha
    max_root_steps: int = 5   #: solves per threshold on one large rule
    #: second route for alpha_c (line preintegration with a Gauss-Hermite outer rule):
    #: outer orders (the spread of the results over the last three is the convergence term
    #: of its error bar) and the numbers of line cells (the last gives the switch-detection
    #: term); () to skip it
    confirm_orders: tuple = (16, 20, 24)
    confirm_cells: tuple = (56, 112)
    #: also confirm alpha_l by line preintegration (a fixed-point solve per outer order, which
    #: lengthens the run; measured: docs/numerics.md, section
    #: 'The second route for ``alpha_l`` (``--second-route-alpha-l``)'; off by default)
    confirm_alpha_l: bool = False
    gtol: float = 1e-13       #: prox gradient tolerance
    warm_starts: bool = True  #: start the prox from each node's last minima (ChunkedChannel)
    #: fold each branch's scrambles onto the fundamental domain of its symmetries
    #: (:func:`branch_fold`): the same points, two or four times denser
    fold: bool = True
    #: solve the fixed points and thresholds on the first large scramble only, and evaluate
    #: every other one at its fixed points: a cold pass and passes after chord steps
    #: (:func:`_shared_rule_task`; module doc, 'Shared fixed points')
    shared: bool = True

    def __post_init__(self):
        if not 10 <= self.log2n <= 26:
            raise ValueError(f"log2n must be in [10, 26], got {self.log2n}")
        if not 2 <= self.rules <= 256:
            raise ValueError(f"rules must be in [2, 256] (one rule has no error bar), "
                             f"got {self.rules}")
        if self.confirm_orders and (len(self.confirm_orders) < 3 or len(self.confirm_cells) < 2
                                    or min(self.confirm_orders) < 2):
            raise ValueError("the second route needs three outer orders >= 2 and two cell "
                             f"counts (got {self.confirm_orders}, {self.confirm_cells})")
        if self.confirm_alpha_l and not self.confirm_orders:
            raise ValueError("confirm_alpha_l needs the second route's outer orders")


class ChunkedChannel:
    """An :class:`~symattn.numerics.channel.OutputChannel` on a large node set, evaluated by
    the fused compiled kernel (:meth:`~symattn.numerics.channel.OutputChannel.means`: the
    same result as its ``evaluate`` up to the order of summation; no Jacobian).

    With ``warm`` it keeps every node's local minima (best and runner-up) and, when the next
    ``x`` is within ``WARM_RADIUS`` (relative, per component) of the last, starts Newton
    from them instead of the default starts: fewer Newton steps, and one start instead of
    three at the nodes with a single minimum (``benchmarks/bench_warm_start.py``; measured:
    docs/numerics.md, section 'The method, per large scramble').  Followed minima stay the
    global ones for small moves (a minimum born at a fold starts no lower than the one its saddle
    connects it to); whether that held is checked on the states that give results, against
    an evaluation with ``warm`` off (``*_warm_check`` in each large scramble's record).
    Memory: 32 bytes per node.
    """

    WARM_RADIUS = 0.05

    def __init__(self, params: ModelParams, nodes: NodeSet, gtol: float = 1e-13,
                 warm: bool = False):
        self.params = params
        self.nodes = nodes
        self.gtol = gtol
        self.warm = warm
        self._channel = OutputChannel(params, nodes, gtol=gtol)
        self._minima = None     # (x, (h, h2)) of the last evaluation
        self.last_warm = False  # whether the last evaluation started from stored minima
        self.passes = {"warm": 0, "cold": 0}

    def evaluate(self, x, eps: float = 1e-10) -> ChannelMeans:
        x = np.asarray(x, float)
        use = (self.warm and self._minima is not None
               and bool(np.all(np.abs(x - self._minima[0])
                               <= self.WARM_RADIUS * np.maximum(np.abs(self._minima[0]), 1e-2))))
        starts = np.stack(self._minima[1], axis=1) if use else None
        out, minima = self._channel.means(x, eps, starts=starts, keep=self.warm)
        if self.warm:
            self._minima = (x, minima)
        self.last_warm = use
        self.passes["warm" if use else "cold"] += 1
        return out


def _checked(F: SaddlePointMap, x):
    """``F(x)``, or :class:`NotConverged` if a prox solve failed."""
    st = F(np.array(x, float))
    if st.channel.n_failed:
        raise NotConverged(f"{st.channel.n_failed} prox solves failed on "
                           f"{F.channel.nodes.label} at x = {st.x}")
    return st


def _chord_step(state, free, J):
    """The chord iterate after ``state``: ``x - J^{-1} (F(x) - x)`` on the free variables."""
    x = state.x.copy()
    x[list(free)] -= np.linalg.solve(J, state.residual(list(free)))
    return x


def chord_solve(F: SaddlePointMap, x0, free, J, *, watch, tol: float, max_iter: int):
    """Quasi-Newton iterations ``x <- x - J^{-1} (F(x) - x)`` on the free variables.

    ``J`` starts as the given (fast-rule) Jacobian and gets Broyden's rank-one update after
    every step.  ``watch(state) -> float`` is the quantity whose convergence matters
    (``eps_t`` or ``eps_g``); the iteration stops when it moves by at most ``tol`` in one step.
    Returns ``(state, watched value, last change, steps)``; raises :class:`NotConverged` if
    ``max_iter`` steps do not get there or a prox solve fails.
    """
    free = list(free)
    J = np.array(J, float)

    def evaluate(x):
        return _checked(F, x)

    state = evaluate(np.array(x0, float))
    value = watch(state)
    change = math.inf
    for k in range(1, max_iter + 1):
        r = state.residual(free)
        dx = -np.linalg.solve(J, r)
        x = state.x.copy()
        x[free] += dx
        state = evaluate(x)
        dr = state.residual(free) - r
        if dx @ dx > 0:
            J += np.outer(dr - J @ dx, dx) / float(dx @ dx)
        new = watch(state)
        change, value = abs(new - value), new
        if change <= tol:
            return state, value, change, k
    raise NotConverged(f"chord iteration on {F.channel.nodes.label} at alpha = {F.alpha:g}: "
                       f"last change {change:.1e} > {tol:.0e} after {max_iter} steps (on a "
                       f"small rule a node switching minimiser can leave the map without a "
                       f"fixed point: try more points per scramble)")


@dataclass
class PreciseThresholds:
    """High-precision thresholds with their error budgets; see the module docstring."""

    alpha_c: float
    alpha_c_err: float
    alpha_l: float
    alpha_l_err: float
    alpha_l_branch: str
    budget: dict
    per_rule: list   #: the :class:`LargeRuleRecord` of each large scramble
    fast: Thresholds = field(repr=False)
    settings: dict = field(default_factory=dict)
    wall_time: float = 0.0
    second_route: dict | None = None
    #: the route's name in results: "standard" (the main job) or "high"
    precision: str = "high"

    @property
    def integration_95(self) -> dict:
        """The integration term as a 95% interval (Student's t over the ``rules`` scrambles)
        instead of one standard error: 2.36 times wider for 8 scrambles.  Printed next to the
        error bar, not part of it."""
        n = len(self.per_rule)
        return {k: t_halfwidth(self.budget[k]["integration"], n) for k in ("alpha_c", "alpha_l")}

    @property
    def eps_lin(self) -> float:
        return self.fast.eps_lin

    @property
    def eps_lin_err(self) -> float:
        return self.fast.eps_lin_err

    def estimate(self, name: str) -> Estimate:
        """``alpha_c``, ``alpha_l`` or ``eps_lin`` as an :class:`~symattn.results.Estimate`
        (every large scramble converged: a solve that does not raises instead)."""
        if name not in ("alpha_c", "alpha_l", "eps_lin"):
            raise KeyError(f"{name!r}; one of alpha_c, alpha_l, eps_lin")
        return Estimate(getattr(self, name), getattr(self, name + "_err"),
                        Status(True, message=f"mean over {len(self.per_rule)} folded scrambles "
                                             f"of 2^{self.settings['log2n']} points"))

    def __repr__(self) -> str:
        return (f"PreciseThresholds(alpha_c = {format_estimate(self.alpha_c, self.alpha_c_err)}"
                f", alpha_l = {format_estimate(self.alpha_l, self.alpha_l_err)}, eps_lin = "
                f"{self.eps_lin:.10f}; {self.precision}: {len(self.per_rule)} scrambles of "
                f"2^{self.settings['log2n']} points, {self.wall_time:.1f} s)")

    def to_dict(self) -> dict:
        """The JSON of ``symattn thresholds --json`` (``--precision standard`` or ``high``)."""
        return self.as_dict()

    def as_dict(self) -> dict:
        fast = self.fast.as_dict()
        return {"precision": self.precision, "alpha_c": self.alpha_c,
                "alpha_c_err": self.alpha_c_err,
                "alpha_l": self.alpha_l, "alpha_l_err": self.alpha_l_err,
                "alpha_l_branch": self.alpha_l_branch,
                "eps_lin": fast["eps_lin"], "eps_lin_err": fast["eps_lin_err"],
                "error_budget": self.budget, "integration_95": self.integration_95,
                "params": fast["params"],
                "settings": {"high": self.settings, "fast": fast["settings"]},
                "per_rule": self.per_rule, "second_route": self.second_route,
                "fast": {k: fast[k] for k in ("alpha_c", "alpha_c_err", "alpha_l",
                                              "alpha_l_err", "error_budget", "wall_time")},
                # at the located alpha_c (the refinement moves it by ~1e-4; the report's
                # replicon and verdict do not resolve that)
                "rs_stability": fast["rs_stability"],
                "wall_time": self.wall_time}


#: The main job's refinement (``--precision standard``): 10 folded scrambles of 2^17 points,
#: shared fixed points, no second route (measured: docs/numerics.md, section 'The main job').
STANDARD = HighPrecisionSettings(log2n=17, rules=10, confirm_orders=())


def _fast_setup(params, fast: Thresholds, hp: HighPrecisionSettings):
    """On the fast route's first rule: fixed points and chord Jacobians at the fast estimates,
    and the curvature ``Delta''`` of the loss difference (for the Newton-step bound)."""
    r0 = fast.per_rule[0]
    ch = OutputChannel(params, SobolRule(fast.settings["log2n"], r0.seed).nodes(), gtol=hp.gtol)
    tol = fast.settings["tol"]

    def point(branch, alpha, x0):
        B = BRANCHES[branch]
        fp = solve_branch(params, branch, alpha, ch, x0=x0, tol=tol, with_eps_g=False)
        F = SaddlePointMap(params, alpha, ch, symmetry=B.symmetry)
        J = F.jacobian(F(fp.x, hp.jac_eps), B.free)
        return fp, J

    a_c = fast.alpha_c
    setup = {"alpha_c0": a_c}
    for b in ("positional", "semantic"):
        fp, J = point(b, a_c, getattr(r0, b).x)
        setup[b] = (fp.x, J)
    # Delta'' = d(E_M^pos - E_M^sem)/d alpha by a central difference on the fast rule
    h = 0.02 * a_c
    slopes = []
    for a in (a_c - h, a_c + h):
        e = [solve_branch(params, b, a, ch, x0=setup[b][0], tol=tol, with_eps_g=False).E_M
             for b in ("positional", "semantic")]
        slopes.append(e[0] - e[1])
    setup["delta2"] = (slopes[1] - slopes[0]) / (2 * h)
    setup["alpha_l_branch"] = r0.alpha_l_branch
    setup["alpha_l0"] = fast.alpha_l
    if r0.alpha_l_branch in ("semantic", "positional"):
        b = r0.alpha_l_branch
        fp, J = point(b, fast.alpha_l, getattr(r0, b).x)
        setup["alpha_l"] = (fp.x, J)
    return setup


#: Gauss-Hermite orders of eps_g on the large rules: the value's and the coarser rule's whose
#: difference is its error bound.  At the paper's fixed points order 24 is within 1e-16
#: (semantic) and 1e-12 (positional) of order 64, order 16 within 3e-12 and 7e-10
#: (``benchmarks/eps_g_orders.py``), so the bound is about order 16's own error; order 32
#: (2.4 times the nodes of order 24) bought nothing measurable.
EPS_G_ORDERS = (24, 16)


def _eps_g(params, x, bound: bool = True):
    """``(eps_g, bound)`` at ``x``; ``bound=False``: the value alone (nan bound)."""
    order, coarse = EPS_G_ORDERS
    return generalisation_error(params, x[0], x[1], x[2], order=order,
                                coarse=coarse if bound else 0)


def _eps_g_gradient(params, x):
    """``grad eps_g`` at ``x = (q, m, theta, V)`` by central differences."""
    h = 1e-6 * np.maximum(np.abs(x), 1e-3)
    return np.array([(_eps_g(params, x + h[i] * np.eye(4)[i], bound=False)[0]
                      - _eps_g(params, x - h[i] * np.eye(4)[i], bound=False)[0]) / (2 * h[i])
                     for i in range(4)])


def alpha_l_goal(params: ModelParams, branch: str, alpha: float, x, atoms, J,
                 slope: float) -> np.ndarray:
    r"""The derivative of ``alpha_l`` with respect to the output-channel averages (atoms,
    ``E[M]``, ``E[loss]``) at the fixed point ``x`` of ``branch`` at ``alpha``.

    A change ``d`` of the atoms moves the residual by ``D d`` (``D = dT/d atoms``, from the
    closed-form equations), the fixed point by ``-J^{-1} D d`` on the free variables, ``eps_g``
    by its gradient times that, and ``alpha_l`` by that over ``-slope`` (the slope of
    ``eps_g - eps_lin`` in alpha).  ``J`` need only be close (a fast rule's chord Jacobian):
    this weights the errors the plane route's adaptive rule controls
    (:class:`~symattn.refine.plane.PlaneChannel`'s ``goal``), it is not part of a result."""
    B = BRANCHES[branch]
    free = list(B.free)
    F = SaddlePointMap(params, alpha, None, symmetry=B.symmetry)
    atoms = np.asarray(atoms, float)
    Fx, _ = F._from_atoms(x, atoms)
    D = np.empty((len(free), len(atoms)))
    for k in range(len(atoms)):
        h = 1e-7 * max(abs(atoms[k]), 1e-6)
        a = atoms.copy()
        a[k] += h
        D[:, k] = (F._from_atoms(x, a)[0] - Fx)[free] / h
    dx = -np.linalg.solve(np.asarray(J, float), D)           # d x_free / d atoms
    c = -_eps_g_gradient(params, np.asarray(x, float))[free] @ dx / slope
    return np.concatenate([c, [0.0, 0.0]])


def _floating_point(values, n):
    """Rounding of an n-node average: unit roundoff times log2(n) times the magnitudes."""
    return np.finfo(float).eps / 2 * math.log2(n) * float(np.sum(np.abs(values)))


def _solve(params, ch, branch, alpha, x, J, watch, hp, loose=False):
    """Chord-solve ``branch`` at ``alpha``; a ``loose`` solve (one that only feeds a step in
    alpha, not the result) stops at ``1000 * phi_tol``."""
    B = BRANCHES[branch]
    F = SaddlePointMap(params, alpha, ch, symmetry=B.symmetry)
    st, value, change, k = chord_solve(F, x, B.free, J, watch=lambda s: watch(F, s),
                                       tol=hp.phi_tol * (1e3 if loose else 1.0),
                                       max_iter=hp.max_chord)
    return F, st, value, change, k


def _eps_t(F, state):
    return -F.phi(state)


def _cold_state(F, state):
    """``state`` recomputed with the default multi-start prox at every node (the check of a
    warm-started :class:`ChunkedChannel`)."""
    warm, F.channel.warm = F.channel.warm, False
    try:
        return F(state.x)
    finally:
        F.channel.warm = warm


def _warm_check(F, state, free, J):
    """A warm-started ``state`` against a cold evaluation at the same ``x``: the cold state,
    the largest difference of the averages, and the shift of the fixed point the cold
    averages imply (one chord step with ``J``).  Nothing to check (zeros) without warm starts."""
    if not F.channel.warm:
        return state, 0.0, np.zeros(4)
    cold = _cold_state(F, state)
    dx = np.zeros(4)
    dx[list(free)] = -np.linalg.solve(J, cold.residual(free) - state.residual(free))
    return cold, float(np.max(np.abs(cold.channel.means - state.channel.means))), dx


def _alpha_c_on_rule(params, channels, setup, hp):
    """Newton in alpha with the slope E_M^pos - E_M^sem, at least two solves.

    The remaining error after a step ``s`` is bounded by
    ``|s| (|Delta''| |s| / (2 |Delta'|) + e)``: the curvature term plus the relative error
    ``e`` of the slope (on a finite rule the semantic slope holds up to the integration error,
    see :class:`~symattn.numerics.saddle.FixedPoint`), measured as the difference between the
    secant of ``Delta`` and the mean slope over the last two solves.  ``channels`` maps each
    branch to its (warm-started) channel; the last solves are checked against cold ones.
    """
    alpha = setup["alpha_c0"]
    xs = {b: setup[b][0] for b in ("positional", "semantic")}
    history, deltas, slopes = [], [], []
    for it in range(hp.max_root_steps):
        res, states = {}, {}
        for b in ("positional", "semantic"):
            F, st, eps_t, change, k = _solve(params, channels[b], b, alpha, xs[b],
                                             setup[b][1], _eps_t, hp, loose=(it == 0))
            xs[b] = st.x
            states[b] = (F, st)
            res[b] = {"eps_t": eps_t, "E_M": st.channel.E_M, "change": change,
                      "chord_steps": k, "x": st.x.tolist()}
        history.append(alpha)
        deltas.append(res["positional"]["eps_t"] - res["semantic"]["eps_t"])
        slopes.append(res["positional"]["E_M"] - res["semantic"]["E_M"])
        step = deltas[-1] / slopes[-1]
        if it > 0:
            secant = (deltas[-1] - deltas[-2]) / (history[-1] - history[-2])
            e = abs(secant - 0.5 * (slopes[-1] + slopes[-2])) / abs(slopes[-1])
            bound = abs(step) * (abs(setup["delta2"]) * abs(step) / (2 * abs(slopes[-1])) + e)
            if bound <= hp.root_tol:
                break
        alpha -= step
    else:
        raise NotConverged(f"alpha_c: Newton bound {bound:.1e} > {hp.root_tol:.0e} after "
                           f"{hp.max_root_steps} solves on {channels['semantic'].nodes.label}")
    slope = slopes[-1]
    check = {}
    for b, (F, st) in states.items():
        warm = F.channel.last_warm
        cold, dmeans, _ = _warm_check(F, st, BRANCHES[b].free, setup[b][1])
        check[b] = {"warm": warm, "max_means": dmeans,
                    "eps_t": abs(_eps_t(F, cold) - res[b]["eps_t"])}
    n = channels["semantic"].nodes.size
    return {"alpha_c": alpha - step, "alpha_c_root_bound": bound,
            "alpha_c_fixed_point": sum(res[b]["change"] + check[b]["eps_t"] for b in res)
            / abs(slope),
            "alpha_c_floating_point": _floating_point(
                [res[b][k] for b in res for k in ("eps_t", "E_M")], n) / abs(slope),
            "alpha_c_steps": history, "delta": deltas[-1], "delta_slope": slope,
            "slope_relative_error": e, "at_alpha_c": res, "alpha_c_warm_check": check}


def _alpha_l_on_rule(params, ch, setup, hp, eps_lin):
    """Newton then secant steps in alpha on eps_g - eps_lin.  The first slope comes from the
    implicit function theorem with the fast Jacobian, later ones are secants; the bound on
    the remaining error is the last correction times the relative change of the slope
    estimate, and the steps stop when it is below root_tol."""
    branch = setup["alpha_l_branch"]
    B = BRANCHES[branch]
    x, J = setup["alpha_l"]
    alpha = setup["alpha_l0"]
    alphas, gs, slopes, changes, quad = [], [], [], [], 0.0

    last = {}

    def watch(F, s):   # eps_g and its quadrature bound, kept for the state that ends the solve
        last["value"], last["bound"] = _eps_g(params, s.x)
        return last["value"]

    for _ in range(hp.max_root_steps):
        F, st, eg, change, _ = _solve(params, ch, branch, alpha, x, J, watch, hp,
                                      loose=not alphas)
        quad = max(quad, last["bound"])
        x = st.x
        alphas.append(alpha)
        gs.append(eg - eps_lin)
        changes.append(change)
        dx = np.zeros(4)
        dx[list(B.free)] = -np.linalg.solve(J, F.alpha_derivative(st, B.free))
        if len(alphas) == 1 or abs(alphas[-1] - alphas[-2]) < 1e-6 * abs(alpha):
            slopes.append(float(_eps_g_gradient(params, x) @ dx))
        else:
            slopes.append((gs[-1] - gs[-2]) / (alphas[-1] - alphas[-2]))
        corr = -gs[-1] / slopes[-1]
        bound = (abs(corr) * abs(slopes[-1] - slopes[-2]) / abs(slopes[-1])
                 if len(slopes) > 1 else math.inf)
        if bound <= hp.root_tol:
            break
        x = x + dx * corr
        alpha += corr
    else:
        raise NotConverged(f"alpha_l: bound {bound:.1e} > {hp.root_tol:.0e} after "
                           f"{hp.max_root_steps} steps on {ch.nodes.label}")
    warm = ch.last_warm
    _, dmeans, dx_cold = _warm_check(F, st, B.free, J)
    check = {"warm": warm, "max_means": dmeans,
             "eps_g": abs(_eps_g(params, st.x + dx_cold, bound=False)[0] - eg)}
    return {"alpha_l": alpha + corr, "alpha_l_root_bound": bound,
            "alpha_l_fixed_point": (changes[-1] + quad + check["eps_g"]) / abs(slopes[-1]),
            "alpha_l_warm_check": check, "alpha_l_slopes": slopes,
            "at_alpha_l": {"alpha": alpha, "x": st.x.tolist(), "eps_g": eg},
            "alpha_l_floating_point": _floating_point([gs[-1] + eps_lin], ch.nodes.size)
            / abs(slopes[-1]),
            "alpha_l_steps": alphas, "alpha_l_g": gs}


class LargeRuleRecord(TypedDict, total=False):
    """What one large scramble gives (:func:`_large_rule_task`); stored as JSON in the
    checkpoint and in the result's ``per_rule``.  Errors are bounds in ``alpha``."""

    seed: int                      #: the scramble
    route: str                     #: "shared": at the first scramble's fixed points
    alpha_c: float                 #: alpha_c on this scramble
    alpha_c_root_bound: float      #: remaining error of the Newton iteration
    alpha_c_fixed_point: float     #: fixed-point term (chord change + warm/cold difference)
    alpha_c_floating_point: float  #: rounding of the node sums
    alpha_c_steps: list            #: the alphas visited
    delta: float                   #: eps_t(positional) - eps_t(semantic) at the last step
    delta_slope: float             #: its slope, E_M(positional) - E_M(semantic)
    slope_relative_error: float    #: secant against mean slope, relative
    at_alpha_c: dict               #: per branch: eps_t, E_M, change, chord_steps, x
    alpha_c_warm_check: dict       #: per branch: the warm-started pass against a cold one
    alpha_l: float                 #: alpha_l on this scramble
    alpha_l_root_bound: float
    alpha_l_fixed_point: float
    alpha_l_floating_point: float
    alpha_l_warm_check: dict
    alpha_l_slopes: list           #: d(eps_g - eps_lin)/d alpha estimates, last one used
    at_alpha_l: dict               #: alpha, x and eps_g of the last solve
    alpha_l_steps: list
    alpha_l_g: list                #: eps_g - eps_lin at each step
    passes: dict                   #: prox passes per branch channel
    wall_time: float


#: Keys every stored record must have (a checkpoint missing one is refused, not half-read).
RECORD_KEYS = ("seed", "alpha_c", "alpha_c_root_bound", "alpha_c_fixed_point",
               "alpha_c_floating_point", "alpha_l", "alpha_l_root_bound", "alpha_l_fixed_point",
               "alpha_l_floating_point", "at_alpha_c", "wall_time")


def branch_fold(params: ModelParams, branch: str) -> str:
    """The key of :data:`~symattn.numerics.quadrature.FOLDS` for ``branch``: the symmetry its
    pinned variable comes with (``eta_flip`` at ``theta = 0``, ``full_flip`` at ``m = 0``),
    plus the token swap when ``A`` is exactly swap symmetric."""
    fold = BRANCHES[branch].symmetry
    if not isinstance(fold, str):
        raise ValueError(f"no single fold for the {branch} branch")
    return fold + "+token_swap" if params.swap_symmetric else fold


def _channels(params, hp, seed) -> dict:
    """Each branch's channel on large scramble ``seed`` (folded for it if ``hp.fold``)."""
    rule = SobolRule(hp.log2n, seed)
    return {b: ChunkedChannel(params, rule.nodes(fold=branch_fold(params, b) if hp.fold
                                                 else None),
                              gtol=hp.gtol, warm=hp.warm_starts)
            for b in ("positional", "semantic")}


def _large_rule_task(args) -> LargeRuleRecord:
    """One large scramble: alpha_c and alpha_l on it."""
    params, hp, seed, setup, eps_lin = args
    t0 = time.perf_counter()
    channels = _channels(params, hp, seed)
    out: LargeRuleRecord = {"seed": seed, "route": "solved",
                            **_alpha_c_on_rule(params, channels, setup, hp)}
    if setup["alpha_l_branch"] in ("semantic", "positional"):
        out.update(_alpha_l_on_rule(params, channels[setup["alpha_l_branch"]], setup, hp,
                                    eps_lin))
    else:   # eps_g of the global minimum jumps below eps_lin at alpha_c
        out.update({"alpha_l": out["alpha_c"]}, **{
            "alpha_l_" + k: out["alpha_c_" + k]
            for k in ("root_bound", "fixed_point", "floating_point")})
    out["passes"] = {b: ch.passes for b, ch in channels.items()}
    out["wall_time"] = time.perf_counter() - t0
    return out


#: Chord steps on the shared route: more passes are taken while the last step contracted by
#: more than ``SHARED_CONTRACTION`` (up to ``hp.max_chord``); a scramble whose last step still
#: contracts by more than ``SHARED_MAX_CONTRACTION`` is solved instead (:func:`_shared_rule_task`).
SHARED_CONTRACTION = 0.5
SHARED_MAX_CONTRACTION = 0.8


class _NoContraction(Exception):
    """The chord steps at the shared fixed point did not contract enough."""


def _chord_passes(F, x0, free, J, passes: int, max_passes: int):
    """Passes at ``x0`` and after each of at least ``passes - 1`` chord steps, more
    while the last step's contraction ``c`` exceeds :data:`SHARED_CONTRACTION` (at most
    ``max_passes``): ``(states, x, c, jump)`` with ``x`` the next chord iterate (not
    evaluated) and ``c = |x - x_last| / |x_last - x_before|`` (components relative to
    ``max(|x|, 0.01)``).

    ``jump``: the steps alternate between two states (a 2-cycle: the map of this scramble
    jumps across its fixed point, where a node's minimiser switches); ``x`` is then their
    midpoint and the callers take the difference of the two states as the fixed-point error.
    :class:`_NoContraction` if the steps neither contract by :data:`SHARED_MAX_CONTRACTION`
    nor alternate."""
    states = [_checked(F, x0)]

    def size(v, scale):
        return float(np.max(np.abs(v) / scale))

    while True:
        if len(states) >= passes:
            x = _chord_step(states[-1], free, J)
            scale = np.maximum(np.abs(x), 1e-2)
            before = size(states[-1].x - states[-2].x, scale)
            c = size(x - states[-1].x, scale) / before if before > 0 else 0.0
            if c <= SHARED_CONTRACTION:
                return states, x, c, False
            if (len(states) >= 4 and c > SHARED_MAX_CONTRACTION
                    and size(states[-1].x - states[-3].x, scale) <= 0.1 * before):
                return states, 0.5 * (states[-1].x + states[-2].x), c, True
            if len(states) >= max_passes:
                if c <= SHARED_MAX_CONTRACTION:
                    return states, x, c, False
                raise _NoContraction(c)
        states.append(_checked(F, _chord_step(states[-1], free, J)))


def _alpha_c_shared(params, channels, first, setup, hp):
    """``alpha_c`` on one scramble at the first scramble's last fixed points (module doc,
    'Shared fixed points'): per branch a cold pass there and one after a chord step (more
    while the steps contract slowly, :func:`_chord_passes`); one Newton step in alpha from the
    first scramble's last alpha.

    The Newton step's remaining error is bounded as in :func:`_alpha_c_on_rule`, with the first
    scramble's measured slope error.  Fixed-point term: ``eps_t`` is stationary, so its error
    falls like the square of the distance to the scramble's fixed point, which a chord step
    of contraction ``c`` multiplies by about ``c / (1 - c)``; the change of ``eps_t`` in the
    last step times ``max(1, (c / (1 - c))^2)`` bounds what remains."""
    alpha = first["alpha_c_steps"][-1]
    res = {}
    for b in ("positional", "semantic"):
        B = BRANCHES[b]
        F = SaddlePointMap(params, alpha, channels[b], symmetry=B.symmetry)
        states, x, c, jump = _chord_passes(F, first["at_alpha_c"][b]["x"], B.free,
                                           setup[b][1], 2, hp.max_chord)
        e0, e1 = _eps_t(F, states[-2]), _eps_t(F, states[-1])
        if jump:    # between the two states: their mean, their difference the error
            value, E_M = 0.5 * (e0 + e1), 0.5 * (states[-2].channel.E_M + states[-1].channel.E_M)
            change = abs(e1 - e0)
        else:
            value, E_M, x = e1, states[-1].channel.E_M, states[-1].x
            change = abs(e1 - e0) * max(1.0, (c / (1 - c)) ** 2)
        res[b] = {"eps_t": value, "E_M": E_M, "contraction": c, "change": change,
                  "jump": jump, "chord_steps": len(states) - 1, "x": x.tolist()}
    delta = res["positional"]["eps_t"] - res["semantic"]["eps_t"]
    slope = res["positional"]["E_M"] - res["semantic"]["E_M"]
    step = delta / slope
    e = first["slope_relative_error"]
    n = channels["semantic"].nodes.size
    return {"alpha_c": alpha - step,
            "alpha_c_root_bound": abs(step) * (abs(setup["delta2"]) * abs(step)
                                               / (2 * abs(slope)) + e),
            "alpha_c_fixed_point": sum(r["change"] for r in res.values()) / abs(slope),
            "alpha_c_floating_point": _floating_point(
                [res[b][k] for b in res for k in ("eps_t", "E_M")], n) / abs(slope),
            "alpha_c_steps": [alpha], "delta": delta, "delta_slope": slope,
            "slope_relative_error": e, "at_alpha_c": res}


def _eps_g_after(params, states, x, c, jump):
    """``eps_g`` at ``x`` of :func:`_chord_passes` after ``states``, and its fixed-point bound:
    the change from the last state times ``max(1, c / (1 - c))`` (what a geometric tail of
    contraction ``c`` leaves), or with ``jump`` the difference between the two alternating
    states, plus the quadrature bound."""
    before = _eps_g(params, states[-1].x, bound=False)[0]
    g, quad = _eps_g(params, x)
    if jump:
        return g, abs(before - _eps_g(params, states[-2].x, bound=False)[0]) + quad
    return g, abs(g - before) * max(1.0, c / (1 - c)) + quad


def _alpha_l_shared(params, ch, first, setup, hp, eps_lin):
    """``alpha_l`` on one scramble from the first scramble's last fixed point (module doc,
    'Shared fixed points').

    At the first scramble's last alpha: a cold pass at its fixed point and after each of two
    chord steps, and ``eps_g`` at the next chord iterate (no pass: ``eps_g`` is a function of
    the order parameters); a step in alpha with the first scramble's slope.  The slope of
    ``eps_g`` in alpha differs between scrambles by about 0.5 % (measured), too much for a
    single step, so at the new alpha (the fixed point moved along the branch by the implicit
    function theorem) two more passes and a secant step on this scramble's own values.
    Bounds: the secant step times the relative difference of the two slopes (root finding);
    the last ``eps_g``'s fixed-point bound over the slope, plus what the first one's moves in
    the secant (fixed point)."""
    B = BRANCHES[setup["alpha_l_branch"]]
    free = B.free
    J = setup["alpha_l"][1]
    at = first["at_alpha_l"]
    alpha0 = at["alpha"]
    F = SaddlePointMap(params, alpha0, ch, symmetry=B.symmetry)
    states, x, c, jump = _chord_passes(F, at["x"], free, J, 3, hp.max_chord)
    g0, fp0 = _eps_g_after(params, states, x, c, jump)
    slope0 = first["alpha_l_slopes"][-1]
    step = -(g0 - eps_lin) / slope0
    out = {"alpha_l_steps": [alpha0], "alpha_l_g": [g0 - eps_lin], "alpha_l_contraction": [c],
           "alpha_l_jump": [jump]}
    if step == 0.0:   # already at this scramble's root
        return {**out, "alpha_l": alpha0, "alpha_l_root_bound": 0.0,
                "alpha_l_fixed_point": fp0 / abs(slope0),
                "alpha_l_floating_point": _floating_point([g0], ch.nodes.size) / abs(slope0),
                "alpha_l_slopes": [slope0],
                "at_alpha_l": {"alpha": alpha0, "x": x.tolist(), "eps_g": g0}}
    dx = np.zeros(4)
    dx[list(free)] = -np.linalg.solve(J, F.alpha_derivative(states[-1], free))
    alpha1 = alpha0 + step
    F1 = SaddlePointMap(params, alpha1, ch, symmetry=B.symmetry)
    states1, x1, c1, jump1 = _chord_passes(F1, x + dx * step, free, J, 2, hp.max_chord)
    g1, fp1 = _eps_g_after(params, states1, x1, c1, jump1)
    secant = (g1 - g0) / step
    corr = -(g1 - eps_lin) / secant
    out["alpha_l_steps"].append(alpha1)
    out["alpha_l_g"].append(g1 - eps_lin)
    out["alpha_l_contraction"].append(c1)
    out["alpha_l_jump"].append(jump1)
    return {**out, "alpha_l": alpha1 + corr,
            "alpha_l_root_bound": abs(corr) * abs(secant - slope0) / abs(secant),
            "alpha_l_fixed_point": (fp1 + abs(corr) * (fp0 + fp1) / abs(step)) / abs(secant),
            "alpha_l_floating_point": _floating_point([g1], ch.nodes.size) / abs(secant),
            "alpha_l_slopes": [slope0, secant],
            "at_alpha_l": {"alpha": alpha1, "x": x1.tolist(), "eps_g": g1}}


def _shared_rule_task(args) -> LargeRuleRecord:
    """One large scramble at the first one's fixed points (:func:`_alpha_c_shared`,
    :func:`_alpha_l_shared`).  If the chord steps there neither contract by
    :data:`SHARED_MAX_CONTRACTION` nor alternate (:func:`_chord_passes`), the scramble is
    solved instead (:func:`_large_rule_task`; its record's ``route`` says why).

    With ``hp.warm_starts`` the pass after a chord step starts every node from its two lowest
    minima of the pass before (:class:`ChunkedChannel`).  The step moves the order parameters
    by the scatter of the scrambles' fixed points (about 1e-5, relative), and a minimum not
    among the two kept can become the lowest after so small a move only where three minima
    tie to that size (a minimum born at a fold starts above the one its saddle connects it
    to); so these passes are not checked against cold ones (measured:
    ``studies/shared_fixed_points.py``, which runs the shared route with cold passes too)."""
    params, hp, seed, setup, eps_lin, first = args
    t0 = time.perf_counter()
    channels = _channels(params, hp, seed)
    try:
        out: LargeRuleRecord = {"seed": seed, "route": "shared",
                                **_alpha_c_shared(params, channels, first, setup, hp)}
        if setup["alpha_l_branch"] in ("semantic", "positional"):
            out.update(_alpha_l_shared(params, channels[setup["alpha_l_branch"]], first,
                                       setup, hp, eps_lin))
        else:   # eps_g of the global minimum jumps below eps_lin at alpha_c
            out.update({"alpha_l": out["alpha_c"]}, **{
                "alpha_l_" + k: out["alpha_c_" + k]
                for k in ("root_bound", "fixed_point", "floating_point")})
    except _NoContraction as exc:
        out = _large_rule_task((params, hp, seed, setup, eps_lin))
        out["route"] = f"solved (the shared chord step contracted by {exc.args[0]:.2f})"
        return out
    out["passes"] = {b: ch.passes for b, ch in channels.items()}
    out["wall_time"] = time.perf_counter() - t0
    return out


def _lines_channel(params, order, cells):
    """The second route's integrator: lines in xi_1 with ``cells`` detection cells, on the
    ``order**3`` Gauss-Hermite outer rule."""
    from .preintegration import LineRule, PreintegratedChannel, gauss_hermite_outer
    return PreintegratedChannel(params, LineRule(cells=cells), outer=gauss_hermite_outer(order),
                                chunk=256)


def _mean_and_spread(values):
    """The second route's value and convergence term: mean and max - min of the last three
    outer orders (convergence in the order is erratic, so no single order is the best)."""
    last3 = values[-3:]
    return float(np.mean(last3)), max(last3) - min(last3)


def _preintegrated_E_M(args):
    params, x, order, cells = args
    t0 = time.perf_counter()
    ch = _lines_channel(params, order, cells)
    st = ch.evaluate(x)
    if st.n_failed:
        raise NotConverged(f"line preintegration: {st.n_failed} prox solves failed")
    return {"E_M": st.E_M, "switches": st.diagnostics["switches"],
            "wall_time": time.perf_counter() - t0}


def alpha_c_with(rule: dict, e_pos: float, e_sem: float) -> float:
    r"""``alpha_c`` from a large scramble's record ``rule`` (of :func:`refine_thresholds`) with
    that scramble's :math:`\mathbb{E}[\mathcal{M}]` at its last fixed points replaced by
    ``e_pos`` and ``e_sem``: with :math:`\alpha` the scramble's last solve,
    :math:`\Delta_B = \Delta + \alpha[(E_B - E)_{\rm pos} - (E_B - E)_{\rm sem}]` and
    :math:`\alpha_c = \alpha - \Delta_B/(E_{B,\rm pos} - E_{B,\rm sem})`.  Because
    :math:`\varepsilon_t` is stationary at a fixed point, the fixed points enter only at second
    order: the leading error is that of ``e_pos - e_sem``."""
    alpha = rule["alpha_c_steps"][-1]
    at = rule["at_alpha_c"]
    delta = rule["delta"] + alpha * ((e_pos - at["positional"]["E_M"])
                                     - (e_sem - at["semantic"]["E_M"]))
    return alpha - delta / (e_pos - e_sem)


def confirm_alpha_c(params: ModelParams, rule: dict, hp: HighPrecisionSettings,
                    executor: Executor | None = None) -> dict:
    r"""``alpha_c`` by a second route: :math:`\mathbb{E}[\mathcal{M}]` by line
    preintegration (:mod:`~symattn.refine.preintegration`) on a Gauss-Hermite outer rule.

    It is evaluated at the fixed points of one large scramble (``rule``, a record of
    :func:`refine_thresholds`): because :math:`\varepsilon_t` is stationary there, those
    fixed points enter only at second order, and the leading error is that of
    :math:`\mathbb{E}[\mathcal{M}]`, which this route integrates independently of the
    scrambles (:func:`alpha_c_with`).

    Its value is the mean over the last three outer orders and its error bar the spread
    (max - min) over them, plus the change from the finer line cells at the last order
    (switching points missed by the coarser detection grid).  Mean and spread, not the last
    order and the last change: the outer integrand is not smooth where switching points
    appear, and the convergence in the order is erratic (``studies/preintegration_accuracy.py``;
    measured: docs/numerics.md, section 'The second route: line preintegration'), so the last
    order is not reliably the best and one difference can understate the error.
    """
    t0 = time.perf_counter()
    at = rule["at_alpha_c"]
    configs = [(o, hp.confirm_cells[0]) for o in hp.confirm_orders]
    configs.append((hp.confirm_orders[-1], hp.confirm_cells[-1]))
    tasks = [(params, np.array(at[b]["x"]), o, c) for o, c in configs
             for b in ("positional", "semantic")]
    out = map_tasks(_preintegrated_E_M, tasks, executor)
    table = []
    for i, (o, c) in enumerate(configs):
        e_pos, e_sem = out[2 * i]["E_M"], out[2 * i + 1]["E_M"]
        table.append({"outer_order": o, "cells": c, "E_M_positional": e_pos,
                      "E_M_semantic": e_sem, "alpha_c": alpha_c_with(rule, e_pos, e_sem),
                      "switches": out[2 * i]["switches"] + out[2 * i + 1]["switches"],
                      "wall_time": out[2 * i]["wall_time"] + out[2 * i + 1]["wall_time"]})
    value, spread = _mean_and_spread([r["alpha_c"] for r in table[:-1]])
    cells_term = abs(table[-2]["alpha_c"] - table[-1]["alpha_c"])
    return {"method": "line preintegration in xi_1, Gauss-Hermite outer rule, at the fixed "
                      f"points of large scramble {rule['seed']}",
            "alpha_c": value, "alpha_c_err": spread + cells_term,
            "convergence": {"outer_order": spread, "cells": cells_term},
            "table": table, "wall_time": time.perf_counter() - t0}


def _preintegrated_alpha_l(args):
    """One outer order of :func:`confirm_alpha_l`: the fixed point of the preintegrated map
    at the scramble's last alpha, and the alpha_l it implies."""
    params, branch, alpha, x, J, slope, eps_lin, order, cells, hp = args
    t0 = time.perf_counter()
    ch = _lines_channel(params, order, cells)
    B = BRANCHES[branch]
    F = SaddlePointMap(params, alpha, ch, symmetry=B.symmetry)
    st, eg, change, k = chord_solve(F, np.array(x), B.free, np.array(J),
                                    watch=lambda s: _eps_g(params, s.x, bound=False)[0],
                                    tol=10 * hp.phi_tol, max_iter=hp.max_chord)
    return {"x": st.x.tolist(), "eps_g": eg, "alpha_l": alpha - (eg - eps_lin) / slope,
            "change": change, "chord_steps": k, "switches": st.channel.diagnostics["switches"],
            "wall_time": time.perf_counter() - t0}


def confirm_alpha_l(params: ModelParams, rule: dict, setup: dict, eps_lin: float,
                    hp: HighPrecisionSettings, executor: Executor | None = None) -> dict:
    r"""``alpha_l`` by the second route: the fixed point of the ``alpha_l`` branch solved with
    the atoms integrated by line preintegration (Gauss-Hermite outer rule) instead of a
    scramble.

    ``eps_g`` depends on the order parameters at first order, so here (unlike
    :func:`confirm_alpha_c`) the fixed point itself is recomputed: quasi-Newton from the
    scramble's last fixed point ``x`` (at its last ``alpha``) with the fast rule's Jacobian,
    until ``eps_g`` moves by less than ``10 * phi_tol``.  Then
    :math:`\alpha_l = \alpha - (\varepsilon_g - \varepsilon_{\rm lin})/s` with ``s`` the
    scramble's last slope of ``eps_g - eps_lin`` in alpha.  Value: the mean over the last three
    outer orders; error bar: their spread, plus the change from the finer line cells at the
    first order, plus the slope's relative error (the change between the scramble's last two
    slope estimates) times the largest step in alpha.  The atoms jump where the minimiser
    switches, so this converges more slowly than the route for ``alpha_c`` and is more
    sensitive to the switch detection (measured: docs/numerics.md, section
    'The second route for ``alpha_l`` (``--second-route-alpha-l``)').
    """
    t0 = time.perf_counter()
    branch = setup["alpha_l_branch"]
    at = rule["at_alpha_l"]
    J = setup["alpha_l"][1]
    configs = [(o, hp.confirm_cells[0]) for o in hp.confirm_orders]
    configs.append((hp.confirm_orders[0], hp.confirm_cells[-1]))
    slopes = rule["alpha_l_slopes"]
    tasks = [(params, branch, at["alpha"], at["x"], J.tolist(), slopes[-1], eps_lin, o, c, hp)
             for o, c in configs]
    out = map_tasks(_preintegrated_alpha_l, tasks, executor)
    table = [{"outer_order": o, "cells": c, **r} for (o, c), r in zip(configs, out)]
    value, spread = _mean_and_spread([r["alpha_l"] for r in table[:-1]])
    cells_term = abs(table[0]["alpha_l"] - table[-1]["alpha_l"])
    # the step in alpha uses the scramble's last slope; its relative error, measured as the
    # change between the scramble's last two slope estimates, times the step's length
    e = abs(slopes[-1] - slopes[-2]) / abs(slopes[-1]) if len(slopes) > 1 else 1.0
    slope_term = e * max(abs(r["alpha_l"] - at["alpha"]) for r in table)
    return {"method": "fixed point with line-preintegrated atoms (xi_1 lines, Gauss-Hermite "
                      f"outer rule), from the fixed point of large scramble {rule['seed']}",
            "alpha_l": value, "alpha_l_err": spread + cells_term + slope_term,
            "convergence": {"outer_order": spread, "cells": cells_term, "slope": slope_term},
            "table": table, "wall_time": time.perf_counter() - t0}


def _confirm_alpha_l_if_possible(params, rule, setup, eps_lin, hp, executor, note, value):
    """:func:`confirm_alpha_l` with its verdict, or ``None`` (with a note) where it does not
    apply: ``alpha_l = alpha_c`` (the route for ``alpha_c`` covers it), or a checkpointed
    record from before the route existed (it lacks the ``alpha_l`` fixed point)."""
    say = note or (lambda text: None)
    if setup["alpha_l_branch"] not in ("semantic", "positional"):
        say("second route for alpha_l: not separate (alpha_l = alpha_c here)")
        return None
    if "at_alpha_l" not in rule:
        say("second route for alpha_l: skipped, the first scramble's checkpointed record has "
            "no alpha_l fixed point (written by an earlier version; remove the .partial file)")
        return None
    say(f"second route for alpha_l: fixed points with line-preintegrated atoms, outer orders "
        f"{hp.confirm_orders}")
    out = confirm_alpha_l(params, rule, setup, eps_lin, hp, executor=executor)
    out["agrees"] = bool(abs(out["alpha_l"] - value[0]) <= out["alpha_l_err"] + value[1])
    return out


class CheckpointMismatch(ValueError):
    """A checkpoint file holds results computed with other parameters or settings."""


def _checkpoint_key(params, fast, hp) -> dict:
    """What a large scramble's record depends on (the second route's settings excepted)."""
    high = {k: v for k, v in asdict(hp).items() if not k.startswith("confirm_")}
    return json.loads(json.dumps({"params": params.as_dict(), "high": high,
                                  "fast": {"alpha_c": fast.alpha_c, "alpha_l": fast.alpha_l,
                                           "settings": fast.settings}}, default=float))


def _load_checkpoint(path, key) -> dict:
    if path is None or not Path(path).exists():
        return {}
    data = read_json(path, "out")
    if data.get("key") != key:
        raise CheckpointMismatch(f"{path} holds large-scramble results of other parameters or "
                                 "settings; remove it or write elsewhere")
    records = data.get("records")
    bad = ([] if isinstance(records, list) and all(isinstance(r, dict) for r in records)
           else ["records"])
    for r in records if not bad else []:
        bad += [k for k in RECORD_KEYS if k not in r]
    if bad:
        raise CheckpointMismatch(f"{path} is damaged (missing {sorted(set(bad))}); remove it "
                                 "to recompute")
    return {r["seed"]: r for r in records}


def _save_checkpoint(path, key, records: dict):
    write_json(path, {"key": key, "records": [records[s] for s in sorted(records)]}, indent=None)


#: scrambles tried in turn as the shared route's solved one (:func:`_first_solved`)
FIRST_TRIES = 3


def _first_solved(params, hp, seeds, setup, eps_lin, done, record) -> LargeRuleRecord:
    """The shared route's solved scramble: the one already in ``done`` (a resumed run), else
    the first of ``seeds`` whose solve converges (a scramble whose map jumps across its fixed
    point has none; it is then evaluated like the others); :class:`NotConverged` if
    :data:`FIRST_TRIES` in turn do not."""
    for s in seeds:
        if s in done and done[s].get("route") == "solved":
            return done[s]
    errors = []
    for s in [s for s in seeds if s not in done][:FIRST_TRIES]:
        try:
            rec = _large_rule_task((params, hp, s, setup, eps_lin))
        except NotConverged as exc:
            errors.append(f"scramble {s}: {exc}")
            continue
        record(0, hp.rules, rec)
        return rec
    raise NotConverged("no scramble to share its fixed points: " + "; ".join(errors))


def refine_thresholds(params: ModelParams, fast: Thresholds,
                      hp: HighPrecisionSettings = HighPrecisionSettings(),
                      executor: Executor | None = None, progress=None,
                      note=None, checkpoint=None) -> PreciseThresholds:
    """Refine the fast route's ``alpha_c`` and ``alpha_l`` on ``hp.rules`` large scrambles,
    then (unless ``hp.confirm_orders`` is empty) compute ``alpha_c`` by the second route,
    :func:`confirm_alpha_c`, and record whether the two agree within their error bars; with
    ``hp.confirm_alpha_l`` also ``alpha_l`` (:func:`confirm_alpha_l`, in
    ``second_route["alpha_l_route"]``).

    ``progress(k, n, record)`` is called as each large scramble finishes, ``note(text)`` when
    the second route starts.  With ``checkpoint`` (a file path) every large scramble's record is
    written there as it finishes, and a rerun with the same parameters and settings computes
    only the scrambles still missing (:class:`CheckpointMismatch` if the file holds other
    results; it is never overwritten then).  The checkpoint is locked for the call
    (:func:`~symattn.runs.lock.output_lock`, file ``CHECKPOINT.lock``): a second run with the
    same checkpoint raises :class:`~symattn.runs.lock.OutputInUse` at once.  Raises
    :class:`NotConverged` (a :class:`~symattn.numerics.thresholds.ThresholdNotFound`) if a
    chord iteration fails: no number is returned for an unconverged solve.
    """
    lock = nullcontext() if checkpoint is None else output_lock(checkpoint, folder=False)
    with lock:
        return _refine(params, fast, hp, executor, progress, note, checkpoint)


def _refine(params, fast, hp, executor, progress, note, checkpoint) -> PreciseThresholds:
    """:func:`refine_thresholds` (with its checkpoint locked, if any)."""
    t0 = time.perf_counter()
    key = _checkpoint_key(params, fast, hp)
    done = _load_checkpoint(checkpoint, key)
    setup = _fast_setup(params, fast, hp)
    eps_lin, _ = linear_baseline_error(params)
    seeds = [hp.seed + k for k in range(hp.rules)]

    def record(k, n, rec):
        done[rec["seed"]] = rec
        if checkpoint is not None:
            _save_checkpoint(checkpoint, key, done)
        if progress:
            progress(len(done), hp.rules, rec)

    if hp.shared:   # one scramble solved here (both cores), the others at its fixed points
        first = _first_solved(params, hp, seeds, setup, eps_lin, done, record)
        tasks = [(params, hp, s, setup, eps_lin, first) for s in seeds if s not in done]
        task = _shared_rule_task
    else:
        tasks = [(params, hp, s, setup, eps_lin) for s in seeds if s not in done]
        task = _large_rule_task
    if tasks:
        map_tasks(task, tasks, executor, record, total=hp.rules)
    rules = [done[s] for s in seeds]
    budget = {}
    values = {}
    for key in ("alpha_c", "alpha_l"):
        mean, se = mean_se([r[key] for r in rules])
        parts = {"integration": se,
                 "root_finding": max(r[key + "_root_bound"] for r in rules),
                 "fixed_point": max(r[key + "_fixed_point"] for r in rules),
                 "floating_point": max(r[key + "_floating_point"] for r in rules)}
        budget[key] = parts
        values[key] = (mean, sum(parts.values()))
    second = None
    if hp.confirm_orders:
        if note:
            note(f"second route for alpha_c: line preintegration, Gauss-Hermite outer orders "
                 f"{hp.confirm_orders}, cells {hp.confirm_cells}")
        second = confirm_alpha_c(params, rules[0], hp, executor=executor)
        second["agrees"] = bool(abs(second["alpha_c"] - values["alpha_c"][0])
                                <= second["alpha_c_err"] + values["alpha_c"][1])
        if hp.confirm_alpha_l:
            second["alpha_l_route"] = _confirm_alpha_l_if_possible(
                params, rules[0], setup, eps_lin, hp, executor, note, values["alpha_l"])
    return PreciseThresholds(alpha_c=values["alpha_c"][0], alpha_c_err=values["alpha_c"][1],
                             alpha_l=values["alpha_l"][0], alpha_l_err=values["alpha_l"][1],
                             alpha_l_branch=setup["alpha_l_branch"], budget=budget,
                             per_rule=rules, fast=fast,
                             settings={**asdict(hp), "delta2": setup["delta2"]},
                             wall_time=time.perf_counter() - t0, second_route=second)
