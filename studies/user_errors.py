"""Every way a user can hurt a run, tried as a user would (issue 18).

Question: does each command the issue quotes give a clear line with exit status 2 (bad input,
bad path), an answer (0), or "not found" (3), within 60 s and without a traceback?

How: each case is run as ``python -m symattn ...`` in a fresh subprocess with a 60 s timeout
(output folders in a temporary folder), and classified: exit status, whether stderr holds a
traceback, whether the time ran out (a hang), the number of stderr lines on an exit 2, and
whether the status is one the case allows.  A status outside ``allowed`` is a wrong answer:
for instance exit 0 where the input is outside the model's measured domain.  The cases that
need a prepared folder (damaged files, concurrent runs, killed runs) are tested in
``tests/test_runs_robust.py``; the fuzz over every command's options in ``tests/test_door.py``.

Found (2026-12-02, 2-core machine; see the closing note of issue 18): see the printed table.

Rerun::

    python studies/user_errors.py            # all cases, about five minutes
    python studies/user_errors.py --quick    # only the cases that end at the door
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

#: (arguments after ``symattn``, allowed exit statuses, the issue's complaint);
#: ``{tmp}`` is a fresh temporary folder.
CASES = [
    ("thresholds --sigma 1e-308", {2}, "traceback: invalid starting point"),
    ("thresholds --lam 1e6 --log2n 10 --rules 2", {2}, "traceback: need q > 0"),
    ("phase-diagram --omegas 0:inf:0.1 --out {tmp}/pd", {2}, "traceback: OverflowError"),
    ("phase-diagram --out /proc/x", {2}, "traceback"),
    ("phase-diagram --out /etc/hostname", {2}, "traceback"),
    ("latex --out /proc/x/eq.tex", {2}, "traceback"),
    ("latex --out /etc/hostname/eq.tex", {2}, "traceback"),
    ("thresholds --out /proc/x/th.json", {2}, "traceback after the computation"),
    ("thresholds --out /tmp", {2}, "traceback after the computation, stray /tmp.tmp"),
    ("phase-diagram --omegas 0:1:1e-300 --out {tmp}/pd", {2}, "hang: memory without bound"),
    ("thresholds --sigma 1e6 --log2n 10 --rules 2", {2}, "hang: numpy warnings, > 120 s"),
    ("simulate --d 1000 --alpha 1 --start semantic --n-test 10000000", {2},
     "hang: no progress"),
    ("simulate --d 100 --alpha 1e-9 --start semantic", {2}, "exit 0 on 0 sentences"),
    ("simulate --d 100 --alpha 1.5 --start semantic --sigma 1e6", {2}, "exit 0, converged 0/1"),
    ("simulate --d 100 --alpha 1.5 --start semantic --lam 1e308", {2}, "exit 0, eps_t nan"),
    ("fixed-point --branch positional --alpha 1.3666666666666667 --omega 0.15", {0},
     "false failure"),
    ("fixed-point --branch semantic --alpha 0.681 --omega 0.3", {0, 3}, "ran 15 minutes"),
    ("fixed-point --branch semantic --alpha 1.1875 --omega 0.5", {0, 3}, "ran 27 minutes"),
    ("thresholds --log2n 6 --rules 2", {2}, "smallest allowed settings fail"),
    ("thresholds --log2n 8 --rules 2", {0}, "the smallest allowed settings now"),
    ("phase-diagram --omega 0.2 --out {tmp}/pd", {2}, "--omega accepted and ignored"),
    ("simulate --d 100 --alpha 1.5 --start semantic --A -0.2,1.2,0.4,0.6", {2},
     "negative values: expected one argument"),
    ("thresholds --sigma -1", {2}, "took 5-6 s"),
]

QUICK = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 19, 21, 22, 23}


@dataclass
class Outcome:
    args: str
    status: int | None      #: None: killed at the timeout
    seconds: float
    traceback: bool
    stderr_lines: int
    allowed: set
    last_line: str

    @property
    def clean(self) -> bool:
        return (self.status in self.allowed and not self.traceback
                and (self.status != 2 or self.stderr_lines == 1))


def run_case(args: str, allowed: set, timeout: float = 60.0) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "symattn"] + args.format(tmp=tmp).split()
        t0 = time.perf_counter()
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=tmp)
            status, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as exc:
            status, err = None, (exc.stderr or b"").decode(errors="replace")
        seconds = time.perf_counter() - t0
    lines = err.strip().splitlines()
    return Outcome(args, status, seconds, "Traceback" in err, len(lines), allowed,
                   lines[-1] if lines else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only the cases that end at the door")
    ap.add_argument("--timeout", type=float, default=60.0)
    a = ap.parse_args(argv)
    cases = [c for k, c in enumerate(CASES) if not a.quick or k in QUICK]
    outcomes = []
    for args, allowed, _ in cases:
        o = run_case(args, allowed, a.timeout)
        outcomes.append(o)
        print(f"{'ok ' if o.clean else 'BAD'} {str(o.status):>4s} {o.seconds:6.1f} s  "
              f"symattn {args}\n{'':17s}{o.last_line[:110]}", flush=True)
    n = len(outcomes)
    print(f"\n{n} cases: {sum(o.clean for o in outcomes)} clean, "
          f"{sum(o.traceback for o in outcomes)} tracebacks, "
          f"{sum(o.status is None for o in outcomes)} hangs (over {a.timeout:g} s), "
          f"{sum(o.status == 0 and 0 not in o.allowed for o in outcomes)} wrong exit-0 answers, "
          f"{sum(o.status not in o.allowed for o in outcomes)} unexpected statuses")
    return 0 if all(o.clean for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
