"""One run per output: an exclusive lock on a results folder or file.

:func:`output_lock` takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on a lock file beside the output
(``DIR/.lock`` for a folder, ``FILE.lock`` for a file) and writes the holder's pid and start
time into it.  A second run on the same output is refused at once with
:class:`OutputInUse` (a :class:`~symattn.model.ParameterError` named ``out``) that quotes them.

Why it never goes stale: the kernel drops a ``flock`` lock when the last file descriptor of its
open file description is closed, which happens when the holder exits, however it exits
(SIGKILL included).  The lock *file* stays behind after a killed run (a clean exit removes
it); it holds no state, and the next run simply locks it again.

One caveat, and how it is handled: a child made by ``fork`` shares the parent's open file
descriptions, so a forked worker that outlived its killed parent would keep the lock.  Every
lock descriptor is therefore closed in each forked child (:func:`os.register_at_fork`;
closing the child's copy does not release the parent's lock), it is not inheritable across
``exec``, and the workers of :func:`symattn.runs.executors.process_pool` die with their parent
in any case.

The lock is re-entrant within one process: taking it again on the same output (e.g. the
command line around a library call that locks too) only counts.  Local filesystems only:
``flock`` on NFS is emulated and may not exclude runs on other hosts.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from ..model.params import ParameterError
from .paths import check_output_dir, check_output_file

__all__ = ["output_lock", "OutputInUse", "lock_path"]

#: lock files held by this process: resolved path -> [pid, fd, depth]
_HELD: dict = {}


class OutputInUse(ParameterError):
    """Another live run holds the lock on this output (``name`` is ``out``)."""

    def __init__(self, target, holder: str):
        super().__init__("out", f"{target} is in use by another symattn run ({holder}); wait for "
                                "it or choose another --out")
        self.target = Path(target)


def lock_path(target, folder: bool = True) -> Path:
    """The lock file of an output: ``target/.lock`` for a folder, ``target.lock`` for a file."""
    target = Path(target)
    return target / ".lock" if folder else target.with_name(target.name + ".lock")


def _close_in_child() -> None:
    """After ``fork``: close the child's copies of the lock descriptors (the parent keeps its
    locks: a ``flock`` lock lasts until the *last* descriptor of its open file is closed)."""
    for key, (pid, fd, _) in list(_HELD.items()):
        try:
            os.close(fd)
        except OSError:
            pass
        del _HELD[key]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


def _holder(path: Path) -> str:
    """``pid N, started ...`` as written by the holder (it may not have written it yet)."""
    try:
        text = path.read_text().split()
    except OSError:
        text = []
    if len(text) >= 2 and text[0].isdigit():
        try:
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(text[1])))
        except (ValueError, OverflowError, OSError):
            started = "at an unknown time"
        return f"pid {text[0]}, started {started}"
    return "pid unknown: it is starting"


def _prepare(target: Path, folder: bool) -> Path:
    """Create what the lock file needs (the folder, or the file's parent); errors name ``out``."""
    if folder:
        check_output_dir(target)
    else:
        check_output_file(target)
    return lock_path(target, folder)


def _acquire(path: Path, target: Path) -> int:
    """Open and lock ``path``; the descriptor.  The file is re-checked after locking: a
    holder that released it may have removed it meanwhile, and a lock on a removed file
    excludes nobody."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ParameterError("out", f"cannot create the lock file {path}: {exc.strerror}") \
                from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputInUse(target, _holder(path)) from None
        except OSError as exc:
            os.close(fd)
            raise ParameterError("out", f"cannot lock {path}: {exc.strerror}") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextmanager
def output_lock(target, *, folder: bool = True):
    """Hold the exclusive lock on the output ``target`` (a folder, or a file with
    ``folder=False``) for the ``with`` block; yields the lock file's path.

    Creates the folder (or the file's parent).  Raises :class:`OutputInUse` at once if another
    live process holds it (the message gives its pid and start time), and
    :class:`~symattn.model.ParameterError` (name ``out``) if the output cannot be created or
    locked.  Released on leaving the block (the lock file is then removed) or, if the process
    is killed, by the kernel (the file stays; see the module doc).
    """
    target = Path(target)
    path = _prepare(target, folder)
    key = str(path.resolve())
    held = _HELD.get(key)
    if held is not None and held[0] == os.getpid():
        held[2] += 1
        try:
            yield path
        finally:
            held[2] -= 1
        return
    fd = _acquire(path, target)
    _HELD[key] = [os.getpid(), fd, 1]
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {time.time():.0f}\n".encode())
        yield path
    finally:
        del _HELD[key]
        try:
            os.unlink(path)     # while still locked: a waiting opener then sees another inode
        except OSError:
            pass
        os.close(fd)
