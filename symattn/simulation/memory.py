"""Is a simulation's size sensible, and will its data fit in memory?  Checked before it starts,
not after it fails.

The limits of one instance live here (:data:`MAX_D`, :func:`check_instance`,
:func:`n_sentences`, :data:`AUTO_FLOAT32_BYTES`, :data:`MAX_TEST_WORK`), not in the simulator
(:mod:`symattn.simulation.general`), so that the command line checks its input without loading
scipy.
"""

from __future__ import annotations

import os

from ..model.checks import ParameterError, check_alpha, check_int

__all__ = ["MAX_D", "AUTO_FLOAT32_BYTES", "MAX_TEST_WORK", "n_sentences", "check_instance",
           "check_n_test", "dataset_bytes", "check_memory", "check_size"]

#: Largest dimension accepted.
MAX_D = 10**7

#: ``dtype="auto"`` stores the tokens ``Z`` as float32 above this many float64 bytes (1 GiB).
AUTO_FLOAT32_BYTES = 1 << 30

#: Largest ``n_test * d`` (test sentences times dimension) of one instance: scoring that many
#: costs about 20 s per instance on one core (measured: 1e5 sentences at d = 1000 in 10 s).
MAX_TEST_WORK = 2 * 10**8


def n_sentences(d: int, alpha: float) -> int:
    """``n = round(alpha d)`` training sentences (:func:`check_instance` refuses 0)."""
    return int(round(alpha * d))


def check_instance(d, alpha, seed=0, *, d_name: str = "d") -> tuple:
    """``(d, alpha)`` of one data set, checked: ``d`` an integer in ``[2, MAX_D]``, ``alpha > 0``
    with at least one training sentence (``round(alpha d) >= 1``), ``seed`` a non-negative
    integer.  Raises :class:`ParameterError` naming the parameter."""
    d = check_int(d_name, d, 2, MAX_D)
    alpha = check_alpha(alpha)
    check_int("seed", seed, 0)
    if n_sentences(d, alpha) < 1:
        raise ParameterError("alpha", f"alpha d = {alpha * d:.3g} rounds to no training sentence; "
                                      f"need alpha >= {0.5 / d:.3g} at d = {d}")
    return d, alpha


def check_n_test(n_test, d: int, name: str = "n_test") -> int:
    """``n_test`` test sentences at dimension ``d``, checked: a positive integer with
    ``n_test * d <= MAX_TEST_WORK``.  Raises :class:`ParameterError` naming ``name``."""
    n_test = check_int(name, n_test, 1)
    if n_test * d > MAX_TEST_WORK:
        raise ParameterError(name, f"{n_test} test sentences at d = {d} is more than "
                                   f"{MAX_TEST_WORK:.0e} / d = {MAX_TEST_WORK // d} "
                                   "(about 20 s per instance); use more seeds instead")
    return n_test


def check_size(d, alpha, n_test: int | None = None, copies: int = 1, *, L: int = 2,
               d_name: str = "d", n_test_name: str = "n_test") -> tuple:
    """``(d, alpha)`` checked for a simulation with ``L`` tokens per sentence: as
    :func:`check_instance`, and (:func:`check_n_test`) ``n_test * d <= MAX_TEST_WORK`` and
    ``copies`` data sets that fit in memory (:func:`check_memory`).  Raises
    :class:`ParameterError`."""
    d, alpha = check_instance(d, alpha, d_name=d_name)
    if n_test is not None:
        check_n_test(n_test, d, n_test_name)
    check_memory(d, alpha, copies, d_name, L=L)
    return d, alpha


def dataset_bytes(d: int, alpha: float, L: int = 2) -> int:
    """Bytes of the stored tokens ``Z`` (``n x L x d``) of one data set (float32 above 1 GiB,
    as ``dtype="auto"``)."""
    b = 8 * L * n_sentences(d, alpha) * d
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


def check_memory(d: int, alpha: float, copies: int = 1, name: str = "d", *, L: int = 2) -> None:
    """Raise :class:`ParameterError` (naming ``name``) if ``copies`` data sets of size
    ``(d, alpha)`` with ``L`` tokens per sentence would not fit in the available memory (with
    50 % headroom)."""
    need = 1.5 * copies * dataset_bytes(d, alpha, L)
    avail = _available_memory()
    if avail is not None and need > avail:
        tokens = "" if L == 2 else f" with L = {L}"
        raise ParameterError(name, f"d = {d} at alpha = {alpha:g}{tokens} needs about "
                                   f"{need / 2**30:.1f} GiB ({copies} data set(s)), only "
                                   f"{avail / 2**30:.1f} GiB available")
