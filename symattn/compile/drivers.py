r"""Source of the shape-independent part of a generated kernel module: the per-node prox.

The generated module (:mod:`symattn.compile.generated`) defines, for its shape, the constants
``L``, ``K`` (``= L r``) and the scalar kernels ``objective(h, w, T, V, sigma)`` and
``objective_derivatives(h, w, T, V, sigma, g, H)``; the text :data:`DRIVERS` below is appended
to it, so its functions see those as compile-time globals.

**The prox at one node** (model page §4): the global minimiser over ``h`` in ``R^K`` of the
Moreau objective :math:`\mathcal G(h) = \lVert h-w\rVert^2/(2V) + \ell(h, T)`.  From each start,
safeguarded Newton:

* the Hessian is shifted to have its smallest eigenvalue at least ``1e-4 / V`` (cyclic Jacobi
  for the eigenvalue, Cholesky for the step);
* Armijo backtracking on :math:`\mathcal G` (constant ``1e-4``, at most 40 trial steps, after
  which the step is halved once more); the full step is evaluated with its gradient and
  Hessian, which the next iteration uses when it is accepted; a step whose predicted decrease is below double
  precision's resolution of :math:`\mathcal G` is accepted (the point is stationary);
* converged when :math:`\max_i|\partial_i\mathcal G| \le` ``gtol`` at a positive-definite Hessian;
  at most ``max_iter`` iterations.

Of a node's starts (a start with a ``nan`` coordinate is skipped) the lowest converged value is
kept (if none converged, the lowest value); the runner-up is the lowest converged value at a
minimiser more than ``1e-6`` away (max norm) from the kept one.  This is the algorithm of the
vectorised numpy prox symattn used before (the old path, kept as ``benchmarks``' baseline), run
node by node, so each node stops as soon as its own starts have converged.

``newton`` and ``prox_node`` are inlined into ``prox_nodes`` (numba's ``inline="always"``): as
calls, passing their dozen small arrays cost more than the arithmetic (at a converged start,
620 ns per node against 160 ns inlined, one thread; ``benchmarks/bench_kernels.py``).
"""

__all__ = ["DRIVERS"]

DRIVERS = '''
# ---- shape-independent drivers (symattn/compile/drivers.py) ----

PARALLEL = ("prox_nodes", "objective_nodes", "derivatives_nodes", "loss_nodes", "teacher_nodes")
ARMIJO = 1e-4
MAX_TRIALS = 40
SEPARATION = 1e-6


@njit(cache=True)
def min_eigenvalue(H, work):
    """Smallest eigenvalue of the symmetric K x K matrix H (cyclic Jacobi on a copy in work)."""
    if K == 1:
        return H[0, 0]
    for i in range(K):
        for j in range(K):
            work[i, j] = H[i, j]
    for sweep in range(50):
        off = 0.0
        diag = 0.0
        for p in range(K):
            diag += work[p, p] * work[p, p]
            for q in range(p + 1, K):
                off += work[p, q] * work[p, q]
        if off == 0.0 or off <= 1e-34 * diag:
            break
        for p in range(K - 1):
            for q in range(p + 1, K):
                apq = work[p, q]
                if apq == 0.0:
                    continue
                app = work[p, p]
                aqq = work[q, q]
                tau = (aqq - app) / (2.0 * apq)
                t = 1.0 / (abs(tau) + math.sqrt(1.0 + tau * tau))
                if tau < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = t * c
                for r in range(K):
                    if r != p and r != q:
                        arp = work[r, p]
                        arq = work[r, q]
                        work[r, p] = c * arp - s * arq
                        work[p, r] = work[r, p]
                        work[r, q] = s * arp + c * arq
                        work[q, r] = work[r, q]
                work[p, p] = app - t * apq
                work[q, q] = aqq + t * apq
                work[p, q] = 0.0
                work[q, p] = 0.0
    e = work[0, 0]
    for p in range(1, K):
        if work[p, p] < e:
            e = work[p, p]
    return e


@njit(cache=True)
def newton_direction(H, shift, g, work, d):
    """d = -(H + shift I)^-1 g by Cholesky; False if the shifted matrix is not positive definite."""
    for i in range(K):
        for j in range(i + 1):
            s = H[i, j]
            if i == j:
                s += shift
            for k in range(j):
                s -= work[i, k] * work[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                work[i, i] = math.sqrt(s)
            else:
                work[i, j] = s / work[j, j]
    for i in range(K):
        s = -g[i]
        for k in range(i):
            s -= work[i, k] * d[k]
        d[i] = s / work[i, i]
    for i in range(K - 1, -1, -1):
        s = d[i]
        for k in range(i + 1, K):
            s -= work[k, i] * d[k]
        d[i] = s / work[i, i]
    return True


@njit(cache=True, inline="always")
def newton(h, w, T, V, sigma, gtol, max_iter, g, H, work, d, trial, g2, H2):
    """Safeguarded Newton from h (updated in place): (value, converged, iterations).

    The full step is tried with the value, gradient and Hessian at once: accepted (the usual
    case), they serve the next iteration; only shorter steps are tried with the value alone.
    """
    floor = 1e-4 / v_max(V)
    it = 0
    G = objective_derivatives(h, w, T, V, sigma, g, H)
    while it < max_iter:
        it += 1
        gmax = 0.0
        for i in range(K):
            gmax = max(gmax, abs(g[i]))
        emin = min_eigenvalue(H, work)
        if gmax <= gtol and emin > 0.0:
            return G, True, it
        if not newton_direction(H, max(0.0, floor - emin), g, work, d):
            for i in range(K):
                d[i] = -g[i] / (H[i, i] + max(0.0, floor - emin) + floor)
        slope = 0.0
        for i in range(K):
            slope += g[i] * d[i]
        small = 1e-17 * max(1.0, abs(G))
        for i in range(K):
            trial[i] = h[i] + d[i]
        Gp = objective_derivatives(trial, w, T, V, sigma, g2, H2)
        if Gp <= G + ARMIJO * slope or abs(slope) < small:
            for i in range(K):
                h[i] = trial[i]
                g[i] = g2[i]
                for j in range(K):
                    H[i, j] = H2[i, j]
            G = Gp
            continue
        step = 1.0
        ok = False
        trials = 1
        while not ok and trials < MAX_TRIALS:
            trials += 1
            step *= 0.5
            for i in range(K):
                trial[i] = h[i] + step * d[i]
            Gp = objective(trial, w, T, V, sigma)
            ok = Gp <= G + ARMIJO * step * slope or abs(step * slope) < small
        if not ok:
            step *= 0.5
        for i in range(K):
            h[i] += step * d[i]
        G = objective_derivatives(h, w, T, V, sigma, g, H)
    gmax = 0.0
    for i in range(K):
        gmax = max(gmax, abs(g[i]))
    return G, gmax <= gtol and min_eigenvalue(H, work) > 0.0, it


@njit(cache=True, inline="always")
def prox_node(w, T, V, sigma, starts, gtol, max_iter, hs, Gs, cs, g, H, work, d, trial,
              g2, H2, h_out, h2_out):
    """The prox at one node from its starts (s, K): (value, converged, value2, iterations)."""
    ns = starts.shape[0]
    itmax = 0
    for s in range(ns):
        skip = False
        for i in range(K):
            hs[s, i] = starts[s, i]
            if math.isnan(starts[s, i]):
                skip = True
        if skip:
            Gs[s] = np.inf
            cs[s] = False
            continue
        G, ok, it = newton(hs[s], w, T, V, sigma, gtol, max_iter, g, H, work, d, trial, g2, H2)
        Gs[s] = G
        cs[s] = ok
        itmax = max(itmax, it)
    best = -1
    for s in range(ns):
        if cs[s] and (best < 0 or Gs[s] < Gs[best]):
            best = s
    if best < 0:                      # none converged: the lowest value (numpy's argmin rule)
        best = 0
        for s in range(ns):
            if math.isnan(Gs[s]):
                best = s
                break
            if Gs[s] < Gs[best]:
                best = s
    second = -1
    for s in range(ns):
        if not cs[s]:
            continue
        dist = 0.0
        for i in range(K):
            dist = max(dist, abs(hs[s, i] - hs[best, i]))
        if dist > SEPARATION and (second < 0 or Gs[s] < Gs[second]):
            second = s
    for i in range(K):
        h_out[i] = hs[best, i]
        h2_out[i] = hs[second, i] if second >= 0 else np.nan
    return Gs[best], cs[best], Gs[second] if second >= 0 else np.inf, itmax


@njit(cache=True)
def prox_work(ns):
    """prox_node's work arrays for ns starts: hs, Gs, cs, g, H, work, d, trial, g2, H2, h, h2."""
    return (np.empty((ns, K)), np.empty(ns), np.empty(ns, np.bool_), np.empty(K),
            np.empty((K, K)), np.empty((K, K)), np.empty(K), np.empty(K), np.empty(K),
            np.empty((K, K)), np.empty(K), np.empty(K))


@njit(cache=True, parallel=True)
def prox_nodes(w, T, V, sigma, starts, gtol, max_iter, h, G, conv, h2, G2, iters):
    """prox_node at every node: w (n, K), T (n, L, L), V (n,), starts (n, s, K).

    Outputs h, h2 (n, K); G, G2 (n,); conv (n,) bool; iters (n,) int64.  The node arrays are
    shared by the threads and read and written entry by entry: a view of them (``w[i]``)
    would update their reference count from every thread at once, which costs more than the
    arithmetic.  Work arrays are allocated once per chunk of nodes.
    """
    n = w.shape[0]
    ns = starts.shape[1]
    chunks = min(n, 256)
    for c in prange(chunks):
        hs, Gs, cs, g, Hm, work, d, trial, g2, H2, hb, h2b = prox_work(ns)
        wi = np.empty(K)
        Ti = np.empty((L, L))
        si = np.empty((ns, K))
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            for k in range(K):
                wi[k] = w[i, k]
                for s in range(ns):
                    si[s, k] = starts[i, s, k]
            for a in range(L):
                for b in range(L):
                    Ti[a, b] = T[i, a, b]
            G[i], conv[i], G2[i], iters[i] = prox_node(
                wi, Ti, V[i], sigma, si, gtol, max_iter, hs, Gs, cs, g, Hm, work, d, trial,
                g2, H2, hb, h2b)
            for k in range(K):
                h[i, k] = hb[k]
                h2[i, k] = h2b[k]


@njit(cache=True, parallel=True)
def objective_nodes(h, w, T, V, sigma, out):
    """objective at every node: h, w (n, K), T (n, L, L), V (n,) -> out (n,)."""
    for i in prange(h.shape[0]):
        out[i] = objective(h[i], w[i], T[i], V[i], sigma)


@njit(cache=True, parallel=True)
def derivatives_nodes(h, w, T, V, sigma, G, g, H):
    """objective_derivatives at every node: G (n,), g (n, K), H (n, K, K)."""
    for i in prange(h.shape[0]):
        G[i] = objective_derivatives(h[i], w[i], T[i], V[i], sigma, g[i], H[i])


@njit(cache=True, parallel=True)
def loss_nodes(h, T, sigma, out):
    """loss at every node: h (n, K), T (n, L, L) -> out (n,)."""
    for i in prange(h.shape[0]):
        out[i] = loss(h[i], T[i], sigma)


@njit(cache=True, parallel=True)
def teacher_nodes(hs, omega, A, T):
    """teacher at every node: hs (n, K_T), A (L, L) -> T (n, L, L)."""
    for i in prange(hs.shape[0]):
        teacher(hs[i], omega, A, T[i])
'''
