"""Command-line front ends of the phase diagram: ``symattn phase-diagram`` and ``symattn plot``.

Usage::

    symattn phase-diagram [--omegas 0:0.45:0.025] [model options] [--log2n K] [--rules R]
                          [--workers N | --scheduler ADDRESS] --out DIR
    symattn plot DIR [--omega 0.3]

Rerunning ``phase-diagram`` with the same ``--out`` resumes: finished ``omega`` points are
not recomputed.  ``plot`` redraws every figure from the saved results, without computing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..model.params import ParameterError
from .common import add_model_group, float_arg, int_arg, params_from

__all__ = ["add_parser", "run", "run_plot"]


def add_parser(sub):
    p = sub.add_parser("phase-diagram", help="alpha_c, alpha_l and branch ends over omega")
    p.add_argument("--omegas", default="0:0.45:0.025",
                   help="start:stop:step (stop included) or a comma list (default 0:0.45:0.025)")
    add_model_group(p)
    g = p.add_argument_group("numerics")
    g.add_argument("--log2n", type=int_arg("log2n", 6, 20), default=12,
                   help="Sobol points per rule: 2**log2n (default 12)")
    g.add_argument("--rules", type=int_arg("rules", 2, 64), default=4,
                   help="independent scrambles per omega (default 4)")
    g.add_argument("--alpha-max", type=float_arg("alpha-max"), default=4.0,
                   help="follow the branches up to this alpha (default 4)")
    ex = p.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=int_arg("workers", 1, 256), default=None,
                    help="local worker processes (default: one per core)")
    ex.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run on a Dask cluster (needs symattn[dask])")
    p.add_argument("--out", type=Path, required=True, help="results folder (resumable)")
    q = sub.add_parser("plot", help="redraw the figures of a saved phase diagram")
    q.add_argument("dir", type=Path, help="a folder written by phase-diagram")
    q.add_argument("--omega", type=float_arg("omega"), default=0.3,
                   help="omega of the branch figures (nearest saved; default 0.3)")


def _progress(k, n, r, elapsed):
    eta = elapsed / max(k, 1) * (n - k)
    print(f"  [{k}/{n}] omega = {r['omega']:.4f}: alpha_c = {r['alpha_c']:.5f}, "
          f"alpha_l = {r['alpha_l']:.5f} ({r['status']}, {r['wall_time']:.0f} s; "
          f"elapsed {elapsed:.0f} s, about {eta:.0f} s left)", file=sys.stderr, flush=True)


def run(args) -> int:
    params = params_from(args)
    from concurrent.futures import ProcessPoolExecutor

    from ..experiments.phase_diagram import PhaseDiagramSettings, omega_grid, run_phase_diagram
    from ..runs.executors import dask_executor
    omegas = omega_grid(args.omegas)
    if not args.alpha_max > 1:
        raise ParameterError("alpha-max", f"must be > 1, got {args.alpha_max:g}")
    settings = PhaseDiagramSettings(log2n=args.log2n, rules=args.rules,
                                    alpha_max=args.alpha_max)
    if args.scheduler:
        executor = dask_executor(args.scheduler)
    else:
        executor = ProcessPoolExecutor(max_workers=args.workers) if args.workers else None
    print(f"symattn: phase diagram over {len(omegas)} values of omega into {args.out} "
          f"({settings.rules} rules of 2^{settings.log2n} points each)", file=sys.stderr,
          flush=True)
    try:
        pts = run_phase_diagram(params, omegas, args.out, settings, executor=executor,
                                progress=_progress)
    finally:
        if executor is not None:
            executor.shutdown()
    failed = [p for p in pts if p.get("status") != "ok"]
    for p in failed:
        print(f"symattn: omega = {p['omega']:g}: {p['status']}", file=sys.stderr)
    figs = _figures(args.out, 0.3)
    print(f"wrote {args.out / 'phase_diagram.csv'} and {len(figs)} figure files")
    return 0 if not failed else 1


def _figures(out_dir, omega):
    from ..outputs.phase_figures import plot_branches, plot_phase_diagram
    figs = []
    for make in (lambda: plot_phase_diagram(out_dir), lambda: plot_branches(out_dir, omega)):
        try:
            figs += make()
        except FileNotFoundError as exc:
            print(f"symattn: no figure: {exc}", file=sys.stderr)
    return figs


def run_plot(args) -> int:
    if not (args.dir / "points").is_dir():
        raise ParameterError("dir", f"{args.dir} holds no phase-diagram results")
    figs = _figures(args.dir, args.omega)
    for f in figs:
        print(f)
    return 0 if figs else 1
