"""The compiled kernel layer (symattn.compile.generated) for several shapes.

References, independent of the generated code:

* SymPy: the Moreau objective written with the explicit softmax of
  ``symattn.symbolic.attention.loss_general`` (exponentials, not the ``SoftmaxEntry`` /
  ``Logistic`` functions the kernels are generated from), differentiated by SymPy and
  evaluated in mpmath at 30 digits;
* central finite differences of the compiled value (gradient) and gradient (Hessian).
"""

import functools
import os
import subprocess
import sys
import textwrap

import mpmath
import numpy as np
import pytest
import sympy as sp

from symattn.compile.generated import shape_kernels
from symattn.compile.shape import PAPER_SHAPE, Shape, flat
from symattn.model.checks import ParameterError
from symattn.model.symbols import V, omega, sigma
from symattn.symbolic.attention import loss_general, teacher_attention

SHAPES = [PAPER_SHAPE, Shape(L=3, r=1), Shape(L=2, r=2)]


def _random_case(shape, rng, n=6):
    """Nodes of moderate size: |h| ~ 1 (the softmax far from saturation and saturated)."""
    K, L = shape.k, shape.L
    h = rng.normal(scale=1.2, size=(n, K))
    w = rng.normal(size=(n, K))
    T = rng.dirichlet(np.ones(L), size=(n, L))
    # rank r > 1: one Moreau variance per column of the rank space (generated.py's contract)
    Vs = rng.uniform(0.5, 20.0, size=n if shape.r == 1 else (n, shape.r))
    return h, w, T, Vs


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: s.tag)
def shape_case(request):
    shape = request.param
    km = shape_kernels(shape)
    h, w, T, Vs = _random_case(shape, np.random.default_rng(7))
    return shape, km, h, w, T, Vs


@functools.lru_cache(maxsize=None)
def _sympy_reference(shape):
    """``(h, w, T, V, sigma) -> (G, grad, Hessian)`` from the explicit-softmax loss, SymPy's
    derivatives, evaluated in mpmath (at the caller's precision)."""
    H, W, Tm = shape.student("h"), shape.student("w"), shape.square("T")
    # loss_general takes h* and A; with omega = 1 its teacher is A, so A = T is the target
    loss = loss_general(H, shape.teacher(), Tm).subs(omega, 1)
    x = flat(H)
    if shape.r == 1:
        Vv = V
        G = sum((a - b) ** 2 for a, b in zip(x, flat(W))) / (2 * V) + loss
    else:   # sum_{l,a} (h_la - w_la)^2 / (2 V_a)
        Vv = sp.symbols(f"V_1:{shape.r + 1}", positive=True)
        G = sum((H[l, a] - W[l, a]) ** 2 / (2 * Vv[a]) for l in range(shape.L)
                for a in range(shape.r)) + loss
    exprs = [G, [sp.diff(G, a) for a in x], [[sp.diff(G, a, b) for b in x] for a in x]]
    return sp.lambdify((x, flat(W), flat(Tm), Vv, sigma), exprs, modules="mpmath")


def test_value_gradient_hessian_against_sympy(shape_case):
    shape, km, h, w, T, Vs = shape_case
    n, K = h.shape
    G, g, H = np.empty(n), np.empty((n, K)), np.empty((n, K, K))
    km.derivatives_nodes(h, w, T, Vs, 0.5, G, g, H)
    val = np.empty(n)
    km.objective_nodes(h, w, T, Vs, 0.5, val)
    ref = _sympy_reference(shape)
    for i in range(n):
        with mpmath.workdps(30):
            G_ref, g_ref, H_ref = ref(h[i], w[i], T[i].ravel(), Vs[i], mpmath.mpf(0.5))
        G_ref, g_ref, H_ref = float(G_ref), np.array(g_ref, float), np.array(H_ref, float)
        # double precision against 30 digits: a few ulp of the largest terms (~1)
        assert abs(G[i] - G_ref) < 1e-13 and abs(val[i] - G_ref) < 1e-13
        np.testing.assert_allclose(g[i], g_ref, rtol=0, atol=1e-13)
        np.testing.assert_allclose(H[i], H_ref, rtol=0, atol=1e-12)


def test_derivatives_against_finite_differences(shape_case):
    shape, km, h, w, T, Vs = shape_case
    n, K = h.shape
    G, g, H = np.empty(n), np.empty((n, K)), np.empty((n, K, K))
    km.derivatives_nodes(h, w, T, Vs, 0.5, G, g, H)
    step = 1e-5
    for k in range(K):
        e = np.zeros(K)
        e[k] = step
        Gp, gp, Hp = np.empty(n), np.empty((n, K)), np.empty((n, K, K))
        Gm, gm, Hm = np.empty(n), np.empty((n, K)), np.empty((n, K, K))
        km.derivatives_nodes(h + e, w, T, Vs, 0.5, Gp, gp, Hp)
        km.derivatives_nodes(h - e, w, T, Vs, 0.5, Gm, gm, Hm)
        # central differences: truncation step^2 * |third derivative| / 6 (~1e-10 here) plus
        # rounding 1e-16 / step (~1e-11); 1e-8 leaves room and still catches any wrong term
        np.testing.assert_allclose((Gp - Gm) / (2 * step), g[:, k], rtol=0, atol=1e-8)
        np.testing.assert_allclose((gp - gm) / (2 * step), H[:, :, k], rtol=0, atol=1e-8)
    np.testing.assert_array_equal(H, np.swapaxes(H, 1, 2))


def test_teacher_and_loss_against_sympy(shape_case):
    shape, km, h, w, T, Vs = shape_case
    rng = np.random.default_rng(3)
    n = h.shape[0]
    hs = rng.normal(scale=1.2, size=(n, shape.k_t))
    A = rng.dirichlet(np.ones(shape.L), size=shape.L)
    Tk = np.empty((n, shape.L, shape.L))
    km.teacher_nodes(hs, 0.3, A, Tk)
    Hs, Am = shape.teacher(), shape.square("A")
    ref = teacher_attention(Hs, Am)
    for i in range(n):
        sub = {**dict(zip(flat(Hs), hs[i])), **dict(zip(flat(Am), A.ravel())), omega: 0.3}
        Tr = np.array(ref.subs(sub).evalf(30), dtype=float)
        np.testing.assert_allclose(Tk[i], Tr, rtol=0, atol=1e-15)
    np.testing.assert_allclose(Tk.sum(axis=2), 1.0, rtol=0, atol=1e-15)
    out = np.empty(n)
    km.loss_nodes(h, T, 0.5, out)
    Hm, Tm = shape.student("h"), shape.square("T")
    loss = loss_general(Hm, shape.teacher(), Tm).subs(omega, 1)
    for i in range(3):
        sub = {**dict(zip(flat(Hm), h[i])), **dict(zip(flat(Tm), T[i].ravel())), sigma: 0.5}
        assert abs(out[i] - float(loss.subs(sub).evalf(30))) < 1e-15


def test_prox_on_a_general_shape_is_a_local_minimum():
    """Newton from given starts for L = 3 (the start sets of the general model are the next
    issue's): first- and second-order conditions at the result, and the lowest of the starts'
    minima kept."""
    shape = Shape(L=3, r=1)
    km = shape_kernels(shape)
    rng = np.random.default_rng(11)
    n, s, K = 50, 4, shape.k
    _, w, T, Vs = _random_case(shape, rng, n)
    starts = np.ascontiguousarray(w[:, None, :] + rng.normal(size=(n, s, K)))
    h, h2 = np.empty((n, K)), np.empty((n, K))
    G, G2, conv = np.empty(n), np.empty(n), np.empty(n, bool)
    iters = np.empty(n, np.int64)
    km.prox_nodes(w, T, Vs, 0.5, starts, 1e-12, 100, h, G, conv, h2, G2, iters)
    assert conv.all()
    Gc, g, H = np.empty(n), np.empty((n, K)), np.empty((n, K, K))
    km.derivatives_nodes(h, w, T, Vs, 0.5, Gc, g, H)
    assert np.abs(g).max() <= 1e-12
    assert (np.linalg.eigvalsh(H)[:, 0] > 0).all()
    np.testing.assert_array_equal(Gc, G)
    assert (G2[np.isfinite(G2)] >= G[np.isfinite(G2)]).all()


def test_shape_is_validated():
    with pytest.raises(ParameterError, match="L"):
        Shape(L=1)
    with pytest.raises(ParameterError, match="r"):
        Shape(L=2, r=0)


def _run(code, env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_second_process_loads_from_the_cache(tmp_path):
    """The first process generates and compiles; the second neither derives (SymPy's saddle-
    point derivation and the kernel source are made to fail) nor regenerates."""
    env = {**os.environ, "SYMATTN_CACHE_DIR": str(tmp_path)}
    first = """
        import numpy as np
        from symattn.model.params import ModelParams
        from symattn.numerics.channel import OutputChannel
        from symattn.numerics.quadrature import SobolRule
        st = OutputChannel(ModelParams(), SobolRule(8, 0).nodes()).evaluate(
            np.array([0.08, 0.0, 0.11, 18.0]))
        print(repr(st.means.tolist()))
    """
    r1 = _run(first, env)
    assert r1.returncode == 0, r1.stderr
    files = sorted(p.name for p in (tmp_path / "kernels").glob("*.py"))
    # the shape's kernels, its fused channel pass (the paper's start set) and the general
    # equations of the shape (the solvers no longer need the paper's scalar equations module)
    assert len(files) == 3, files
    second = textwrap.dedent("""
        import symattn.compile.generated as gen, symattn.compile.kernels as kern
        import symattn.compile.general_channel as gch, symattn.compile.general_equations as geq
        import symattn.symbolic.general as sg
        def refuse(*a, **k):
            raise AssertionError("derived again")
        kern._equations = refuse
        gen.shape_source = refuse
        gch.channel_source = refuse
        geq.general_equations_source = refuse
        sg.derive_general_saddle_point = refuse
    """) + textwrap.dedent(first)
    r2 = _run(second, env)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout == r1.stdout
    assert sorted(p.name for p in (tmp_path / "kernels").glob("*.py")) == files


@pytest.mark.slow
def test_unwritable_cache_falls_back_with_a_warning():
    env = {**os.environ, "SYMATTN_CACHE_DIR": "/proc/symattn-cannot-write"}
    r = _run("""
        import warnings, numpy as np
        warnings.simplefilter("always")
        from symattn.numerics.prox import prox
        print(prox(np.zeros((3, 2)), np.full((3, 2), 0.6), 10.0, 0.5).converged.all())
    """, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
    assert "cannot write the kernel cache" in r.stderr


def test_two_python_threads_may_call_the_kernels():
    """numba's workqueue layer aborts the process if two threads enter it at once; symattn
    serialises its parallel kernels (run in a subprocess: an abort would kill pytest)."""
    r = _run("""
        import threading, numpy as np
        from symattn.numerics.prox import prox
        rng = np.random.default_rng(0)
        w, t = rng.normal(size=(20000, 2)), rng.uniform(0.3, 0.9, size=(20000, 2))
        out = []
        def work():
            for _ in range(5):
                out.append(prox(w, t, 10.0, 0.5).converged.all())
        ts = [threading.Thread(target=work) for _ in range(3)]
        [x.start() for x in ts]
        [x.join() for x in ts]
        print(all(out), len(out))
    """, os.environ.copy())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True 15"


@pytest.mark.slow
def test_pools_survive_openmp_started_before_symattn():
    """Code outside symattn that ran a parallel numba function first leaves numba on OpenMP
    where it is available (not fork-safe: libgomp terminates forked children); symattn's
    pools then spawn instead of fork, and the run completes."""
    r = _run("""
        import numba, numpy as np
        from numba import njit, prange
        @njit(parallel=True)
        def f(x):
            s = 0.0
            for i in prange(x.size):
                s += x[i]
            return s
        f(np.ones(1000))
        layer = numba.threading_layer()
        from symattn.model.params import ModelParams
        from symattn.numerics.settings import NumericalSettings
        from symattn.numerics.thresholds import compute_thresholds
        th = compute_thresholds(ModelParams(), NumericalSettings(log2n=8, rules=3))
        print(layer, np.isfinite(th.alpha_c))
    """, {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "True"
