"""Will a data set fit in memory?  Checked before a simulation starts, not after it fails."""

from __future__ import annotations

import os

from ..model.params import ParameterError
from .data import AUTO_FLOAT32_BYTES, n_sentences

__all__ = ["dataset_bytes", "check_memory"]


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


