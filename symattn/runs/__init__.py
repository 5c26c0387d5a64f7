"""Resumable runs: what every long computation of symattn shares.

- :mod:`.files` -- the one atomic writer (:func:`~.files.atomic_write_text`, :func:`~.files.write_json`),
  reading a result file with an error that names it, and :class:`~.files.TidyCSV`, a CSV whose rows
  are appended (and ``fsync``'ed) as they are produced and repaired when a killed run cut the last one;
- :mod:`.metadata` -- the software versions recorded beside a run's results;
- :mod:`.progress` -- progress lines with elapsed time and an estimate of the time left;
- :mod:`.executors` -- process pools whose workers die with their parent
  (:func:`~.executors.process_pool`), SIGTERM and SIGHUP as Ctrl-C
  (:func:`~.executors.signals_raise_interrupt`), an in-process stand-in, a Dask executor and
  :func:`~.executors.map_tasks`;
- :mod:`.lock` -- one run per output folder or file (:func:`~.lock.output_lock`).

Used by ``validate``, ``phase-diagram``, ``thresholds --precision high`` and the benchmarks.  This
room imports nothing from symattn but :mod:`symattn.model` (for :class:`~symattn.model.ParameterError`).
"""
from .executors import (InProcess, SignalInterrupt, WorkerPool, as_completed_jobs, dask_executor,
                        default_workers, map_tasks, process_pool, signals_raise_interrupt,
                        stop_pool)
from .files import DamagedFile, TidyCSV, atomic_write_text, read_json, write_json, write_rows
from .lock import OutputInUse, output_lock
from .metadata import versions
from .progress import Progress

__all__ = ["atomic_write_text", "write_json", "read_json", "write_rows", "TidyCSV", "DamagedFile",
           "versions", "Progress", "InProcess", "as_completed_jobs", "dask_executor",
           "default_workers", "map_tasks", "process_pool", "WorkerPool", "stop_pool",
           "signals_raise_interrupt", "SignalInterrupt", "output_lock", "OutputInUse"]
