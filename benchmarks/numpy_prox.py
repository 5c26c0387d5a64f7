r"""The numpy prox of symattn before the compiled kernels (commit 71aeaed), kept as the baseline
of the benchmarks (``bench_kernels.py``, ``prox_backend_jax.py``); nothing in symattn uses it.

The proximal operator of the non-convex ``L = 2`` loss, at every node at once.

.. math::

    \mathrm{prox}(w, T, V) = \operatorname{argmin}_h \; \mathcal{G}(h), \qquad
    \mathcal{G}(h) = \frac{\lVert h - w\rVert^2}{2V}
      + \sigma^2\sum_{l=1,2}\left(\mathrm{logistic}(h_l^2 - h_1h_2) - T_{ll}\right)^2

(model page §4).  ``G`` is even in ``h`` up to the quadratic term and, with ``V`` as large as
at the fixed points (measured: docs/numerics.md, section 'The fixed-point solver'), has two or
more local minima; the GLOBAL minimiser is wanted.

Method: safeguarded Newton from several starts per node, all nodes and starts in lock step
(vectorised numpy); keep the start with the lowest converged value.  The starts are

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
result against a brute-force grid search.

Array contract: every input broadcasts to shape ``(n,)``; ``starts`` has shape ``(n, k, 2)``.
"""

from __future__ import annotations

import numpy as np

from symattn.compile.kernels import objective_kernel, prox_kernel
# the result type, the loss zeros (now log(T/(1-T)) rather than scipy's logit: rounding) and
# the disc radius are the compiled path's own
from symattn.numerics.prox import WIDE_DISC, ProxResult, loss_zeros

__all__ = ["ProxResult", "prox", "loss_zeros"]

_ARMIJO = 1e-4
_MAX_HALVINGS = 40


def _newton(h, w, t, V, sigma, gtol, max_iter):
    """Safeguarded Newton on flattened problems; returns (h, G, converged, iterations).

    The active problems live in compact 1-D working arrays, compacted only in the
    iterations where some converge (fewer gathers; same arithmetic as a full gather).
    """
    kern, obj = prox_kernel(), objective_kernel()
    n = h.shape[0]
    h = h.copy()
    conv = np.zeros(n, bool)
    G = np.empty(n)
    scalar_V = not np.ndim(V)
    # working copies of the active problems, compacted only when some converge
    idx = np.arange(n)
    h1, h2 = h[:, 0].copy(), h[:, 1].copy()
    w1, w2, t1, t2 = w[:, 0].copy(), w[:, 1].copy(), t[:, 0].copy(), t[:, 1].copy()
    Va = V if scalar_V else np.asarray(V, float).copy()
    fa = 1e-4 / Va
    it = 0
    while idx.size and it < max_iter:
        it += 1
        Ga, g1, g2, a, b, c = kern(h1, h2, w1, w2, t1, t2, Va, sigma)
        gmax = np.maximum(np.abs(g1), np.abs(g2))
        # smallest Hessian eigenvalue; shift to at least the floor
        eig_min = 0.5 * (a + c) - np.sqrt(0.25 * (a - c) ** 2 + b * b)
        done = (gmax <= gtol) & (eig_min > 0)
        if done.any():
            di = idx[done]
            conv[di] = True
            G[di] = Ga[done]
            h[di, 0], h[di, 1] = h1[done], h2[done]
            keep = ~done
            idx = idx[keep]
            if not idx.size:
                break
            h1, h2, w1, w2, t1, t2 = h1[keep], h2[keep], w1[keep], w2[keep], t1[keep], t2[keep]
            g1, g2, a, b, c, Ga, eig_min = (g1[keep], g2[keep], a[keep], b[keep], c[keep],
                                            Ga[keep], eig_min[keep])
            if not scalar_V:
                Va, fa = Va[keep], fa[keep]
        shift = np.maximum(0.0, fa - eig_min)
        a, c = a + shift, c + shift
        det = a * c - b * b
        d1 = -(c * g1 - b * g2) / det
        d2 = -(a * g2 - b * g1) / det
        slope = g1 * d1 + g2 * d2
        step = np.ones(idx.size)
        Gp = obj(h1 + d1, h2 + d2, w1, w2, t1, t2, Va, sigma)
        ok = Gp <= Ga + _ARMIJO * slope
        # a step that cannot lower G in double precision is accepted: the point is stationary
        ok |= np.abs(slope) < 1e-17 * np.maximum(1.0, np.abs(Ga))
        pending = np.flatnonzero(~ok)
        for _ in range(_MAX_HALVINGS - 1):
            if not pending.size:
                break
            step[pending] *= 0.5
            s = step[pending]
            Vp = Va if scalar_V else Va[pending]
            Gp = obj(h1[pending] + s * d1[pending], h2[pending] + s * d2[pending],
                     w1[pending], w2[pending], t1[pending], t2[pending], Vp, sigma)
            ok = Gp <= Ga[pending] + _ARMIJO * s * slope[pending]
            ok |= np.abs(s * slope[pending]) < 1e-17 * np.maximum(1.0, np.abs(Ga[pending]))
            pending = pending[~ok]
        else:   # out of halvings: the step of the last failed trial is halved once more
            step[pending] *= 0.5
        h1 = h1 + step * d1
        h2 = h2 + step * d2
    if idx.size:  # the points that ran out of iterations moved after their last evaluation
        h[idx, 0], h[idx, 1] = h1, h2
        Ga, g1, g2, a, b, c = kern(h1, h2, w1, w2, t1, t2, Va, sigma)
        G[idx] = Ga
        eig_min = 0.5 * (a + c) - np.sqrt(0.25 * (a - c) ** 2 + b * b)
        conv[idx] = (np.maximum(np.abs(g1), np.abs(g2)) <= gtol) & (eig_min > 0)
    return h, G, conv, it


def prox(w, t, V, sigma, *, gtol=1e-13, max_iter=100, extra_starts=None, include_default=True):
    """Global minimiser of the Moreau objective at every node.

    Parameters
    ----------
    w : (n, 2) array
        student mean pre-activations
    t : (n, 2) array
        target diagonal ``(T_11, T_22)`` of each node
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
    w = np.asarray(w, float)
    t = np.asarray(t, float)
    n = w.shape[0]
    starts = []
    if include_default:
        h0 = loss_zeros(t[:, 0], t[:, 1])
        starts += [w, h0, -h0]
    if extra_starts is not None:
        starts += list(np.moveaxis(np.asarray(extra_starts, float), 1, 0))
    S = np.stack(starts, axis=1)                   # (n, k, 2)
    k = S.shape[1]
    use = np.flatnonzero(~np.isnan(S.reshape(-1, 2)).any(axis=1))
    flat_w = np.repeat(w, k, axis=0)[use]
    flat_t = np.repeat(t, k, axis=0)[use]
    flat_V = (np.repeat(np.broadcast_to(np.asarray(V, float), (n,)), k)[use] if np.ndim(V)
              else float(V))
    h = np.full((n * k, 2), np.nan)
    G = np.full(n * k, np.inf)
    conv = np.zeros(n * k, bool)
    h[use], G[use], conv[use], it = _newton(S.reshape(-1, 2)[use], flat_w, flat_t, flat_V,
                                            sigma, gtol, max_iter)
    h, G, conv = h.reshape(n, k, 2), G.reshape(n, k), conv.reshape(n, k)
    Gm = np.where(conv, G, np.inf)
    rows = np.arange(n)
    best = np.argmin(Gm, axis=1)
    none_conv = ~conv.any(axis=1)
    best = np.where(none_conv, np.argmin(G, axis=1), best)
    hb = h[rows, best]
    # the runner-up: the lowest converged local minimum distinct from the best (1e-6 apart)
    dist = np.max(np.abs(h - hb[:, None, :]), axis=-1)
    distinct = conv & (dist > 1e-6)
    G_other = np.where(distinct, Gm, np.inf)
    second = np.argmin(G_other, axis=1)
    has_second = np.isfinite(G_other[rows, second])
    out = ProxResult(h=hb, value=G[rows, best], converged=conv[rows, best],
                     h2=np.where(has_second[:, None], h[rows, second], np.nan),
                     value2=np.where(has_second, G[rows, second], np.inf),
                     iterations=it)
    if include_default:
        _widen(out, w, t, V, sigma, gtol, max_iter)
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
