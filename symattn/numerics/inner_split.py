r"""An inner rule split along the prox's jump line, for the outer nodes of the 1RSB channel whose
inner Gaussian meets the surface where the global prox jumps (docs: stability, 'An inner rule
split along the jump').

At such a node the inner integrand jumps across a curve: on one side the global minimiser is
the centre's global one (branch A), on the other its runner-up (branch B).  A tensor
Gauss--Hermite rule converges like one over its size on a jump (at the semantic
:math:`\alpha_c`, without the tie blend, 32, 64 and 96 points per axis put the residual of
:math:`q_1` at 7e-6, 2e-6 and 5e-6, against a :math:`q_1 - q_0` of 9e-6:
``studies/one_step_rsb_split.py``).  Here each side is integrated by its own product rule, with nodes
on that side only: in coordinates :math:`u = a\,n + b\,\tau` (``n`` normal to the line),
Gauss--Hermite in ``b`` and, for each ``b``, a Gauss rule for the weight :math:`\varphi(a)` on the
half-line beyond the crossing :math:`a^*(b)` (:func:`half_line_gauss`), found by Newton on the
two branches' followed minima, so the curve's bend is followed.  Each side is smooth, and
the rule converges as fast as Gauss--Hermite on a smooth integrand.

Each side's coordinates are placed on a Gaussian proposal for the tilted inner measure
:math:`\varphi(\zeta)e^{-x\mathcal M_S(\zeta)}` of its branch (damped Newton steps from the
centre towards its mode, the branch followed from step to step), and the weights carry the
exact ratio, as :func:`~symattn.numerics.one_step_rsb._tilted_gaussian`
does for one branch: at large Parisi ``x`` the two sides' modes lie many inner standard
deviations apart.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["half_line_gauss", "split_points", "SPLIT_CLAMP"]

#: half-line rules' ends are clamped to [-SPLIT_CLAMP, SPLIT_CLAMP] (the standard normal's mass
#: beyond is below 1e-32)
SPLIT_CLAMP = 12.0

#: Gauss--Legendre points of the discretised measure the half-line rules are built from
_DISCRETE = 320

#: Newton steps on the crossing a*(b) and on each side's mode
_LINE_STEPS = 4
_MODE_STEPS = 4


def half_line_gauss(c, size: int, upper: bool):
    r"""Gauss rules of ``size`` points for the weight :math:`\varphi(a)` on :math:`[c, \infty)`
    (``upper``) or :math:`(-\infty, c]`, one per entry of ``c`` (clamped to
    ``[-SPLIT_CLAMP, SPLIT_CLAMP]``).  Returns ``(nodes, weights)``, each ``c.shape + (size,)``;
    the weights sum to the half-line's mass.  Built by the Stieltjes procedure on a
    ``_DISCRETE``-point Gauss--Legendre discretisation of the truncated weight (exact for the
    polynomials the rule integrates, to rounding; ``tests/test_inner_split.py`` checks the moments
    against mpmath)."""
    c = np.clip(np.asarray(c, float), -SPLIT_CLAMP, SPLIT_CLAMP)
    sign = 1.0 if upper else -1.0
    lo = sign * c                           # work on [lo, inf) and reflect
    hi = np.maximum(lo, 0.0) + SPLIT_CLAMP + 1.0
    y, gw = np.polynomial.legendre.leggauss(_DISCRETE)
    half = 0.5 * (hi - lo)[..., None]
    t = lo[..., None] + half * (y + 1.0)
    w = half * gw * np.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    mass = w.sum(-1)
    shape = c.shape
    alpha = np.zeros(shape + (size,))
    beta = np.zeros(shape + (size,))
    prev = np.zeros_like(t)
    cur = np.broadcast_to(1.0 / np.sqrt(mass)[..., None], t.shape).copy()
    for k in range(size):
        alpha[..., k] = np.sum(w * t * cur * cur, -1)
        nxt = (t - alpha[..., k][..., None]) * cur - (beta[..., k][..., None] * prev if k else 0.0)
        if k + 1 < size:
            # one reorthogonalisation against the last two (the discretised Stieltjes
            # procedure is then stable to rounding for these sizes)
            nxt -= np.sum(w * nxt * cur, -1)[..., None] * cur
            nrm = np.sqrt(np.sum(w * nxt * nxt, -1))
            beta[..., k + 1] = nrm
            prev, cur = cur, nxt / nrm[..., None]
    jac = np.zeros(shape + (size, size))
    idx = np.arange(size)
    jac[..., idx, idx] = alpha
    jac[..., idx[1:], idx[:-1]] = beta[..., 1:]
    jac[..., idx[:-1], idx[1:]] = beta[..., 1:]
    nodes, vec = np.linalg.eigh(jac)
    weights = mass[..., None] * vec[..., 0, :] ** 2
    return sign * nodes, weights


def _follow(w, t, V, sigma, start, gtol):
    """The local minimum reached from ``start`` (n, 2): ``(h, value)``."""
    from .prox import prox
    pr = prox(w, t, V, sigma, gtol=gtol, extra_starts=start[:, None, :], include_default=False)
    return pr.h, pr.value


def split_points(w0, t, V, Dq, x, sigma, gtol, size: int):
    r"""The split inner rule's points at the outer nodes ``w0``, ``t`` ``(n, 2)`` (module doc):
    ``(w1 (n k, 2), zeta (n, k, 2), log weights (n, k))`` with ``k = 2 size^2`` (side A's
    points, then side B's), the log weights those of :math:`\varphi(\zeta)\,d\zeta` (the
    proposal's ratio included).  A node without a second minimum at its centre has only
    side A, over the whole plane (side B's weights zero)."""
    from .one_step_rsb import _tilted_gaussian
    from .prox import prox
    n = w0.shape[0]
    s = math.sqrt(Dq)
    centre = prox(w0, t, V, sigma, gtol=gtol)
    hA = centre.h
    lined = np.isfinite(centre.value2)
    hB = np.where(lined[:, None], centre.h2, hA)
    b, gb = np.polynomial.hermite_e.hermegauss(size)
    gb = gb / math.sqrt(2.0 * math.pi)
    out_w, out_z, out_l = [], [], []
    for side, h in (("A", hA), ("B", hB)):
        mu, C, logdet = _tilted_gaussian(w0, t, V, Dq, x, sigma, gtol, follow=h,
                                         steps=_MODE_STEPS)
        # the line s(zeta) = M_B - M_A = 0; its gradient in zeta at the centre, in u
        g = s * (hA - hB) / V
        gu = np.einsum("nji,nj->ni", C, g)
        norm = np.linalg.norm(gu, axis=1)
        nrm = np.where(norm[:, None] > 0, gu / np.where(norm > 0, norm, 1.0)[:, None],
                       np.array([1.0, 0.0]))
        tau = np.stack([-nrm[:, 1], nrm[:, 0]], 1)
        # a*(b): Newton on the followed branches' gap along n, from the linear model
        gap0 = np.where(lined, centre.value2 - centre.value, np.inf)
        base = mu[:, None, :] + np.einsum("nij,nkj->nki", C, b[None, :, None] * tau[:, None, :])
        with np.errstate(invalid="ignore", divide="ignore"):
            a = -(gap0[:, None] + np.einsum("ni,nki->nk", g, base)) / norm[:, None]
        a = np.where(lined[:, None], np.clip(np.nan_to_num(a), -SPLIT_CLAMP, SPLIT_CLAMP),
                     -SPLIT_CLAMP if side == "A" else SPLIT_CLAMP)
        tt = np.repeat(t, size, axis=0)
        cn = np.einsum("nij,nj->ni", C, nrm)
        sel = np.repeat(lined, size)
        if sel.any():
            fa, fb = np.repeat(hA, size, 0)[sel], np.repeat(hB, size, 0)[sel]
            for _ in range(_LINE_STEPS):
                zeta = base + a[:, :, None] * cn[:, None, :]
                w = (w0[:, None, :] + s * zeta).reshape(-1, 2)[sel]
                fa, va = _follow(w, tt[sel], V, sigma, fa, gtol)
                fb, vb = _follow(w, tt[sel], V, sigma, fb, gtol)
                slope = s * np.einsum("mi,mi->m", (fa - fb) / V, np.repeat(cn, size, 0)[sel])
                # a branch that folded away (both followed to one minimum): keep the estimate
                ok = (np.linalg.norm(fa - fb, axis=1) > 1e-6) & (np.abs(slope) > 0)
                step = np.zeros_like(slope)
                step[ok] = -(vb - va)[ok] / slope[ok]
                flat = a.reshape(-1)
                flat[np.flatnonzero(sel)] = np.clip(flat[sel] + step, -SPLIT_CLAMP,
                                                    SPLIT_CLAMP)
                a = flat.reshape(n, size)
        # side A: the gap grows along +n, so A lies at a >= a*; side B below
        an, aw = half_line_gauss(a, size, upper=side == "A")       # (n, size_b, size_a)
        u = (an[..., None] * nrm[:, None, None, :]
             + b[None, :, None, None] * tau[:, None, None, :]).reshape(n, -1, 2)
        zeta = mu[:, None, :] + np.einsum("nij,nkj->nki", C, u)
        with np.errstate(divide="ignore"):
            logw = (np.log(gb)[None, :, None] + np.log(aw)).reshape(n, -1)
        logw = logw + 0.5 * (np.sum(u * u, 2) - np.sum(zeta * zeta, 2)) + logdet[:, None]
        if side == "B":
            logw = np.where(lined[:, None], logw, -np.inf)
        out_w.append(w0[:, None, :] + s * zeta)
        out_z.append(zeta)
        out_l.append(logw)
    zeta = np.concatenate(out_z, 1)
    return (np.concatenate(out_w, 1).reshape(-1, 2), zeta, np.concatenate(out_l, 1))
