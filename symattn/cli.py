"""Command-line interface.

Usage::

    symattn                               the main job: thresholds at the paper's defaults
    symattn thresholds [model options] [--json] [--out FILE]
                       [--precision {fast,high}] [--high-log2n K] [--high-rules R]
                       [--second-route-orders N1,N2,N3|none] [--second-route-alpha-l]
    symattn fixed-point --branch {positional,semantic} --alpha A [model options] [--json]
    symattn simulate --d D --alpha A --start {semantic,positional,random} [--seeds K]
                     [--n-test N] [model options] [--json]
    symattn validate --out DIR [--alphas a,b,..] [--ds d1,d2,..] [--seeds K] [--same-seeds]
                     [--workers W] [--n-test N] [--positional-scale S] [model options]
                     [numerical options]
    symattn phase-diagram --out DIR [--omegas 0:0.45:0.025] [model options]
                          [--log2n K] [--rules R] [--workers N | --scheduler ADDRESS]
    symattn plot DIR [--omega W]
    symattn latex [--out FILE.tex] [--standalone]

Model options: ``--omega W --sigma S --lam L --A a11,a12,a21,a22``; numerical options:
``--log2n K`` (2**K Sobol points per rule), ``--rules R`` (independent scrambles),
``--tol T`` (fixed-point residual tolerance).  ``simulate`` takes the model options only.
``simulate`` and ``validate`` report progress on stderr.

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

DEFAULT_OUT = Path("symattn-results")
RESUMABLE = ("validate", "phase-diagram")
#: warm starts of ``simulate`` (= symattn.simulation.train.STARTS; not imported here, to keep
#: the command line's start-up free of scipy)
STARTS = ("semantic", "positional", "random")


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


def _list(name, conv):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name}: expected a comma-separated list, got {text!r}")
        try:
            return tuple(conv(t) for t in items)
        except (argparse.ArgumentTypeError, ParameterError) as exc:
            raise argparse.ArgumentTypeError(f"{name}: {exc}") from None
    return parse


def _second_orders(text):
    if text.strip().lower() == "none":
        return ()
    orders = _list("second-route-orders", _positive_int("order", 2, 64))(text)
    if len(orders) < 3:
        raise argparse.ArgumentTypeError("second-route-orders: give three or more orders, "
                                         f"or 'none'; got {text!r}")
    return orders


def _alpha_item(text):
    return check_alpha(_float("alpha")(text))


def _add_model_group(p):
    g = p.add_argument_group("model (MODEL.md section 2; defaults: the paper's)")
    g.add_argument("--omega", type=_float("omega"), default=0.3, help="mixing omega in [0, 1]")
    g.add_argument("--sigma", type=_float("sigma"), default=0.5, help="token noise sigma > 0")
    g.add_argument("--lam", type=_float("lam"), default=0.01, help="ridge penalty lambda > 0")
    g.add_argument("--A", type=_matrix, default=PAPER_A, metavar="a11,a12,a21,a22",
                   help="row-stochastic positional attention matrix")


def _add_numerics_group(p, log2n=14, rules=8):
    n = p.add_argument_group("numerics")
    n.add_argument("--log2n", type=_positive_int("log2n", 6, 20), default=log2n,
                   help=f"Sobol points per rule: 2**log2n (default {log2n})")
    n.add_argument("--rules", type=_positive_int("rules", 2, 64), default=rules,
                   help=f"independent scrambles; their spread is the error bar (default {rules})")
    n.add_argument("--tol", type=_float("tol"), default=1e-10,
                   help="fixed-point residual tolerance (default 1e-10)")


def _add_model_options(p):
    _add_model_group(p)
    _add_numerics_group(p)
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
    h = t.add_argument_group("precision (docs: numerics, 'High precision')")
    h.add_argument("--precision", choices=("fast", "high"), default="fast",
                   help="fast (default): the scrambles above; high: then refine on large "
                        "scrambles and add a second route for alpha_c (about 9 minutes on 2 "
                        "cores at the defaults; resumable with --out: finished scrambles are "
                        "kept in OUT.partial)")
    h.add_argument("--high-log2n", dest="high_log2n", type=_positive_int("high-log2n", 10, 26),
                   default=None, help="points per large scramble: 2**K (default 22)")
    h.add_argument("--high-rules", dest="high_rules", type=_positive_int("high-rules", 2, 256),
                   default=None, help="large scrambles (default 8)")
    h.add_argument("--second-route-orders", dest="second_orders", default=None,
                   type=_second_orders, metavar="N1,N2,N3|none",
                   help="Gauss-Hermite outer orders of the second route for alpha_c (default "
                        "16,20,24; 'none' skips it)")
    h.add_argument("--second-route-alpha-l", dest="second_alpha_l", action="store_true",
                   help="also confirm alpha_l by the second route (fixed points with "
                        "line-preintegrated atoms; about 2 more minutes)")
    f = sub.add_parser("fixed-point", help="one branch's fixed point at one alpha")
    f.add_argument("--branch", required=True, choices=("positional", "semantic"))
    f.add_argument("--alpha", required=True, type=_float("alpha"))
    _add_model_options(f)

    s = sub.add_parser("simulate", help="finite-size training from a warm start, K seeds "
                       "(MODEL.md section 6)")
    s.add_argument("--d", required=True, type=_positive_int("d", 2, 10**7), help="dimension d >= 2")
    s.add_argument("--alpha", required=True, type=_float("alpha"), help="sample complexity n/d > 0")
    s.add_argument("--start", required=True, choices=STARTS,
                   help="warm start; semantic and positional are also run paired with the other")
    s.add_argument("--seeds", type=_positive_int("seeds", 1, 100000), default=1,
                   help="independent instances k = 0..K-1, data seed 10^6 d + k (default 1)")
    s.add_argument("--n-test", dest="n_test", type=_positive_int("n-test", 1, 10**7), default=2000,
                   help="fresh test sentences per instance (default 2000)")
    _add_model_group(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of text")

    v = sub.add_parser("validate", help="theory against finite-size training over an alpha x d "
                       "grid: CSV, tables, figures (resumable)")
    v.add_argument("--out", required=True, type=Path, help="output directory (rerun to resume)")
    v.add_argument("--alphas", type=_list("alphas", _alpha_item), default=(1.0, 1.25, 1.5, 1.75, 2.0),
                   help="comma-separated alphas (default 1,1.25,1.5,1.75,2)")
    v.add_argument("--ds", type=_list("ds", _positive_int("d", 2, 10**7)),
                   default=(250, 500, 1000, 2000, 4000),
                   help="comma-separated dimensions (default 250,500,1000,2000,4000)")
    v.add_argument("--seeds", type=_positive_int("seeds", 1, 100000), default=8,
                   help="seeds per alpha at the largest d (default 8); a smaller d gets "
                   "seeds * d_max / d, so that the standard error of the seed mean is the same "
                   "at every d")
    v.add_argument("--same-seeds", action="store_true",
                   help="use --seeds seeds at every d instead")
    v.add_argument("--positional-scale", dest="positional_scale", type=_float("positional-scale"),
                   default=1.0, help="positional warm start Q = s (1, ..., 1), i.e. m = s "
                   "(default 1, as symattn.simulation)")
    v.add_argument("--workers", type=_positive_int("workers", 1, 64), default=2,
                   help="worker processes (default 2; 1 runs in this process)")
    v.add_argument("--n-test", dest="n_test", type=_positive_int("n-test", 1, 10**7), default=10000,
                   help="fresh test sentences per task (default 10000)")
    _add_model_group(v)
    _add_numerics_group(v, log2n=13, rules=4)

    x = sub.add_parser("latex", help="the model's equations as LaTeX (align, labelled), printed "
                       "from the SymPy objects the solvers are compiled from")
    x.add_argument("--out", type=Path, default=None,
                   help="write to this .tex file instead of standard output")
    x.add_argument("--standalone", action="store_true",
                   help="a complete document (pdflatex); default: a fragment to \\input "
                   "(needs amsmath, amssymb)")

    from .outputs.phase_cli import add_parsers as add_phase_parsers
    add_phase_parsers(sub, _add_model_group, _float, _positive_int)
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
    if args.precision != "high" and (args.high_log2n is not None or args.high_rules is not None
                                     or args.second_orders is not None or args.second_alpha_l):
        raise ParameterError("precision", "--high-log2n, --high-rules, --second-route-orders "
                                          "and --second-route-alpha-l need --precision high")
    if args.second_alpha_l and args.second_orders == ():
        raise ParameterError("second-route-alpha-l", "needs the second route (not "
                                                     "--second-route-orders none)")
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
    if args.precision == "high":
        return _high_precision(args, params, th, t0)
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


def _high_progress():
    """A progress callback for the large scrambles, with an estimate of the time left: the
    mean wall time of a scramble so far, times the scrambles left, over the worker processes
    (they run side by side, so the rate of the first finishes says little)."""
    from .numerics.thresholds import default_workers
    times = []

    def report(k, n, rule):
        times.append(rule["wall_time"])
        left = sum(times) / len(times) * (n - k) / default_workers()
        print(f"  large rule {k}/{n}: alpha_c = {rule['alpha_c']:.9f}, alpha_l = "
              f"{rule['alpha_l']:.9f} ({rule['wall_time']:.0f} s; about {left:.0f} s left)",
              file=sys.stderr, flush=True)
    return report


def _high_precision(args, params, fast, t0) -> int:
    """Refine the fast thresholds (``symattn.numerics.precise``) and report them."""
    from .numerics.branches import BranchNotFound
    from .numerics.precise import (
        CheckpointMismatch,
        HighPrecisionSettings,
        refine_thresholds,
    )
    from .numerics.thresholds import ThresholdNotFound
    defaults = HighPrecisionSettings()
    hp = HighPrecisionSettings(
        log2_n=args.high_log2n or defaults.log2_n, n_rules=args.high_rules or defaults.n_rules,
        confirm_orders=(defaults.confirm_orders if args.second_orders is None
                        else tuple(args.second_orders)),
        confirm_alpha_l=args.second_alpha_l)
    if not args.json:
        print(f"  fast route: alpha_c = {_fmt(fast.alpha_c, fast.alpha_c_err)}, alpha_l = "
              f"{_fmt(fast.alpha_l, fast.alpha_l_err)}; refining on {hp.n_rules} scrambled "
              f"Sobol rules of 2^{hp.log2_n} points", file=sys.stderr, flush=True)
    # with --out, each large scramble is kept as it finishes; a rerun computes only the rest
    checkpoint = None if args.out is None else args.out.with_name(args.out.name + ".partial")
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
    try:
        res = refine_thresholds(params, fast, hp,
                                progress=None if args.json else _high_progress(),
                                note=None if args.json else
                                (lambda text: print(f"  {text}", file=sys.stderr, flush=True)),
                                checkpoint=checkpoint)
    except CheckpointMismatch as exc:
        raise UsageError(str(exc)) from None
    except (ThresholdNotFound, BranchNotFound) as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    data = res.as_dict()
    data["wall_time"] = time.perf_counter() - t0
    if args.out is not None:
        _save(args.out, data)
        checkpoint.unlink(missing_ok=True)
    if args.json:
        print(json.dumps(data, indent=2, default=float))
        return 0
    for key in ("alpha_c", "alpha_l"):
        b = res.budget[key]
        print(f"{key} = {getattr(res, key):.9f} +- {getattr(res, key + '_err'):.1e}   "
              f"(integration {b['integration']:.1e}, root finding {b['root_finding']:.1e}, "
              f"fixed point {b['fixed_point']:.1e}, floating point {b['floating_point']:.1e})")
    print(f"eps_lin = {fast.eps_lin:.12f} +- {fast.eps_lin_err:.0e}")
    print("error bars: the sum of the four parts; integration is one standard error over "
          "the large scrambles")
    i95 = res.integration_95
    print(f"integration as a 95% interval (Student's t, {len(res.per_rule) - 1} degrees of "
          f"freedom): alpha_c +- {i95['alpha_c']:.1e}, alpha_l +- {i95['alpha_l']:.1e}")
    second = res.second_route
    if second is not None:
        verdict = "agree" if second["agrees"] else "DISAGREE"
        orders = [r["outer_order"] for r in second["table"][-4:-1]]
        print(f"\nsecond route (line preintegration, mean over Gauss-Hermite outer orders "
              f"{', '.join(map(str, orders))}): alpha_c = "
              f"{second['alpha_c']:.9f} +- {second['alpha_c_err']:.1e}; the two routes {verdict} "
              "within their error bars")
        second_l = second.get("alpha_l_route")
        if second_l is not None:
            verdict = "agree" if second_l["agrees"] else "DISAGREE"
            print(f"second route for alpha_l (fixed points with line-preintegrated atoms, mean "
                  f"over outer orders {', '.join(map(str, orders))}): alpha_l = "
                  f"{second_l['alpha_l']:.9f} +- {second_l['alpha_l_err']:.1e}; the two routes "
                  f"{verdict} within their error bars")
    if args.out is not None:
        print(f"\nresults written to {args.out}")
    print(f"took {data['wall_time']:.1f} s")
    return 0


def cmd_fixed_point(args) -> int:
    from .numerics.branches import BranchNotFound, solve_branch
    from .numerics.channel import OutputChannel
    from .numerics.quadrature import SobolRule
    from .numerics.thresholds import FIXED_POINT_KEYS, fixed_point_means
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
    n = len(fps)
    data = {"branch": args.branch, "alpha": alpha, **fixed_point_means(fps)}
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


def _simulate_progress(k, n, seconds):
    print(f"  seed {k}/{n} done, elapsed {seconds:.1f} s", file=sys.stderr, flush=True)


def _json_safe(x):
    """NaN (e.g. a standard error from one seed) as JSON null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def cmd_simulate(args) -> int:
    from .outputs.validate import QUANTITIES, check_memory, simulate_seeds
    alpha = check_alpha(args.alpha)
    params = _params(args)
    check_memory(args.d, alpha, copies=1, name="d")
    print(f"symattn: simulate d = {args.d}, alpha = {alpha:g}, start = {args.start}, "
          f"{args.seeds} seed(s)", file=sys.stderr, flush=True)
    data = simulate_seeds(params, args.d, alpha, args.start, args.seeds, n_test=args.n_test,
                          progress=_simulate_progress)
    if args.json:
        print(json.dumps(_json_safe(data), indent=2))
        return 0
    n = args.seeds
    print(f"{args.start} start, d = {args.d}, alpha = {alpha:g} (n = {round(alpha * args.d)} "
          f"sentences): mean +- standard error over {n} seed(s)")
    cols = [args.start] + list(data.get("paired", {}))
    stats = [data] + list(data.get("paired", {}).values())
    print(f"  {'':13s}" + "".join(f"{c + ' start':>26s}" for c in cols))
    for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
        print(f"  {k:13s}" + "".join(f"{st[k]:>14.7g} +- {st[k + '_err']:8.1e}" for st in stats))
    print(f"  {'converged':13s}" + "".join(f"{str(st['n_converged']) + '/' + str(n):>26s}"
                                             for st in stats))
    if "delta_eps_t" in data:
        print(f"paired eps_t(semantic) - eps_t(positional) = {data['delta_eps_t']:.4e} +- "
              f"{data['delta_eps_t_err']:.1e} (semantic lower in {data['semantic_lower']}/{n} "
              "seeds)")
    print(f"took {data['wall_time']:.1f} s")
    return 0


def cmd_validate(args, argv=None) -> int:
    from .outputs.validate import TheorySettings, ValidationGrid, run_validation
    params = _params(args)
    settings = _settings(args)
    if not args.positional_scale > 0:
        raise ParameterError("positional-scale", f"must be > 0, got {args.positional_scale:g}")
    grid = ValidationGrid(alphas=args.alphas, ds=args.ds, seeds=args.seeds, n_test=args.n_test,
                          scale_seeds=not args.same_seeds, positional_scale=args.positional_scale)
    theory = TheorySettings(log2n=settings.log2_n, rules=settings.n_rules, tol=settings.tol)
    t0 = time.perf_counter()
    res = run_validation(params, grid, theory, args.out, workers=args.workers, argv=argv)
    wall = time.perf_counter() - t0
    th = res["theory_thresholds"]
    print(f"results in {args.out}: summary.md, summary.csv, simulations.csv, theory.csv, fits.csv, "
          f"thresholds.csv, {len(res['figures'])} figure files")
    for t in res["thresholds"]:
        fmt = (lambda k: t[k + "_note"] if t[k] is None else _fmt(t[k], t[k + "_err"]))
        print(f"  d = {t['d']:6d} ({t['n_seeds']} seeds): alpha_c = {fmt('alpha_c')}, "
              f"alpha_l = {fmt('alpha_l')}")
    if "alpha_c" in th:
        print(f"  theory:                alpha_c = {_fmt(th['alpha_c'], th['alpha_c_err'])}, "
              f"alpha_l = {_fmt(th['alpha_l'], th['alpha_l_err'])}")
    print(f"took {wall:.1f} s")
    if res["failed"]:
        print(f"symattn: {len(res['failed'])} task(s) failed (see above); rerun to retry them",
              file=sys.stderr)
        return 1
    return 0


def cmd_latex(args) -> int:
    from .outputs.latex import document
    if args.out is not None and args.out.is_dir():
        raise UsageError(f"--out: {args.out} is a directory; give a .tex file name")
    text = document(standalone=args.standalone)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
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
        if args.command == "simulate":
            return cmd_simulate(args)
        if args.command == "validate":
            return cmd_validate(args, argv=["symattn"] + list(argv))
        if args.command == "latex":
            return cmd_latex(args)
        if args.command == "phase-diagram":
            from .outputs.phase_cli import cmd_phase_diagram
            return cmd_phase_diagram(args, _params(args))
        if args.command == "plot":
            from .outputs.phase_cli import cmd_plot
            return cmd_plot(args)
        parser.print_help()
        return EXIT_USAGE
    except (ParameterError, UsageError) as exc:
        print(f"symattn: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("symattn: interrupted" + ("; completed tasks are saved, rerun the same command to "
                                        "resume" if argv and argv[0] in RESUMABLE else ""),
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
