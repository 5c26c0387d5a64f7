"""``--rsb 1`` of ``fixed-point`` and ``thresholds``: the one-step RSB searches' options, their
run file (every solve saved as it finishes; the same command resumes) and their printout
(numerics: :mod:`symattn.numerics.one_step_rsb_search`,
:mod:`symattn.numerics.one_step_rsb_thresholds`; docs: stability, 'One-step RSB')."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

from .common import DEFAULT_OUT, EXIT_NOT_FOUND, float_arg, fmt, int_arg, list_arg
from ..model.params import ParameterError

#: the options of the 1RSB search, as (dest, RSBSettings field)
_OPTIONS = (("rsb_log2n", "log2n"), ("rsb_rules", "rules"), ("rsb_coarse", "coarse"),
            ("rsb_fine", "fine"), ("rsb_xs", "xs"), ("rsb_x_ref", "x_ref"),
            ("rsb_band_log2n", "band_log2n"), ("rsb_split", "split"),
            ("rsb_recentre_from", "recentre_from"), ("rsb_band_points", "band_points"),
            ("rsb_profile_skips", "profile_skips"), ("rsb_eps", "eps_stages"),
            ("rsb_fold_steps", "fold_steps"))


def add_rsb_options(p) -> None:
    g = p.add_argument_group("one-step replica-symmetry breaking (docs: stability, "
                             "'One-step RSB')")
    g.add_argument("--rsb", type=int, choices=(0, 1), default=0,
                   help="1: also solve the zero-temperature 1RSB equations (stationary Parisi "
                        "x, paired shifts from RS, error bars over rules); minutes to hours, "
                        "every solve saved to --out and resumed from it")
    g.add_argument("--rsb-log2n", dest="rsb_log2n", type=int_arg("rsb-log2n", 4, 16),
                   default=None, help="outer Sobol points per 1RSB rule: 2**K (default 10)")
    g.add_argument("--rsb-rules", dest="rsb_rules", type=int_arg("rsb-rules", 1, 64),
                   default=None, help="scrambled rules of the 1RSB search (default 3)")
    g.add_argument("--rsb-coarse", dest="rsb_coarse", type=int_arg("rsb-coarse", 2, 64),
                   default=None, help="inner Gauss-Hermite points per axis on smooth outer "
                                      "nodes (default 12)")
    g.add_argument("--rsb-fine", dest="rsb_fine", type=int_arg("rsb-fine", 2, 96),
                   default=None, help="inner points per axis on rough outer nodes (default 32)")
    g.add_argument("--rsb-x-ref", dest="rsb_x_ref", default=None,
                   type=float_arg("rsb-x-ref", 0.0, None, lo_open=True),
                   help="the reference Parisi x, RS up to 1e-3 of the effect (default 10)")
    g.add_argument("--rsb-xs", dest="rsb_xs", default=None,
                   type=list_arg("rsb-xs", float_arg("x", 0.0, None, lo_open=True)),
                   help="increasing Parisi x of the profile, searched for the sign change of "
                        "the x equation (default 30,100,300,1000,3000,10000)")
    g.add_argument("--rsb-band-log2n", dest="rsb_band_log2n", default=None,
                   type=int_arg("rsb-band-log2n", 5, 24),
                   help="integrate the band around the prox's jump surface with the points of a "
                        "dense rule of 2**K points (where the jump set is light: the semantic "
                        "branch near alpha_c, e.g. K = 20); default: no band")
    g.add_argument("--rsb-band-points", dest="rsb_band_points", default=None,
                   type=int_arg("rsb-band-points", 1, 2**20),
                   help="with --rsb-band-log2n K: choose the dense rule per rule, the first of "
                        "2**(rsb-log2n + 8) ... 2**K points that puts at least N points in the "
                        "band (for thresholds --rsb 1, whose searches at alpha_c and alpha_l "
                        "need different sizes, e.g. K = 24, N = 256); default: 2**K always")
    g.add_argument("--rsb-split", dest="rsb_split", default=None,
                   type=int_arg("rsb-split", 2, 48),
                   help="on rough outer nodes a jump line crosses, an inner rule split along "
                        "the line, N points per axis on each side (converges like Gauss-Hermite "
                        "on a smooth integrand, e.g. N = 16); default: the --rsb-fine rule")
    g.add_argument("--rsb-profile-skips", dest="rsb_profile_skips", default=None,
                   type=int_arg("rsb-profile-skips", 0, 64),
                   help="fixed-x solves that may stall and be stepped over, in all: a grid x "
                        "of the profile where Newton still stalls after halving the step (the "
                        "next x is tried from the last good point), a step of the secant in x "
                        "(another x in the bracket is tried); default 0: the profile ends "
                        "there, the secant stops")
    g.add_argument("--rsb-fold-steps", dest="rsb_fold_steps", default=None,
                   type=int_arg("rsb-fold-steps", 0, 1000),
                   help="where a rule's profile stalls for good, follow its solutions in "
                        "q1 - q0 instead of x (x free), at most N solves of 1 %% steps, to pass "
                        "a fold of the solutions in x and find the sign change beyond it "
                        "(default 0: the rule ends there; docs: stability)")
    g.add_argument("--rsb-eps", dest="rsb_eps", default=None,
                   type=list_arg("rsb-eps", float_arg("eps", 0.0, 1e-2, lo_open=True)),
                   help="decreasing smoothing widths of near-tied minima, each fixed-x solve "
                        "started from the last (default 1e-4,1e-5; where q1 - q0 < 1e-6, as on "
                        "the semantic branch at alpha_l, 1e-5 blends over the whole inner "
                        "Gaussian: add 1e-7, docs: stability)")
    g.add_argument("--rsb-recentre-from", dest="rsb_recentre_from", default=None,
                   type=float_arg("rsb-recentre-from", 0.0, None, lo_open=True),
                   help="from this Parisi x on, place the inner rules on the tilted inner "
                        "measure's mode (needed where x sqrt(q1 - q0) |f| is several; "
                        "default: never)")


def rsb_settings(args, tol: float | None = None):
    """The :class:`~symattn.numerics.one_step_rsb_search.RSBSettings` of the command line, or
    ``None`` without ``--rsb 1`` (then the ``--rsb-*`` options are refused)."""
    given = {field: getattr(args, dest) for dest, field in _OPTIONS
             if getattr(args, dest, None) is not None}
    if args.rsb == 0:
        if given:
            names = [dest for dest, field in _OPTIONS if field in given]
            raise ParameterError("rsb", f"--{'/--'.join(k.replace('_', '-') for k in names)} "
                                        "need --rsb 1")
        return None
    from ..numerics.one_step_rsb_search import RSBSettings
    if tol is not None:
        given["tol"] = max(tol, 1e-9)      # the 1RSB solves stop at 1e-9 (the inner rule's level)
    return RSBSettings(**given)


#: settings a run file may be resumed with more of, and their values when absent: more rules
#: add rules, more profile skips or fold steps go on where a rule's profile ended; none
#: changes a solve already made
_GROWS = (("rules", math.inf), ("profile_skips", 0), ("fold_steps", 0))


def _grown(old: dict, new: dict) -> dict:
    """``old`` (a run file's 1RSB settings) with the settings of ``_GROWS`` that ``new`` raises
    taken from ``new``."""
    out = dict(old)
    for key, absent in _GROWS:
        if out.get(key, absent) <= new.get(key, absent):
            out.pop(key, None)
            if key in new:
                out[key] = new[key]
    return out


class RunFile:
    """A 1RSB run's file: ``header`` (what was asked), ``rows`` (every solve, written atomically
    as it finishes) and, at the end, ``result``.  An existing file with the same header is
    resumed (its rows replayed), also with more ``--rsb-rules`` or ``--rsb-profile-skips`` than
    it was made with (``_GROWS``); one with another header is refused, not overwritten."""

    def __init__(self, path: Path, header: dict):
        from ..runs.files import read_json
        self.path, self.header, self.rows = Path(path), json.loads(json.dumps(header)), []
        if self.path.exists():
            data = read_json(self.path, "out")
            old = data.get("header")
            if isinstance(old, dict) and isinstance(old.get("rsb"), dict):
                old = {**old, "rsb": _grown(old["rsb"], self.header["rsb"])}
            if old != self.header:
                raise ParameterError("out", f"{self.path} holds a run with other parameters "
                                            f"({data.get('header')}); give another --out or "
                                            "remove it")
            self.rows = list(data.get("rows", []))

    def _write(self, result=None) -> None:
        from ..runs.files import write_json
        write_json(self.path, {"header": self.header, "rows": self.rows, "result": result})

    def save(self, row: dict) -> None:
        self.rows.append(row)
        self._write()

    def finish(self, result: dict) -> None:
        self._write(result)


def _say(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def default_out(name: str) -> Path:
    return DEFAULT_OUT / name


def run_fixed_point(args, params, settings) -> int:
    """``symattn fixed-point --rsb 1``."""
    from ..numerics.branches import BranchNotFound
    from ..numerics.estimates import fixed_point_estimate
    from ..numerics.one_step_rsb_search import one_step_rsb_estimate
    from ..runs.lock import output_lock
    from ..runs.paths import check_output_file
    rsb = rsb_settings(args, settings.tol)
    if args.branch == "trivial":
        raise ParameterError("branch", "--rsb 1 needs the positional or semantic branch")
    out = check_output_file(args.out or default_out(
        f"fixed-point-rsb1-{args.branch}-alpha{args.alpha:g}-omega{params.omega:g}.json"))
    header = {"command": "fixed-point", "branch": args.branch, "alpha": args.alpha,
              "params": params.as_dict(), "rsb": rsb.as_dict(), "rs_settings": asdict(settings)}
    with output_lock(out, folder=False):
        run = RunFile(out, header)
        print(f"symattn: 1RSB, {args.branch} branch at alpha = {args.alpha:g}: {rsb.rules} rules "
              f"of 2^{rsb.log2n} outer points, inner {rsb.coarse}^2 / {rsb.fine}^2"
              + (f" / split 2 x {rsb.split}^2" if rsb.split else "")
              + ", smoothing " + ", ".join(f"{e:g}" for e in rsb.eps_stages)
              + (f", up to {rsb.fold_steps} steps in q1 - q0 past a stalled profile"
                 if rsb.fold_steps else "") + f"; saved to {out}"
              + (f" (resuming: {len(run.rows)} solves done)" if run.rows else ""),
              file=sys.stderr, flush=True)
        try:
            rs = fixed_point_estimate(params, args.branch, args.alpha, settings).to_dict()
            est = one_step_rsb_estimate(params, args.branch, args.alpha, rsb, rs=rs,
                                        rows=run.rows, save=run.save, progress=_say)
        except BranchNotFound as exc:
            print(f"symattn: {exc}", file=sys.stderr)
            if args.json:
                print(json.dumps({"branch": args.branch, "alpha": args.alpha, "rsb": 1,
                                  "converged": False, "error": str(exc)}))
            return EXIT_NOT_FOUND
        _finish(args, run, est.to_dict(), lambda: print_estimate(est))
    return 0 if est.converged else EXIT_NOT_FOUND


def _finish(args, run, data, show) -> None:
    """Write the result into the run file, then print it (JSON, or ``show()`` as text)."""
    run.finish(data)
    if args.json:
        print(json.dumps(data, indent=2, default=float))
    else:
        show()
        print(f"\nresults written to {run.path}")


#: rows of the printout: (label, key of values(), RS key, shift key)
_ROWS = (("eps_t", "eps_t", "eps_t", "d_eps_t"),
         ("eps_t (x eq.)", "eps_t_envelope", "eps_t", "d_eps_t_envelope"),
         ("eps_g", "eps_g", "eps_g", "d_eps_g"), ("q0", "q0", "q", "d_q0"),
         ("q1", "q1", "q", "d_q1"), ("m", "m", "m", "d_m"), ("theta", "theta", "theta", "d_theta"),
         ("V", "V", "V", "d_V"))


def print_estimate(est) -> None:
    print(f"1RSB, {est.branch} branch at alpha = {est.alpha:.7g}: {est.status} ({est.note})")
    for r in est.per_rule:
        print(f"  rule {r.seed}: {r.status}" + (f", x* = {r.x_star:.4g}" if r.x_star else "")
              + (f" ({r.why})" if r.why else ""))
    if est.status in ("converged", "interpolated"):
        x, xe = est.shifts["x_star"]
        f, fe = est.shifts["q0_over_q1"]
        print(f"stationary Parisi x = {fmt(x, xe)}, q0/q1 = {fmt(f, fe)}")
    if est.status == "not resolved" or est.rs is None:
        return
    print(f"  {'':14s} {'RS':>26s} {'1RSB':>26s} {'1RSB - RS (paired)':>24s}")
    vals = est.values()
    for label, key, rs_key, d_key in _ROWS:
        d, de = est.shifts[d_key]
        print(f"  {label:14s} {fmt(est.rs[rs_key], est.rs[rs_key + '_err']):>26s} "
              f"{fmt(*vals[key]):>26s} {d:>+13.3e} +- {de:7.1e}")
    print("error bars: standard errors over the rules used (the RS column: over its own "
          "scrambles); the two eps_t rows are the two routes (docs: stability)")


def run_thresholds(args, params, rs: dict) -> int:
    """``symattn thresholds --rsb 1``, from the RS thresholds ``rs``."""
    from ..numerics.one_step_rsb_thresholds import SLOPE_SETTINGS, one_step_rsb_thresholds
    from ..runs.lock import output_lock
    from ..runs.paths import check_output_file
    rsb = rsb_settings(args, args.tol)
    out = check_output_file(args.out or default_out(
        f"thresholds-rsb1-omega{params.omega:g}.json"))
    # the RS thresholds are recomputed on a resume by the same route (the precision, not the
    # values, is part of what was asked)
    header = {"command": "thresholds", "params": params.as_dict(), "rsb": rsb.as_dict(),
              "precision": args.precision}
    with output_lock(out, folder=False):
        run = RunFile(out, header)
        print(f"symattn: 1RSB corrections to the thresholds: {rsb.rules} rules of "
              f"2^{rsb.log2n} outer points per search; saved to {out}"
              + (f" (resuming: {len(run.rows)} solves done)" if run.rows else ""),
              file=sys.stderr, flush=True)
        th = one_step_rsb_thresholds(params, rs, rsb, SLOPE_SETTINGS, rows=run.rows,
                                     save=run.save, progress=_say)
        _finish(args, run, th.to_dict(), lambda: print_thresholds(th))
    return 0 if th.status == "converged" else EXIT_NOT_FOUND


def print_thresholds(th) -> None:
    rs = th.rs
    for key in ("positional", "semantic", "semantic_l"):
        if key in th.estimates:
            print_estimate(th.estimates[key])
            print()
    if rs["alpha_c"] is not None:
        Dp, Dpe = th.slopes["D_prime"]
        print(f"D'(alpha_c) = d(eps_t^sem - eps_t^pos)/d alpha = {Dp:.4e} +- {Dpe:.1e} (RS)")
        print(f"alpha_c  RS   {fmt(rs['alpha_c'], rs['alpha_c_err'])}")
        for route, what in (("direct", "difference of fixed points"),
                            ("envelope", "integrated x equation")):
            print(f"         1RSB {fmt(*th.alpha_c[route])}  ({what})")
    g, ge = th.slopes["eps_g_sem"]
    print(f"d eps_g^sem/d alpha at alpha_l = {g:.4e} +- {ge:.1e} (RS)")
    print(f"alpha_l  RS   {fmt(rs['alpha_l'], rs['alpha_l_err'])}")
    print(f"         1RSB {fmt(*th.alpha_l)}")
    print(f"status: {th.status}" + (f"; {th.note}" if th.note else ""))
    for a in th.assumed:
        print(f"  correction taken as 0, not resolved: {a}")
