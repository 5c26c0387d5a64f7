"""Command-line interface.

    symattn                               the main job: thresholds at the paper's defaults
    symattn thresholds [model options] [--json] [--out FILE]
    symattn fixed-point --branch {positional,semantic} --alpha A [model options] [--json]

Model options: ``--omega W --sigma S --lam L --A a11,a12,a21,a22``; numerical options:
``--log2n K`` (2**K Sobol points per rule), ``--rules R`` (independent scrambles),
``--tol T`` (fixed-point residual tolerance).

Bad input gets a one-line error naming the parameter and exit status 2.  A branch that does
not exist at the requested alpha is reported as such, with exit status 3.  JSON keys are
stable (other tools call them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from .model.params import PAPER_A, ModelParams, ParameterError, check_alpha

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

FIXED_POINT_KEYS = ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_t",
                    "eps_g")
DEFAULT_OUT = Path("symattn-results")


class UsageError(Exception):
    """A malformed command line (reported in one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message):
        raise UsageError(message)


def _float(name):
    def conv(text):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: not a number: {text!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"{name}: must be finite, got {text!r}")
        return x
    return conv


def _matrix(text):
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(
            f"A: expected 4 comma-separated numbers a11,a12,a21,a22, got {text!r}")
    try:
        v = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"A: not a number in {text!r}") from None
    return ((v[0], v[1]), (v[2], v[3]))


def _positive_int(name, lo, hi):
    def conv(text):
        try:
            k = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: not an integer: {text!r}") from None
        if not lo <= k <= hi:
            raise argparse.ArgumentTypeError(f"{name}: must be in [{lo}, {hi}], got {k}")
        return k
    return conv


def _add_model_options(p):
    g = p.add_argument_group("model (MODEL.md section 2; defaults: the paper's)")
    g.add_argument("--omega", type=_float("omega"), default=0.3, help="mixing omega in [0, 1]")
    g.add_argument("--sigma", type=_float("sigma"), default=0.5, help="token noise sigma > 0")
    g.add_argument("--lam", type=_float("lam"), default=0.01, help="ridge penalty lambda > 0")
    g.add_argument("--A", type=_matrix, default=PAPER_A, metavar="a11,a12,a21,a22",
                   help="row-stochastic positional attention matrix")
    n = p.add_argument_group("numerics")
    n.add_argument("--log2n", type=_positive_int("log2n", 6, 20), default=14,
                   help="Sobol points per rule: 2**log2n (default 14)")
    n.add_argument("--rules", type=_positive_int("rules", 2, 64), default=8,
                   help="independent scrambles; their spread is the error bar (default 8)")
    n.add_argument("--tol", type=_float("tol"), default=1e-10,
                   help="fixed-point residual tolerance (default 1e-10)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def _params(args) -> ModelParams:
    return ModelParams(sigma=args.sigma, lam=args.lam, omega=args.omega, A=args.A)


def _settings(args):
    from .numerics.thresholds import ThresholdSettings
    if not 0 < args.tol < 1e-3:
        raise ParameterError("tol", f"must be in (0, 1e-3), got {args.tol:g}")
    return ThresholdSettings(log2_n=args.log2n, n_rules=args.rules, tol=args.tol)


def build_parser():
    p = _Parser(prog="symattn", description="Positional-to-semantic transition in a solvable "
                "model of dot-product attention (Cui, Behrens, Krzakala, Zdeborova, NeurIPS 2024).")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    t = sub.add_parser("thresholds", help="alpha_c and alpha_l with error bars")
    _add_model_options(t)
    t.add_argument("--out", type=Path, default=None, help="also write the full JSON here")
    f = sub.add_parser("fixed-point", help="one branch's fixed point at one alpha")
    f.add_argument("--branch", required=True, choices=("positional", "semantic"))
    f.add_argument("--alpha", required=True, type=_float("alpha"))
    _add_model_options(f)
    return p


# ------------------------------------------------------------------------------------------
def _progress(k, n, rule):
    print(f"  rule {k}/{n}: alpha_c = {rule.alpha_c:.6f}, alpha_l = {rule.alpha_l:.6f} "
          f"({rule.wall_time:.1f} s)", file=sys.stderr, flush=True)


def _save(path: Path, data: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=float))
    os.replace(tmp, path)


def _fmt(v, e):
    return f"{v:.6f} +- {e:.1e}"


def cmd_thresholds(args, main_job=False) -> int:
    from .numerics.thresholds import compute_thresholds
    params = _params(args)
    settings = _settings(args)
    t0 = time.perf_counter()
    if not args.json:
        print(f"symattn: thresholds for sigma={params.sigma:g}, lambda={params.lam:g}, "
              f"omega={params.omega:g}, A={[list(r) for r in params.A]}", file=sys.stderr)
        print(f"  {settings.n_rules} scrambled Sobol rules of 2^{settings.log2_n} points, "
              f"fixed-point tolerance {settings.tol:g}", file=sys.stderr, flush=True)
    from .numerics.branches import BranchNotFound
    from .numerics.thresholds import ThresholdNotFound
    try:
        th = compute_thresholds(params, settings, progress=None if args.json else _progress)
    except (ThresholdNotFound, BranchNotFound) as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    wall = time.perf_counter() - t0
    data = th.as_dict()
    data["wall_time"] = wall
    out = args.out if args.out is not None else (DEFAULT_OUT / "thresholds.json" if main_job
                                                 else None)
    if out is not None:
        _save(out, data)
    if args.json:
        print(json.dumps(data, indent=2, default=float))
        return 0
    print(f"alpha_c = {_fmt(th.alpha_c, th.alpha_c_err)}")
    print(f"alpha_l = {_fmt(th.alpha_l, th.alpha_l_err)}")
    print(f"eps_lin = {th.eps_lin:.10f} +- {th.eps_lin_err:.0e}")
    print("error bars: one standard error over the scrambles plus the root-finding bound")
    print(f"\nfixed points at alpha_c (mean +- standard error over {settings.n_rules} rules):")
    keys = ("q", "m", "theta", "V", "q_hat", "m_hat", "theta_hat", "V_hat", "eps_t", "eps_g")
    pos, sem = th.at_alpha_c("positional"), th.at_alpha_c("semantic")
    print(f"  {'':10s} {'positional':>24s} {'semantic':>24s}")
    for k in keys:
        print(f"  {k:10s} {pos[k]:>13.7g} +- {pos[k + '_err']:7.1e} "
              f"{sem[k]:>13.7g} +- {sem[k + '_err']:7.1e}")
    if out is not None:
        print(f"\nresults written to {out}")
    print(f"took {wall:.1f} s")
    return 0


def cmd_fixed_point(args) -> int:
    import numpy as np

    from .numerics.branches import BranchNotFound, solve_branch
    from .numerics.channel import OutputChannel
    from .numerics.quadrature import SobolRule
    alpha = check_alpha(args.alpha)
    params = _params(args)
    settings = _settings(args)
    fps = []
    x0 = None
    for k in range(settings.n_rules):
        ch = OutputChannel(params, SobolRule(settings.log2_n, settings.seed + k).nodes(),
                           gtol=max(settings.tol * 1e-3, 1e-14))
        try:
            fp = solve_branch(params, args.branch, alpha, ch, x0=x0, tol=settings.tol)
        except BranchNotFound as exc:
            msg = str(exc)
            if args.json:
                print(json.dumps({"branch": args.branch, "alpha": alpha, "converged": False,
                                  "error": msg}))
            print(f"symattn: {msg}", file=sys.stderr)
            return EXIT_NOT_FOUND
        fps.append(fp)
        x0 = fp.x
    vals = {k: np.array([fp.extra["eps_g"] if k == "eps_g" else getattr(fp, k) for fp in fps])
            for k in FIXED_POINT_KEYS}
    n = len(fps)
    data = {"branch": args.branch, "alpha": alpha}
    for k, v in vals.items():
        data[k] = float(v.mean())
        data[k + "_err"] = float(v.std(ddof=1) / math.sqrt(n))
    data["residual"] = max(fp.residual for fp in fps)
    data["converged"] = all(fp.converged for fp in fps)
    data["rules"] = n
    data["log2n"] = settings.log2_n
    data["params"] = params.as_dict()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{args.branch} fixed point at alpha = {alpha:g} (mean +- standard error over {n} "
          f"rules of 2^{settings.log2_n} points)")
    for k in FIXED_POINT_KEYS:
        print(f"  {k:10s} {data[k]:>14.8g} +- {data[k + '_err']:.1e}")
    print(f"  residual   {data['residual']:.1e}   converged: {data['converged']}")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        if not argv:
            args = parser.parse_args(["thresholds"])
            return cmd_thresholds(args, main_job=True)
        args = parser.parse_args(argv)
        if args.command == "thresholds":
            return cmd_thresholds(args)
        if args.command == "fixed-point":
            return cmd_fixed_point(args)
        parser.print_help()
        return EXIT_USAGE
    except (ParameterError, UsageError) as exc:
        print(f"symattn: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("symattn: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
