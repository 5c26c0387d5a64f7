"""Where tasks run: local processes, this process, or a Dask cluster."""
from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed

from ..model.params import ParameterError

__all__ = ["default_workers", "map_tasks", "InProcess", "as_completed_jobs", "dask_executor"]


def default_workers() -> int:
    """One worker process per core available to this process (at most 8)."""
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1), 8))


def map_tasks(fn, tasks, executor: Executor | None = None, progress=None, *, total=None,
              done: int = 0) -> list:
    """``[fn(t) for t in tasks]`` on ``executor`` (default: a process pool with one worker per
    core, shut down afterwards), in order; ``progress(k, total, result)`` is called as each
    result arrives, ``k`` counting from ``done + 1``."""
    own = executor is None
    ex = executor or ProcessPoolExecutor(max_workers=default_workers())
    results = []
    try:
        for k, r in enumerate(ex.map(fn, tasks), start=done + 1):
            results.append(r)
            if progress:
                progress(k, total, r)
    finally:
        if own:
            ex.shutdown()
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
