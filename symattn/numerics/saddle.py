r"""Fixed points of the saddle-point equations at fixed quadrature.

The map :math:`F: x = (q, m, \theta, V) \mapsto x'` composes the derived equations
(``symattn.symbolic.free_energy``): output channel atoms at ``x`` -> conjugates
``(q_hat, m_hat, theta_hat, V_hat)`` -> prior channel -> ``x'``.  A fixed point solves
``F(x) = x`` on the *free* variables; a branch may pin a variable to its exact symmetric value
(``theta = 0`` on the positional branch, ``m = 0`` on the semantic one).  Pinning is done
together with ``symmetry``: the map then uses the rule averaged over the node symmetry that
leaves the pinned subspace invariant (``eta -> -eta`` resp. ``(xi, eta) -> -(xi, eta)``),
which sets the odd atoms (hence ``theta_hat`` resp. ``m_hat``) exactly to zero, so the pinned
point is an exact fixed point of all four equations under that rule.

Solver: Newton on :math:`r(x) = F(x) - x` with backtracking on :math:`\lVert r\rVert_\infty`,
from the start (a damped warm-up diverged on the positional branch).  The Jacobian is that of
the quadrature map with the selection between each node's two lowest minima smoothed over a
width ``eps`` (:class:`~symattn.numerics.channel.ChannelState`): each minimum is followed by a
local Newton solve, and the smoothing weight is differentiated exactly.  When Newton stalls on a
node switching minimiser, the solve is continued in ``eps`` (:func:`eps_stages`).  Convergence
is declared on the undamped residual :math:`\max |F(x) - x|` over the free variables, with the
global multi-start prox, at the final ``eps``.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..compile.kernels import odd_atoms
from ..model.params import ModelParams
from .channel import ChannelState, InvalidOrderParameters, OutputChannel, PaperEquations

__all__ = ["FixedPoint", "MapState", "SaddlePointMap", "solve_fixed_point", "fixed_point_record",
           "eps_stages", "NAMES", "BudgetExhausted"]

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
    """:math:`F(x)` for one model, ``alpha`` and output channel (node set)."""

    def __init__(self, params: ModelParams, alpha: float, channel: OutputChannel,
                 symmetry: str | tuple | None = None):
        self.params = params
        self.alpha = float(alpha)
        self.channel = channel
        self.symmetry = symmetry
        syms = (symmetry,) if isinstance(symmetry, str) else tuple(symmetry or ())
        self._odd = sorted(set().union(*(odd_atoms(s) for s in syms))) if syms else []
        eqs = PaperEquations(params)     # the general model's generated map, reduced
        self._out, self._prior, self._phi = eqs.output, eqs.prior, eqs.phi
        self.n_evaluations = 0

    def _from_atoms(self, x, atoms, alpha=None):
        if self._odd:  # the rule averaged over the symmetry: odd atoms vanish exactly
            atoms = atoms.copy()
            atoms[self._odd] = 0.0
        q, m, theta, V = x
        p = self.params
        a = self.alpha if alpha is None else alpha
        hats = np.array(self._out(*atoms, q, m, theta, V, a, p.rho), dtype=float)
        return np.array(self._prior(*hats, p.sigma, p.lam, p.rho), dtype=float), hats

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
        p = self.params
        return float(self._phi(*state.x, *state.hats, state.channel.E_M, self.alpha, p.sigma,
                               p.lam, p.rho))


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


def _valid(x, rho) -> bool:
    q, m, theta, V = x
    return bool(np.all(np.isfinite(x)) and q > 0 and V > 0 and theta**2 < q * rho)


class BudgetExhausted(Exception):
    """The solve used up its budget of map evaluations (``solve_fixed_point(max_evaluations=)``)."""


def _newton(F: SaddlePointMap, state: MapState, free, eps, tol, max_iter, verbose,
            budget=None, hand_over=True):
    """Damped Newton on ``r`` with backtracking on ``max|r|``; returns (state, iterations, ok).

    ``budget``: the value of ``F.n_evaluations`` at which to stop (raises
    :class:`BudgetExhausted` with the best state so far as its argument).  ``hand_over``:
    two slow steps in a row end the solve (a later stage or ladder takes over); without it
    (the last stage of the last ladder, after which nothing is tried) Newton goes on while
    the residual falls."""
    rho = F.params.rho
    res = float(np.max(np.abs(state.residual(free))))
    it = 0
    slow = 0
    while res > tol and it < max_iter:
        if budget is not None and F.n_evaluations >= budget:
            raise BudgetExhausted(state, it)
        it += 1
        J = F.jacobian(state, free)
        try:
            d = np.linalg.solve(J, -state.residual(free))
        except np.linalg.LinAlgError:
            return state, it, False
        step = np.zeros(4)
        step[list(free)] = d
        new = None
        for _ in range(_MAX_HALVINGS):
            xn = state.x + step
            if _valid(xn, rho):
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
        if new is None:
            return state, it, False
        # two slow steps in a row: the root sits on a selection ramp narrower than Newton's
        # reach at this eps (see solve_fixed_point); hand over to the next stage
        slow = slow + 1 if rn > SLOW * res else 0
        state, res = new, rn
        if slow >= 2 and hand_over:
            return state, it, res <= tol
        if verbose:
            print(f"    newton {it:3d} eps={eps:.0e} residual {res:.3e} x={state.x} "
                  f"ties={state.channel.n_ties}")
    return state, it, res <= tol


def solve_fixed_point(F: SaddlePointMap, x0, free=(0, 1, 2, 3), *, tol: float = 1e-10,
                      eps: float | None = None, max_iter: int = 25,
                      max_evaluations: int | None = None, verbose: bool = False) -> FixedPoint:
    """Solve ``F(x) = x`` on the ``free`` components, starting from ``x0``.

    ``tol`` bounds the undamped residual ``max |F(x) - x|`` (free components) and is also the
    default smoothing width ``eps`` of the selection between competing prox minima (see
    :class:`~symattn.numerics.channel.ChannelState`).  With a small ``eps`` a root can sit on
    the steep but continuous ramp where one node switches minimiser, narrower than Newton's
    reach.  So if Newton at ``eps`` stalls, the solve is restarted from ``x0`` and continued in
    ``eps``: from ``1e-4`` (then, if that fails too, from ``1e-2``) down to ``eps`` by factors
    of 100, and last from ``1e-4`` by factors of 3, each stage started from the previous
    stage's solution (a stage that stalls hands over to the next; the very last one goes on
    with slow steps while they lower the residual).  Returns a :class:`FixedPoint` whose ``converged`` is True only if the
    final stage (at ``eps``) reached the residual ``tol`` and every prox solve converged.

    ``max_evaluations`` bounds the evaluations of the map (each Jacobian counts one per free
    variable) spent by this solve; when it is used up the solve stops with ``converged``
    False and a message saying so (without it, the ladders above can take thousands of
    evaluations where no fixed point exists, e.g. minutes at ``2^14`` points).
    """
    t0 = time.perf_counter()
    eps = tol if eps is None else eps
    free = tuple(free)
    x = np.array(x0, dtype=float)
    if not _valid(x, F.params.rho):
        raise InvalidOrderParameters(f"invalid starting point {x}")
    tried = []
    iterations = 0
    budget = None if max_evaluations is None else F.n_evaluations + max_evaluations
    ladders = eps_stages(eps)
    for n_ladder, stages in enumerate(ladders):
        tried.append(stages)
        state = None
        try:
            for n_stage, e in enumerate(stages):
                last = n_ladder == len(ladders) - 1 and n_stage == len(stages) - 1
                state = F(x if state is None else state.x, e)
                state, k, ok = _newton(F, state, free, e, tol, max_iter, verbose, budget,
                                       hand_over=not last)
                iterations += k
        except BudgetExhausted as exc:
            state, k = exc.args
            iterations += k
            if state.channel.eps > eps * 1.001:   # judge the best point at the final eps
                state = F(state.x, eps)
            fp = fixed_point_record(F, state, free, tol, eps, iterations=iterations,
                                    wall_time=time.perf_counter() - t0, eps_stages=tuple(tried))
            if not fp.converged:
                fp.message = (f"gave up after {max_evaluations} map evaluations (the budget of "
                              f"one solve; {fp.message})")
            return fp
        if ok:
            break
    return fixed_point_record(F, state, free, tol, eps, iterations=iterations,
                              wall_time=time.perf_counter() - t0, eps_stages=tuple(tried))


def fixed_point_record(F: SaddlePointMap, state: MapState, free, tol: float, eps: float, *,
                       iterations: int, wall_time: float = 0.0, eps_stages=()) -> FixedPoint:
    """The :class:`FixedPoint` of ``state``, with its convergence status judged here."""
    res = float(np.max(np.abs(state.residual(free))))
    ch = state.channel
    converged = bool(res <= tol and ch.n_failed == 0 and ch.eps <= eps * 1.001)
    if converged:
        message = "converged"
    elif ch.n_failed:
        message = f"{ch.n_failed} prox solves did not converge"
    else:
        message = f"residual {res:.2e} > tol {tol:.0e} after {iterations} Newton iterations"
    hats = state.hats
    x = state.x
    return FixedPoint(alpha=F.alpha, q=x[0], m=x[1], theta=x[2], V=x[3], q_hat=hats[0],
                      m_hat=hats[1], theta_hat=hats[2], V_hat=hats[3], eps_t=-F.phi(state),
                      E_M=ch.E_M, E_loss=ch.E_loss, residual=res, converged=converged,
                      iterations=iterations, n_failed_prox=ch.n_failed, free=tuple(free),
                      rule=F.channel.nodes.label, message=message, wall_time=wall_time,
                      n_ties=ch.n_ties, eps_stages=tuple(eps_stages))
