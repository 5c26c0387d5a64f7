r"""Source of the fused output-channel kernel of the paper's shape (``L = 2``, ``r = r_t = 1``).

:func:`symattn.compile.kernels.channel_module` appends :data:`CHANNEL` to the paper shape's
generated module (:mod:`symattn.compile.generated`) and to the generated scalar function
``channel_rows(xi, eta, p, w, T, V, sigma, out)`` (the atoms' integrands and the loss at the
prox ``p``).  ``channel_sums`` then does, node by node in compiled code, what
:meth:`symattn.numerics.channel.OutputChannel.evaluate` does with numpy arrays, and returns
only the weighted sums (what the large rules of the high-precision route need):

* the node map (model page §4), :math:`w_l = \sqrt q\,\xi_l + s_l m`,
  :math:`h^*_l = (\theta/\sqrt q)\xi_l + \sqrt{\rho-\theta^2/q}\,\eta_l`, ``s = (+1, -1)``, and
  the targets ``T(h*)``;
* the prox from the default starts ``w, +-h0`` (:func:`symattn.numerics.prox.loss_zeros`),
  widened by seven more where the search disc is wider than ``WIDE_DISC``
  (:func:`symattn.numerics.prox._widen`); or from given starts, with the default ones added
  where those do not converge;
* the integrand row at the best minimum, mixed with the runner-up's by the smoothed selection
  :math:`p = \mathrm{logistic}(\Delta G/\varepsilon)` where :math:`\Delta G < 800\,\varepsilon`
  (:class:`symattn.numerics.channel.ChannelState`);
* the weighted sums per chunk of nodes (a fixed number of chunks, so the result does not
  depend on the number of threads), the count of unconverged and of mixed nodes, and, if
  asked, every node's best and runner-up minimum (the next evaluation's warm starts).
"""

__all__ = ["CHANNEL"]

CHANNEL = '''
# ---- fused output channel of the paper's shape (symattn/compile/channel_driver.py) ----

PARALLEL = PARALLEL + ("channel_sums",)
WIDE_DISC = 1.25
TIE_WINDOW = 800.0
MAX_STARTS = 16


@njit(cache=True, inline="always")
def _logit(x):
    x = min(max(x, 1e-12), 1.0 - 1e-12)
    return math.log(x / (1.0 - x))


@njit(cache=True, inline="always")
def default_starts(w, T, S):
    """S[0:3] = w, +h0, -h0 (h0: the zeros of the loss; symattn.numerics.prox.loss_zeros)."""
    a1 = _logit(T[0, 0])
    a2 = _logit(T[1, 1])
    shift = max(0.0, (0.05 - (a1 + a2)) / 2)
    a1 += shift
    a2 += shift
    delta = math.sqrt(a1 + a2)
    S[0, 0] = w[0]
    S[0, 1] = w[1]
    S[1, 0] = a1 / delta
    S[1, 1] = -a2 / delta
    S[2, 0] = -a1 / delta
    S[2, 1] = a2 / delta


@njit(cache=True, parallel=True)
def channel_sums(xi, eta, weights, q, m, theta, V, sigma, omega, A, rho, eps, starts,
                 use_given, gtol, max_iter, keep, h_out, h2_out, sums, counts):
    """Weighted sums of the smoothed integrand rows (module doc).

    xi, eta (n, 2); weights (n,); starts (n, s, 2) (used if use_given); h_out, h2_out (n, 2)
    (written if keep); sums (chunks, n_atoms + 2): atoms, M, loss; counts (chunks, 2):
    unconverged and mixed nodes.
    """
    n = xi.shape[0]
    chunks = sums.shape[0]
    ncol = sums.shape[1]
    given = starts.shape[1]
    sq = math.sqrt(q)
    c_xi = theta / sq
    c_eta = math.sqrt(rho - theta * theta / q)
    for c in prange(chunks):
        w = np.empty(K)
        hs_ = np.empty(K_T)
        Ti = np.empty((L, L))
        S = np.empty((MAX_STARTS, K))
        hs, Gs, cs, g, Hm, work, d, trial, g2, H2, hb, h2b = prox_work(MAX_STARTS)
        xi_i = np.empty(L)
        eta_i = np.empty(L)
        r1 = np.empty(ncol - 1)
        r2 = np.empty(ncol - 1)
        acc = np.zeros(ncol)
        failed = 0
        mixed = 0
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            for k in range(L):          # copies, not views: see prox_nodes
                xi_i[k] = xi[i, k]
                eta_i[k] = eta[i, k]
            w[0] = sq * xi[i, 0] + m
            w[1] = sq * xi[i, 1] - m
            hs_[0] = c_xi * xi[i, 0] + c_eta * eta[i, 0]
            hs_[1] = c_xi * xi[i, 1] + c_eta * eta[i, 1]
            teacher(hs_, omega, A, Ti)
            if use_given:
                for s in range(given):
                    for k in range(K):
                        S[s, k] = starts[i, s, k]
                G, ok, G2, it = prox_node(w, Ti, V, sigma, S[:given], gtol, max_iter, hs, Gs, cs,
                                          g, Hm, work, d, trial, g2, H2, hb, h2b)
                default = not ok
                if default:        # the default starts added where the given ones fail
                    for s in range(given):
                        for k in range(K):
                            S[3 + s, k] = starts[i, s, k]
                    default_starts(w, Ti, S)
                    G, ok, G2, it = prox_node(w, Ti, V, sigma, S[:3 + given], gtol, max_iter,
                                              hs, Gs, cs, g, Hm, work, d, trial, g2, H2, hb,
                                              h2b)
            else:
                default_starts(w, Ti, S)
                G, ok, G2, it = prox_node(w, Ti, V, sigma, S[:3], gtol, max_iter, hs, Gs, cs,
                                          g, Hm, work, d, trial, g2, H2, hb, h2b)
                default = True
            if default and math.sqrt(2.0 * V * G) > WIDE_DISC:   # symattn.numerics.prox._widen
                for k in range(K):
                    S[0, k] = hb[k]
                    S[1, k] = h2b[k]
                S[2, 0] = w[0]
                S[2, 1] = 0.0
                S[3, 0] = 0.0
                S[3, 1] = w[1]
                S[4, 0] = w[0]
                S[4, 1] = -w[1]
                S[5, 0] = -w[0]
                S[5, 1] = w[1]
                S[6, 0] = -w[0]
                S[6, 1] = -w[1]
                G, ok, G2, it = prox_node(w, Ti, V, sigma, S[:7], gtol, max_iter, hs, Gs, cs,
                                          g, Hm, work, d, trial, g2, H2, hb, h2b)
            if not ok:
                failed += 1
            channel_rows(xi_i, eta_i, hb, w, Ti, V, sigma, r1)
            gap = G2 - G
            wi = weights[i]
            if math.isfinite(gap) and gap < TIE_WINDOW * eps:
                channel_rows(xi_i, eta_i, h2b, w, Ti, V, sigma, r2)
                p = _logistic(gap / eps)
                if 1.0 - p > 1e-12:
                    mixed += 1
                na = ncol - 2
                for k in range(na):
                    acc[k] += wi * (p * r1[k] + (1.0 - p) * r2[k])
                acc[na] += wi * (p * G + (1.0 - p) * G2)
                acc[na + 1] += wi * (p * r1[na] + (1.0 - p) * r2[na])
            else:
                na = ncol - 2
                for k in range(na):
                    acc[k] += wi * r1[k]
                acc[na] += wi * G
                acc[na + 1] += wi * r1[na]
            if keep:
                for k in range(K):
                    h_out[i, k] = hb[k]
                    h2_out[i, k] = h2b[k]
        for k in range(ncol):
            sums[c, k] = acc[k]
        counts[c, 0] = failed
        counts[c, 1] = mixed
'''
