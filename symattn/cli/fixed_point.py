"""``symattn fixed-point``: one branch's fixed point at one alpha, mean and error over scrambles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import (EXIT_NOT_FOUND, add_model_options, alpha_arg, params_from, settings_from)
from .one_step_rsb import add_rsb_options, rsb_settings


def add_parser(sub):
    f = sub.add_parser("fixed-point", help="one branch's fixed point at one alpha")
    f.add_argument("--branch", required=True, choices=("positional", "semantic", "trivial"),
                   help="positional (theta = 0), semantic (m = 0) or trivial (theta = m = 0)")
    f.add_argument("--alpha", required=True, type=alpha_arg(), help="sample complexity n/d > 0")
    add_model_options(f)
    add_rsb_options(f)
    f.add_argument("--out", type=Path, default=None,
                   help="with --rsb 1: the run file, written after every solve and resumed "
                        "from (default symattn-results/fixed-point-rsb1-BRANCH-alphaA-omegaW"
                        ".json); without: also write the JSON here")


def run(args) -> int:
    params = params_from(args)                         # bad input: one line, before the imports
    settings = settings_from(args)
    alpha = args.alpha
    if rsb_settings(args) is not None:
        from .one_step_rsb import run_fixed_point
        return run_fixed_point(args, params, settings)
    from ..runs.paths import check_output_file
    out = None if args.out is None else check_output_file(args.out)
    print(f"symattn: {args.branch} fixed point at alpha = {alpha:g}, omega = {args.omega:g} on "
          f"{settings.rules} scrambled Sobol rules of 2^{settings.log2n} points",
          file=sys.stderr, flush=True)
    from ..api import fixed_point
    from ..numerics.branches import BranchNotFound
    try:
        est = fixed_point(branch=args.branch, alpha=alpha, omega=args.omega, sigma=args.sigma,
                          lam=args.lam, A=params.A, log2n=settings.log2n, rules=settings.rules,
                          tol=settings.tol)
    except BranchNotFound as exc:
        msg = str(exc)
        if args.json:
            print(json.dumps({"branch": args.branch, "alpha": alpha, "converged": False,
                              "error": msg}))
        print(f"symattn: {msg}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if out is not None:
        from ..runs.files import write_json
        write_json(out, est.to_dict())
    if args.json:
        print(json.dumps(est.to_dict(), indent=2))
        return 0
    print(repr(est))
    return 0
