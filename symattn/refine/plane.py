r"""Plane preintegration: the output channel with the whole ``xi`` plane integrated exactly.

A third way to compute the output-channel averages, built so that every discontinuity is
located rather than sampled.  It is run by ``studies/plane_route.py`` as a third route
for ``alpha_c`` (at a large scramble's fixed points, as
:func:`~symattn.refine.precise.alpha_c_with`) and, with the fixed point re-solved on it
(:func:`plane_alpha_l`), for ``alpha_l``; it is not part of ``--precision high`` (it takes
too long; measured: docs/numerics.md, section 'Plane preintegration: every switch located
(``studies/plane_route.py``)').  The 4-D average is nested as

.. math::

    \mathbb{E}[g] = \int \mathrm{D}v \int \mathrm{D}u \; F(u, v), \qquad
    F(\eta) = \int \mathrm{D}\xi_2 \int \mathrm{D}\xi_1 \; g(\xi, \eta),
    \qquad u = \frac{\eta_1 - \eta_2}{\sqrt 2},\; v = \frac{\eta_1 + \eta_2}{\sqrt 2}.

1. **Lines in** ``xi_1``: :class:`~symattn.refine.preintegration.PreintegratedChannel`
   (switching points located, smooth pieces by Gauss-Legendre), exact to the tolerance
   of ``tests/test_preintegration.py`` (measured: docs/numerics.md, sections 'The second
   route: line preintegration' and 'Plane preintegration: every switch located
   (``studies/plane_route.py``)').
2. **The** ``xi_2`` **integral.**  The line integral is smooth in ``xi_2`` except where a line
   starts or stops crossing the switching curve: at the curve's ends (cusps) and where a line
   touches it.  There the number of switches on the line changes; it is counted on ``grid + 1``
   lines over ``[-span, span]`` and each change is located by bisection.  Between those
   points the ``xi_2`` range is cut into panels of at most ``hmax``, each integrated by
   ``order``-point Gauss-Legendre; a panel that ends at a located point is mapped by
   ``xi_2 = a + (b - a) s^2`` so that the half-integer powers of ``xi_2 - a`` there become
   smooth in ``s``.
3. **The** ``eta`` **integral.**  ``F`` is smooth except along curves where a piece of the
   switching curve is born (at the paper's positional fixed point a
   :math:`(u - u_c)^{3/2}`-like singularity, which makes a Gauss-Hermite rule in ``eta``
   converge erratically; measured: docs/numerics.md, section 'Plane preintegration: every
   switch located (``studies/plane_route.py``)', "Why the adaptive rule in ``u``").  So ``u`` is
   integrated by adaptive Gauss-Kronrod (7-15) on ``[-u_span, u_span]``, each interval bisected
   until its Kronrod-Gauss difference in ``E[M]`` (or in any linear combination of the
   averages, ``goal``) is within its share of ``u_tol``, and ``v`` by Gauss-Hermite of order
   ``v_order``.  For ``alpha_l`` the goal is ``alpha_l`` itself, to first order
   (:func:`~symattn.refine.precise.alpha_l_goal`): the atoms jump where ``M`` only has a
   kink, so a rule steered by ``E[M]`` leaves them far less accurate.  The ``v`` lines can be
   shared among processes (``workers``).

Symmetries: ``F(-eta) = F(eta)`` on both branches (the flip each branch pins), so only
``v > 0`` is computed; with an exactly swap-symmetric ``A`` also ``F(u, v) = F(-u, v)``, so only
``u > 0``.  As for the folded rules of :mod:`~symattn.refine.precise`, the averages are
then those of a fundamental domain: invariant integrands (``M`` among them) are exact, the odd
ones (which vanish on the branch, where the saddle-point map pins them) are not, and the token
atoms are right only through their token sums, which is how the equations use them.

What is not located: a piece of the switching curve that lies entirely between two of the
``grid + 1`` counting lines, and a switch missed by a line's detection cells; refining
``grid`` and ``cells`` measures them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..model.params import ModelParams
from ..numerics.channel import ChannelMeans
from .preintegration import LineRule, PreintegratedChannel
from ..numerics.quadrature import RuleLabel, gauss_hermite_1d
from ..runs.executors import process_pool

__all__ = ["PlaneChannel", "PlaneRule", "gauss_kronrod_15", "plane_alpha_l"]


def gauss_kronrod_15():
    """Nodes on ``[-1, 1]`` and the Kronrod (15-point) and embedded Gauss (7-point) weights."""
    x = np.array([0.991455371120812639, 0.949107912342758525, 0.864864423359769073,
                  0.741531185599394440, 0.586087235467691130, 0.405845151377397167,
                  0.207784955007898468, 0.0])
    wk = np.array([0.022935322010529225, 0.063092092629978553, 0.104790010322250184,
                   0.140653259715525919, 0.169004726639267903, 0.190350578064785410,
                   0.204432940075298892, 0.209482141084727828])
    wg = np.array([0.0, 0.129484966168869693, 0.0, 0.279705391489276668, 0.0,
                   0.381830050505118945, 0.0, 0.417959183673469388])
    nodes = np.concatenate([-x, x[-2::-1]])
    return nodes, np.concatenate([wk, wk[-2::-1]]), np.concatenate([wg, wg[-2::-1]])


@dataclass(frozen=True)
class PlaneRule:
    """Settings of :class:`PlaneChannel` (module docstring)."""

    grid: int = 64            #: xi_2 lines on which the switches are counted
    span: float = 8.5         #: xi_2 in [-span, span] (P(xi_2 outside [-8.5, 8.5]) = 2e-17)
    order: int = 12           #: Gauss-Legendre points per xi_2 panel
    hmax: float = 2.0         #: longest xi_2 panel
    bisections: int = 40      #: bisections locating a change of the switch count
    v_order: int = 16         #: Gauss-Hermite order in v = (eta_1 + eta_2)/sqrt(2)
    u_span: float = 8.5       #: u in [-u_span, u_span]
    u_tol: float = 1e-10      #: adaptive tolerance on E[M] of each v line
    min_width: float = 2e-7   #: an interval this narrow is accepted whatever its estimate
    max_rounds: int = 40      #: bisection rounds of the adaptive rule
    line: LineRule = field(default_factory=LineRule)   #: the xi_1 lines

    def __post_init__(self):
        if self.grid < 2 or self.order < 2 or self.hmax <= 0 or self.span <= 0:
            raise ValueError(f"need grid >= 2, order >= 2, hmax > 0, span > 0: {self}")
        if self.v_order < 2 or self.u_span <= 0 or not self.u_tol > 0 or self.bisections < 1:
            raise ValueError(f"need v_order >= 2, u_span > 0, u_tol > 0, bisections >= 1: "
                             f"{self}")


def _panels(p0, p1, left, right, u, w, hmax):
    """Nodes and weights on ``[p0, p1]``: Gauss-Legendre (``u, w`` on [0, 1]) panels of at most
    ``hmax``, the panel at a singular end (``left``/``right``) mapped by ``s -> s^2``."""
    if left and right:
        m = 0.5 * (p0 + p1)
        a = _panels(p0, m, True, False, u, w, hmax)
        b = _panels(m, p1, False, True, u, w, hmax)
        return np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])
    k = max(1, int(np.ceil((p1 - p0) / hmax)))
    edges = np.linspace(p0, p1, k + 1)
    xs, ws = [], []
    for i in range(k):
        a, b = edges[i], edges[i + 1]
        if left and i == 0:
            xs.append(a + (b - a) * u**2)
            ws.append(2 * (b - a) * u * w)
        elif right and i == k - 1:
            xs.append(b - (b - a) * u**2)
            ws.append(2 * (b - a) * u * w)
        else:
            xs.append(a + (b - a) * u)
            ws.append((b - a) * w)
    return np.concatenate(xs), np.concatenate(ws)


class PlaneChannel:
    """Output-channel averages by plane preintegration (module docstring)."""

    def __init__(self, params: ModelParams, rule: PlaneRule = PlaneRule(), gtol: float = 1e-13,
                 swap: bool | None = None, goal=None, workers: int = 1):
        self.params = params
        self.rule = rule
        self.gtol = gtol
        self.lines = PreintegratedChannel(params, rule.line, gtol=gtol,
                                          outer=(np.zeros((0, 3)), np.zeros(0)))
        #: use F(u, v) = F(-u, v): exact only for an exactly swap-symmetric A
        self.swap = params.swap_symmetric if swap is None else bool(swap)
        #: weights on the averages (atoms, E[M], loss) of the quantity whose error the adaptive
        #: rule in u controls; None: E[M]
        self.goal = None if goal is None else np.array(goal, float)
        if workers < 1:
            raise ValueError(f"need workers >= 1, got {workers}")
        #: processes sharing the v lines of an evaluation
        self.workers = int(workers)
        x, w = np.polynomial.legendre.leggauss(rule.order)
        self._gl = (0.5 * (x + 1.0), 0.5 * w)
        self._tally: dict = {}
        #: a label for messages (the interface of a node-set channel; there are no nodes)
        self.nodes = RuleLabel(f"plane preintegration (v order {rule.v_order}, "
                               f"u_tol {rule.u_tol:g})")

    # -- xi_2 ---------------------------------------------------------------------------------
    def _counts(self, x, rows):
        out = [self.lines.switch_counts(x, rows[i:i + 1024]) for i in range(0, len(rows), 1024)]
        return np.concatenate(out) if out else np.zeros(0, int)

    def transitions(self, x, eta):
        """For each row of ``eta`` (``(n, 2)``), the sorted ``xi_2`` where the number of
        switches on the ``xi_1`` line changes."""
        r = self.rule
        G = np.linspace(-r.span, r.span, r.grid + 1)
        n = len(eta)
        rows = np.column_stack([np.tile(G, n), np.repeat(eta, r.grid + 1, axis=0)])
        c = self._counts(x, rows).reshape(n, r.grid + 1)
        ie, j = np.nonzero(c[:, 1:] != c[:, :-1])
        lo, hi, c_lo = G[j], G[j + 1], c[ie, j]
        for _ in range(r.bisections):
            mid = 0.5 * (lo + hi)
            same = self._counts(x, np.column_stack([mid, eta[ie]])) == c_lo
            lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
        out = [[] for _ in range(n)]
        for i, s in zip(ie, 0.5 * (lo + hi)):
            out[i].append(float(s))
        self._tally["transitions"] = self._tally.get("transitions", 0) + len(ie)
        return [sorted(o) for o in out]

    def xi_plane(self, x, eta):
        """``F(eta)``: the rows (atoms, ``M``, loss) averaged over the ``xi`` plane, one row of
        the result per row of ``eta``."""
        r = self.rule
        u, w = self._gl
        rows, weights, owner = [], [], []
        for i, t in enumerate(self.transitions(x, eta)):
            bp = [-r.span, *t, r.span]
            for k in range(len(bp) - 1):
                xs, ws = _panels(bp[k], bp[k + 1], k > 0, k < len(bp) - 2, u, w, r.hmax)
                rows.append(np.column_stack([xs, np.tile(eta[i], (len(xs), 1))]))
                weights.append(ws * np.exp(-0.5 * xs**2) / np.sqrt(2 * np.pi))
                owner.append(np.full(len(xs), i))
        rows, weights, owner = (np.concatenate(a) for a in (rows, weights, owner))
        chunk = self.lines.chunk
        vals = np.concatenate([self.lines._lines(x, rows[i:i + chunk])
                               for i in range(0, len(rows), chunk)])
        out = np.zeros((len(eta), vals.shape[1]))
        np.add.at(out, owner, weights[:, None] * vals)
        self._tally["lines"] = self._tally.get("lines", 0) + len(rows)
        return out

    # -- eta ----------------------------------------------------------------------------------
    def _v_nodes(self):
        """Gauss-Hermite nodes and weights in v, only ``v >= 0`` (``F(-eta) = F(eta)``)."""
        r = self.rule
        g, wg = gauss_hermite_1d(r.v_order)        # ascending, symmetric about 0
        k = r.v_order // 2
        vs, wv = g[r.v_order - k:], 2.0 * wg[r.v_order - k:]
        if r.v_order % 2:                           # and the middle node, v = 0
            vs, wv = np.append(vs, g[k]), np.append(wv, wg[k])
        return vs, wv

    def _u_lines(self, x, vs, progress=None):
        """The adaptive rule in ``u`` on each line ``v = vs[i]``: the integrals over ``u`` (one
        row each), their estimates (Kronrod - Gauss on the goal) and the count of intervals
        accepted only for being narrow.  Raises ``RuntimeError`` past ``max_rounds``."""
        r = self.rule
        a = 0.0 if self.swap else -r.u_span
        xk, wk, wgs = gauss_kronrod_15()
        todo = [(i, a, r.u_span) for i in range(len(vs))]
        total = None
        err = np.zeros(len(vs))
        narrow = 0
        for rnd in range(r.max_rounds):
            if not todo:
                break
            if progress:
                progress(rnd, len(todo))
            arr = np.array(todo)
            li = arr[:, 0].astype(int)
            mid, half = 0.5 * (arr[:, 1] + arr[:, 2]), 0.5 * (arr[:, 2] - arr[:, 1])
            uu = (mid[:, None] + half[:, None] * xk).ravel()
            vv = np.repeat(vs[li], len(xk))
            eta = np.column_stack([(vv + uu) / np.sqrt(2), (vv - uu) / np.sqrt(2)])
            vals = (self.xi_plane(x, eta) * (np.exp(-0.5 * uu**2) / np.sqrt(2 * np.pi))[:, None]
                    ).reshape(len(arr), len(xk), -1)
            K = half[:, None] * np.einsum("j,ijk->ik", wk, vals)
            G7 = half[:, None] * np.einsum("j,ijk->ik", wgs, vals)
            if total is None:
                total = np.zeros((len(vs), K.shape[1]))
                goal = self.goal
                if goal is None:                    # E[M]: rows end with M, loss
                    goal = np.zeros(K.shape[1])
                    goal[-2] = 1.0
            e = np.abs((K - G7) @ goal)
            share = r.u_tol * (arr[:, 2] - arr[:, 1]) / (r.u_span - a)
            accept = (e <= share) | (2 * half <= r.min_width)
            narrow += int(np.count_nonzero((e > share) & accept))
            np.add.at(total, li[accept], K[accept])
            np.add.at(err, li[accept], e[accept])
            todo = [(li[i], arr[i, 1], mid[i]) for i in np.flatnonzero(~accept)]
            todo += [(li[i], mid[i], arr[i, 2]) for i in np.flatnonzero(~accept)]
        if todo:
            raise RuntimeError(f"plane preintegration: the adaptive rule in u did not reach "
                               f"{r.u_tol} in {r.max_rounds} rounds")
        if self.swap:
            total, err = 2 * total, 2 * err
        return total, err, narrow

    def evaluate(self, x, eps: float | None = None, progress=None) -> ChannelMeans:
        """The averages at ``x`` (``eps`` is accepted for interface compatibility: the selection
        is the hard global minimum).  ``progress(round, intervals)`` is called per adaptive
        round; with ``workers > 1`` the v lines are dealt out to that many processes, each
        running its share of the rounds and calling ``progress`` itself (so it must be
        picklable).  The result's ``error_estimate`` is the adaptive rule's estimate of the
        goal's error (of ``E[M]`` when there is no goal); its ``diagnostics`` count the prox
        failures, switches, lines and transitions, and give the narrow intervals and the wall
        time.  Raises ``RuntimeError`` if the adaptive rule does not meet its tolerance."""
        x = np.asarray(x, float)
        t0 = time.perf_counter()
        self.lines._tally = {"failed": 0, "switches": 0, "bisection_both_lost": 0}
        self._tally = {}
        vs, wv = self._v_nodes()
        if self.workers == 1:
            total, err, narrow = self._u_lines(x, vs, progress)
            stats = [{**self._tally, **self.lines._tally}]
        else:
            parts = [np.arange(i, len(vs), self.workers) for i in range(self.workers)]
            tasks = [(self.params, self.rule, self.gtol, self.swap, self.goal, x, vs[p],
                      progress) for p in parts if len(p)]
            with process_pool(len(tasks)) as ex:
                out = list(ex.map(_u_lines_task, tasks))
            total, err = np.zeros((len(vs), out[0][0].shape[1])), np.zeros(len(vs))
            for p, (t, e, _, _) in zip(parts, out):
                total[p], err[p] = t, e
            narrow = sum(o[2] for o in out)
            stats = [o[3] for o in out]
        means = wv @ total
        summed = {k: sum(s.get(k, 0) for s in stats)
                  for k in ("failed", "switches", "lines", "transitions")}
        diagnostics = {**summed, "narrow_intervals": narrow,
                       "wall_time": time.perf_counter() - t0}
        return ChannelMeans(x=x, eps=0.0 if eps is None else eps, means=means,
                            n_atoms=len(means) - 2, n_failed=summed["failed"], n_ties=0,
                            error_estimate=float(wv @ err), diagnostics=diagnostics)


def _u_lines_task(args):
    """One process's share of the v lines of :meth:`PlaneChannel.evaluate`."""
    params, rule, gtol, swap, goal, x, vs, progress = args
    ch = PlaneChannel(params, rule, gtol=gtol, swap=swap, goal=goal)
    ch.lines._tally = {"failed": 0, "switches": 0, "bisection_both_lost": 0}
    total, err, narrow = ch._u_lines(x, vs, progress)
    return total, err, narrow, {**ch._tally, **ch.lines._tally}


def plane_alpha_l(params: ModelParams, branch: str, record: dict, J, eps_lin: float,
                  rule: PlaneRule = PlaneRule(), *, x0=None, workers: int = 2,
                  gtol: float = 1e-13, max_iter: int = 8, progress=None) -> dict:
    r"""``alpha_l`` with the fixed point of ``branch`` solved on plane-preintegrated averages.

    ``record`` is a large scramble's record (of
    :func:`~symattn.refine.precise.refine_thresholds`): its last ``alpha``
    (``at_alpha_l``) is kept, and :math:`\alpha_l = \alpha - (\varepsilon_g -
    \varepsilon_{\rm lin})/s` with ``s`` its last slope of ``eps_g - eps_lin`` in alpha (as in
    :func:`~symattn.refine.precise.confirm_alpha_l`).  The fixed point is found by chord
    iterations (:func:`~symattn.refine.precise.chord_solve`, Jacobian ``J``) from ``x0``
    (default: the scramble's fixed point), until ``alpha_l`` moves by at most ``rule.u_tol``
    in one step.  The adaptive rule in ``u`` controls ``alpha_l`` itself
    (:func:`~symattn.refine.precise.alpha_l_goal`, weighted with the atoms of a 2^14-point
    Sobol rule at ``x0``), so ``u_tol`` is in units of alpha.  Raises
    :class:`~symattn.refine.precise.NotConverged` if the chord does not get there.

    Returns ``alpha_l``, the last change (the fixed-point term), the adaptive rule's estimate
    at the last evaluation, the quadrature bound of ``eps_g`` over ``|s|``, the fixed point, the
    averages of the last evaluation and the goal's weights (so ``goal @ (means' - means)``
    is the change of ``alpha_l`` another rule would make, to first order) and one row per
    evaluation."""
    from ..numerics.branches import BRANCHES
    from ..numerics.channel import OutputChannel
    from .precise import _eps_g, alpha_l_goal, chord_solve
    from ..numerics.quadrature import SobolRule
    from ..numerics.saddle import SaddlePointMap

    B = BRANCHES[branch]
    at = record["at_alpha_l"]
    alpha, slope = at["alpha"], record["alpha_l_slopes"][-1]
    x0 = np.array(at["x"] if x0 is None else x0, float)
    J = np.asarray(J, float)
    atoms = OutputChannel(params, SobolRule(14, 0).nodes(), gtol=gtol).evaluate(x0).atoms
    ch = PlaneChannel(params, rule, gtol=gtol, goal=alpha_l_goal(params, branch, alpha, x0,
                                                                 atoms, J, slope),
                      workers=workers)
    F = SaddlePointMap(params, alpha, ch, symmetry=B.symmetry)
    rows, t0 = [], time.perf_counter()

    def watch(state):
        eg, bound = _eps_g(params, state.x)
        rows.append({"x": state.x.tolist(), "eps_g": eg, "eps_g_bound": bound,
                     "alpha_l": alpha - (eg - eps_lin) / slope,
                     "residual": float(np.max(np.abs(state.residual(B.free)))),
                     "adaptive": state.channel.error_estimate,
                     "lines": state.channel.diagnostics["lines"],
                     "wall_time": time.perf_counter() - t0})
        if progress:
            progress(rows[-1])
        return rows[-1]["alpha_l"]

    st, value, change, k = chord_solve(F, x0, B.free, J, watch=watch, tol=rule.u_tol,
                                       max_iter=max_iter)
    last = rows[-1]
    return {"alpha_l": value, "fixed_point": change, "adaptive": last["adaptive"],
            "eps_g_quadrature": last["eps_g_bound"] / abs(slope), "chord_steps": k,
            "alpha": alpha, "slope": slope, "x": st.x.tolist(), "eps_g": last["eps_g"],
            "means": st.channel.means.tolist(), "goal": ch.goal.tolist(),
            "evaluations": rows, "wall_time": time.perf_counter() - t0}
