"""Where tasks run: local processes, this process, or a Dask cluster.

Local process pools come from one factory, :func:`process_pool`: its workers die with the
process that made them.  Killing that parent (any signal, SIGKILL included) therefore leaves
no worker computing lost work or idling for good.  On Linux each worker asks the kernel for
SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread in
the worker checks once a second that its parent is still the same process and exits if not.
The multiprocessing resource tracker needs nothing: it exits when the last process holding
its pipe (the parent and the workers) is gone.

:func:`signals_raise_interrupt` turns SIGTERM and SIGHUP into :class:`KeyboardInterrupt` in
the main thread, so a terminated run takes the same path as Ctrl-C: completed tasks are
saved, and :meth:`WorkerPool.__exit__` (or :func:`stop_pool`) ends the workers without
waiting for their running tasks.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager

from ..model.params import ParameterError

__all__ = ["default_workers", "map_tasks", "InProcess", "as_completed_jobs", "dask_executor",
           "process_pool", "WorkerPool", "stop_pool", "signals_raise_interrupt",
           "SignalInterrupt"]

#: seconds between two checks of a worker that its parent is alive (the portable fallback)
PARENT_POLL = 1.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end this process when ``parent`` (the pool's creator) is gone.

    On Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the worker as soon as
    the thread that forked it exits.  Everywhere (and as a fallback), a daemon thread
    compares :func:`os.getppid` with ``parent`` every :data:`PARENT_POLL` seconds and calls
    :func:`os._exit` when they differ (the worker was re-parented).  A parent that died
    before this ran is caught by the first comparison.

    SIGTERM and SIGHUP get their default effect again: a forked worker inherits the parent's
    handlers (e.g. those of :func:`signals_raise_interrupt`), and :meth:`WorkerPool.terminate`
    must end it.  SIGINT keeps Python's default (Ctrl-C interrupts the task; the parent
    handles the rest).
    """
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch():
        while True:
            threading.Event().wait(PARENT_POLL)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="symattn-parent-watch", daemon=True).start()


def _init_worker(parent: int, threads: int) -> None:
    """Worker initializer: :func:`_die_with_parent`, and the compiled kernels limited to
    ``threads`` threads (the pool's workers share the cores; more would oversubscribe them)."""
    _die_with_parent(parent)
    if "numba" in sys.modules:
        numba = sys.modules["numba"]
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)


class WorkerPool(ProcessPoolExecutor):
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose workers die with their parent
    (module doc); made by :func:`process_pool`.

    Used as a context manager it waits for its tasks on a normal exit, and on an exception
    (``KeyboardInterrupt`` included) cancels the pending tasks and terminates the workers at
    once (:meth:`terminate`): their results could not be saved anyway.

    Create and use it from a thread that outlives it: on Linux a worker is killed when the
    *thread* that started it ends.
    """

    def __init__(self, max_workers: int | None = None, mp_context=None):
        workers = max_workers or default_workers()
        threads = max(1, _cores() // workers)
        super().__init__(max_workers=workers, mp_context=mp_context,
                         initializer=_init_worker, initargs=(os.getpid(), threads))

    def terminate(self, timeout: float = 5.0) -> None:
        """Cancel the pending tasks and end the workers without waiting for running ones:
        SIGTERM, then SIGKILL for a worker still alive after ``timeout`` seconds.  On return
        every future is done: the running tasks' are broken with the pool (the executor's
        manager thread marks them when it sees the workers gone; it is waited for, up to
        ``timeout`` seconds, since on a loaded machine it can lag behind)."""
        procs = list((self._processes or {}).values())
        manager = getattr(self, "_executor_manager_thread", None)
        self.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout)
            if p.is_alive():
                p.kill()
                p.join(1.0)
        if manager is not None and manager is not threading.current_thread():
            manager.join(timeout)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.shutdown(wait=True)
        else:
            self.terminate()
        return False


def process_pool(workers: int | None = None, *, spawn: bool = False) -> WorkerPool:
    """The local process pool of symattn: ``workers`` processes (default
    :func:`default_workers`) that die with this process (:class:`WorkerPool`).

    ``spawn=True``: fresh interpreters (safe whatever threads this process runs); otherwise
    ``fork`` where the platform offers it (workers start at once and share the parent's
    imports), else the platform's default.  Also ``spawn`` when numba already runs its
    OpenMP threads in this process (code outside symattn ran a parallel numba function
    before symattn chose the fork-safe layer): a forked child would be terminated by libgomp.
    """
    methods = multiprocessing.get_all_start_methods()
    method = ("spawn" if spawn or "fork" not in methods or sys.platform == "darwin"
              or _openmp_running() else "fork")
    return WorkerPool(max_workers=workers or default_workers(),
                      mp_context=multiprocessing.get_context(method))


def _openmp_running() -> bool:
    """Whether numba's threading layer in this process is OpenMP (not fork-safe)."""
    numba = sys.modules.get("numba")
    if numba is None:
        return False
    try:
        return numba.threading_layer() == "omp"
    except ValueError:          # no parallel region has run yet: the layer is still open
        return False


def stop_pool(executor) -> None:
    """End ``executor`` without waiting for running tasks: a :class:`WorkerPool` terminates its
    workers, other executors cancel their pending tasks and return at once."""
    if isinstance(executor, WorkerPool):
        executor.terminate()
    elif executor is not None and hasattr(executor, "shutdown"):
        try:
            executor.shutdown(wait=False, cancel_futures=True)
        except TypeError:                 # an executor without cancel_futures (e.g. Dask's)
            executor.shutdown(wait=False)


class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM or SIGHUP received (``signum``): handled as Ctrl-C is."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def signals_raise_interrupt(signums=("SIGTERM", "SIGHUP")):
    """Within the block, the signals ``signums`` raise :class:`SignalInterrupt` (a
    :class:`KeyboardInterrupt`) in the main thread, so a terminated run cleans up as after
    Ctrl-C.  The first such signal raises; a second one then has its default effect (the
    process ends at once; its workers follow it).  The previous handlers are restored on
    leaving.  Outside the main thread (where Python cannot set handlers) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    nums = [getattr(signal, n) for n in signums if hasattr(signal, n)]
    previous = {n: signal.getsignal(n) for n in nums}

    def handler(signum, frame):
        for n in nums:
            signal.signal(n, signal.SIG_DFL)
        raise SignalInterrupt(signum)

    for n in nums:
        signal.signal(n, handler)
    try:
        yield
    finally:
        for n, h in previous.items():
            signal.signal(n, h)


def _cores() -> int:
    """Cores available to this process."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def default_workers() -> int:
    """One worker process per core available to this process (at most 8)."""
    return min(_cores(), 8)


def map_tasks(fn, tasks, executor: Executor | None = None, progress=None, *, total=None,
              done: int = 0) -> list:
    """``[fn(t) for t in tasks]`` on ``executor`` (default: :func:`process_pool` with one
    worker per core, shut down afterwards, its workers terminated if this raises or is
    interrupted), in order; ``progress(k, total, result)`` is called as each result arrives,
    ``k`` counting from ``done + 1``."""
    if executor is None:
        with process_pool() as pool:
            return map_tasks(fn, tasks, pool, progress, total=total, done=done)
    results = []
    for k, r in enumerate(executor.map(fn, tasks), start=done + 1):
        results.append(r)
        if progress:
            progress(k, total, r)
    return results


class InProcess:
    """``executor.map`` in the calling process (e.g. ``compute_thresholds`` inside one task)."""

    @staticmethod
    def map(fn, *iterables):
        return map(fn, *iterables)


def as_completed_jobs(pool, jobs: dict):
    """Run ``fn(*args)`` for each ``key: (fn, args)`` of ``jobs``; yield ``(key, result,
    exception)`` as each finishes.  ``pool=None``: one after the other in this process."""
    if pool is None:
        for key, (fn, args) in jobs.items():
            try:
                res = fn(*args)
            except Exception as exc:  # noqa: BLE001 - handed to the caller
                yield key, None, exc
                continue
            yield key, res, None
        return
    futures = {pool.submit(fn, *args): key for key, (fn, args) in jobs.items()}
    for f in as_completed(futures):
        exc = f.exception()
        yield futures[f], (None if exc else f.result()), exc


def dask_executor(address: str):
    """A :class:`concurrent.futures.Executor` on the Dask cluster at ``address``."""
    try:
        from distributed import Client
    except ImportError:
        raise ParameterError("scheduler", "needs dask.distributed: pip install 'symattn[dask]'") \
            from None
    try:
        client = Client(address, timeout="10s")
    except OSError as exc:
        raise ParameterError("scheduler", f"cannot connect to {address}: {exc}") from None
    return client.get_executor()
