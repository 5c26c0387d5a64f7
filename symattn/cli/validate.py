"""``symattn validate``: theory against finite-size training over an alpha x d grid (resumable)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .common import (EXIT_NOT_FOUND, add_model_group, add_numerics_group, alpha_item, float_arg, fmt, int_arg,
                     list_arg, params_from, settings_from)
from ..runs.paths import check_output_dir
from ..simulation.memory import MAX_D, check_size


def add_parser(sub):
    v = sub.add_parser("validate", help="theory against finite-size training over an alpha x d "
                       "grid: CSV, tables, figures (resumable)")
    v.add_argument("--out", required=True, type=Path, help="output directory (rerun to resume)")
    v.add_argument("--alphas", type=list_arg("alphas", alpha_item), default=(1.0, 1.25, 1.5, 1.75, 2.0),
                   help="comma-separated alphas (default 1,1.25,1.5,1.75,2)")
    v.add_argument("--ds", type=list_arg("ds", int_arg("d", 2, MAX_D)),
                   default=(250, 500, 1000, 2000, 4000),
                   help="comma-separated dimensions (default 250,500,1000,2000,4000)")
    v.add_argument("--seeds", type=int_arg("seeds", 1, 100000), default=8,
                   help="seeds per alpha at the largest d (default 8); a smaller d gets "
                   "seeds * d_max / d, so that the standard error of the seed mean is the same "
                   "at every d")
    v.add_argument("--same-seeds", action="store_true",
                   help="use --seeds seeds at every d instead")
    v.add_argument("--positional-scale", dest="positional_scale", type=float_arg("positional-scale", 0.0, lo_open=True),
                   default=1.0, help="positional warm start Q = s (1, ..., 1), i.e. m = s "
                   "(default 1, as symattn.simulation)")
    v.add_argument("--workers", type=int_arg("workers", 1, 256), default=2,
                   help="worker processes (default 2; 1 runs in this process)")
    v.add_argument("--n-test", dest="n_test", type=int_arg("n-test", 1, 10**7), default=10000,
                   help="fresh test sentences per task (default 10000)")
    add_model_group(v)
    add_numerics_group(v, log2n=13, rules=4)


def run(args, argv=None) -> int:
    params = params_from(args)
    settings = settings_from(args)
    for d in args.ds:
        check_size(d, min(args.alphas), args.n_test, d_name="ds", n_test_name="n-test")
    check_size(max(args.ds), max(args.alphas), copies=args.workers, d_name="ds")
    check_output_dir(args.out)
    from ..experiments.validation import ValidationGrid, run_validation
    from ..outputs.report import write_validation_report
    grid = ValidationGrid(alphas=args.alphas, ds=args.ds, seeds=args.seeds, n_test=args.n_test,
                          scale_seeds=not args.same_seeds, positional_scale=args.positional_scale)
    t0 = time.perf_counter()
    res = run_validation(params, grid, settings, args.out, workers=args.workers, argv=argv,
                         report=write_validation_report)
    wall = time.perf_counter() - t0
    th = res["theory_thresholds"]
    print(f"results in {args.out}: summary.md, summary.csv, simulations.csv, theory.csv, fits.csv, "
          f"thresholds.csv, {len(res['figures'])} figure files")
    for t in res["thresholds"]:
        cell = (lambda k: t[k + "_note"] if t[k] is None else fmt(t[k], t[k + "_err"]))
        print(f"  d = {t['d']:6d} ({t['n_seeds']} seeds): alpha_c = {cell('alpha_c')}, "
              f"alpha_l = {cell('alpha_l')}")
    if "alpha_c" in th:
        print(f"  theory:                alpha_c = {fmt(th['alpha_c'], th['alpha_c_err'])}, "
              f"alpha_l = {fmt(th['alpha_l'], th['alpha_l_err'])}")
    print(f"took {wall:.1f} s")
    if res["failed"]:
        print(f"symattn: {len(res['failed'])} task(s) failed (see above); rerun to retry them",
              file=sys.stderr)
        return EXIT_NOT_FOUND
    return 0
