"""Is a simulation's size sensible, and will its data fit in memory?  Checked before it starts,
not after it fails."""

from __future__ import annotations

import os

from ..model.checks import ParameterError, check_int
from .data import AUTO_FLOAT32_BYTES, check_instance, n_sentences

__all__ = ["dataset_bytes", "check_memory", "check_size", "MAX_TEST_WORK"]

#: Largest ``n_test * d`` (test sentences times dimension) of one instance: scoring that many
#: costs about 20 s per instance on one core (measured: 1e5 sentences at d = 1000 in 10 s).
MAX_TEST_WORK = 2 * 10**8


def check_size(d, alpha, n_test: int | None = None, copies: int = 1, *, d_name: str = "d",
               n_test_name: str = "n_test") -> tuple:
    """``(d, alpha)`` checked for a simulation: as :func:`~symattn.simulation.data.check_instance`,
    and ``n_test * d <= MAX_TEST_WORK`` and ``copies`` data sets that fit in memory
    (:func:`check_memory`).  Raises :class:`ParameterError`."""
    d, alpha = check_instance(d, alpha, d_name=d_name)
    if n_test is not None:
        n_test = check_int(n_test_name, n_test, 1)
        if n_test * d > MAX_TEST_WORK:
            raise ParameterError(n_test_name, f"{n_test} test sentences at d = {d} is more than "
                                              f"{MAX_TEST_WORK:.0e} / d = {MAX_TEST_WORK // d} "
                                              "(about 20 s per instance); use more seeds instead")
    check_memory(d, alpha, copies, d_name)
    return d, alpha


def dataset_bytes(d: int, alpha: float) -> int:
    """Bytes of the stored tokens ``Z`` of one data set (float32 above 1 GiB, as ``dtype="auto"``)."""
    b = 8 * 2 * n_sentences(d, alpha) * d
    return b if b <= AUTO_FLOAT32_BYTES else b // 2


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(d: int, alpha: float, copies: int = 1, name: str = "d") -> None:
    """Raise :class:`ParameterError` (naming ``name``) if ``copies`` data sets of size
    ``(d, alpha)`` would not fit in the available memory (with 50 % headroom)."""
    need = 1.5 * copies * dataset_bytes(d, alpha)
    avail = _available_memory()
    if avail is not None and need > avail:
        raise ParameterError(name, f"d = {d} at alpha = {alpha:g} needs about {need / 2**30:.1f} GiB "
                             f"({copies} data set(s)), only {avail / 2**30:.1f} GiB available")


