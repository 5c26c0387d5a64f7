r"""The fused output channel of any :class:`Shape`: node map, prox, integrand rows and their sums in
one compiled pass over the nodes.

:func:`channel_kernels` returns the shape's generated module (:mod:`symattn.compile.generated`:
the objective, its derivatives and the prox drivers) with the atoms' integrand rows of the
derived saddle-point map (``atom_rows``, :mod:`symattn.compile.general_equations`) and
``channel_pass`` appended.  ``channel_pass`` does at every node, in parallel (model page §7;
:mod:`symattn.numerics.general`, steps 1-3):

* the node map in the eigenframe of :math:`V = U\,\mathrm{diag}(v)\,U^\top`: the means
  :math:`w_l = M_l + K\xi_l` (``w U`` for the prox, ``w`` for the rows), the teacher's
  :math:`h^*_l = \theta K^{-\top}\xi_l + B\eta_l` and its targets ``T(h*)``;
* the start set of the instance's policy (below), with the given starts (``extra``, original
  frame, a ``nan`` coordinate skips one); with ``only_given`` the given ones alone (each node
  follows its own local minima);
* the prox (``prox_node`` of :mod:`symattn.compile.drivers`) in the eigenframe, rotated back;
* the rows (the atoms' integrands, the loss) at the best minimum, mixed with the runner-up's
  by :math:`p = \mathrm{logistic}(\Delta G/\varepsilon)` where ``eps > 0`` and
  :math:`\Delta G < 800\,\varepsilon` (:func:`symattn.numerics.channel.tie_candidates`), and
  :math:`\mathcal M` mixed the same way;
* weighted sums per chunk of nodes (the caller's number of chunks, a function of the node
  count alone, :meth:`symattn.numerics.general.GeneralChannel.chunks`: the sums do not depend
  on the number of threads), the counts of unconverged and of mixed nodes, and, if asked, every
  node's best and runner-up minimiser and their values (original frame; the next pass's warm
  starts) and its rows.

``rows_nodes`` evaluates the rows at given minimisers (e.g. along preintegration lines).

**Start policies** (data of a model instance, not a code path): ``"embed"``, ``w`` and
:math:`\pm h^*` embedded along the eigenvectors of ``V`` with the largest eigenvalues
(``min(r, r_t)`` of them), then the given starts; ``"paper"`` (``L = 2``, ``r = 1``) is the paper's
exact set (:mod:`symattn.numerics.prox`): ``w, +h0, -h0``, or the given starts with those added
where the given ones do not converge (none added with ``only_given``), and where a node's
search disc :math:`\sqrt{2V\mathcal G}` is wider than ``WIDE_DISC`` after the defaults, seven
more (the best and runner-up found, and ``(w_1, 0), (0, w_2), (w_1, -w_2), (-w_1, w_2), -w``).
"""

from __future__ import annotations

import functools

from .shape import Shape

__all__ = ["channel_kernels", "POLICIES"]

POLICIES = ("embed", "paper")

_ZEROS = '''
@njit(cache=True, inline="always")
def policy_starts(T, U, S, k0):
    """S[k0], S[k0 + 1] = +h0, -h0, the zeros of the loss (numerics.prox.loss_zeros, the same
    arithmetic), in the eigenframe (r = 1: U = +-1); returns the count."""
    t1 = min(max(T[0, 0], 1e-12), 1.0 - 1e-12)
    t2 = min(max(T[1, 1], 1e-12), 1.0 - 1e-12)
    a1 = math.log(t1 / (1.0 - t1))
    a2 = math.log(t2 / (1.0 - t2))
    shift = max(0.0, (0.05 - (a1 + a2)) / 2)
    a1 += shift
    a2 += shift
    delta = math.sqrt(a1 + a2)
    u = U[0, 0]
    S[k0, 0] = a1 / delta * u
    S[k0, 1] = -a2 / delta * u
    S[k0 + 1, 0] = -S[k0, 0]
    S[k0 + 1, 1] = -S[k0, 1]
    return 2
'''

_PAPER_STARTS = '''
@njit(cache=True, inline="always")
def paper_starts(wp, T, U, S):
    """S[0:3] = w, +h0, -h0 in the eigenframe (numerics.prox: the paper's default starts)."""
    for k in range(K):
        S[0, k] = wp[k]
    policy_starts(T, U, S, 1)
'''



_EMBED = '''            ns = 0
            if not only_given:
                for k in range(K):
                    S[0, k] = wp[k]
                    S[1, k] = 0.0
                for l in range(L):
                    for e in range(KEMB):
                        S[1, l * R + R - 1 - e] = hs_[l * R_T + e]
                for k in range(K):
                    S[2, k] = -S[1, k]
                ns = 3
            for s_ in range(ngiven):
                given_start(extra, i, s_, U, S, ns)
                ns += 1
            G, ok, G2, it = prox_node(wp, Ti, V_ARG, sigma, S[:ns], gtol, max_iter, hs, Gs, cs,
                                      g, Hm, work, d, trial, g2, H2, hb, h2b)
'''
_PAPER = '''            if ngiven > 0:
                for s_ in range(ngiven):
                    given_start(extra, i, s_, U, S, s_)
                G, ok, G2, it = prox_node(wp, Ti, V_ARG, sigma, S[:ngiven], gtol, max_iter, hs,
                                          Gs, cs, g, Hm, work, d, trial, g2, H2, hb, h2b)
                default = not ok and not only_given
                if default:        # the defaults added where the given starts fail
                    for s_ in range(ngiven):
                        given_start(extra, i, s_, U, S, 3 + s_)
                    paper_starts(wp, Ti, U, S)
                    G, ok, G2, it = prox_node(wp, Ti, V_ARG, sigma, S[:3 + ngiven], gtol,
                                              max_iter, hs, Gs, cs, g, Hm, work, d, trial, g2,
                                              H2, hb, h2b)
            else:
                paper_starts(wp, Ti, U, S)
                G, ok, G2, it = prox_node(wp, Ti, V_ARG, sigma, S[:3], gtol, max_iter, hs, Gs,
                                          cs, g, Hm, work, d, trial, g2, H2, hb, h2b)
                default = True
            if default and math.sqrt(2.0 * v[0] * G) > WIDE_DISC:   # numerics.prox._widen
                for k in range(K):
                    S[0, k] = hb[k]
                    S[1, k] = h2b[k]
                S[2, 0] = wp[0]
                S[2, 1] = 0.0
                S[3, 0] = 0.0
                S[3, 1] = wp[1]
                S[4, 0] = wp[0]
                S[4, 1] = -wp[1]
                S[5, 0] = -wp[0]
                S[5, 1] = wp[1]
                S[6, 0] = -wp[0]
                S[6, 1] = -wp[1]
                G, ok, G2, it = prox_node(wp, Ti, V_ARG, sigma, S[:7], gtol, max_iter, hs, Gs,
                                          cs, g, Hm, work, d, trial, g2, H2, hb, h2b)
'''

_GIVEN = '''
@njit(cache=True, inline="always")
def node_gaussians(xi, eta, i, xi_i, eta_i):
    """Node i's Gaussians as (L, R) and (L, R_T) matrices (copies, not views: see prox_nodes)."""
    for l in range(L):
        for a in range(R):
            xi_i[l, a] = xi[i, l * R + a]
        for e in range(R_T):
            eta_i[l, e] = eta[i, l * R_T + e]


@njit(cache=True, inline="always")
def given_start(extra, i, s, U, S, row):
    """S[row] = the given start s of node i, rotated to the eigenframe (h -> h U)."""
    for l in range(L):
        for a in range(R):
            t = 0.0
            for b in range(R):
                t += extra[i, s, l * R + b] * U[b, a]
            S[row, l * R + a] = t
'''

_PASS = '''
# ---- fused general output channel (symattn/compile/general_channel.py) ----

PARALLEL = PARALLEL + ("channel_pass", "rows_nodes")
TIE_WINDOW = 800.0
WIDE_DISC = 1.25
R = K // L
R_T = K_T // L
KEMB = min(R, R_T)


@njit(cache=True, parallel=True)
def channel_pass(xi, eta, weights, M, Kf, Cx, Bt, U, v, Vinv, sigma, omega, A, eps, extra,
                 only_given, gtol, max_iter, sums, counts, keep, h_out, h2_out, G_out, G2_out,
                 conv_out, rows, rows2):
    """Module doc.  xi (n, L R), eta (n, L R_T), weights (n,); M (L, R); Kf (R, R) the Cholesky
    factor of q; Cx (R, R_T) = K^-1 theta^T; Bt (R_T, R_T) = B^T; U (R, R), v (R,) the
    eigenvectors and eigenvalues of V; Vinv (R, R); extra (n, s, K) given starts, original
    frame.  Outputs: sums (chunks, N_ATOMS + 2): atoms, M, loss; counts (chunks, 2); if keep,
    h_out, h2_out (n, K), G_out, G2_out (n,), conv_out (n,) bool; if rows has n rows, the rows
    (N_ATOMS + 1: atoms, loss) at the best minimum, and in rows2 at the runner-up where it is
    mixed in (else nan)."""
    n = xi.shape[0]
    chunks = sums.shape[0]
    ncol = sums.shape[1]
    ngiven = extra.shape[1]
    nmax = max(7, ngiven + 5)
    per_node = rows.shape[0] == n
    for c in prange(chunks):
        xi_i = np.empty((L, R))
        eta_i = np.empty((L, R_T))
        w = np.empty(K)
        wp = np.empty(K)
        hs_ = np.empty(K_T)
        Ti = np.empty((L, L))
        S = np.empty((max(nmax, 1), K))
        hs, Gs, cs, g, Hm, work, d, trial, g2, H2, hb, h2b = prox_work(max(nmax, 1))
        h = np.empty(K)
        h2 = np.empty(K)
        r1 = np.empty(ncol - 1)
        r2 = np.empty(ncol - 1)
        acc = np.zeros(ncol)
        failed = 0
        mixed = 0
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            node_gaussians(xi, eta, i, xi_i, eta_i)
            for l in range(L):
                for a in range(R):
                    s = M[l, a]
                    for b in range(R):
                        s += Kf[a, b] * xi_i[l, b]
                    w[l * R + a] = s
                for e in range(R_T):
                    s = 0.0
                    for b in range(R):
                        s += xi_i[l, b] * Cx[b, e]
                    for f in range(R_T):
                        s += eta_i[l, f] * Bt[f, e]
                    hs_[l * R_T + e] = s
            for l in range(L):
                for a in range(R):
                    s = 0.0
                    for b in range(R):
                        s += w[l * R + b] * U[b, a]
                    wp[l * R + a] = s
            teacher(hs_, omega, A, Ti)
NODE_PROX            for l in range(L):
                for a in range(R):
                    s = 0.0
                    s2 = 0.0
                    for b in range(R):
                        s += hb[l * R + b] * U[a, b]
                        s2 += h2b[l * R + b] * U[a, b]
                    h[l * R + a] = s
                    h2[l * R + a] = s2
            if not ok:
                failed += 1
            atom_rows(xi_i, eta_i, h, w, Vinv, Ti, sigma, r1)
            gap = G2 - G
            wi = weights[i]
            na = ncol - 2
            tie = eps > 0.0 and math.isfinite(gap) and gap < TIE_WINDOW * eps
            if per_node:
                for k in range(na + 1):
                    rows[i, k] = r1[k]
                    rows2[i, k] = np.nan
            if tie:
                atom_rows(xi_i, eta_i, h2, w, Vinv, Ti, sigma, r2)
                if per_node:
                    for k in range(na + 1):
                        rows2[i, k] = r2[k]
                p = _logistic(gap / eps)
                if 1.0 - p > 1e-12:
                    mixed += 1
                for k in range(na):
                    acc[k] += wi * (p * r1[k] + (1.0 - p) * r2[k])
                acc[na] += wi * (p * G + (1.0 - p) * G2)
                acc[na + 1] += wi * (p * r1[na] + (1.0 - p) * r2[na])
            else:
                for k in range(na):
                    acc[k] += wi * r1[k]
                acc[na] += wi * G
                acc[na + 1] += wi * r1[na]
            if keep:
                for k in range(K):
                    h_out[i, k] = h[k]
                    h2_out[i, k] = h2[k]
                G_out[i] = G
                G2_out[i] = G2
                conv_out[i] = ok
        for k in range(ncol):
            sums[c, k] = acc[k]
        counts[c, 0] = failed
        counts[c, 1] = mixed
'''


_ROWS = '''

@njit(cache=True, parallel=True)
def rows_nodes(xi, eta, h, w, Vinv, T, sigma, out):
    """atom_rows at every node at the given minimisers h: xi (n, L R), eta (n, L R_T), h, w
    (n, K), Vinv (R, R), T (n, L, L) -> out (n, N_ATOMS + 1)."""
    for c in prange(min(xi.shape[0], 256)):
        xi_i = np.empty((L, R))
        eta_i = np.empty((L, R_T))
        hi = np.empty(K)
        wi = np.empty(K)
        Ti = np.empty((L, L))
        r = np.empty(out.shape[1])
        n = xi.shape[0]
        for i in range(c * n // min(n, 256), (c + 1) * n // min(n, 256)):
            node_gaussians(xi, eta, i, xi_i, eta_i)
            for k in range(K):
                hi[k] = h[i, k]
                wi[k] = w[i, k]
            for a in range(L):
                for b in range(L):
                    Ti[a, b] = T[i, a, b]
            atom_rows(xi_i, eta_i, hi, wi, Vinv, Ti, sigma, r)
            for k in range(out.shape[1]):
                out[i, k] = r[k]
'''


def channel_source(shape: Shape, policy: str = "embed") -> str:
    """The text of :func:`channel_kernels`' module (derives; no cache)."""
    from .general_equations import atom_rows_source
    from .generated import shape_source
    if policy not in POLICIES:
        raise ValueError(f"unknown start policy {policy!r}; choose from {POLICIES}")
    if policy != "embed" and (shape.L, shape.r) != (2, 1):
        raise ValueError(f"the start policy {policy!r} is for L = 2, r = 1")
    body = (_PASS.replace("NODE_PROX", _PAPER if policy == "paper" else _EMBED)
            .replace("V_ARG", "v[0]" if shape.r == 1 else "v"))
    parts = [shape_source(shape), atom_rows_source(shape), _GIVEN]
    if policy == "paper":
        parts += [_ZEROS, _PAPER_STARTS]
    return "\n\n".join(parts + [body, _ROWS])


@functools.lru_cache(maxsize=None)
def channel_kernels(shape: Shape, policy: str = "embed"):
    """The fused channel module of ``shape`` with the start ``policy`` (module doc)."""
    from .generated import cached_module
    tag = policy.replace("+", "_")
    return cached_module(f"channel_{shape.tag}_{tag}", lambda: channel_source(shape, policy))
