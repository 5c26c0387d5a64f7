r"""JAX prototype of the prox kernel, timed against the numpy and numba ones.

Prototype only, to compare JAX with numba as a backend; nothing in ``symattn`` imports it.

:func:`prox_jax` runs the algorithm of :func:`symattn.numerics.prox.prox`: at each node the
global minimiser over :math:`h \in \mathbb{R}^2` of

.. math::

    \mathcal{G}(h) = \frac{(h_1-w_1)^2 + (h_2-w_2)^2}{2V}
      + \sigma^2\left[(\mathrm{logistic}(h_1^2-h_1h_2) - T_{11})^2
                     + (\mathrm{logistic}(h_2^2-h_1h_2) - T_{22})^2\right],

by safeguarded Newton from the three default starts ``w, +h0, -h0`` (no ``_widen``, no
runner-up), keeping the lowest converged start.  The gradient and Hessian come from JAX
autodiff of ``G``; everything is float64 and jit-compiled, vectorised over nodes x starts
with ``jax.vmap``, with ``lax.while_loop`` for the Newton iteration and for the
backtracking.  A second variant, :func:`prox_jax_chunked`, is the same solver mapped over
chunks of nodes (``lax.map(..., batch_size=CHUNK)``), so that the lanes wait in lock step
only for the slowest start of their own chunk.

Measured, at the semantic and the positional fixed point near alpha_c (Sobol rule, seed 0,
2^14, 2^16 and 2^18 nodes), all times in microseconds per node, best of 3:

* ``numpy``: the vectorised lock-step prox (``benchmarks/numpy_prox.py``, formerly
  ``symattn.numerics.prox``; includes ``_widen`` and the runner-up), the reference the
  agreement columns compare with;
* ``symattn``: the project's current :func:`symattn.numerics.prox.prox` (numba, node by node,
  both cores; needs numba in the venv), after a first call that compiles or loads its kernels;
* ``vmap``, ``chunk<CHUNK>``: :func:`prox_jax` and :func:`prox_jax_chunked` after compilation,
  the compile time (first call at that shape) separately;
* ``cpu``: CPU time / wall time of the timed call (how many of the cores it used);
* agreement with ``numpy``: max ``|h diff|`` where both converged to the same minimum, the
  number of nodes where the chosen minimum differs (``|h diff| > 1e-6``), max
  ``|value diff|``; and the number of unconverged nodes of each solver;
* Newton iterations per start (counted as the reference counts them: evaluations up to and
  including the one that finds convergence): the slowest start, the median, and the
  lock-step factor ``(starts x slowest) / (sum over starts)``, the work a lock-step vmap
  does per useful iteration.

Run from the repository root with a separate venv (CPU jax; numba only for the ``symattn``
row)::

    python3 -m venv /tmp/jaxvenv
    /tmp/jaxvenv/bin/pip install jax jaxlib numpy scipy sympy mpmath numba
    PYTHONPATH=$PWD /tmp/jaxvenv/bin/python benchmarks/prox_backend_jax.py [--log2n 14 16 18]
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import subprocess
import sys
import sysconfig
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402  (after enabling float64)
import jaxlib  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from symattn.model.params import ModelParams  # noqa: E402
from symattn.numerics.channel import OutputChannel  # noqa: E402
from symattn.numerics import prox as symattn_prox  # noqa: E402
from symattn.numerics.quadrature import SobolRule  # noqa: E402

#: the reference's constants (benchmarks/numpy_prox.py, symattn/compile/drivers.py)
ARMIJO = 1e-4
MAX_HALVINGS = 40
EIG_FLOOR = 1e-4          # smallest Hessian eigenvalue after the shift, times V
STATIONARY = 1e-17        # |s * slope| below this (relative to max(1, |G|)): step accepted
#: nodes per chunk of :func:`prox_jax_chunked`
CHUNK = 8192

POINTS = {"semantic": (0.08164738, 0.0, 0.1179633, 18.31522),
          "positional": (0.04705195, 0.2525654, 0.0, 14.87689)}


# ---------------------------------------------------------------------------------------------
# the kernel: one start at one node, in scalars; vmap does the rest
#
# Written in scalars (h1, h2 and H11, H12, H22 separately), not with h as a 2-vector: vmapped,
# the vector form keeps (..., 2) and (..., 2, 2) arrays with a minor axis of 2 and reductions
# over it, and ran 2.4x slower in a trial on this 2-core machine (33 vs 14 us per node at 2^16
# nodes).


def objective(h1, h2, w1, w2, t1, t2, V, sigma):
    r"""Moreau objective at one node.

    :math:`\mathcal{G} = ((h_1-w_1)^2 + (h_2-w_2)^2)/(2V)
    + \sigma^2\sum_l(\mathrm{logistic}(h_l^2 - h_1h_2) - T_{ll})^2`.
    """
    r1 = jax.nn.sigmoid(h1 * h1 - h1 * h2) - t1
    r2 = jax.nn.sigmoid(h2 * h2 - h1 * h2) - t2
    return ((h1 - w1) ** 2 + (h2 - w2) ** 2) / (2 * V) + sigma**2 * (r1 * r1 + r2 * r2)


_value_and_grad = jax.value_and_grad(objective, argnums=(0, 1))
_hessian = jax.hessian(objective, argnums=(0, 1))


def _evaluate(h1, h2, *args):
    """``(G, g1, g2, H11, H12, H22)`` at ``h`` by autodiff; ``args`` are
    ``(w1, w2, t1, t2, V, sigma)``."""
    G, (g1, g2) = _value_and_grad(h1, h2, *args)
    (a, b), (_, c) = _hessian(h1, h2, *args)
    return G, g1, g2, a, b, c


def _min_eig(a, b, c):
    r"""Smallest eigenvalue of :math:`\begin{pmatrix}a&b\\b&c\end{pmatrix}`:
    :math:`(a+c)/2 - \sqrt{(a-c)^2/4 + b^2}`."""
    return 0.5 * (a + c) - jnp.sqrt(0.25 * (a - c) ** 2 + b * b)


def _converged(g1, g2, a, b, c, gtol):
    """``max|grad G| <= gtol`` at a positive-definite Hessian."""
    return (jnp.maximum(jnp.abs(g1), jnp.abs(g2)) <= gtol) & (_min_eig(a, b, c) > 0)


def _newton_direction(g1, g2, a, b, c, floor):
    r"""Shifted Newton direction :math:`d = -(H + sI)^{-1}g`.

    :math:`s = \max(0, f - \lambda_{min}(H))`, ``f`` the eigenvalue floor ``1e-4/V``; the 2x2
    solve written out (Cramer).
    """
    s = jnp.maximum(0.0, floor - _min_eig(a, b, c))
    a, c = a + s, c + s
    det = a * c - b * b
    return -(c * g1 - b * g2) / det, -(a * g2 - b * g1) / det


def _backtrack(h1, h2, d1, d2, G0, slope, args, skip):
    r"""Armijo step length along ``d`` from ``h``.

    The first :math:`s \in \{1, 1/2, \dots, 2^{-39}\}` with
    :math:`\mathcal{G}(h + sd) \le \mathcal{G}_0 + 10^{-4}\, s\, \nabla\mathcal{G}\cdot d`, or with
    :math:`|s\,\nabla\mathcal{G}\cdot d| < 10^{-17}\max(1, |\mathcal{G}_0|)` (a step that cannot
    lower ``G`` in double precision: the point is stationary); :math:`2^{-40}` if none.
    ``skip`` (a lane that is not iterating any more) accepts ``s = 1`` at once.
    """
    tol = STATIONARY * jnp.maximum(1.0, jnp.abs(G0))

    def accept(s):
        Gp = objective(h1 + s * d1, h2 + s * d2, *args)
        return (Gp <= G0 + ARMIJO * s * slope) | (jnp.abs(s * slope) < tol)

    def cond(state):
        s, ok, j = state
        return ~ok & (j < MAX_HALVINGS - 1)

    def halve(state):
        s, _, j = state
        s = 0.5 * s
        return s, accept(s), j + 1

    s, ok, _ = lax.while_loop(cond, halve, (1.0, skip | accept(1.0), 0))
    return jnp.where(ok, s, 0.5 * s)


def _newton(h1, h2, w1, w2, t1, t2, V, sigma, gtol, max_iter):
    """Safeguarded Newton from one start; returns ``(h1, h2, G, converged, iterations)``.

    ``iterations`` counts evaluations up to the one that finds convergence (as the reference
    counts them); ``max_iter`` steps at most.  Under ``vmap`` the loop runs until the slowest
    lane stops, the others frozen (lax.while_loop's batching rule selects per lane).
    """
    args = (w1, w2, t1, t2, V, sigma)
    floor = EIG_FLOOR / V

    def active(state):
        _, _, _, g1, g2, a, b, c, k = state
        return ~_converged(g1, g2, a, b, c, gtol) & (k < max_iter)

    def step(state):
        h1, h2, G, g1, g2, a, b, c, k = state
        d1, d2 = _newton_direction(g1, g2, a, b, c, floor)
        s = _backtrack(h1, h2, d1, d2, G, g1 * d1 + g2 * d2, args, skip=~active(state))
        h1, h2 = h1 + s * d1, h2 + s * d2
        return (h1, h2, *_evaluate(h1, h2, *args), k + 1)

    init = (h1, h2, *_evaluate(h1, h2, *args), 0)
    h1, h2, G, g1, g2, a, b, c, k = lax.while_loop(active, step, init)
    conv = _converged(g1, g2, a, b, c, gtol)
    return h1, h2, G, conv, jnp.where(conv, k + 1, k)


def loss_zeros(t1, t2, min_sum=0.05):
    r"""The two points :math:`\pm h^0` where the loss vanishes.

    :math:`h^0 = (a_1, -a_2)/\sqrt{a_1 + a_2}`, :math:`a_l = \mathrm{logit}\,T_{ll}` shifted to
    :math:`a_1 + a_2 \ge` ``min_sum``.
    """
    a1, a2 = (jax.scipy.special.logit(jnp.clip(x, 1e-12, 1 - 1e-12)) for x in (t1, t2))
    shift = jnp.maximum(0.0, (min_sum - (a1 + a2)) / 2)
    a1, a2 = a1 + shift, a2 + shift
    delta = jnp.sqrt(a1 + a2)
    return a1 / delta, -a2 / delta


def _prox_node(w, t, V, sigma, gtol, max_iter):
    """All three starts ``w, +h0, -h0`` at one node (``w, t`` of shape ``(2,)``); the lowest
    converged (lowest overall if none converged).  Returns ``(h (2,), G, converged,
    iterations of each start (3,))``."""
    h01, h02 = loss_zeros(t[0], t[1])
    s1, s2 = jnp.stack([w[0], h01, -h01]), jnp.stack([w[1], h02, -h02])
    h1, h2, G, conv, its = jax.vmap(_newton, in_axes=(0, 0) + (None,) * 8)(
        s1, s2, w[0], w[1], t[0], t[1], V, sigma, gtol, max_iter)
    best = jnp.where(conv.any(), jnp.argmin(jnp.where(conv, G, jnp.inf)), jnp.argmin(G))
    return jnp.stack([h1[best], h2[best]]), G[best], conv[best], its


@jax.jit
def _prox_vmap(w, t, V, sigma, gtol, max_iter):
    node = jax.vmap(_prox_node, in_axes=(0, 0, None, None, None, None))
    return node(w, t, V, sigma, gtol, max_iter)


@jax.jit
def _prox_chunked(w, t, V, sigma, gtol, max_iter):
    return lax.map(lambda wt: _prox_node(*wt, V, sigma, gtol, max_iter), (w, t),
                   batch_size=CHUNK)


def prox_jax(w, t, V, sigma, gtol=1e-13, max_iter=100, *, solver=_prox_vmap):
    """Global prox at every node: ``(h (n, 2), value (n,), converged (n,) bool)``.

    ``w, t`` of shape ``(n, 2)``, ``V`` and ``sigma`` scalars (as at a fixed point).
    """
    h, G, conv, _ = solver(jnp.asarray(w, float), jnp.asarray(t, float), float(V),
                           float(sigma), float(gtol), int(max_iter))
    return np.asarray(h), np.asarray(G), np.asarray(conv)


def prox_jax_chunked(w, t, V, sigma, gtol=1e-13, max_iter=100):
    """:func:`prox_jax` mapped over chunks of ``CHUNK`` nodes."""
    return prox_jax(w, t, V, sigma, gtol, max_iter, solver=_prox_chunked)


def iterations_jax(w, t, V, sigma, gtol=1e-13, max_iter=100):
    """Newton iterations of each start, ``(n, 3)``."""
    return np.asarray(_prox_vmap(jnp.asarray(w, float), jnp.asarray(t, float), float(V),
                                 float(sigma), float(gtol), int(max_iter))[3])


# ---------------------------------------------------------------------------------------------
# measurement


def numpy_prox():
    """The lock-step numpy prox of ``benchmarks/numpy_prox.py``, or None if that file is absent.

    It imports its kernels relatively (``..compile.kernels``), so it is loaded as a module of
    ``symattn.numerics``.
    """
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_prox.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("symattn.numerics._numpy_prox", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.prox


def timed(f, repeat=3):
    """``(result of the last call, best wall time [s], CPU time / wall time of that call)``."""
    best, ratio = np.inf, np.nan
    for _ in range(repeat):
        c0, t0 = os.times(), time.perf_counter()
        out = f()
        wall, c1 = time.perf_counter() - t0, os.times()
        if wall < best:
            best = wall
            ratio = (c1.user + c1.system - c0.user - c0.system) / wall
    return out, best, ratio


def compare(ref, h, G, conv):
    """``(max |h diff| same minimum, # different minimum, max |value diff|)`` against ``ref``."""
    dh = np.max(np.abs(h - ref.h), axis=1)
    same = dh <= 1e-6
    both = same & conv & ref.converged
    return (dh[both].max() if both.any() else np.nan, int(np.count_nonzero(~same)),
            float(np.max(np.abs(G - ref.value))))


def jax_size():
    site = sysconfig.get_paths()["purelib"]
    paths = sorted(glob.glob(os.path.join(site, "jax*")))
    out = subprocess.run(["du", "-shc", *paths], capture_output=True, text=True).stdout
    return out.replace(site + os.sep, "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, nargs="+", default=[14, 16, 18])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    params = ModelParams()
    sigma = params.sigma
    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, numpy {np.__version__}; "
          f"devices {jax.devices()}; {os.cpu_count()} cores")
    print(f"installed size (du -sh site-packages/jax*):\n{jax_size()}")
    print(f"sigma = {sigma}, gtol = 1e-13, max_iter = 100; times: best of {args.repeat}, "
          "us per node; cpu = CPU time / wall time of the timed call")
    ref_prox = numpy_prox()
    if ref_prox is None:
        print("benchmarks/numpy_prox.py not found: the symattn prox is the reference")
    # (name, solver (w, T, t, V) -> (h, value, converged, iterations or None)); first = reference
    refs = [("numpy", lambda w, T, t, V: ref_prox(w, t, V, sigma, gtol=1e-13))] if ref_prox else []
    refs.append(("symattn", lambda w, T, t, V: symattn_prox.prox(w, T, V, sigma, gtol=1e-13)))
    variants = {"vmap": prox_jax, f"chunk{CHUNK}": prox_jax_chunked}
    cols = (f"{'n':>7} {'point':>10} {'solver':>9} {'us/node':>8} {'cpu':>4} {'first s':>8} "
            f"{'max|dh|same':>11} {'#diff min':>9} {'max|dG|':>8} {'#unconv':>7} "
            f"{'it max':>6} {'it med':>6} {'lockstep':>8}")
    blank = {"first": "", "dh": "", "ndiff": "", "dG": "", "itmed": "", "lock": ""}

    def row(n, point, solver, t_call, cpu, **c):
        c = {**blank, **c}
        print(f"{n:>7} {point:>10} {solver:>9} {1e6 * t_call / n:8.2f} {cpu:4.1f} "
              f"{c['first']:>8} {c['dh']:>11} {c['ndiff']:>9} {c['dG']:>8} {c['unconv']:>7} "
              f"{c['itmax']:>6} {c['itmed']:>6} {c['lock']:>8}", flush=True)

    def agreement(ref, h, G, conv):
        dh, ndiff, dG = compare(ref, h, G, conv)
        return {"dh": f"{dh:.1e}", "ndiff": ndiff, "dG": f"{dG:.1e}",
                "unconv": int(np.count_nonzero(~conv))}

    print(cols)
    print("-" * len(cols))
    for log2n in args.log2n:
        nodes = SobolRule(log2n=log2n, seed=0).nodes()
        ch = OutputChannel(params, nodes)
        n = nodes.size
        first_point = True
        for point, x in POINTS.items():
            w, T = ch._setup(np.array(x))
            # the targets: (n, 2, 2) matrices (current channel) or their diagonal (before)
            t = np.ascontiguousarray(T[:, [0, 1], [0, 1]] if T.ndim == 3 else T)
            V = x[3]
            ref = None
            for name, f in refs:
                t0 = time.perf_counter()
                f(w, T, t, V)                   # compile / load kernels outside the timing
                t_first = time.perf_counter() - t0
                out, t_call, cpu = timed(lambda: f(w, T, t, V), args.repeat)
                c = {"unconv": out.n_failed, "itmax": out.iterations}
                if ref is None:
                    ref = out
                else:
                    c.update(agreement(ref, out.h, out.value, out.converged))
                if name == "symattn":
                    c["first"] = f"{t_first:.2f}"
                row(n, point, name, t_call, cpu, **c)
            for label, f in variants.items():
                t0 = time.perf_counter()
                f(w, t, V, sigma)
                t_first = time.perf_counter() - t0  # first call at this shape: trace + compile
                (h, G, conv), t_call, cpu = timed(lambda: f(w, t, V, sigma), args.repeat)
                c = agreement(ref, h, G, conv)
                c["first"] = f"{t_first:.2f}" if first_point else "cached"
                if label == "vmap":
                    its = iterations_jax(w, t, V, sigma)    # compiled by this variant
                    c.update(itmax=its.max(), itmed=f"{np.median(its):.0f}",
                             lock=f"{its.size * its.max() / its.sum():.2f}")
                else:
                    c.update(itmax="", itmed="")
                row(n, point, label, t_call, cpu, **c)
            first_point = False
    print("\nfirst s: wall time of the first call (JAX: trace + compile at this shape, 'cached' "
          "for the second point; symattn: numba compile or load from its on-disk cache).\n"
          "it max / it med: Newton iterations (evaluations, as the reference counts them) of the "
          "slowest start and of the median start (all 3n starts, JAX run); the numpy and "
          "symattn rows show their `iterations` (their slowest start).\nlockstep = 3n * (it max)"
          " / (sum of iterations): work of a lock-step vmap per useful Newton iteration.")


if __name__ == "__main__":
    main()
