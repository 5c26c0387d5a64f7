r"""Fixed points of the saddle-point equations at fixed quadrature: the one solver, for every
shape.

The map :math:`F: x \mapsto x'` composes the generated equations
(:mod:`symattn.compile.general_equations`) in the shape's coordinates
(:class:`~symattn.numerics.coordinates.Coordinates`; at the paper's shape
:math:`x = (q, m, \theta, V)`): output channel atoms at ``x`` -> conjugates -> prior -> ``x'``
(for ``r > 1`` rotated into the rank gauge).  A fixed point solves ``F(x) = x`` on the *free*
variables; a branch may pin a block to its exact symmetric value (``theta = 0`` on the
positional branch, ``M = 0`` on the semantic one).  Pinning is done together with
``symmetry``: the map then uses the rule averaged over the node symmetry that leaves the
pinned subspace invariant (``eta -> -eta`` resp. ``(xi, eta) -> -(xi, eta)``), which sets the
odd atoms (hence ``theta_hat`` resp. ``m_hat``) exactly to zero, so the pinned point is an
exact fixed point of every equation under that rule.

Solver: Newton on :math:`r(x) = F(x) - x` with backtracking on :math:`\lVert r\rVert_\infty`,
from the start (a damped warm-up diverged on the positional branch).  The Jacobian is that of
the quadrature map with the selection between each node's two lowest minima smoothed over a
width ``eps`` (:class:`~symattn.numerics.channel.ChannelState`): each minimum is followed by a
local Newton solve, and the smoothing weight is differentiated exactly.  When Newton stalls on a
node switching minimiser, the solve is continued in ``eps`` (:func:`eps_stages`).  Convergence
is declared on the undamped residual :math:`\max |F(x) - x|` over the free variables, with the
global multi-start prox, at the final ``eps``.  Options for starts far from a root (the general
model's searches, :func:`~symattn.numerics.general.solve_general`): damped steps along the map
when no Newton step lowers the residual (:class:`Relaxation`), and a stall rule.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..model.params import ModelParams
from .channel import ChannelState, InvalidOrderParameters, OutputChannel
from .coordinates import Coordinates

__all__ = ["FixedPoint", "MapState", "SaddlePointMap", "solve_fixed_point", "fixed_point_record",
           "eps_stages", "NAMES", "BudgetExhausted", "Relaxation", "Solve", "newton_solve",
           "solve_status"]

NAMES = ("q", "m", "theta", "V")


@dataclass
class FixedPoint:
    """A solution of the saddle-point equations at fixed quadrature, with its status.

    ``eps_t = -Phi`` (training loss per dimension, penalty included); ``residual`` is
    ``max |F(x) - x|`` over the free variables; ``converged`` says whether it is below the
    tolerance.  ``E_M`` is :math:`\\mathbb{E}[\\mathcal{M}]`, which equals
    :math:`d\\varepsilon_t/d\\alpha` exactly on the positional branch and up to the
    integration error on the semantic one (its ``theta_hat`` equation uses Stein's lemma, which
    a finite rule satisfies only approximately).

    Filled in by the callers that know them: ``branch`` (:func:`~symattn.numerics.branches.solve_branch`),
    ``eps_g`` and ``eps_g_err`` (its quadrature error bound; ``nan`` until computed),
    ``n_map_evaluations``.  Diagnostics of the solve: ``n_ties`` (nodes whose two lowest minima
    nearly tie at the final smoothing width), ``eps_stages`` (the smoothing ladders tried) and
    ``solver`` (``"newton"``, or ``"profile"`` for
    :func:`~symattn.numerics.branches.profile_solve`).
    """

    alpha: float
    q: float
    m: float
    theta: float
    V: float
    q_hat: float
    m_hat: float
    theta_hat: float
    V_hat: float
    eps_t: float
    E_M: float
    E_loss: float
    residual: float
    converged: bool
    iterations: int
    n_failed_prox: int
    free: tuple
    rule: str
    message: str = ""
    wall_time: float = 0.0
    branch: str = ""
    eps_g: float = math.nan
    eps_g_err: float = math.nan
    n_ties: int = 0
    n_map_evaluations: int = 0
    eps_stages: tuple = ()
    solver: str = "newton"

    @property
    def x(self) -> np.ndarray:
        return np.array([self.q, self.m, self.theta, self.V])

    def as_dict(self) -> dict:
        d = asdict(self)
        d["free"] = [NAMES[i] for i in self.free]
        return d


@dataclass
class MapState:
    """``F(x)`` with the conjugates and the channel state it came from."""

    x: np.ndarray
    Fx: np.ndarray
    hats: np.ndarray
    channel: ChannelState

    def residual(self, free) -> np.ndarray:
        return (self.Fx - self.x)[list(free)]


class SaddlePointMap:
    """:math:`F(x)` for one model, ``alpha`` and output channel (node set), in the channel's
    coordinates (:class:`~symattn.numerics.coordinates.Coordinates`; ``symmetry``: the node
    symmetries the rule is averaged over, which zero their odd atoms, and whose pins the gauge
    respects)."""

    def __init__(self, params: ModelParams, alpha: float, channel: OutputChannel,
                 symmetry: str | tuple | None = None, coordinates: Coordinates | None = None):
        self.params = params
        self.alpha = float(alpha)
        self.channel = channel
        self.symmetry = symmetry
        self.coordinates = (coordinates or getattr(channel, "coordinates", None)
                            or Coordinates(params))
        self._odd = self.coordinates.odd(symmetry)
        self._pin = self.coordinates.pinned(symmetry)
        self.n_evaluations = 0

    def _from_atoms(self, x, atoms, alpha=None):
        if self._odd:  # the rule averaged over the symmetry: odd atoms vanish exactly
            atoms = atoms.copy()
            atoms[self._odd] = 0.0
        c = self.coordinates
        hats = c.output(atoms, x, self.alpha if alpha is None else alpha)
        return c.prior(hats, self._pin), hats

    def __call__(self, x, eps: float = 1e-10) -> MapState:
        self.n_evaluations += 1
        x = np.asarray(x, float)
        ch = self.channel.evaluate(x, eps)
        Fx, hats = self._from_atoms(x, ch.atoms)
        return MapState(x=x, Fx=Fx, hats=hats, channel=ch)

    def jacobian(self, state: MapState, free) -> np.ndarray:
        """Jacobian of ``r = F(x) - x`` on the free variables (see ``OutputChannel.derivative``)."""
        k = len(free)
        J = np.empty((k, k))
        n_at = state.channel.n_atoms
        for jj, j in enumerate(free):
            h = 1e-7 * max(abs(state.x[j]), 1e-2)
            d_means = self.channel.derivative(state.channel, j, h)
            xp = state.x.copy()
            xp[j] += h
            Tp, _ = self._from_atoms(xp, state.channel.atoms + h * d_means[:n_at])
            J[:, jj] = ((Tp - xp) - (state.Fx - state.x))[list(free)] / h
        self.n_evaluations += k
        return J

    def alpha_derivative(self, state: MapState, free) -> np.ndarray:
        """:math:`\\partial r/\\partial\\alpha` on the free variables at fixed ``x``.

        ``alpha`` enters only through the output equations (the atoms do not depend on it), so
        this is a difference quotient of the closed-form equations, exact to rounding.
        """
        h = 1e-6 * max(self.alpha, 1e-2)
        Tp, _ = self._from_atoms(state.x, state.channel.atoms, alpha=self.alpha + h)
        return (Tp - state.Fx)[list(free)] / h

    def phi(self, state: MapState) -> float:
        return self.coordinates.phi(state.x, state.hats, state.channel.E_M, self.alpha)


_MAX_HALVINGS = 20
#: a Newton step that reduces the residual by less than this factor counts as slow; two slow
#: steps in a row end a stage (the root sits on a selection ramp narrower than Newton's reach)
SLOW = 0.7
_EPS_LADDER = (1e-4, 1e-2)


#: the last resort: from _FINE_START by _FINE_FACTOR (a root on a ramp narrower than a factor
#: 100 can reach is followed stage by stage, where every ladder above can fail; measured:
#: docs/numerics.md, section 'The fixed-point solver')
_FINE_START, _FINE_FACTOR = 1e-4, 3.0


def eps_stages(eps: float) -> list:
    """The continuations in the selection width tried in turn: first ``[eps]`` alone, then
    from ``1e-4`` and from ``1e-2`` down to ``eps`` by factors of 100, last from ``1e-4`` by
    factors of 3."""
    ladders = []
    for start, factor in ([(eps, 100.0)] + [(e, 100.0) for e in _EPS_LADDER if e > eps]
                          + ([(_FINE_START, _FINE_FACTOR)] if _FINE_START > eps else [])):
        stages = [start]
        while stages[-1] > eps:
            stages.append(max(stages[-1] / factor, eps))
        ladders.append(stages)
    return ladders


class BudgetExhausted(Exception):
    """The solve used up its budget of map evaluations (``solve_fixed_point(max_evaluations=)``)."""


@dataclass(frozen=True)
class Relaxation:
    """What Newton does when no backtracked step lowers the residual (far from a root, where
    its linear model fails): ``steps`` damped steps :math:`x + \\beta r(x)` along the map
    (``beta``; the residual may rise), then Newton again, at most ``times`` times.  Off by
    default: the branches start near their roots; the search's cold starts need it."""

    beta: float = 0.3
    steps: int = 20
    times: int = 5


def _newton(F: SaddlePointMap, state: MapState, free, eps, tol, max_iter, verbose,
            budget=None, hand_over=True, relax: Relaxation | None = None,
            stall: int | None = None):
    """Damped Newton on ``r`` with backtracking on ``max|r|``; returns (state, iterations, ok).

    ``budget``: the value of ``F.n_evaluations`` at which to stop (raises
    :class:`BudgetExhausted` with the best state so far as its argument).  ``hand_over``:
    two slow steps in a row end the solve (a later stage or ladder takes over); without it
    (the last stage of the last ladder, after which nothing is tried) Newton goes on while
    the residual falls.  ``relax``: :class:`Relaxation` when no step lowers the residual;
    the state returned is then the lowest reached.  ``stall``: stop when the lowest residual
    has not fallen tenfold in that many steps."""
    res = float(np.max(np.abs(state.residual(free))))
    it = 0
    slow = 0
    relax_left = relax.times if relax else 0
    low, best = state, [res]
    while res > tol and it < max_iter:
        if budget is not None and F.n_evaluations >= budget:
            raise BudgetExhausted(low, it)
        if stall and len(best) > stall and best[-1] > best[-1 - stall] / 10:
            return low, it, False
        it += 1
        J = F.jacobian(state, free)
        try:
            d = np.linalg.solve(J, -state.residual(free))
        except np.linalg.LinAlgError:
            return low, it, False
        step = np.zeros(len(state.x))
        step[list(free)] = d
        new = None
        for _ in range(_MAX_HALVINGS):
            xn = state.x + step
            if F.coordinates.valid(xn):
                try:
                    cand = F(xn, eps)
                except InvalidOrderParameters:
                    cand = None
                if cand is not None:
                    rn = float(np.max(np.abs(cand.residual(free))))
                    if np.isfinite(rn) and rn < res:
                        new = cand
                        break
            step = step / 2
        if new is None and relax_left > 0:
            relax_left -= 1
            new = state
            for _ in range(relax.steps):
                xn = new.x.copy()
                xn[list(free)] += relax.beta * new.residual(free)
                if not F.coordinates.valid(xn):
                    break
                try:
                    new = F(xn, eps)
                except InvalidOrderParameters:
                    break
            rn = float(np.max(np.abs(new.residual(free))))
            slow = 0
        elif new is None:
            return low, it, False
        else:
            # two slow steps in a row: the root sits on a selection ramp narrower than Newton's
            # reach at this eps (see solve_fixed_point); hand over to the next stage
            slow = slow + 1 if rn > SLOW * res else 0
        state, res = new, rn
        if res < best[-1]:
            low = state
        best.append(min(best[-1], res))
        if slow >= 2 and hand_over:
            return low, it, best[-1] <= tol
        if verbose:
            print(f"    newton {it:3d} eps={eps:.0e} residual {res:.3e} x={state.x} "
                  f"ties={state.channel.n_ties}")
    return low, it, best[-1] <= tol


@dataclass
class Solve:
    """The outcome of :func:`newton_solve`: the final state, the smoothing width ``eps`` it is
    a fixed point at (the one asked for, or the narrowest stage accepted under ``eps_max``),
    the iterations, the smoothing ladders tried, and a message when it stopped on its budget."""

    state: MapState
    eps: float
    iterations: int
    eps_stages: tuple
    wall_time: float
    budget_message: str = ""


def newton_solve(F: SaddlePointMap, x0, free, *, tol: float = 1e-10, eps: float | None = None,
                 eps_max: float | None = None, max_iter: int = 25,
                 max_evaluations: int | None = None, relax: Relaxation | None = None,
                 stall: int | None = None, verbose: bool = False) -> Solve:
    """The solve of :func:`solve_fixed_point` (its doc), before the record is made.

    ``eps_max`` (default ``eps``): when no ladder reaches ``eps``, the narrowest stage at most
    ``eps_max`` that converged is the answer (``Solve.eps`` says which).  Where a node's two
    minima tie at the root, the map's selection ramp has a width of about ``eps`` in the
    node's gap; below some width, x cannot be placed on it to the residual ``tol`` in double
    precision (docs/numerics.md, 'One solver, in the shape's coordinates')."""
    t0 = time.perf_counter()
    eps = tol if eps is None else eps
    eps_max = eps if eps_max is None else max(eps_max, eps)
    free = tuple(free)
    x = np.array(x0, dtype=float)
    if not F.coordinates.valid(x):
        raise InvalidOrderParameters(f"invalid starting point {x}")
    tried = []
    iterations = 0
    fallback = None               # (width, state): the narrowest stage <= eps_max that converged
    budget = None if max_evaluations is None else F.n_evaluations + max_evaluations

    def finish(state, width=eps, budget_message=""):
        return Solve(state, width, iterations, tuple(tried), time.perf_counter() - t0,
                     budget_message)

    ladders = eps_stages(eps)
    for n_ladder, stages in enumerate(ladders):
        tried.append(stages)
        state = None
        try:
            for n_stage, e in enumerate(stages):
                last = n_ladder == len(ladders) - 1 and n_stage == len(stages) - 1
                state = F(x if state is None else state.x, e)
                state, k, ok = _newton(F, state, free, e, tol, max_iter, verbose, budget,
                                       hand_over=not last, relax=relax, stall=stall)
                iterations += k
                if ok and e <= eps_max and (fallback is None or e < fallback[0]):
                    fallback = (e, state)
        except BudgetExhausted as exc:
            state, k = exc.args
            iterations += k
            if fallback is not None:
                return finish(fallback[1], fallback[0])
            if state.channel.eps > eps * 1.001:   # judge the best point at the final eps
                state = F(state.x, eps)
            return finish(state, budget_message=f"gave up after {max_evaluations} map "
                                                "evaluations (the budget of one solve)")
        if ok:
            return finish(state)
    return finish(fallback[1], fallback[0]) if fallback is not None else finish(state)


def solve_fixed_point(F: SaddlePointMap, x0, free=(0, 1, 2, 3), *, tol: float = 1e-10,
                      eps: float | None = None, max_iter: int = 25,
                      max_evaluations: int | None = None, relax: Relaxation | None = None,
                      stall: int | None = None, verbose: bool = False) -> FixedPoint:
    """Solve ``F(x) = x`` on the ``free`` components, starting from ``x0``.

    ``tol`` bounds the undamped residual ``max |F(x) - x|`` (free components) and is also the
    default smoothing width ``eps`` of the selection between competing prox minima (see
    :class:`~symattn.numerics.channel.ChannelState`).  With a small ``eps`` a root can sit on
    the steep but continuous ramp where one node switches minimiser, narrower than Newton's
    reach.  So if Newton at ``eps`` stalls, the solve is restarted from ``x0`` and continued in
    ``eps``: from ``1e-4`` (then, if that fails too, from ``1e-2``) down to ``eps`` by factors
    of 100, and last from ``1e-4`` by factors of 3, each stage started from the previous
    stage's solution (a stage that stalls hands over to the next; the very last one goes on
    with slow steps while they lower the residual).  Returns a :class:`FixedPoint` whose
    ``converged`` is True only if the final stage (at ``eps``) reached the residual ``tol``
    and every prox solve converged.

    ``max_evaluations`` bounds the evaluations of the map (each Jacobian counts one per free
    variable) spent by this solve; when it is used up the solve stops with ``converged``
    False and a message saying so (without it, the ladders above can take thousands of
    evaluations where no fixed point exists, e.g. minutes at ``2^14`` points).  ``relax``
    and ``stall``: the options of :func:`_newton` (far from a root, and where the map jumps).
    """
    out = newton_solve(F, x0, free, tol=tol, eps=eps, max_iter=max_iter,
                       max_evaluations=max_evaluations, relax=relax, stall=stall,
                       verbose=verbose)
    eps = tol if eps is None else eps
    fp = fixed_point_record(F, out.state, free, tol, out.eps, iterations=out.iterations,
                            wall_time=out.wall_time, eps_stages=out.eps_stages)
    if out.budget_message and not fp.converged:
        fp.message = f"{out.budget_message}; {fp.message}"
    return fp


def solve_status(F: SaddlePointMap, state: MapState, free, tol: float, eps: float,
                 iterations: int) -> tuple:
    """``(residual, converged, message)`` of ``state``: converged when the residual on the
    free components is at most ``tol``, every prox solve converged and the smoothing is at
    ``eps``."""
    res = float(np.max(np.abs(state.residual(free))))
    ch = state.channel
    converged = bool(res <= tol and ch.n_failed == 0 and ch.eps <= eps * 1.001)
    if converged:
        message = "converged"
    elif ch.n_failed:
        message = f"{ch.n_failed} prox solves did not converge"
    else:
        message = f"residual {res:.2e} > tol {tol:.0e} after {iterations} Newton iterations"
    return res, converged, message


def fixed_point_record(F: SaddlePointMap, state: MapState, free, tol: float, eps: float, *,
                       iterations: int, wall_time: float = 0.0, eps_stages=()) -> FixedPoint:
    """The :class:`FixedPoint` of ``state``, with its convergence status judged here."""
    res, converged, message = solve_status(F, state, free, tol, eps, iterations)
    ch = state.channel
    hats = state.hats
    x = state.x
    return FixedPoint(alpha=F.alpha, q=x[0], m=x[1], theta=x[2], V=x[3], q_hat=hats[0],
                      m_hat=hats[1], theta_hat=hats[2], V_hat=hats[3], eps_t=-F.phi(state),
                      E_M=ch.E_M, E_loss=ch.E_loss, residual=res, converged=converged,
                      iterations=iterations, n_failed_prox=ch.n_failed, free=tuple(free),
                      rule=F.channel.nodes.label, message=message, wall_time=wall_time,
                      n_ties=ch.n_ties, eps_stages=tuple(eps_stages))
