"""Progress lines for long runs: task k of N, elapsed time, estimated time left."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress", "hms"]


def hms(seconds: float) -> str:
    """``h:mm:ss``."""
    s = int(round(seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Progress lines on a stream: task k/N, elapsed, ETA (weighted by the tasks' costs)."""

    def __init__(self, total_cost: float, n: int, stream=sys.stderr):
        self.total, self.n, self.done_cost, self.k = total_cost, n, 0.0, 0
        self.t0 = time.perf_counter()
        self.stream = stream

    def step(self, cost: float, what: str) -> None:
        """One task of cost ``cost`` finished; print ``what`` with the elapsed time and ETA."""
        self.k += 1
        self.done_cost += cost
        el = time.perf_counter() - self.t0
        eta = el * (self.total - self.done_cost) / self.done_cost if self.done_cost > 0 else 0.0
        print(f"  [{self.k}/{self.n}] {what}  elapsed {hms(el)}, ETA {hms(eta)}",
              file=self.stream, flush=True)
