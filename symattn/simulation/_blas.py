"""Temporarily limit the threads of the OpenBLAS libraries loaded in this process.

Why: numpy and scipy wheels each bundle their own OpenBLAS, each with its own thread pool
whose idle workers busy-wait after every call.  The L-BFGS-B driver (scipy's BLAS, tiny
matrices) alternating with the risk evaluation makes the two pools fight for the cores, which
made a solve much slower than with one thread (measured: docs/numerics.md, section 'Theory
against finite-size training').  The risk
kernel itself uses ``numpy.einsum`` (no BLAS, as fast as threaded ``gemv`` for these
memory-bound products), so a single BLAS thread costs nothing.

This is the mechanism of ``threadpoolctl`` reduced to OpenBLAS on Linux, standard library only.
Where the libraries or their symbols cannot be found it silently does nothing.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager

__all__ = ["limit_blas_threads"]

_SYMBOLS = (
    ("openblas_set_num_threads", "openblas_get_num_threads"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
)


def _loaded_openblas_paths() -> list[str]:
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if ".so" in p)


def _controllers():
    out = []
    for path in _loaded_openblas_paths():
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            setter = getattr(lib, set_name, None)
            getter = getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                out.append((setter, getter))
                break
    return out


@contextmanager
def limit_blas_threads(n_threads: int | None = 1):
    """Within the block, every loaded OpenBLAS uses at most ``n_threads`` threads.

    ``None`` leaves them alone.  Previous settings are restored on exit.
    """
    if n_threads is None:
        yield
        return
    saved = []
    try:
        for setter, getter in _controllers():
            old = getter()
            saved.append((setter, old))
            setter(min(old, int(n_threads)))
    except Exception:  # pragma: no cover - never let thread control break a computation
        pass
    try:
        yield
    finally:
        for setter, old in saved:
            setter(old)
