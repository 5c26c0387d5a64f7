"""Output paths checked before any work: a run that cannot save its results is refused at once.

Both checks create the missing folders (as the run would) and write and remove a probe file
where the results will go, so that a read-only folder, a file standing where a folder should be
(``--out /etc/hostname/x``) or a pseudo file system (``/proc``) is reported in one line naming
the parameter, before the computation rather than after it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..model.checks import ParameterError

__all__ = ["check_output_file", "check_output_dir"]


def check_output_file(path, name: str = "out") -> Path:
    """``path`` as a :class:`Path` to a file that can be written (its folder is created)."""
    path = Path(path)
    if path.is_dir():
        raise ParameterError(name, f"{path} is a folder; give a file name")
    _writable_folder(path.parent, name)
    return path


def check_output_dir(path, name: str = "out") -> Path:
    """``path`` as a :class:`Path` to a folder that exists (created if needed) and is writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ParameterError(name, f"{path} is a file; give a folder")
    _writable_folder(path, name)
    return path


def _writable_folder(folder: Path, name: str) -> None:
    for above in (folder, *folder.parents):
        if above.exists():
            if not above.is_dir():
                raise ParameterError(name, f"{above} is a file, not a folder")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".symattn-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ParameterError(name, f"cannot write in {folder}: {exc.strerror or exc}") from None
