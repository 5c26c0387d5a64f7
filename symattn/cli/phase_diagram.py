"""Command-line front ends of the phase diagram: ``symattn phase-diagram`` and ``symattn plot``.

Usage::

    symattn phase-diagram [--omegas 0:0.45:0.025] [model options] [--log2n K] [--rules R]
                          [--workers N | --scheduler ADDRESS] --out DIR
    symattn phase-diagram --L 3 --positions simplex --A ... [--rank R] [--bracket 0.1:2]
                          [--omegas ...] [--log2n K] [--rules R] --out DIR
    symattn plot DIR [--omega 0.3]

A model other than the paper's shape (``--L``, ``--positions``, ``--rank``, ``--teacher-rank``)
runs the general model's diagram (:mod:`symattn.experiments.general_phase_diagram`:
``alpha_c`` where the global minimum changes character and ``alpha_l``, per ``omega``; the
refinement and branch options are the paper's and do not apply to it).

Rerunning ``phase-diagram`` with the same ``--out`` resumes: finished ``omega`` points are
not recomputed.  ``plot`` redraws every figure from the saved results, without computing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..model.checks import MAX_GRID_POINTS, ParameterError
from ..numerics.settings import LOG2N_RANGE, RULES_RANGE
from ..runs.paths import check_output_dir
from .common import (EXIT_NOT_FOUND, GENERAL_BRACKET, add_model_group, bracket_arg, float_arg,
                     int_arg, omegas_arg, params_from)

__all__ = ["add_parser", "run", "run_plot"]


def add_parser(sub):
    p = sub.add_parser("phase-diagram", help="alpha_c, alpha_l and branch ends over omega")
    p.add_argument("--omegas", type=omegas_arg, default="0:0.45:0.025",
                   help="start:stop:step (stop included) or a comma list, each in [0, 1], at "
                        f"most {MAX_GRID_POINTS} values (default 0:0.45:0.025)")
    add_model_group(p, omega=False)
    g = p.add_argument_group("numerics")
    g.add_argument("--log2n", type=int_arg("log2n", *LOG2N_RANGE), default=12,
                   help=f"Sobol points per rule: 2**log2n, log2n in [{LOG2N_RANGE[0]}, "
                        f"{LOG2N_RANGE[1]}] (default 12)")
    g.add_argument("--rules", type=int_arg("rules", *RULES_RANGE), default=4,
                   help=f"independent scrambles per omega (the branch ends' error bars), in "
                        f"[{RULES_RANGE[0]}, {RULES_RANGE[1]}] (default 4)")
    g.add_argument("--refine-log2n", type=int_arg("refine-log2n", 10, 22), default=15,
                   help="the thresholds are refined on folded scrambles of 2**K points, K in "
                        "[10, 22] (default 15)")
    g.add_argument("--refine-rules", type=int_arg("refine-rules", 0, 256), default=6,
                   help="how many (their spread is the thresholds' error bar; 0: no "
                        "refinement, the mean over --rules; default 6)")
    g.add_argument("--alpha-max", type=float_arg("alpha-max", 1.0, 64.0, lo_open=True),
                   default=4.0, help="follow the branches up to this alpha, in (1, 64] "
                                     "(default 4)")
    g.add_argument("--bracket", type=bracket_arg, default=None, metavar="LO:HI",
                   help="general model only: alpha_c is searched for in [LO, HI], where the "
                        "global minimum's character differs at the two ends (default 0.1:2)")
    g.add_argument("--below-ends", action="store_true",
                   help="follow the branches below their bifurcation ends, down to alpha = "
                        "0.02 (the continuation's own ends as diagnostics; slower)")
    ex = p.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=int_arg("workers", 1, 256), default=None,
                    help="local worker processes (default: one per core)")
    ex.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run on a Dask cluster (needs symattn[dask])")
    p.add_argument("--out", type=Path, required=True, help="results folder (resumable)")
    q = sub.add_parser("plot", help="redraw the figures of a saved phase diagram")
    q.add_argument("dir", type=Path, help="a folder written by phase-diagram")
    q.add_argument("--omega", type=float_arg("omega", 0.0, 1.0), default=None,
                   help="omega of the branch figures: one of the saved values (default: the "
                        "saved value nearest 0.3)")


def _progress(k, n, r, elapsed):
    if "transition" in r:                # a general model's point
        ac, al = r.get("alpha_c"), r.get("alpha_l")
        print(f"  [{k}/{n}] omega = {r['omega']:.4f}: "
              + (f"{r['below']} -> {r['above']} ({r['transition']}), alpha_c = {ac:.5f}, "
                 + (f"alpha_l = {al:.5f}" if al is not None else "alpha_l not found")
                 if r["status"] == "ok" else r["status"])
              + f" ({r['wall_time']:.0f} s; elapsed {elapsed:.0f} s)", file=sys.stderr,
              flush=True)
        return
    eta = elapsed / max(k, 1) * (n - k)
    print(f"  [{k}/{n}] omega = {r['omega']:.4f}: alpha_c = {r['alpha_c']:.5f}, "
          f"alpha_l = {r['alpha_l']:.5f} ({r['status']}, {r['wall_time']:.0f} s; "
          f"elapsed {elapsed:.0f} s, about {eta:.0f} s left)", file=sys.stderr, flush=True)


def _note(text):
    print(f"symattn: {text}", file=sys.stderr, flush=True)


def run(args) -> int:
    params = params_from(args, general=True)
    omegas = args.omegas                 # parsed by omegas_arg (argparse converts the default too)
    check_output_dir(args.out)
    if not params.is_paper_shape:
        return _run_general(args, params, omegas)
    if args.bracket is not None:
        raise ParameterError("bracket", "applies to the general model only (the paper's "
                                        "thresholds are located from alpha = 1 on)")
    from ..experiments.phase_diagram import PhaseDiagramSettings, run_phase_diagram
    from ..runs.executors import dask_executor, process_pool, stop_pool
    from ..runs.lock import output_lock
    settings = PhaseDiagramSettings(log2n=args.log2n, rules=args.rules,
                                    refine_log2n=args.refine_log2n,
                                    refine_rules=args.refine_rules, alpha_max=args.alpha_max,
                                    below_ends=args.below_ends)
    with output_lock(args.out):          # a busy folder is refused before anything is printed
        if args.scheduler:
            executor = dask_executor(args.scheduler)
        else:
            executor = process_pool(args.workers) if args.workers else None
        print(f"symattn: phase diagram over {len(omegas)} values of omega into {args.out} "
              f"({settings.rules} rules of 2^{settings.log2n} points each"
              + (f"; thresholds refined on {settings.refine_rules} folded scrambles of "
                 f"2^{settings.refine_log2n}" if settings.refine_rules else "") + ")",
              file=sys.stderr, flush=True)
        try:
            pts = run_phase_diagram(params, omegas, args.out, settings, executor=executor,
                                    progress=_progress, note=_note)
        except BaseException:
            stop_pool(executor)
            raise
        if executor is not None:
            executor.shutdown()
        figs = _figures(args.out, _nearest(omegas, 0.3))
    failed = [p for p in pts if p.get("status") != "ok"]
    for p in failed:
        print(f"symattn: omega = {p['omega']:g}: {p['status']}", file=sys.stderr)
    print(f"wrote {args.out / 'phase_diagram.csv'} and {len(figs)} figure files")
    return 0 if not failed else EXIT_NOT_FOUND


def _run_general(args, params, omegas) -> int:
    from ..experiments.general_phase_diagram import (GeneralPhaseDiagramSettings,
                                                     general_phase_point)
    from ..experiments.phase_diagram import run_phase_diagram
    from ..runs.executors import dask_executor, process_pool, stop_pool
    lo, hi = args.bracket or GENERAL_BRACKET
    settings = GeneralPhaseDiagramSettings(log2n=args.log2n, rules=args.rules, alpha_lo=lo,
                                           alpha_hi=hi)
    print(f"symattn: general model (L = {params.L}, r = {params.r}, r_t = {params.r_t}, "
          f"positions {params.positions}): phase diagram over {len(omegas)} values of omega "
          f"into {args.out} ({settings.rules} rules of 2^{settings.log2n} points each; alpha_c "
          f"in [{lo:g}, {hi:g}])", file=sys.stderr, flush=True)
    if args.scheduler:
        executor = dask_executor(args.scheduler)
    else:
        executor = process_pool(args.workers) if args.workers else None
    try:
        pts = run_phase_diagram(params, omegas, args.out, settings, executor=executor,
                                progress=_progress, note=_note, task=general_phase_point)
    except BaseException:
        stop_pool(executor)
        raise
    if executor is not None:
        executor.shutdown()
    figs = _figures(args.out, None)
    failed = [p for p in pts if p.get("status") != "ok"]
    for p in failed:
        print(f"symattn: omega = {p['omega']:g}: {p['status']}", file=sys.stderr)
    print(f"wrote {args.out / 'phase_diagram.csv'} and {len(figs)} figure files")
    return 0 if not failed else EXIT_NOT_FOUND


def _figures(out_dir, omega):
    from ..experiments.phase_diagram import load_points
    from ..outputs.phase_figures import (plot_branches, plot_general_phase_diagram,
                                         plot_phase_diagram)
    if any("transition" in p for p in load_points(out_dir)):     # a general model's diagram
        try:
            return plot_general_phase_diagram(out_dir)
        except FileNotFoundError as exc:
            print(f"symattn: no figure: {exc}", file=sys.stderr)
            return []
    figs = []
    for make in (lambda: plot_phase_diagram(out_dir), lambda: plot_branches(out_dir, omega)):
        try:
            figs += make()
        except FileNotFoundError as exc:
            print(f"symattn: no figure: {exc}", file=sys.stderr)
    return figs


def _nearest(values, target):
    return min(values, key=lambda w: abs(w - target))


def run_plot(args) -> int:
    if not (args.dir / "points").is_dir():
        raise ParameterError("dir", f"{args.dir} holds no phase-diagram results")
    from ..experiments.phase_diagram import load_points
    saved = [p["omega"] for p in load_points(args.dir)]
    if not saved:
        raise ParameterError("dir", f"{args.dir} holds no finished omega yet")
    if args.omega is None:
        omega = _nearest(saved, 0.3)
    else:
        omega = _nearest(saved, args.omega)
        if abs(omega - args.omega) > 1e-9:
            raise ParameterError("omega", f"{args.omega:g} is not among the saved values of "
                                          f"{args.dir}: {', '.join(f'{w:g}' for w in saved)}")
    figs = _figures(args.dir, omega)
    for f in figs:
        print(f)
    return 0 if figs else EXIT_NOT_FOUND
