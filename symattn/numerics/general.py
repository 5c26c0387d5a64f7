r"""Fixed points of the general model's saddle-point equations (model page §7).

The equations are those derived in :mod:`symattn.symbolic.general` (matrix order parameters
``q, M, theta, V`` and conjugates).  One evaluation of the map at order parameters
:math:`x = (q, M, \theta, V)`:

1. **Nodes.**  An RQMC rule in ``D = L (r + r_t)`` dimensions gives standard Gaussians
   :math:`\xi_l \in \mathbb R^r`, :math:`\eta_l \in \mathbb R^{r_t}` per token; with the Cholesky
   factors :math:`q = KK^\top`, :math:`R = \rho - \theta q^{-1}\theta^\top = BB^\top`,

   .. math::  w_l = M_l + K\xi_l, \qquad h^*_l = \theta K^{-\top}\xi_l + B\eta_l .

2. **Prox.**  :math:`\mathrm{prox} = \operatorname{argmin}_h \sum_l (h_l-w_l)^\top V^{-1}(h_l-w_l)/2 + \ell(h, h^*)`,
   the global minimiser over ``L x r`` matrices, computed in the eigenframe of
   :math:`V = U\,\mathrm{diag}(v)\,U^\top` (``h -> h U``; the loss depends on :math:`hh^\top` only)
   by the compiled multi-start Newton of :mod:`symattn.compile.drivers`.  Starts
   (:mod:`symattn.compile.general_channel`): ``w``; the teacher's pre-activations :math:`\pm h^*`
   embedded in the student's rank space along the eigenvectors of ``V`` with the largest
   eigenvalues (``min(r, r_t)`` of them: the loss is the same along every embedding, and for
   ``w`` small the quadratic term is smallest along those); and warm starts when given.  The
   paper's shape keeps the paper's own start set (:func:`start_policy`: ``w`` and the two zeros
   of the loss, :mod:`symattn.numerics.prox`), data of that instance.
   How often this set misses the global minimiser is measured against a brute-force search
   (``tests/test_general_numerics.py``, ``studies/general_prox_starts.py``).
3. **Means** over the nodes, with :math:`f_l = V^{-1}(\mathrm{prox}_l - w_l)`:
   :math:`\sum_l\mathbb E[f_lf_l^\top]`, :math:`\mathbb E[F]`, :math:`\sum_l\mathbb E[\xi_lf_l^\top]`,
   :math:`\sum_l\mathbb E[\eta_lf_l^\top]`, and :math:`\mathbb E\mathcal M`, :math:`\mathbb E\ell`.
4. **Output then prior equations** (:mod:`symattn.symbolic.general`):

   .. math::

       \hat q = \alpha\sum_l\mathbb E[f_lf_l^\top],\ \hat M = \alpha\mathbb E[F],\
       \hat\theta = \alpha B^{-\top}\sum_l\mathbb E[\eta_lf_l^\top],\
       \hat V = \mathrm{sym}(-\alpha K^{-\top}\sum_l\mathbb E[\xi_lf_l^\top] + q^{-1}\theta^\top\hat\theta),

       \mathcal A = \lambda I + \sigma^2\hat V,\ V = \sigma^2\mathcal A^{-1},\ M = \Pi\hat M\mathcal A^{-1},\
       \theta = \sigma^2\rho\,\hat\theta\mathcal A^{-1},\
       q = \sigma^2\mathcal A^{-1}(\sigma^2\hat q + \hat M^\top\Pi\hat M + \sigma^2\hat\theta^\top\rho\,\hat\theta)\mathcal A^{-1}.

The fixed point is found by the one solver (:func:`solve_general`, the Newton of
:mod:`symattn.numerics.saddle`) in the shape's coordinates
(:class:`~symattn.numerics.coordinates.Coordinates`: the free entries, ``M = P m`` in the range
of ``Pi``), on ONE rule (fixed nodes, so the map is deterministic), with the selection between
each node's two lowest minima smoothed over a width ``eps`` (the hard choice makes the map jump
where a node switches minimiser); converged when the undamped residual
:math:`\max|F(x) - x| \le` ``tol``.  Different
scrambles give independent estimates: their spread is the integration error bar.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..compile.general_channel import channel_kernels
from ..compile.general_equations import general_equations
from ..compile.generated import shape_kernels
from ..compile.shape import Shape
from ..model import ModelParams
from .coordinates import InvalidOrderParameters, cholesky_factors
from .quadrature import NodeSet, SobolRule

__all__ = ["OrderParameters", "GeneralChannel", "GeneralFixedPoint", "solve_general",
           "general_eps_g", "general_eps_lin", "nodes_for"]


def tie_candidates(gap, eps):
    """Nodes whose runner-up minimum is close enough to matter in the smoothed selection
    (``gap < 800 eps``; :class:`~symattn.numerics.channel.ChannelState`)."""
    return np.isfinite(gap) & (gap < 800.0 * eps)


def _sym(X):
    return (X + X.T) / 2


@dataclass(frozen=True)
class OrderParameters:
    """``q (r, r)``, ``M (L, r)``, ``theta (r_t, r)``, ``V (r, r)`` (``q``, ``V`` symmetric)."""

    q: np.ndarray
    M: np.ndarray
    theta: np.ndarray
    V: np.ndarray

    @property
    def shape(self) -> tuple:
        return self.M.shape[0], self.q.shape[0], self.theta.shape[0]

    def flat(self) -> np.ndarray:
        """Free entries: the upper triangles of ``q`` and ``V``, all of ``M`` and ``theta``."""
        iu = np.triu_indices(self.q.shape[0])
        return np.concatenate([self.q[iu], self.M.ravel(), self.theta.ravel(), self.V[iu]])

    @classmethod
    def from_flat(cls, x, L: int, r: int, r_t: int) -> "OrderParameters":
        iu = np.triu_indices(r)
        nt = len(iu[0])
        x = np.asarray(x, float)

        def symm(v):
            S = np.zeros((r, r))
            S[iu] = v
            return S + np.triu(S, 1).T
        q = symm(x[:nt])
        M = x[nt:nt + L * r].reshape(L, r)
        th = x[nt + L * r:nt + L * r + r_t * r].reshape(r_t, r)
        V = symm(x[nt + L * r + r_t * r:])
        return cls(q, M, th, V)

    def as_dict(self) -> dict:
        return {"q": self.q.tolist(), "M": self.M.tolist(), "theta": self.theta.tolist(),
                "V": self.V.tolist()}

    def rotated(self, O) -> "OrderParameters":
        """The point of the rotated student ``Q O``: ``O^T q O``, ``M O``, ``theta O``, ``O^T V O``."""
        return OrderParameters(O.T @ self.q @ O, self.M @ O, self.theta @ O, O.T @ self.V @ O)


def start_policy(params: ModelParams) -> str:
    """The prox's start set of ``params``' instance (:mod:`symattn.compile.general_channel`):
    the paper's exact set at the paper's shape, ``w`` and the embedded teacher otherwise."""
    return "paper" if params.is_paper_shape else "embed"


def nodes_for(params: ModelParams, log2n: int, seed: int) -> NodeSet:
    """The RQMC rule of ``params``' shape: ``2**log2n`` scrambled Sobol points in
    ``L (r + r_t)`` Gaussian dimensions (``xi`` first, token-major, then ``eta``)."""
    return SobolRule(log2n=log2n, seed=seed).nodes(dim=params.L * (params.r + params.r_t))


class GeneralChannel:
    """The output channel of one shape on one node set (module doc, steps 1-3)."""

    def __init__(self, params: ModelParams, nodes: NodeSet, gtol: float = 1e-13,
                 max_iter: int | None = None):
        self.params = params
        self.nodes = nodes
        self.gtol = gtol
        # the paper's instance keeps its prox's iteration limit (numerics.prox)
        self.max_iter = max_iter or (100 if params.is_paper_shape else 200)
        L, r, rt = params.L, params.r, params.r_t
        self.shape = Shape(L=L, r=r, r_t=rt)
        self.kernels = shape_kernels(self.shape)
        self.equations = general_equations(self.shape)
        self.fused = channel_kernels(self.shape, start_policy(params))
        self.params_shape = (L, r, rt)
        n = nodes.size
        pts = nodes.points
        if pts.shape[1] != L * (r + rt):
            raise ValueError(f"nodes have {pts.shape[1]} dimensions; the shape needs {L * (r + rt)}")
        self.xi = np.ascontiguousarray(pts[:, :L * r].reshape(n, L, r))
        self.eta = np.ascontiguousarray(pts[:, L * r:].reshape(n, L, rt))
        self.weights = nodes.weights
        self._xi_flat = np.ascontiguousarray(pts[:, :L * r], float)
        self._eta_flat = np.ascontiguousarray(pts[:, L * r:], float)
        self._weights = np.ascontiguousarray(nodes.weights, float)
        self.A = np.ascontiguousarray(params.A_array)

    # -- geometry ---------------------------------------------------------------------
    def factors(self, x: OrderParameters):
        """``(K, B)``: Cholesky factors of ``q`` and ``R = rho - theta q^-1 theta^T``."""
        return cholesky_factors(x, self.params.rho)

    def node_map(self, x: OrderParameters):
        """``(w, hs)``: ``(n, L, r)`` and ``(n, L, r_t)`` (module doc, step 1)."""
        K, B = self.factors(x)
        w = x.M[None] + self.xi @ K.T
        hs = self.xi @ np.linalg.solve(K, x.theta.T) + self.eta @ B.T
        return w, hs

    def targets(self, hs) -> np.ndarray:
        n = hs.shape[0]
        T = np.empty((n, self.params.L, self.params.L))
        self.kernels.teacher_nodes(np.ascontiguousarray(hs.reshape(n, -1)), self.params.omega,
                                   self.A, T)
        return T

    # -- prox -------------------------------------------------------------------------
    def prox(self, x: OrderParameters, warm=None, only_warm: bool = False):
        """``(w, hs, T, h, G, converged, G2, h2)`` at every node (module doc, step 2): the means
        ``w`` and the teacher's ``hs`` and targets ``T``, the global prox ``h`` (``(n, L, r)``,
        original frame), its value ``G``, whether Newton converged there, and the runner-up
        value ``G2`` and minimiser ``h2`` (``inf`` and nan if no other minimum was found).
        ``warm``: an array of starts ``(n, L, r)`` or a tuple of them (a start with a nan
        coordinate is skipped)."""
        w, hs = self.node_map(x)
        pas = self._pass(x, warm, only_warm, 0.0)
        return w, hs, self.targets(hs), pas["h"], pas["G"], pas["conv"], pas["G2"], pas["h2"]

    #: the most chunks of the fused pass's sums, and the fewest nodes of one
    CHUNKS, CHUNK_NODES = 1024, 64

    @classmethod
    def chunks(cls, n: int) -> int:
        """The number of chunks the fused pass sums ``n`` nodes in: a function of ``n`` alone,
        so the sums do not depend on the number of threads; at most :attr:`CHUNKS` (the large
        rules' sums, as the paper's kernel summed them), with at least :attr:`CHUNK_NODES`
        nodes each (a chunk allocates its work arrays: on ``2^12`` nodes 1024 chunks cost
        more than the warm-started Newton)."""
        return max(1, min(cls.CHUNKS, n // cls.CHUNK_NODES))

    def _pass(self, x: OrderParameters, warm=None, only_warm: bool = False, eps: float = 0.0,
              *, keep: bool = True, rows: bool = False, idx=None) -> dict:
        """One fused compiled pass (:mod:`symattn.compile.general_channel`): the node map, the
        start set (module doc, step 2), the prox, the rows smoothed over ``eps`` and their sums.

        ``warm``: given starts, an array ``(n, L, r)``, a tuple of them, or one array
        ``(n, s, L r)`` of ``s`` flat starts per node (original frame); ``idx``: the pass over
        those nodes only (``warm`` given for them).  Returns ``sums`` (the atoms, ``E[M]``,
        ``E[loss]``), ``failed``, ``mixed``, with ``keep`` every node's ``h``, ``h2``
        (``(n, L, r)``, original frame), ``G``, ``G2``, ``conv``, and with ``rows`` the rows
        (``(n, N_ATOMS + 1)``: the atoms' integrands, the loss) at ``h`` (``rows``) and at the
        runner-up where it is mixed in (``rows2``, else nan)."""
        K, B = self.factors(x)
        vals, U = np.linalg.eigh(_sym(x.V))
        L, r, rt = self.params_shape
        xi, eta, wts = ((self._xi_flat, self._eta_flat, self._weights) if idx is None else
                        (self._xi_flat[idx], self._eta_flat[idx], self._weights[idx]))
        n = len(wts)
        if isinstance(warm, np.ndarray) and warm.ndim == 3 and warm.shape[1:] != (L, r):
            extra = np.ascontiguousarray(warm, float)
        else:
            warm = [] if warm is None else list(warm) if isinstance(warm, tuple) else [warm]
            extra = (np.ascontiguousarray(np.stack(warm, axis=1).reshape(n, len(warm), L * r))
                     if warm else np.empty((n, 0, L * r)))
        if only_warm and extra.shape[1] == 0:
            raise ValueError("only_warm needs warm starts")
        chunks = self.chunks(n)
        sums = np.zeros((chunks, self.equations.N_ATOMS + 2))
        counts = np.zeros((chunks, 2), np.int64)
        m = n if keep else 0
        h, h2 = np.empty((m, L * r)), np.empty((m, L * r))
        G, G2, conv = np.empty(m), np.empty(m), np.empty(m, bool)
        nr = n if rows else 0
        rows1, rows2 = (np.empty((nr, self.equations.N_ATOMS + 1)) for _ in range(2))
        c = lambda a: np.ascontiguousarray(a, float)   # noqa: E731
        p = self.params
        self.fused.channel_pass(
            xi, eta, wts, c(x.M), c(K), c(np.linalg.solve(K, x.theta.T)), c(B.T), c(U), c(vals),
            c(np.linalg.inv(_sym(x.V))), float(p.sigma), float(p.omega), self.A, float(eps),
            extra, bool(only_warm), float(self.gtol), int(self.max_iter), sums, counts,
            bool(keep), h, h2, G, G2, conv, rows1, rows2)
        failed, mixed = (int(v) for v in counts.sum(axis=0))
        out = {"sums": sums.sum(axis=0), "failed": failed, "mixed": mixed}
        if keep:
            out.update(h=h.reshape(n, L, r), h2=h2.reshape(n, L, r), G=G, G2=G2, conv=conv)
        if rows:
            out.update(rows=rows1, rows2=rows2)
        return out


@dataclass
class GeneralFixedPoint:
    """A fixed point on one rule, with its status (never a number without one)."""

    x: OrderParameters
    alpha: float
    converged: bool
    residual: float
    iterations: int
    eps_t: float
    phi: float
    n_failed: int
    wall_time: float
    rule: str
    message: str = ""
    #: :math:`\mathbb E\mathcal M`, the mean Moreau value: :math:`\mathrm d\varepsilon_t/\mathrm d\alpha`
    #: along a branch (envelope theorem on :math:`\Phi`, as for the paper's branches)
    E_M: float = float("nan")
    #: the smoothing width of the minimiser selection it is a fixed point at
    eps: float = 0.0
    #: :math:`\mathbb E\ell(\mathrm{prox})`: with the penalty, the training loss computed
    #: directly, :math:`\alpha\mathbb E\ell + \lambda\mathrm{Tr}\,q/(2\sigma^2)`, which a
    #: fixed point's ``eps_t = -phi`` must equal (model page §4's check)
    E_loss: float = float("nan")
    #: the RS-stability report (:mod:`symattn.numerics.general_stability`), attached to the
    #: fixed points symattn reports (the search's, the thresholds' at ``alpha_c``), not to
    #: every solve
    stability: object = field(default=None, repr=False)

    def as_dict(self) -> dict:
        out = {"alpha": self.alpha, "converged": self.converged, "residual": self.residual,
               "iterations": self.iterations, "eps_t": self.eps_t, "phi": self.phi,
               "E_M": self.E_M, "eps": self.eps,
               "n_failed": self.n_failed, "wall_time": self.wall_time, "rule": self.rule,
               "message": self.message, **self.x.as_dict()}
        if self.stability is not None:
            out["rs_stability"] = self.stability.to_dict()
        return out


def prox_jump_measure(channel: GeneralChannel, x: OrderParameters,
                      deltas=(1e-2, 1e-3, 1e-4)) -> dict:
    r"""How much of the Gaussian measure lies where the global prox at ``x`` can jump, on
    ``channel``'s rule: ``two_minima``, the weight of the nodes where the start set finds a
    second local minimum of the Moreau objective (a lower bound on that set's measure: the
    prox is continuous where the minimum is unique), and for each ``delta`` the weight of the
    nodes whose two lowest minima lie within ``delta`` of each other, with their count.  Near a
    switching surface of positive (surface) measure that weight falls like ``delta``: the
    density ``weight / delta`` stays finite and positive as ``delta -> 0``, and the prox jumps
    on it (model page §8)."""
    _, _, _, _, G, _, G2, _ = channel.prox(x)
    gap = G2 - G
    wt = channel.weights
    return {"n": int(len(gap)), "two_minima": float(wt[np.isfinite(gap)].sum()),
            "below": {float(d): {"weight": float(wt[gap < d].sum()),
                                 "count": int((gap < d).sum())} for d in deltas}}


def solve_general(channel: GeneralChannel, alpha: float, x0: OrderParameters, *,
                  tol: float = 1e-10, max_iter: int = 60, pin: tuple = (),
                  eps: float | None = None, eps_max: float = 1e-6, relax=True,
                  stall: int | None = 12,
                  max_evaluations: int | None = None) -> GeneralFixedPoint:
    r"""Fixed point of the map on ``channel``'s rule from ``x0`` (module doc): the one
    solver, :func:`~symattn.numerics.saddle.solve_fixed_point`'s Newton with its smoothing
    ladders, in the shape's coordinates (:class:`~symattn.numerics.coordinates.Coordinates`:
    ``M = P m`` in the range of ``Pi``; for ``r > 1`` in the gauge of
    :func:`~symattn.numerics.coordinates.gauge_rotation`, whose zero entries are not free).

    ``pin``: a subset of :data:`~symattn.numerics.coordinates.PINNABLE` held at zero, with
    the rule averaged over its symmetry.  ``x0`` is projected onto the coordinates (``M`` onto
    the range of ``Pi`` by least squares, the rank space rotated into the gauge, the pinned
    blocks zeroed).  The searches' cold starts may lie far from a root: Newton then relaxes
    along the map (``relax``: ``True`` for the default
    :class:`~symattn.numerics.saddle.Relaxation`, one of them, or ``False``) and stops
    as stalled when its lowest residual has not fallen tenfold in ``stall`` steps (on a rule
    where the map jumps the relaxations otherwise cycle; near a root Newton's rate is far
    faster).  ``converged`` only when the undamped residual :math:`\max|F(x) - x|` of the map
    smoothed over the result's ``eps`` is at most ``tol`` and every prox converged: ``eps``
    (default ``tol``) if a smoothing ladder reaches it, else the narrowest stage up to
    ``eps_max`` that converged (where a node's two minima tie at the root, the selection ramp
    is too steep to place ``x`` on to ``tol`` in double precision; the width reweights only
    the few nodes within a few ``eps`` of a tie, an error of the order of one node's weight,
    as the hard choice's jump is: at ``1e-6`` it moved ``eps_t`` by ``8e-11`` where the
    rule's integration error is about ``1e-6``, docs/numerics.md).  For
    ``r > 1`` a solution is a fixed point up to a rotation of the rank space, which on a
    finite rule is exact only up to the rule's (integration) error, since the nodes are not
    rotation-invariant.
    """
    from .channel import OutputChannel
    from .saddle import Relaxation, SaddlePointMap, newton_solve, solve_status
    p = channel.params
    oc = OutputChannel(p, channel.nodes, channel.gtol, general=channel)
    c = oc.coordinates
    eps = tol if eps is None else eps
    x = c.project(x0, pin)
    if not c.valid(x):
        raise InvalidOrderParameters(f"the start is outside the domain: {x0.as_dict()}")
    F = SaddlePointMap(p, alpha, oc, symmetry=c.symmetries(pin))
    free = c.free(pin)
    out = newton_solve(F, x, free, tol=tol, eps=eps, eps_max=eps_max, max_iter=max_iter,
                       max_evaluations=max_evaluations,
                       relax=Relaxation() if relax is True else relax or None, stall=stall)
    st = out.state
    res, converged, message = solve_status(F, st, free, tol, out.eps, out.iterations)
    if out.budget_message and not converged:
        message = f"{out.budget_message}; {message}"
    elif converged and out.eps > eps:
        message = (f"converged at eps = {out.eps:g} (no smoothing ladder reached eps = "
                   f"{eps:g}; module doc)")
    phi = F.phi(st)
    return GeneralFixedPoint(x=c.order_parameters(st.x), alpha=alpha, converged=converged,
                             residual=res, iterations=out.iterations, eps_t=-phi, phi=phi,
                             n_failed=st.channel.n_failed, wall_time=out.wall_time,
                             rule=channel.nodes.label, message=message,
                             E_M=st.channel.E_M, E_loss=st.channel.E_loss, eps=out.eps)


def general_eps_g(params: ModelParams, x: OrderParameters, nodes: NodeSet) -> float:
    r""":math:`\varepsilon_g = \tfrac{\sigma^2}{2}\mathbb E\lVert S(h) - T(h^*)\rVert_F^2` with
    :math:`h_l = M_l + Ku_l`, :math:`h^*_l = \theta K^{-\top}u_l + Bv_l` (model page §4, for
    the general model), on ``nodes`` (the same layout as the channel's)."""
    ch = GeneralChannel(params, nodes)
    w, hs = ch.node_map(x)
    T = ch.targets(hs)
    n = w.shape[0]
    out = np.empty(n)
    ch.kernels.loss_nodes(np.ascontiguousarray(w.reshape(n, -1)), T, params.sigma, out)
    return float(nodes.weights @ out)


def general_eps_lin(params: ModelParams, nodes: NodeSet) -> float:
    r""":math:`\varepsilon_{\rm lin} = \tfrac{\sigma^2}{2}\mathbb E\lVert T(h^*) - \mathbb E T\rVert_F^2`,
    :math:`h^*_l \sim N(0, \rho I_{r_t})` (model page §4), on ``nodes`` (their ``eta`` part)."""
    ch = GeneralChannel(params, nodes)
    hs = np.sqrt(params.rho) * ch.eta
    T = ch.targets(hs)
    ET = np.einsum("n,nij->ij", nodes.weights, T)
    return float(params.sigma**2 / 2 * np.einsum("n,nij->", nodes.weights, (T - ET) ** 2))
