r"""Finite-size training of the attention student (model page §6).

Minimise the empirical risk :math:`R(Q)` (:mod:`.empirical_risk`) with scipy's L-BFGS-B from a warm start
and report, in the theory's units (model page §3),

.. math::

    m = \frac{p_1 \cdot Q}{d}, \quad \theta = \frac{\sigma^2\, Q \cdot Q^*}{d}, \quad
    q = \frac{\sigma^2 |Q|^2}{d}, \quad \varepsilon_t = \frac{R(Q)}{d}, \quad
    \varepsilon_g = \mathbb{E} \frac{\|Y - f_Q(X)\|_F^2}{2d},

and the test error :math:`\varepsilon_{\rm lin}` of the linear positional baseline ``y = B X``
(``B`` fitted by least squares on the same training set).  Test errors are Monte Carlo averages
over ``n_test`` fresh sentences, with their standard error; all minima of a paired run and the
baseline are scored on the *same* test sentences.

Warm starts
-----------
``"semantic"``: :math:`Q = Q^*` (so :math:`\theta = \sigma^2 |Q^*|^2/d \approx \rho`, :math:`m = O(d^{-1/2})`).

``"positional"``: :math:`Q = a\,(1, \dots, 1)` with ``a = positional_scale = 1``, i.e. :math:`m = a = 1`,
:math:`\theta = O(d^{-1/2})`, :math:`q = \sigma^2 a^2` (model page §6).  The start
:math:`Q = (1, \dots, 1)/\sqrt{d}` (``positional_scale=d**-0.5``) has :math:`m = d^{-1/2} \to 0` and
:math:`q = \sigma^2/d \to 0`: it is the trivial point ``Q = 0`` (a critical point of ``R``, since
``S(h)`` is quadratic in ``h`` there) plus a vanishing positional nudge, not a positional state,
although the paper's gradient descent started there and still reached the positional minimum.

``"random"``: :math:`Q_i \sim N(0, 1)` iid (independent stream of the seed).

Convergence
-----------
L-BFGS-B stops when :math:`\|\nabla R\|_\infty \le` ``gtol`` (default ``1e-8``); ``converged`` is
re-checked on the returned gradient, whatever scipy's message (``ftol = 0``: no stop on a stalled
objective).  Scale: a component :math:`\partial R / \partial Q_i = \lambda Q_i + \sum_\mu g^\mu \cdot x^\mu_i/\sqrt{d}`
is :math:`O(1)` at a generic point (``O(alpha d)`` sentences, each contributing ``O(1/sqrt(d))``
with random signs; :math:`Q_i = O(1)`), so ``gtol`` is relative to the problem's natural scale,
independently of ``d``.  ``grad_norm`` is this same max-norm.

Sign gauge
----------
:math:`R(-Q) = R(Q)` (``S(-h) = S(h)``), so a minimiser is defined up to sign.  Results are
reported with the sign making the dominant overlap positive: :math:`\theta \ge 0` if
:math:`|Q \cdot Q^*| \ge |Q \cdot p_1|`, else :math:`m \ge 0`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy.optimize import minimize

from ..model import ModelParams
from ..stats import mean_se
from ._blas import limit_blas_threads
from .data import SIGNS, Dataset, fresh_sentences, make_dataset, student_attention
from .empirical_risk import order_parameters, risk_and_grad, sentence_loss

__all__ = [
    "STARTS",
    "Minimum",
    "SimulationResult",
    "warm_start",
    "minimise",
    "linear_baseline",
    "generalisation_errors",
    "train_starts",
    "run",
    "run_paired",
    "simulate",
]

STARTS = ("semantic", "positional", "random")

#: Keys of :meth:`SimulationResult.as_dict`, in order.
RESULT_KEYS = ("m", "theta", "q", "eps_t", "eps_g", "eps_g_err", "eps_lin", "eps_lin_err",
               "converged", "iterations", "grad_norm", "wall_time", "d", "alpha", "start", "seed")


def warm_start(data: Dataset, start, positional_scale: float = 1.0) -> np.ndarray:
    """Initial ``Q`` (``(d,)``) for ``start`` in :data:`STARTS`, or an explicit array (copied).

    See the module doc for the positional scaling.
    """
    if not isinstance(start, str):
        Q0 = np.array(start, dtype=np.float64)
        if Q0.shape != (data.d,):
            raise ValueError(f"start array must have shape ({data.d},), got {Q0.shape}")
        return Q0
    if start == "semantic":
        return data.Q_star.copy()
    if start == "positional":
        return np.full(data.d, float(positional_scale))
    if start == "random":
        return data.init_rng().standard_normal(data.d)
    raise ValueError(f"start must be one of {STARTS} or an array, got {start!r}")


@dataclass(frozen=True)
class Minimum:
    """Outcome of one L-BFGS-B solve: the point, its risk and the solver's status."""

    Q: np.ndarray = field(repr=False)
    R: float
    grad_norm: float
    converged: bool
    iterations: int
    n_evaluations: int
    message: str
    wall_time: float


def _fix_sign(Q: np.ndarray, data: Dataset) -> np.ndarray:
    """Representative of ``{Q, -Q}`` with the dominant overlap positive (module doc)."""
    sem = float(np.einsum("i,i->", Q, data.Q_star))
    pos = float(np.sum(Q))
    lead = sem if abs(sem) >= abs(pos) else pos
    return -Q if lead < 0 else Q


def minimise(data: Dataset, Q0: np.ndarray, *, gtol: float = 1e-8, maxiter: int = 10000,
             maxcor: int = 20, chunk_size: int | None = None, blas_threads: int | None = 1) -> Minimum:
    r"""Minimise :math:`R(Q)` with L-BFGS-B (no bounds) from ``Q0``.

    ``gtol`` bounds :math:`\|\nabla R\|_\infty` (module doc).  ``blas_threads`` caps the OpenBLAS
    threads during the solve (``None``: leave them; see :mod:`._blas`).
    """
    n_eval = 0

    def fun(Q):
        nonlocal n_eval
        n_eval += 1
        return risk_and_grad(Q, data, chunk_size)

    t0 = time.perf_counter()
    with limit_blas_threads(blas_threads):
        res = minimize(fun, np.asarray(Q0, dtype=np.float64), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(maxiter), "maxfun": 10 * int(maxiter), "gtol": gtol,
                                "ftol": 0.0, "maxcor": int(maxcor), "maxls": 50})
    wall = time.perf_counter() - t0
    gnorm = float(np.max(np.abs(res.jac)))
    msg = res.message if isinstance(res.message, str) else res.message.decode()
    return Minimum(Q=_fix_sign(res.x, data), R=float(res.fun), grad_norm=gnorm,
                   converged=bool(gnorm <= gtol), iterations=int(res.nit), n_evaluations=n_eval,
                   message=msg, wall_time=wall)


def linear_baseline(data: Dataset) -> np.ndarray:
    r"""Least-squares positional baseline :math:`B = \arg\min_B \sum_\mu \|Y^\mu - B X^\mu\|_F^2`.

    Normal equations :math:`B \sum_\mu X X^\top = \sum_\mu Y X^\top` with, per sentence,
    :math:`X X^\top = \Gamma + c s^\top + s c^\top + s s^\top` and :math:`Y X^\top = T (\Gamma + c s^\top)`.
    For large ``d``, :math:`B \to \mathbb{E}[T(h^*)]` (model page §4).  Returns ``(2, 2)``.
    """
    cs = data.c[:, :, None] * SIGNS[None, None, :]
    XX = (data.gram + cs + cs.transpose(0, 2, 1)).sum(axis=0) + np.outer(SIGNS, SIGNS) * data.n
    YX = np.einsum("kij,kjl->il", data.T, data.gram + cs)
    return np.linalg.solve(XX.T, YX.T).T


def generalisation_errors(data: Dataset, Qs: Sequence[np.ndarray], B: np.ndarray | None = None,
                n_test: int = 2000, chunk_size: int | None = None):
    r"""Monte Carlo test errors on ``n_test`` fresh sentences (the same ones for every argument).

    :math:`\varepsilon_g(Q) = \mathbb{E}\|Y - S(h) X\|_F^2 / (2d)` for each ``Q`` in ``Qs`` and, if
    ``B`` is given, :math:`\varepsilon_{\rm lin} = \mathbb{E}\|Y - B X\|_F^2 / (2d)`.

    Returns ``(eps_g, eps_lin)``: a list of ``(mean, standard error)`` pairs, one per ``Q``,
    and a pair (or ``None``).  Memory ``O(chunk_size * d)``.
    """
    d = data.d
    Qmat = np.stack([np.asarray(Q, dtype=np.float64) for Q in Qs], axis=1) if len(Qs) else np.zeros((d, 0))
    ms = Qmat.sum(axis=0) / d
    losses = [[] for _ in range(Qmat.shape[1])]
    lin = []
    for block in fresh_sentences(data, n_test, chunk_size):
        H = np.einsum("kld,dj->klj", block.Z, Qmat) / np.sqrt(d)
        for j in range(Qmat.shape[1]):
            h = H[:, :, j] + SIGNS * ms[j]
            losses[j].append(sentence_loss(student_attention(h), block.T, block.gram, block.c, d))
        if B is not None:
            lin.append(sentence_loss(B, block.T, block.gram, block.c, d))
    eps_g = [mean_se(np.concatenate(x)) for x in losses]
    eps_lin = mean_se(np.concatenate(lin)) if B is not None else None
    return eps_g, eps_lin


@dataclass(frozen=True)
class SimulationResult:
    """One finite-size minimum, in the theory's units (module doc); ``as_dict`` for JSON.

    ``eps_g_err``, ``eps_lin_err``: Monte Carlo standard errors over the ``n_test`` test sentences.
    ``grad_norm``: :math:`\\|\\nabla R\\|_\\infty` at the returned point.  ``wall_time``: seconds of the
    L-BFGS-B solve alone.  ``Q``, ``message``, ``n_evaluations``, ``n_test`` are kept as attributes
    but are not part of :meth:`as_dict`.
    """

    m: float
    theta: float
    q: float
    eps_t: float
    eps_g: float
    eps_g_err: float
    eps_lin: float
    eps_lin_err: float
    converged: bool
    iterations: int
    grad_norm: float
    wall_time: float
    d: int
    alpha: float
    start: str
    seed: int
    Q: np.ndarray = field(default=None, repr=False, compare=False)
    message: str = ""
    n_evaluations: int = 0
    n_test: int = 0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in RESULT_KEYS}


def train_starts(data: Dataset, starts: Iterable = ("semantic", "positional"), *, n_test: int = 2000,
                 gtol: float = 1e-8, maxiter: int = 10000, positional_scale: float = 1.0,
                 chunk_size: int | None = None, blas_threads: int | None = 1) -> dict:
    """Train from each start on ONE data set and score all minima on the same test sentences.

    Returns ``{start: SimulationResult}`` (an array start is keyed ``"custom"``, then ``"custom1"``...).
    Differences between starts (e.g. of ``eps_t``) are paired: same teacher, same training set,
    same test sentences.
    """
    minima = {}
    for start in starts:
        name = start if isinstance(start, str) else "custom"
        if name in minima:
            name = f"{name}{len(minima)}"
        Q0 = warm_start(data, start, positional_scale)
        minima[name] = minimise(data, Q0, gtol=gtol, maxiter=maxiter, chunk_size=chunk_size,
                                blas_threads=blas_threads)
    B = linear_baseline(data)
    eps_g, (eps_lin, eps_lin_err) = generalisation_errors(data, [mn.Q for mn in minima.values()], B, n_test, chunk_size)
    out = {}
    for (name, mn), (eg, eg_err) in zip(minima.items(), eps_g):
        op = order_parameters(mn.Q, data)
        out[name] = SimulationResult(
            m=op["m"], theta=op["theta"], q=op["q"], eps_t=mn.R / data.d, eps_g=eg, eps_g_err=eg_err,
            eps_lin=eps_lin, eps_lin_err=eps_lin_err, converged=mn.converged, iterations=mn.iterations,
            grad_norm=mn.grad_norm, wall_time=mn.wall_time, d=data.d, alpha=data.alpha, start=name,
            seed=data.seed, Q=mn.Q, message=mn.message, n_evaluations=mn.n_evaluations, n_test=n_test)
    return out


def run(params: ModelParams, d: int, alpha: float, start="semantic", seed: int = 0, *,
        n_test: int = 2000, gtol: float = 1e-8, maxiter: int = 10000, positional_scale: float = 1.0,
        dtype="auto", chunk_size: int | None = None, blas_threads: int | None = 1) -> SimulationResult:
    """One instance: draw the data of ``seed``, train from ``start``, score.  See :func:`train_starts`."""
    data = make_dataset(params, d, alpha, seed, dtype=dtype, chunk_size=chunk_size)
    res = train_starts(data, [start], n_test=n_test, gtol=gtol, maxiter=maxiter,
                       positional_scale=positional_scale, chunk_size=chunk_size, blas_threads=blas_threads)
    return next(iter(res.values()))


def run_paired(params: ModelParams, d: int, alpha: float, seed: int = 0,
               starts: Iterable = ("semantic", "positional"), **kwargs) -> dict:
    """Both warm starts on ONE data set (same teacher, training and test sentences).

    Returns ``{start: SimulationResult}``; the start with the lower ``eps_t`` is the better minimum
    found (model page §6).  ``kwargs`` as in :func:`run` (``dtype`` goes to the data).
    """
    dtype = kwargs.pop("dtype", "auto")
    data = make_dataset(params, d, alpha, seed, dtype=dtype, chunk_size=kwargs.get("chunk_size"))
    return train_starts(data, starts, **kwargs)


def simulate(params: ModelParams, d: int, alpha: float, start="semantic", seeds=5, **kwargs) -> dict:
    """``K`` independent instances (new teacher and data per seed): mean and standard error.

    ``seeds``: an int ``K`` (seeds ``0..K-1``) or an iterable of seeds.  Returns a dict with, for
    every numeric key of :meth:`SimulationResult.as_dict`, ``<key>`` (mean over instances) and
    ``<key>_err`` (standard error of the mean, ``nan`` for one instance; for ``eps_g`` and
    ``eps_lin`` it is the spread across instances, which includes the Monte Carlo noise); for
    ``converged`` the mean is the fraction converged.  Also ``d``, ``alpha``, ``start``, ``seeds``
    and ``instances`` (the per-seed ``as_dict()``).
    """
    seed_list = list(range(int(seeds))) if np.isscalar(seeds) else [int(s) for s in seeds]
    if not seed_list:
        raise ValueError("need at least one seed")
    inst = [run(params, d, alpha, start, s, **kwargs).as_dict() for s in seed_list]
    out = {"d": int(d), "alpha": float(alpha), "start": inst[0]["start"], "seeds": seed_list}
    for key in ("m", "theta", "q", "eps_t", "eps_g", "eps_lin", "converged", "iterations",
                "grad_norm", "wall_time"):
        out[key], out[f"{key}_err"] = mean_se(np.array([float(r[key]) for r in inst]))
    out["instances"] = inst
    return out
