r"""The proximal operator of the non-convex loss, at every node, compiled.

.. math::

    \mathrm{prox}(w, T, V) = \operatorname{argmin}_h \; \mathcal{G}(h), \qquad
    \mathcal{G}(h) = \frac{\lVert h - w\rVert^2}{2V}
      + \frac{\sigma^2}{2}\left\lVert \mathrm{softmax}(hh^\top) - T\right\rVert_F^2

(model page §4; for ``L = 2`` the loss is
:math:`\sigma^2\sum_l(\mathrm{logistic}(h_l^2 - h_1h_2) - T_{ll})^2`).  ``G`` is even in ``h`` up
to the quadratic term and, with ``V`` as large as at the fixed points (measured:
docs/numerics.md, section 'The fixed-point solver'), has two or more local minima; the GLOBAL
minimiser is wanted.

Method: safeguarded Newton from several starts per node, node by node in compiled code
(:mod:`symattn.compile.drivers`, both cores), keeping the start with the lowest converged
value.  The starts (the paper's shape, ``L = 2``, ``r = 1``) are

* ``w`` (the minimiser when the loss is flat, i.e. for large ``|w|``);
* ``+h0`` and ``-h0``: the two zeros of the loss, :math:`h^0_1 = a_1/\delta`,
  :math:`h^0_2 = -a_2/\delta`, :math:`\delta = \sqrt{a_1+a_2}` with
  :math:`a_l = \mathrm{logit}\,T_{ll}` (shifted to :math:`a_1+a_2 \ge 0.05` when the target is not
  reachable);
* optional extra starts supplied by the caller (e.g. previous solutions).
* where the search disc ``|h - w| <= sqrt(2 V G)`` (``G`` the best value found; the loss is
  ``>= 0``) is wider than ``WIDE_DISC``, five more (``_widen``).  Not at the paper's
  fixed points (measured: docs/numerics.md, section 'The fixed-point solver').

Each Newton step solves with the Hessian shifted to be positive definite (eigenvalue floor
``1e-4/V``) and backtracks (Armijo) on ``G``; a start has converged when
``max|grad G| <= gtol`` at a positive-definite Hessian.  ``tests/test_prox.py`` checks the
result against a brute-force grid search.  (Before the compiled kernels, the same algorithm
ran vectorised in numpy, all nodes in lock step; ``benchmarks/numpy_prox.py`` keeps it as the
baseline the benchmarks compare with.)

Array contract: ``w`` is ``(n, k)`` (``k = L r``, the flattened student pre-activations),
``t`` the targets, ``(n, L, L)`` -- or, for the paper's shape, their diagonal ``(n, 2)``;
``V`` a scalar or ``(n,)``; ``starts`` ``(n, s, k)``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..compile.generated import shape_kernels

__all__ = ["ProxResult", "prox", "loss_zeros", "target_matrix"]

#: search-disc radius above which more starts are tried (:func:`_widen`)
WIDE_DISC = 1.25


@dataclass
class ProxResult:
    """Global minimiser per node.

    Attributes
    ----------
    h : (n, 2) array      the prox (lowest local minimum found)
    value : (n,) array    the Moreau envelope M = G(prox)
    converged : (n,) bool the chosen start met the gradient tolerance at a PD Hessian
    h2 : (n, 2) array     the runner-up: lowest *other* distinct local minimum (nan if none)
    value2 : (n,) array   its value (inf if none)
    iterations : int      Newton iterations of the slowest start
    """

    h: np.ndarray
    value: np.ndarray
    converged: np.ndarray
    h2: np.ndarray
    value2: np.ndarray
    iterations: int

    @property
    def gap(self) -> np.ndarray:
        """``value2 - value`` (``inf`` where only one local minimum was found)."""
        return self.value2 - self.value

    @property
    def n_failed(self) -> int:
        return int(np.count_nonzero(~self.converged))


@functools.lru_cache(maxsize=None)
def _libm_log():
    """``math.log`` over an array, compiled: the C library's ``log``, as in the compiled kernels.

    Not ``np.log``: numpy's own SIMD ``log`` (on CPUs with AVX-512) differs from the C
    library's in the last bit for about 1 argument in 10^4 (measured 11 in 10^5 on a
    Zen 4), and the fused channel kernel computes these starts with ``math.log``.
    """
    from numba import vectorize
    return vectorize(["float64(float64)"], cache=True)(_scalar_log)


def _scalar_log(x):
    return math.log(x)


def loss_zeros(t1, t2, min_sum=0.05):
    r"""The two points :math:`\pm h^0` where the loss vanishes (or nearly, if unreachable).

    :math:`a_l = \mathrm{logit}(T_{ll})`; since :math:`a_1 + a_2 = (h_1-h_2)^2 \ge 0`, a target with
    :math:`a_1 + a_2` below ``min_sum`` is shifted to that sum.  Returns ``(n, 2)``.
    """
    # log(T / (1 - T)) as written, not scipy's logit (which rounds differently in a quarter
    # of cases), with the C library's log: the fused channel kernel computes these starts
    # the same way, to the bit
    t1, t2 = np.clip(t1, 1e-12, 1 - 1e-12), np.clip(t2, 1e-12, 1 - 1e-12)
    log = _libm_log()
    a1 = log(t1 / (1 - t1))
    a2 = log(t2 / (1 - t2))
    shift = np.maximum(0.0, (min_sum - (a1 + a2)) / 2)
    a1, a2 = a1 + shift, a2 + shift
    delta = np.sqrt(a1 + a2)
    return np.stack([a1 / delta, -a2 / delta], axis=-1)


def target_matrix(t) -> np.ndarray:
    """Targets as ``(n, L, L)``: ``t`` itself, or for a diagonal ``(n, 2)`` of the paper's shape
    the row-stochastic ``[[T_11, 1 - T_11], [1 - T_22, T_22]]``."""
    t = np.asarray(t, float)
    if t.ndim == 3:
        return np.ascontiguousarray(t)
    T = np.empty((t.shape[0], 2, 2))
    T[:, 0, 0], T[:, 0, 1] = t[:, 0], 1 - t[:, 0]
    T[:, 1, 0], T[:, 1, 1] = 1 - t[:, 1], t[:, 1]
    return T


def prox(w, t, V, sigma, *, gtol=1e-13, max_iter=100, extra_starts=None, include_default=True):
    """Global minimiser of the Moreau objective at every node.

    Parameters
    ----------
    w : (n, 2) array
        student mean pre-activations
    t : (n, 2, 2) array, or its diagonal (n, 2)
        targets ``T`` of each node
    V : float or (n,) array
        response
    sigma : float
    gtol : float
        gradient tolerance of each local Newton solve
    extra_starts : (n, k, 2) array, optional
        additional starting points; a start with a nan coordinate is skipped (a node with
        fewer starts than others)
    include_default : bool
        use the default starts ``w, +h0, -h0``

    Returns
    -------
    ProxResult
    """
    w = np.ascontiguousarray(w, float)
    T = target_matrix(t)
    n = w.shape[0]
    starts = []
    if include_default:
        h0 = loss_zeros(T[:, 0, 0], T[:, 1, 1])
        starts += [w, h0, -h0]
    if extra_starts is not None:
        starts += list(np.moveaxis(np.asarray(extra_starts, float), 1, 0))
    S = np.ascontiguousarray(np.stack(starts, axis=1))          # (n, k, 2)
    Vn = np.ascontiguousarray(np.broadcast_to(np.asarray(V, float), (n,)))
    h, h2 = np.empty((n, 2)), np.empty((n, 2))
    G, G2 = np.empty(n), np.empty(n)
    conv = np.empty(n, bool)
    iters = np.zeros(n, np.int64)
    shape_kernels().prox_nodes(w, T, Vn, float(sigma), S, float(gtol), int(max_iter),
                               h, G, conv, h2, G2, iters)
    out = ProxResult(h=h, value=G, converged=conv, h2=h2, value2=G2,
                     iterations=int(iters.max()) if n else 0)
    if include_default:
        _widen(out, w, T, V, sigma, gtol, max_iter)
    return out


def _widen(pr, w, t, V, sigma, gtol, max_iter):
    """More starts where the search disc is wide (in place).

    Since the loss is >= 0, the global minimiser lies within ``R = sqrt(2 V G)`` of ``w``,
    ``G`` the best value found.  Where ``R > WIDE_DISC`` the disc can hold basins that none
    of ``w, +-h0`` reaches, so Newton is run again from the best and runner-up found and
    from ``(w1, 0), (0, w2), (w1, -w2), (-w1, w2), -w`` (on ``h1 = 0`` and on ``h2 = 0`` one
    of the two logistic arguments vanishes, and the loss is even in ``h``).  Against extra
    starts on a grid over the disc, the three starts alone miss the global minimum in rare
    cases, all where the disc is wide, and these starts find nearly all of them; at the
    paper's fixed points ``R`` stays below ``WIDE_DISC``, so nothing changes there (measured:
    docs/numerics.md, section 'The fixed-point solver').
    """
    R = np.sqrt(2 * np.broadcast_to(np.asarray(V, float), pr.value.shape) * pr.value)
    idx = np.flatnonzero(R > WIDE_DISC)
    if not idx.size:
        return
    wi = w[idx]
    zero = np.zeros(len(idx))
    starts = np.stack([pr.h[idx], pr.h2[idx], np.stack([wi[:, 0], zero], -1),
                       np.stack([zero, wi[:, 1]], -1), wi * [1.0, -1.0], wi * [-1.0, 1.0],
                       -wi], axis=1)
    more = prox(wi, t[idx], V[idx] if np.ndim(V) else V, sigma, gtol=gtol, max_iter=max_iter,
                extra_starts=starts, include_default=False)
    for name in ("h", "value", "converged", "h2", "value2"):
        getattr(pr, name)[idx] = getattr(more, name)
