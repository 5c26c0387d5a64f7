"""``symattn thresholds`` (and the main job, ``symattn`` alone): alpha_c and alpha_l with error bars.

``--precision standard`` (the default) locates them on one scramble and refines them on large
scrambles, ``high`` on larger ones with a second route (:mod:`symattn.refine.precise`);
``fast`` is the mean over small scrambles alone (:mod:`symattn.numerics.thresholds`)."""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from .one_step_rsb import add_rsb_options, rsb_settings
from .common import (DEFAULT_OUT, EXIT_NOT_FOUND, GENERAL_BRACKET, UsageError,
                     add_model_options, bracket_arg, fmt, int_arg, params_from,
                     second_orders_arg)
from ..model.params import ParameterError
from ..runs.executors import default_workers
from ..runs.files import write_json
from ..runs.paths import check_output_file


#: Sobol points of the one scramble on which the refined routes locate the thresholds: 2^12
LOCATE_LOG2N = 12


def add_parser(sub):
    t = sub.add_parser("thresholds", help="alpha_c and alpha_l with error bars")
    add_model_options(t, log2n=None, rules=None,
                      log2n_default="14 with --precision fast, else 12",
                      rules_default="8 with --precision fast, else one scramble locates "
                                    "the thresholds")
    t.add_argument("--out", type=Path, default=None,
                   help="also write the full JSON here; with --rsb 1: the 1RSB run file, "
                        "written after every solve and resumed from (default symattn-results/"
                        "thresholds-rsb1-omegaW.json)")
    t.add_argument("--bracket", type=bracket_arg, default=None, metavar="LO:HI",
                   help="general model only (--L, --positions, --rank, --teacher-rank): "
                        "alpha_c is searched for in [LO, HI], where the global minimum's "
                        "character differs at the two ends (default 0.1:2); the mean over "
                        "--rules scrambles (default 4) of 2^log2n points (default 12)")
    h = t.add_argument_group("precision (docs: numerics, 'The main job' and 'High precision')")
    h.add_argument("--precision", choices=("fast", "standard", "high"), default="standard",
                   help="standard (default, the main job): locate the thresholds on one "
                        "scramble of 2^12 points, then refine them on 10 folded scrambles of "
                        "2^17 (20-30 s on 2 cores); fast: the mean over --rules scrambles "
                        "of 2^log2n points, no refinement; high: refine on 8 folded scrambles "
                        "of 2^22 and add a second route for alpha_c (about 8 minutes).  The "
                        "refined routes are resumable with --out: finished scrambles are kept "
                        "in OUT.partial")
    h.add_argument("--high-log2n", dest="high_log2n", type=int_arg("high-log2n", 10, 26),
                   default=None, help="points per large scramble: 2**K (default 17; 22 with "
                                      "--precision high)")
    h.add_argument("--high-rules", dest="high_rules", type=int_arg("high-rules", 2, 256),
                   default=None, help="large scrambles (default 10; 8 with --precision high)")
    h.add_argument("--second-route-orders", dest="second_orders", default=None,
                   type=second_orders_arg, metavar="N1,N2,N3|none",
                   help="Gauss-Hermite outer orders of the second route for alpha_c (default "
                        "16,20,24; 'none' skips it; --precision high)")
    h.add_argument("--second-route-alpha-l", dest="second_alpha_l", action="store_true",
                   help="also confirm alpha_l by the second route (fixed points with "
                        "line-preintegrated atoms; about 2 more minutes; --precision high)")
    add_rsb_options(t)


def _progress(k, n, rule):
    print(f"  rule {k}/{n}: alpha_c = {rule.alpha_c:.6f}, alpha_l = {rule.alpha_l:.6f} "
          f"({rule.wall_time:.1f} s)", file=sys.stderr, flush=True)


def _check_options(args):
    """Refuse options that the chosen precision does not use."""
    if args.precision == "fast" and (args.high_log2n is not None
                                     or args.high_rules is not None):
        raise ParameterError("precision", "--high-log2n and --high-rules need --precision "
                                          "standard or high")
    if args.precision != "high" and (args.second_orders is not None or args.second_alpha_l):
        raise ParameterError("precision", "--second-route-orders and --second-route-alpha-l "
                                          "need --precision high")
    if args.second_alpha_l and args.second_orders == ():
        raise ParameterError("second-route-alpha-l", "needs the second route (not "
                                                     "--second-route-orders none)")


def _settings(args, fast: bool):
    """The fast route's settings: ``--rules`` scrambles (default 8) of ``2^log2n`` (default
    14) with --precision fast; for the refined routes one scramble of 2^12 locates the
    thresholds unless ``--rules`` asks for more.  Returns ``(settings, first_only)``."""
    from ..numerics.settings import NumericalSettings
    log2n = (14 if fast else LOCATE_LOG2N) if args.log2n is None else args.log2n
    rules = (8 if fast else 2) if args.rules is None else args.rules
    return (NumericalSettings(log2n=log2n, rules=rules, tol=args.tol),
            not fast and args.rules is None)


def run(args, main_job=False) -> int:
    params = params_from(args, general=not main_job)
    rsb = rsb_settings(args)                           # refuses --rsb-* without --rsb 1
    if rsb is not None and not params.is_paper_shape:
        raise ParameterError("rsb", "the 1RSB equations are solved for the paper's shape only "
                                    "(two tokens, rank one)")
    if rsb is not None and (args.second_orders is not None or args.second_alpha_l):
        raise ParameterError("rsb", "--rsb 1 takes the RS thresholds without the second route "
                                    "(--second-route-* refine the RS values alone)")
    if not params.is_paper_shape:
        return _run_general(args, params)
    if args.bracket is not None:
        raise ParameterError("bracket", "applies to the general model only (the paper's "
                                        "thresholds are located from alpha = 1 on)")
    _check_options(args)
    if rsb is not None:
        return _run_rsb(args, params)
    fast = args.precision == "fast"
    settings, first_only = _settings(args, fast)
    out = args.out if args.out is not None else (DEFAULT_OUT / "thresholds.json" if main_job
                                                 else None)
    if out is not None:
        out = check_output_file(out)
    from ..numerics.thresholds import compute_thresholds
    t0 = time.perf_counter()
    print(f"symattn: thresholds for sigma={params.sigma:g}, lambda={params.lam:g}, "
          f"omega={params.omega:g}, A={[list(r) for r in params.A]}", file=sys.stderr)
    what = ("one scrambled Sobol rule" if first_only
            else f"{settings.rules} scrambled Sobol rules")
    print(f"  {'located on ' if not fast else ''}{what} of 2^{settings.log2n} points, "
          f"fixed-point tolerance {settings.tol:g}", file=sys.stderr, flush=True)
    from ..numerics.branches import BranchNotFound
    from ..numerics.thresholds import ThresholdNotFound
    try:
        th = compute_thresholds(params, settings, progress=_progress, first_only=first_only)
        if th.alpha_c_note and args.precision == "standard":
            print(f"symattn: {th.alpha_c_note}; the refinement needs both thresholds, so "
                  f"alpha_l comes from the fast route (8 scrambles of 2^14)", file=sys.stderr)
            fast, settings = True, replace(settings, log2n=14, rules=8)
            th = compute_thresholds(params, settings, progress=_progress)
    except (ThresholdNotFound, BranchNotFound) as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if not fast:
        if th.alpha_c_note:
            print(f"symattn: --precision high refines alpha_c and alpha_l together; "
                  f"{th.alpha_c_note}", file=sys.stderr)
            return EXIT_NOT_FOUND
        return _refined(args, params, th, t0, out)
    wall = time.perf_counter() - t0
    data = th.to_dict()
    if _saved_or_json(args, out, data):
        return 0
    keys = ("q", "m", "theta", "V", "q_hat", "m_hat", "theta_hat", "V_hat", "eps_t", "eps_g")
    if th.alpha_c_note:
        print(th.alpha_c_note)
        print(f"alpha_l = {fmt(th.alpha_l, th.alpha_l_err)}")
        print(f"eps_lin = {fmt(th.eps_lin, th.eps_lin_err)}")
        print("error bars: one standard error over the scrambles plus the root-finding bound")
        sem = data["semantic_at_alpha_l"]
        print(f"\nsemantic fixed point at alpha_l (mean +- standard error over {settings.rules} "
              "rules):")
        for k in keys:
            print(f"  {k:10s} {sem[k]:>13.7g} +- {sem[k + '_err']:7.1e}")
    else:
        print(f"alpha_c = {fmt(th.alpha_c, th.alpha_c_err)}")
        print(f"alpha_l = {fmt(th.alpha_l, th.alpha_l_err)}")
        print(f"eps_lin = {fmt(th.eps_lin, th.eps_lin_err)}")
        print("error bars: one standard error over the scrambles plus the root-finding bound")
        print(f"\nfixed points at alpha_c (mean +- standard error over {settings.rules} rules):")
        pos, sem = th.at_alpha_c("positional"), th.at_alpha_c("semantic")
        print(f"  {'':10s} {'positional':>24s} {'semantic':>24s}")
        for k in keys:
            print(f"  {k:10s} {pos[k]:>13.7g} +- {pos[k + '_err']:7.1e} "
                  f"{sem[k]:>13.7g} +- {sem[k + '_err']:7.1e}")
    _print_stability(data["rs_stability"], "at alpha_l" if th.alpha_c_note else "at alpha_c")
    print(f"\nresults written to {out}" if out is not None else
          "\n(--out FILE saves the full JSON: every scramble's thresholds and fixed points)")
    print(f"took {wall:.1f} s")
    return 0


def _run_rsb(args, params) -> int:
    """``--rsb 1``: the RS thresholds by the route ``--precision`` names (standard by default:
    the fast route's scatter, 5e-4 in alpha_c, is the size of the 1RSB shift), then the 1RSB
    corrections (:mod:`symattn.cli.one_step_rsb`)."""
    from ..numerics.branches import BranchNotFound
    from ..numerics.thresholds import ThresholdNotFound, compute_thresholds
    from ..refine.precise import STANDARD, HighPrecisionSettings, refine_thresholds
    from .one_step_rsb import run_thresholds
    fast = args.precision == "fast"
    settings, first_only = _settings(args, fast)
    print(f"symattn: RS thresholds ({args.precision} precision)", file=sys.stderr, flush=True)
    try:
        th = compute_thresholds(params, settings, progress=_progress, first_only=first_only)
        if th.alpha_c_note and not fast:
            fast, settings = True, replace(settings, log2n=14, rules=8)
            th = compute_thresholds(params, settings, progress=_progress)
        if fast:
            rs = {"alpha_c": None if th.alpha_c_note else th.alpha_c,
                  "alpha_c_err": None if th.alpha_c_note else th.alpha_c_err,
                  "alpha_l": th.alpha_l, "alpha_l_err": th.alpha_l_err}
        else:
            defaults = STANDARD if args.precision == "standard" else HighPrecisionSettings()
            hp = replace(defaults, log2n=args.high_log2n or defaults.log2n,
                         rules=args.high_rules or defaults.rules, confirm_orders=())
            res = refine_thresholds(params, th, hp, progress=_high_progress(),
                                    note=lambda text: print(f"  {text}", file=sys.stderr,
                                                            flush=True))
            rs = {"alpha_c": res.alpha_c, "alpha_c_err": res.alpha_c_err,
                  "alpha_l": res.alpha_l, "alpha_l_err": res.alpha_l_err}
    except (ThresholdNotFound, BranchNotFound) as exc:
        if args.json:
            print(json.dumps({"rsb": 1, "error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"  RS: alpha_c = {rs['alpha_c']}, alpha_l = {rs['alpha_l']}", file=sys.stderr,
          flush=True)
    return run_thresholds(args, params, rs)


def _saved_or_json(args, out, data) -> bool:
    """Write ``data`` to ``out`` (if given); with ``--json`` print it and return True (the
    text report is then skipped)."""
    if out is not None:
        write_json(out, data)
    if args.json:
        print(json.dumps(data, indent=2, default=float))
    return args.json


def _high_progress():
    """A progress callback for the large scrambles, with an estimate of the time left: the
    mean wall time of a scramble so far, times the scrambles left, over the worker processes
    (they run side by side, so the rate of the first finishes says little)."""
    times = []

    def report(k, n, rule):
        times.append(rule["wall_time"])
        left = sum(times) / len(times) * (n - k) / default_workers()
        print(f"  large rule {k}/{n}: alpha_c = {rule['alpha_c']:.9f}, alpha_l = "
              f"{rule['alpha_l']:.9f} ({rule['wall_time']:.0f} s; about {left:.0f} s left)",
              file=sys.stderr, flush=True)
    return report


def _located(th) -> str:
    """The fast route's thresholds as the refined routes' progress line gives them."""
    if math.isinf(th.alpha_c_err):
        return f"alpha_c = {th.alpha_c:.4f}, alpha_l = {th.alpha_l:.4f} (one scramble)"
    return (f"alpha_c = {fmt(th.alpha_c, th.alpha_c_err)}, alpha_l = "
            f"{fmt(th.alpha_l, th.alpha_l_err)}")


def _refined(args, params, fast, t0, out) -> int:
    """Refine the fast thresholds (:mod:`symattn.refine.precise`) and report them."""
    from ..numerics.branches import BranchNotFound
    from ..refine.precise import (
        STANDARD,
        CheckpointMismatch,
        HighPrecisionSettings,
        refine_thresholds,
    )
    from ..numerics.thresholds import ThresholdNotFound
    defaults = STANDARD if args.precision == "standard" else HighPrecisionSettings()
    hp = replace(defaults, log2n=args.high_log2n or defaults.log2n,
                 rules=args.high_rules or defaults.rules,
                 confirm_orders=(defaults.confirm_orders if args.second_orders is None
                                 else tuple(args.second_orders)),
                 confirm_alpha_l=args.second_alpha_l)
    print(f"  located: {_located(fast)}; refining on {hp.rules} scrambled "
          f"Sobol rules of 2^{hp.log2n} points", file=sys.stderr, flush=True)
    # with --out, each large scramble is kept as it finishes; a rerun computes only the rest
    checkpoint = None if out is None else out.with_name(out.name + ".partial")
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
    try:
        res = refine_thresholds(params, fast, hp,
                                progress=_high_progress(),
                                note=lambda text: print(f"  {text}", file=sys.stderr, flush=True),
                                checkpoint=checkpoint)
    except CheckpointMismatch as exc:
        raise UsageError(str(exc)) from None
    except (ThresholdNotFound, BranchNotFound) as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    res.precision = args.precision
    data = res.as_dict()
    data["wall_time"] = time.perf_counter() - t0
    if out is not None:
        write_json(out, data)
        checkpoint.unlink(missing_ok=True)
    if args.json:
        print(json.dumps(data, indent=2, default=float))
        return 0
    for key in ("alpha_c", "alpha_l"):
        b = res.budget[key]
        print(f"{key} = {fmt(getattr(res, key), getattr(res, key + '_err'))}   "
              f"(integration {b['integration']:.1e}, root finding {b['root_finding']:.1e}, "
              f"fixed point {b['fixed_point']:.1e}, floating point {b['floating_point']:.1e})")
    print(f"eps_lin = {fmt(fast.eps_lin, fast.eps_lin_err)}")
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
              f"{fmt(second['alpha_c'], second['alpha_c_err'])}; the two routes {verdict} "
              "within their error bars")
        second_l = second.get("alpha_l_route")
        if second_l is not None:
            verdict = "agree" if second_l["agrees"] else "DISAGREE"
            print(f"second route for alpha_l (fixed points with line-preintegrated atoms, mean "
                  f"over outer orders {', '.join(map(str, orders))}): alpha_l = "
                  f"{fmt(second_l['alpha_l'], second_l['alpha_l_err'])}; the two routes "
                  f"{verdict} within their error bars")
    if res.precision == "standard":
        _print_fixed_points(res)
    _print_stability(data["rs_stability"], "at the located alpha_c")
    print(f"\nresults written to {out}" if out is not None else
          "\n(--out FILE saves the full JSON: every scramble's thresholds and fixed points)")
    print(f"took {data['wall_time']:.1f} s")
    return 0


def _print_stability(reports: dict, where: str) -> None:
    """One line per branch: the RS-stability verdict and replicon (numerics.stability)."""
    print(f"\nreplica-symmetric stability {where} (replicon of the continuous prox + beta x "
          f"growth from the prox's jumps; model page §8):")
    for b, r in reports.items():
        if r["replicon"] is None or math.isnan(r["replicon"]):    # rank > 1: not derived
            print(f"  {b:10s} {r['verdict'].upper()}: {r['reason']}")
            continue
        bs = "never" if r["beta_star"] is None else f"at beta = {r['beta_star']:.3g}"
        print(f"  {b:10s} {r['verdict'].upper()}: replicon {fmt(r['replicon'], r['replicon_err'])}"
              f" + beta x {fmt(r['growth'], r['growth_err'])} (reaches 1 {bs}); {r['reason']}")


def _print_fixed_points(res) -> None:
    """The order parameters and ``eps_t``, ``E[M]`` of both branches where each large scramble
    located ``alpha_c`` (mean +- standard error over the scrambles)."""
    from ..stats import mean_se
    rules = res.per_rule
    off = max(abs(r["alpha_c_steps"][-1] - res.alpha_c) for r in rules)
    print(f"\nfixed points where alpha_c was located (each large scramble's last alpha, within "
          f"{off:.0e} of alpha_c; mean +- standard error over {len(rules)} scrambles):")
    print(f"  {'':10s} {'positional':>24s} {'semantic':>24s}")
    rows = {k: i for i, k in enumerate(("q", "m", "theta", "V"))}
    for k in (*rows, "eps_t", "E_M"):
        cells = []
        for b in ("positional", "semantic"):
            at = [r["at_alpha_c"][b] for r in rules]
            vals = [a["x"][rows[k]] if k in rows else a[k] for a in at]
            mean, se = mean_se(np.asarray(vals, float))
            cells.append(f"{mean:>13.7g} +- {se:7.1e}")
        print(f"  {k:10s} " + " ".join(cells))


def _run_general(args, params) -> int:
    """The general model's thresholds (:mod:`symattn.numerics.general_thresholds`): the mean
    over scrambles; the refined routes are the paper's shape's."""
    if args.precision == "high" or args.high_log2n or args.high_rules or args.second_orders \
            or args.second_alpha_l:
        raise ParameterError("precision", "the general model has the mean over scrambles only "
                                          "(--rules, --log2n); the refined routes are the "
                                          "paper's shape's")
    from ..numerics.general_thresholds import ThresholdNotFound, compute_general_thresholds
    out = None if args.out is None else check_output_file(args.out)
    lo, hi = args.bracket or GENERAL_BRACKET
    log2n = 12 if args.log2n is None else args.log2n
    rules = 4 if args.rules is None else args.rules
    print(f"symattn: thresholds of the general model (L = {params.L}, r = {params.r}, "
          f"r_t = {params.r_t}, positions {params.positions}, omega = {params.omega:g}): "
          f"{rules} scrambles of 2^{log2n} points, alpha_c in [{lo:g}, {hi:g}]",
          file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        th = compute_general_thresholds(
            params, log2n=log2n, rules=rules, bracket=(lo, hi), tol=args.tol,
            progress=lambda k, text: print(f"  scramble {k + 1}/{rules}: {text} "
                                           f"({time.perf_counter() - t0:.0f} s)",
                                           file=sys.stderr, flush=True))
    except ThresholdNotFound as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "params": params.as_dict()}))
        print(f"symattn: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    data = th.to_dict()
    if _saved_or_json(args, out, data):
        return 0
    print(f"global minimum: {th.below} below alpha_c, {th.above} above ({th.transition} "
          "transition)")
    print(f"alpha_c = {fmt(th.alpha_c, th.alpha_c_err)}")
    print(f"alpha_l = {fmt(th.alpha_l, th.alpha_l_err)}" if not th.alpha_l_note
          else f"alpha_l {th.alpha_l_note}")
    print(f"eps_lin = {fmt(th.eps_lin, th.eps_lin_err)}")
    print("error bars: one standard error over the scrambles plus the root-finding bound")
    if not data["verified"]:
        print("WARNING: a search at alpha_c found a fixed point below both branches on some "
              "scramble (see per_rule.lower_points in the JSON)")
    if data.get("rs_stability"):
        _print_stability(data["rs_stability"], "at alpha_c")
    print(f"\nresults written to {out}" if out is not None else
          "\n(--out FILE saves the full JSON: every scramble's thresholds and fixed points)")
    print(f"took {time.perf_counter() - t0:.1f} s")
    return 0
