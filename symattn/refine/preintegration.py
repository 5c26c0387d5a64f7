r"""Line preintegration: the output channel with ``xi_1`` integrated along lines.

A second way to compute the output-channel averages, built to respect the discontinuities; it
is the integrator of the second route for ``alpha_c`` (:func:`~symattn.refine.precise.
confirm_alpha_c`).  For every outer node ``(xi_2, eta_1, eta_2)`` the integrand is a function of
:math:`\xi_1 \sim N(0, 1)` alone: smooth except at the points where the global minimiser of the
Moreau objective switches (the atoms jump there and ``M`` has a kink).  Along each line:

1. the global prox (multi-start, :func:`~symattn.numerics.prox.prox`) at ``cells + 1`` equally
   spaced edges of ``[-span, span]``;
2. a switch inside a cell is detected when the minimiser at one edge, followed by Newton to the
   other edge in ``follow_steps`` steps, does not land on that edge's global minimiser (both
   directions are tried), or, with more than one step, when it jumps on the way (its branch
   ended at a fold, so it had stopped being global before).  One step misses a switch where
   both branches end inside the cell: each continuation falls into the other branch and lands
   on the far edge's minimiser.  Measured at the semantic fixed point at ``alpha_l``: such
   short overlaps lie along much of a switching curve near its birth, and the missed jumps of
   the atoms left ``F(eta)`` (:mod:`~symattn.refine.plane`) noisy in ``E[eta_1 f_1]`` (much
   less so with 4 steps), while ``M``, which only has a kink there, was hardly affected
   (measured: docs/numerics.md, sections 'Plane preintegration for ``alpha_l``
   (``plane_route.py --alpha-l``)' and 'Plane preintegration: every switch located
   (``studies/plane_route.py``)');
3. the switching point is located by bisection on ``G_A - G_B``, each branch followed by Newton
   from its last position over ever shorter steps (a branch that jumps away has ended at a
   fold, and the other branch wins), to ``span / 2**bisections``;
4. every smooth piece is integrated by ``order``-point Gauss-Legendre against the normal
   density; at each node the prox starts from both ends' minimisers of the piece.

``tests/test_preintegration.py`` checks the located switching points (ties of two distinct
minima at 40 digits) and the line integrals (against mpmath's quadrature split at switching
points that mpmath locates itself) to 1e-13, and a switch with both branches ending inside one
cell.  Cases that escape it: two switches within one cell (a cell of ``2 span / cells`` in
``xi_1``), branches that coexist over less than ``1 / follow_steps`` of a cell, and a third
minimum that is global only strictly inside a cell; refining the cells measures their effect
(``cells`` term of the error bar).

The outer rule is a 3-D scrambled Sobol rule (:class:`LineRule`) or any explicit rule
(``outer=(points, weights)``, e.g. :func:`gauss_hermite_outer`).  Measured
(``studies/preintegration_accuracy.py``): the line integrals are smooth in the outer variables
except where switching points appear or vanish, so a Gauss-Hermite outer rule converges
algebraically, steadily on the semantic branch and erratically on the positional one; a Sobol
outer rule converges algebraically too.  At equal cost neither beats raw randomised QMC on
``E[M]``; the value of the route is that it is an independent computation (measured:
docs/numerics.md, section 'The second route: line preintegration').

A :class:`PreintegratedChannel` returns the same averages as
:class:`~symattn.numerics.channel.OutputChannel` (as a
:class:`~symattn.numerics.channel.ChannelMeans`), so a
:class:`~symattn.numerics.saddle.SaddlePointMap` runs on it unchanged (no Jacobian: use a
quasi-Newton solve such as :func:`~symattn.refine.precise.chord_solve`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy.stats import qmc

from ..model.params import ModelParams
from ..numerics.channel import ChannelMeans, OutputChannel
from ..numerics.prox import prox
from ..numerics.quadrature import NodeSet, RuleLabel, gauss_hermite_1d

__all__ = ["LineRule", "PreintegratedChannel", "gauss_hermite_outer"]


@dataclass(frozen=True)
class LineRule:
    """``2**log2n`` lines (outer scrambled Sobol points in 3-D, scramble ``seed``) and the
    inner rule along each line."""

    log2n: int = 10
    seed: int = 0
    cells: int = 56           #: equal cells on [-span, span] (switch detection resolution)
    span: float = 7.5         #: P(xi_1 outside [-7.5, 7.5]) = 6e-14
    order: int = 12           #: Gauss-Legendre points per smooth piece
    bisections: int = 44      #: span / 2**44 ~ 4e-13
    #: Newton steps following each edge's minimiser across a cell in the switch detection
    follow_steps: int = 1

    def __post_init__(self):
        if not 1 <= self.log2n <= 22:
            raise ValueError(f"log2n must be in [1, 22], got {self.log2n}")
        if (self.cells < 2 or self.order < 2 or self.span <= 0 or self.bisections < 1
                or self.follow_steps < 1):
            raise ValueError(f"need cells >= 2, order >= 2, span > 0, bisections >= 1, "
                             f"follow_steps >= 1: {self}")

    @property
    def size(self) -> int:
        return 2**self.log2n

    def outer(self) -> np.ndarray:
        """``(n, 3)`` normal outer points ``(xi_2, eta_1, eta_2)``."""
        u = qmc.Sobol(d=3, scramble=True, seed=np.random.default_rng([self.seed, 3]))
        eps = 2.0**-53
        return special.ndtri(np.clip(u.random_base2(self.log2n), eps, 1 - eps))


def gauss_hermite_outer(order: int):
    """The ``order**3`` tensor Gauss-Hermite outer nodes ``(xi_2, eta_1, eta_2)`` and weights:
    the deterministic outer rule for :class:`PreintegratedChannel` (``outer=``)."""
    g, w = gauss_hermite_1d(order)
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    wts = np.prod(np.stack(np.meshgrid(w, w, w, indexing="ij"), -1).reshape(-1, 3), axis=1)
    return pts, wts


def _points(outer, xi1):
    """Nodes ``(xi_1, xi_2, eta_1, eta_2)`` from outer rows (repeated) and ``xi_1`` values."""
    return np.column_stack([xi1, outer])


def _scatter(mask, k, values):
    """``values`` (one per index ``k``) scattered into an array shaped like ``mask``."""
    out = np.zeros((len(mask),) + np.shape(values)[1:])
    out[k] = values
    return out


def _local(oc, x, starts):
    """Newton from one start per node (no default starts): ``(h, G, converged)``."""
    w, t = oc._setup(x)
    pr = prox(w, t, x[3], oc.params.sigma, gtol=oc.gtol, extra_starts=starts[:, None, :],
              include_default=False)
    return pr.h, pr.value, pr.converged


class PreintegratedChannel:
    """Output-channel averages by line preintegration (module docstring)."""

    def __init__(self, params: ModelParams, rule: LineRule, gtol: float = 1e-13,
                 chunk: int = 128, outer=None):
        self.params = params.require_paper_shape("the line-preintegrated channel")
        self.rule = rule
        self.gtol = gtol
        self.chunk = int(chunk)
        if outer is None:
            self._outer = rule.outer()
            self._outer_w = np.full(rule.size, 1.0 / rule.size)
            label = f"lines(sobol 2^{rule.log2n}, seed={rule.seed})"
        else:   # explicit outer nodes and weights (e.g. a Gauss-Hermite product rule)
            self._outer, self._outer_w = (np.asarray(a, float) for a in outer)
            label = f"lines({len(self._outer)} given outer nodes)"
        self.nodes = RuleLabel(label, len(self._outer))
        self._edges = np.linspace(-rule.span, rule.span, rule.cells + 1)
        x, w = np.polynomial.legendre.leggauss(rule.order)
        self._gl = (0.5 * (x + 1.0), 0.5 * w)
        self._tally = {"failed": 0, "switches": 0, "bisection_both_lost": 0}

    def _channel(self, pts):
        return OutputChannel(self.params, NodeSet(pts, np.zeros(len(pts)), "line"),
                             gtol=self.gtol)

    def _switches(self, x, outer, a, b, hA, hB):
        """Bisection for the switching points in ``[a, b]`` (arrays), branch A global at ``a``
        with minimiser ``hA``, branch B at ``b`` with ``hB``.  Returns ``(s, hA, hB)``."""
        sep = np.max(np.abs(hA - hB), axis=1)
        failed = 0
        for _ in range(self.rule.bisections):
            c = 0.5 * (a + b)
            oc = self._channel(_points(outer, c))
            hAc, GA, okA = _local(oc, x, hA)
            hBc, GB, okB = _local(oc, x, hB)
            # a branch that jumped by more than half the separation has ended: the other wins
            lostA = ~okA | (np.max(np.abs(hAc - hA), axis=1) > 0.5 * sep)
            lostB = ~okB | (np.max(np.abs(hBc - hB), axis=1) > 0.5 * sep)
            failed += int(np.count_nonzero(lostA & lostB))
            a_wins = ~lostA & (lostB | (GA <= GB))
            a = np.where(a_wins, c, a)
            b = np.where(a_wins, b, c)
            hA = np.where(a_wins[:, None], hAc, hA)
            hB = np.where(a_wins[:, None], hB, hBc)
        self._tally["bisection_both_lost"] += failed
        return 0.5 * (a + b), hA, hB

    def _detect(self, x, outer):
        """Switch detection on the lines ``outer`` (``(n, 3)``) at ``x``: the global minimisers
        at the cell edges ``(n, cells + 1, 2)`` and the flattened (line-major) mask of the
        cells holding a switch."""
        n, C = len(outer), self.rule.cells
        edges = self._edges
        oc = self._channel(_points(np.repeat(outer, C + 1, axis=0), np.tile(edges, n)))
        w, t = oc._setup(x)
        pr = prox(w, t, x[3], self.params.sigma, gtol=self.gtol)
        self._tally["failed"] += pr.n_failed
        h = pr.h.reshape(n, C + 1, 2)
        L = h[:, :-1].reshape(-1, 2)
        R = h[:, 1:].reshape(-1, 2)
        cell_outer = np.repeat(outer, C, axis=0)
        # Each edge's minimiser is followed across the cell in follow_steps Newton steps.  With
        # more than one, a step that moves it by more than half the distance between the
        # edges' minimisers means its branch ended at a fold inside the cell; the global
        # minimum being continuous, that branch had stopped being global before, so the cell
        # holds a switch even where the continuation lands on the other edge's minimiser
        # (missed by a single step when both branches end inside the cell).
        m = self.rule.follow_steps
        width = np.tile(edges[1:] - edges[:-1], n)
        half_sep = 0.5 * np.max(np.abs(L - R), axis=1)
        switch = np.zeros(len(L), bool)
        ends = []
        left, right = np.tile(edges[:-1], n), np.tile(edges[1:], n)
        for start, end, hf, sign in ((left, right, L, 1.0), (right, left, R, -1.0)):
            for j in range(1, m + 1):
                at = end if j == m else start + sign * width * j / m
                new, _, ok = _local(self._channel(_points(cell_outer, at)), x, hf)
                switch |= ~ok
                if m > 1:
                    switch |= np.max(np.abs(new - hf), axis=1) > half_sep
                hf = new
            ends.append(hf)
        switch |= ((np.max(np.abs(ends[0] - R), axis=1) > 1e-6)
                   | (np.max(np.abs(ends[1] - L), axis=1) > 1e-6))
        return h, switch

    def switch_counts(self, x, outer) -> np.ndarray:
        """The number of cells with a detected switch on each line of ``outer``."""
        _, switch = self._detect(x, outer)
        return switch.reshape(len(outer), self.rule.cells).sum(axis=1)

    def line_switches(self, x, outer):
        """Switching points on the lines ``outer`` (``(n, 3)``) at ``x``.

        Returns ``(h_edges, switch, (k, s, hA, hB))``: the global minimisers at the cell
        edges ``(n, cells + 1, 2)``, the cells (flattened line-major) holding a switch, and for
        each such cell ``k`` the switching point ``s`` with the minimiser of the branch global
        on its left (``hA``) and on its right (``hB``) there.
        """
        n, C = len(outer), self.rule.cells
        h, switch = self._detect(x, outer)
        self._tally["switches"] += int(np.count_nonzero(switch))
        k = np.flatnonzero(switch)
        L = h[:, :-1].reshape(-1, 2)[k]
        R = h[:, 1:].reshape(-1, 2)[k]
        left_x = np.tile(self._edges[:-1], n)[k]
        right_x = np.tile(self._edges[1:], n)[k]
        s, hA, hB = self._switches(x, np.repeat(outer, C, axis=0)[k], left_x, right_x, L, R)
        return h, switch, (k, s, hA, hB)

    def _lines(self, x, outer):
        """Per line of ``outer``: the weighted sums of the integrand rows along it."""
        n, C = len(outer), self.rule.cells
        h, switch, (k, s, hA, hB) = self.line_switches(x, outer)
        L = h[:, :-1].reshape(-1, 2)
        R = h[:, 1:].reshape(-1, 2)
        cell_outer = np.repeat(outer, C, axis=0)
        left_x = np.tile(self._edges[:-1], n)
        right_x = np.tile(self._edges[1:], n)
        # pieces: (line, outer row, p0, p1, start at p0, start at p1)
        line_of_cell = np.repeat(np.arange(n), C)
        p_line = np.concatenate([line_of_cell, line_of_cell[k]])
        p_outer = np.concatenate([cell_outer, cell_outer[k]])
        p0 = np.concatenate([left_x, s])
        p1 = np.concatenate([np.where(switch, _scatter(switch, k, s), right_x), right_x[k]])
        st0 = np.concatenate([L, hB])
        st1 = np.concatenate([np.where(switch[:, None], _scatter(switch, k, hA), R), R[k]])
        # Gauss-Legendre on every piece
        u, wq = self._gl
        m = len(u)
        nodes_x = (p0[:, None] + (p1 - p0)[:, None] * u).ravel()
        weights = ((p1 - p0)[:, None] * wq).ravel() * np.exp(-0.5 * nodes_x**2) \
            / np.sqrt(2 * np.pi)
        g_outer = np.repeat(p_outer, m, axis=0)
        starts = np.stack([np.repeat(st0, m, axis=0), np.repeat(st1, m, axis=0)], axis=1)
        oc = self._channel(_points(g_outer, nodes_x))
        w, t = oc._setup(x)
        pr = prox(w, t, x[3], self.params.sigma, gtol=self.gtol, extra_starts=starts,
                  include_default=False)
        self._tally["failed"] += pr.n_failed
        rows = oc._rows(np.arange(len(nodes_x)), w, t, pr.h, pr.value, x[3])
        per_line = np.zeros((n, rows.shape[1]))
        np.add.at(per_line, np.repeat(p_line, m), weights[:, None] * rows)
        return per_line

    def evaluate(self, x, eps: float | None = None):
        """The averages at ``x`` (``eps`` is accepted for interface compatibility: the
        selection here is the hard global minimum, and switching points are located)."""
        x = np.asarray(x, float)
        self._tally = {"failed": 0, "switches": 0, "bisection_both_lost": 0}
        means = 0.0
        for i in range(0, len(self._outer), self.chunk):
            sl = slice(i, i + self.chunk)
            means = means + self._outer_w[sl] @ self._lines(x, self._outer[sl])
        n_atoms = len(means) - 2
        return ChannelMeans(x=x, eps=0.0 if eps is None else eps, means=means, n_atoms=n_atoms,
                            n_failed=self._tally["failed"], n_ties=0,
                            diagnostics=dict(self._tally))
