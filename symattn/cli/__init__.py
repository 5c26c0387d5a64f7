"""Command-line interface: one module per command, this one dispatches.

Usage::

    symattn                               the main job: thresholds at the paper's defaults
    symattn thresholds [model options] [--json] [--out FILE]
                       [--precision {fast,standard,high}] [--high-log2n K] [--high-rules R]
                       [--second-route-orders N1,N2,N3|none] [--second-route-alpha-l]
                       [--rsb 1 [--rsb-* options as for fixed-point]]
    symattn fixed-point --branch {positional,semantic,trivial} --alpha A [model options] [--json]
                        [--out FILE] [--rsb 1 [--rsb-log2n K] [--rsb-rules R] [--rsb-coarse N]
                        [--rsb-fine N] [--rsb-x-ref X] [--rsb-xs x1,x2,..]
                        [--rsb-band-log2n K [--rsb-band-points N]] [--rsb-split N]
                        [--rsb-recentre-from X] [--rsb-profile-skips N]
                        [--rsb-eps W1,W2,..] [--rsb-fold-steps N]]
    symattn simulate --d D --alpha A --start {semantic,positional,random} [--seeds K]
                     [--n-test N] [model options] [--json]
    symattn validate --out DIR [--alphas a,b,..] [--ds d1,d2,..] [--seeds K] [--same-seeds]
                     [--workers W] [--n-test N] [--positional-scale S] [model options]
                     [numerical options]
    symattn phase-diagram --out DIR [--omegas 0:0.45:0.025] [model options]
                          [--log2n K] [--rules R] [--refine-log2n K] [--refine-rules R]
                          [--alpha-max A] [--below-ends] [--workers N | --scheduler ADDRESS]
    symattn plot DIR [--omega W]
    symattn latex [--out FILE.tex] [--standalone]

Model options: ``--omega W --sigma S --lam L --A a11,a12,a21,a22`` (``L^2`` entries for ``L``
tokens), and for the general model ``--L``, ``--positions``, ``--rank``, ``--teacher-rank``
(only ``simulate`` takes a shape other than the paper's so far); numerical options:
``--log2n K`` (2**K Sobol points per rule), ``--rules R`` (independent scrambles),
``--tol T`` (fixed-point residual tolerance).  ``simulate`` takes the model options only;
``phase-diagram`` all but ``--omega`` (its grid is ``--omegas``).  Every command reports
progress on stderr (also with ``--json``, whose output alone goes to stdout).

Bad input (a value, a path that cannot be written, a busy or damaged ``--out``) gets a
one-line error naming the parameter and exit status 2.  A branch or threshold that cannot be
found, a simulation that did not converge, or failed points of a sweep give exit status 3.
SIGTERM and SIGHUP stop a run as Ctrl-C does (completed tasks saved, workers ended; exit
128 + the signal, 130 for Ctrl-C).  JSON keys are stable (other tools call them).
"""

from __future__ import annotations

import signal
import sys

from ..model.params import ParameterError
from . import fixed_point, latex, phase_diagram, simulate, thresholds, validate
from .common import (EXIT_NOT_FOUND, EXIT_USAGE, RESUMABLE, STARTS, Parser, UsageError,
                     join_negative_values)

__all__ = ["main", "build_parser", "STARTS", "EXIT_USAGE", "EXIT_NOT_FOUND", "UsageError"]


def build_parser():
    p = Parser(prog="symattn", description="Positional-to-semantic transition in a solvable "
               "model of dot-product attention (Cui, Behrens, Krzakala, Zdeborova, NeurIPS 2024).")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    for command in (thresholds, fixed_point, simulate, validate, latex, phase_diagram):
        command.add_parser(sub)
    return p


def _resumable(argv) -> bool:
    """Whether the interrupted command keeps its finished work: the sweeps, and the 1RSB
    searches (``--rsb 1``: every solve is in the run file)."""
    argv = list(argv or [])
    return bool(argv) and (argv[0] in RESUMABLE or "--rsb=1" in argv
                           or any(a == "--rsb" and b == "1" for a, b in zip(argv, argv[1:])))


def main(argv=None) -> int:
    argv = join_negative_values(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if not argv:
            args = parser.parse_args(["thresholds"])
            return thresholds.run(args, main_job=True)
        args = parser.parse_args(argv)
        run = {"thresholds": thresholds.run, "fixed-point": fixed_point.run,
               "simulate": simulate.run, "latex": latex.run, "phase-diagram": phase_diagram.run,
               "plot": phase_diagram.run_plot,
               "validate": lambda a: validate.run(a, argv=["symattn"] + list(argv))}
        if args.command not in run:
            parser.print_help()
            return EXIT_USAGE
        from ..runs.executors import signals_raise_interrupt
        with signals_raise_interrupt():
            return run[args.command](args)
    except (ParameterError, UsageError) as exc:
        print(f"symattn: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)
        how = "interrupted" if signum is None else f"terminated ({signal.Signals(signum).name})"
        print(f"symattn: {how}" + ("; completed tasks are saved, rerun the same command to "
                                   "resume" if _resumable(argv) else ""),
              file=sys.stderr)
        return 130 if signum is None else 128 + signum


if __name__ == "__main__":
    sys.exit(main())
