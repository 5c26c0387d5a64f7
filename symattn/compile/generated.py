r"""Compiled kernels for a :class:`~symattn.compile.shape.Shape`, generated once and cached on disk.

:func:`shape_kernels` returns a module with, for its shape (``K = L r``, ``K_T = L r_t``):

* ``objective(h, w, T, V, sigma)``: :math:`\mathcal G = \lVert h-w\rVert^2/(2V) + \ell(h, T)`;
  for ``r > 1`` ``V`` is the vector ``(V_1 .. V_r)`` and the quadratic term
  :math:`\sum_{l,a}(h_{la}-w_{la})^2/(2V_a)`: the Moreau term of a matrix response
  :math:`V = U\,\mathrm{diag}(V_a)\,U^\top` in the frame ``h U`` (the loss depends on ``h``
  through :math:`hh^\top` only, so rotating the rank space leaves it unchanged);
* ``objective_derivatives(h, w, T, V, sigma, g, H)``: the value, and ``g`` (``K``), ``H``
  (``K x K``) filled with :math:`\nabla_h\mathcal G` and :math:`\nabla^2_h\mathcal G`;
* ``loss(h, T, sigma)``: :math:`\ell = \tfrac{\sigma^2}{2}\lVert\mathrm{softmax}(hh^\top)-T\rVert_F^2`;
* ``teacher(hs, omega, A, T)``: ``T`` (``L x L``) filled with
  :math:`(1-\omega)\,\mathrm{softmax}(h^*h^{*\top})+\omega A`;
* ``prox_nodes``, ``objective_nodes``, ``derivatives_nodes``, ``loss_nodes``,
  ``teacher_nodes``: the prox and the functions above at every node, in parallel
  (:mod:`symattn.compile.drivers`).

**Array contract.**  One node's ``h``, ``w`` are the flattened ``L x r`` matrices (row by
row: entry ``(l, a)`` at ``l r + a``), ``hs`` the flattened ``L x r_t`` one, ``T`` and ``A``
are ``(L, L)``.  The ``*_nodes`` functions take the same with a leading node axis, ``(n, K)``,
``(n, L, L)``, ``V`` as ``(n,)`` (``(n, r)`` for ``r > 1``), and write per-node results ``(n, ...)`` into arrays passed
last.  All arrays are C-contiguous float64 (``conv`` bool, ``iters`` int64).

:func:`node_kernel` compiles any list of SymPy integrands (atoms of the saddle-point
equations, ``eps_g``'s integrand, ...) into one such parallel function.

**Threads.**  The ``*_nodes`` functions run on all cores with numba's ``workqueue`` threading
layer (chosen here unless ``NUMBA_THREADING_LAYER`` says otherwise): it is fork-safe (the
process pools fork after the first solve) and its idle threads sleep, where OpenMP's spin
and took the other core from the numpy work in between (the default run took twice as long).
It must not be entered by two Python threads at once (numba aborts the process), so every
parallel function of a generated module is called under one process-wide lock.

**Cache.**  Generated modules are Python files in :func:`cache_dir` (``$SYMATTN_CACHE_DIR``,
else ``$XDG_CACHE_HOME/symattn`` or ``~/.cache/symattn``), named by a hash of the code that
generates them (the source of :mod:`symattn.symbolic`, :mod:`symattn.compile` and the model's
symbols) and SymPy's version, so a change of the derivation makes new files; numba caches
their machine code beside them (``cache=True``).  The first process pays the SymPy derivation
and the compilation; later ones load both.  If the folder cannot be written, a temporary one
is used for the process (and the cost is paid again).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

__all__ = ["shape_kernels", "shape_source", "node_kernel", "cached_module", "cache_dir",
           "generation_key",
           "KERNEL_LOCK"]

_PACKAGE = Path(__file__).resolve().parent.parent
#: the code whose text the generated modules depend on
_SOURCES = ("symbolic", "compile", "model/symbols.py")


def cache_dir() -> Path:
    """The folder of generated kernel modules (module doc), created if missing."""
    base = os.environ.get("SYMATTN_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "symattn")
    return Path(base) / "kernels"


@functools.lru_cache(maxsize=None)
def generation_key() -> str:
    """Hash of the generating code and SymPy's version (12 hex digits)."""
    import sympy
    digest = hashlib.sha256(sympy.__version__.encode())
    for rel in _SOURCES:
        path = _PACKAGE / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            digest.update(str(f.relative_to(_PACKAGE)).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


_fallback_dir: Path | None = None
#: held while a parallel kernel runs (module doc, 'Threads')
KERNEL_LOCK = threading.RLock()
_LOAD_LOCK = threading.RLock()


def _configure_numba() -> None:
    """The ``workqueue`` layer (module doc, 'Threads'), unless the environment names one.
    Called when this module is imported, so that it holds before any parallel numba code of
    the process runs; a layer already running is left alone (numba cannot change it)."""
    if "NUMBA_THREADING_LAYER" not in os.environ:
        import numba
        try:
            numba.threading_layer()
        except ValueError:      # not launched yet: it can still be chosen
            numba.config.THREADING_LAYER = "workqueue"


def _locked(fn):
    @functools.wraps(fn)
    def call(*args):
        with KERNEL_LOCK:
            return fn(*args)
    call.dispatcher = fn
    return call


def _writable_dir() -> Path:
    global _fallback_dir
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return folder
    except OSError as e:
        if _fallback_dir is None:
            _fallback_dir = Path(tempfile.mkdtemp(prefix="symattn-kernels-"))
            warnings.warn(f"symattn: cannot write the kernel cache {folder} ({e.strerror}); "
                          f"compiling into {_fallback_dir} for this process only "
                          "(set SYMATTN_CACHE_DIR to a writable folder)", RuntimeWarning,
                          stacklevel=3)
        return _fallback_dir


def cached_module(name: str, make_source):
    """Import the generated module ``name`` from the cache, calling ``make_source()`` for its
    text first if it is missing (module doc: one name, one source).  Thread-safe."""
    with _LOAD_LOCK:
        return _cached_module(name, make_source)


def _cached_module(name, make_source):
    folder = _writable_dir()
    path = folder / f"{name}_{generation_key()}.py"
    if not path.exists():
        text = make_source()
        tmp = folder / f".{path.name}.{os.getpid()}.tmp"
        tmp.write_text(text)
        try:   # the first writer wins: the file never changes once it exists (numba's cache
            os.link(tmp, path)   # index is keyed by its modification time)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    modname = f"symattn_generated_{path.stem}"   # flat: numba's cache imports it by name
    if modname in sys.modules:
        return sys.modules[modname]
    _configure_numba()
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    for name in getattr(module, "PARALLEL", ()):
        setattr(module, name, _locked(getattr(module, name)))
    return module


def shape_source(shape) -> str:
    """The text of :func:`shape_kernels`' module for ``shape`` (derives; no cache)."""
    import sympy as sp

    from ..model.symbols import V, omega, sigma
    from ..symbolic.attention import loss_from_targets, teacher_targets
    from ..symbolic.moreau import MoreauObjective
    from .codegen import HEADER, Argument, chain_derivatives, scalar_function
    from .drivers import DRIVERS
    from .shape import flat

    L, K, KT = shape.L, shape.k, shape.k_t
    h, w, hs = shape.student("h"), shape.student("w"), shape.teacher()
    T, A = shape.square("T"), shape.square("A")
    if shape.r == 1:
        obj = MoreauObjective(h=flat(h), w=flat(w), loss=loss_from_targets(h, T))
        v_arg, v_max = Argument("V", (V,)), "    return V\n"
        objective = obj.expr
    else:   # V diagonal in the frame of the student's rank space given (module doc)
        Vs = tuple(sp.Symbol(f"V_{a + 1}", positive=True) for a in range(shape.r))
        objective = (sum((h[l, a] - w[l, a]) ** 2 / (2 * Vs[a]) for l in range(L)
                         for a in range(shape.r)) + loss_from_targets(h, T))
        v_arg = Argument("V", Vs, (shape.r,))
        v_max = "    m = V[0]\n    for a in range(1, V.shape[0]):\n        m = max(m, V[a])\n    return m\n"
    args = [Argument("h", flat(h), (K,)), Argument("w", flat(w), (K,)),
            Argument("T", flat(T), (L, L)), v_arg, Argument("sigma", (sigma,))]
    parts = [f"# Generated by symattn.compile.generated for {shape}; do not edit.\n", HEADER,
             f"\nL = {L}\nK = {K}\nK_T = {KT}\n\n"]
    stages, value, grad, hess = chain_derivatives(objective, flat(h))
    parts.append("@njit(cache=True, inline=\"always\")\ndef v_max(V):\n"
                 "    \"\"\"The largest Moreau variance (the Newton floor's scale).\"\"\"\n" + v_max)
    parts.append(scalar_function("objective", args, [(None, (), [value])],
                                 "Moreau objective G(h).", stages=stages[:1]))
    parts.append(scalar_function(
        "objective_derivatives", args,
        [(None, (), [value]), ("g", (K,), grad), ("H", (K, K), hess)],
        "G(h); fills g with its gradient and H with its Hessian in h.", stages=stages))
    parts.append(scalar_function(
        "loss", [args[0], args[2], args[4]],
        [(None, (), [loss_from_targets(h, T)])], "The loss given the target matrix T."))
    parts.append(scalar_function(
        "teacher", [Argument("hs", flat(hs), (KT,)), Argument("omega", (omega,)),
                    Argument("A", flat(A), (L, L))],
        [("T", (L, L), flat(teacher_targets(hs, A)))], "Fills T with the teacher's target."))
    parts.append(DRIVERS)
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=None)
def shape_kernels(shape=None):
    """The compiled kernel module of ``shape`` (default: the paper's; module doc)."""
    from .shape import PAPER_SHAPE
    shape = shape or PAPER_SHAPE
    return cached_module(f"shape_{shape.tag}", lambda: shape_source(shape))


@functools.lru_cache(maxsize=None)
def node_kernel(name: str, build):
    """A parallel per-node function compiled from ``build()`` (called only on a cache miss).

    ``build`` returns ``(args, exprs, doc)``: a list of :class:`~symattn.compile.codegen.
    Argument` (array arguments per node), the SymPy integrands and a docstring.  The generated
    function is ``f(*args, out)`` with ``out`` of shape ``(n, len(exprs))``.  ``name`` names
    the cache file: one name, one ``build``.
    """
    def source():
        from .codegen import HEADER, node_function
        args, exprs, doc = build()
        return "\n\n".join([f"# Generated by symattn.compile.generated ({name}); do not edit.\n",
                            HEADER, node_function("kernel", args, exprs, doc),
                            'PARALLEL = ("kernel",)\n'])
    return cached_module(f"nodes_{name}", source).kernel


_configure_numba()
