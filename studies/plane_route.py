"""alpha_c and alpha_l by plane preintegration, against the scrambles of a ``--precision high`` run.

Question: what are alpha_c and alpha_l when every switch of the global minimiser is located
(plane preintegration) instead of sampled by scrambled rules, and do the scrambles' values agree
with them?

How: reads the JSON of ``symattn thresholds --precision high --out F``.

alpha_c (default): recomputes ``E[M]`` at the fixed points of its first large scramble with
:class:`symattn.refine.plane.PlaneChannel` (every switch located: lines in xi_1, located
count changes in xi_2, adaptive Gauss-Kronrod in u, Gauss-Hermite in v), for each order in
``--v-orders``; ``alpha_c`` follows as in the second route
(``symattn.refine.precise.alpha_c_with``: the fixed points enter at second order).  The
result is the highest order's; its error bar: the change from the next lower order, plus the
adaptive rule's estimate (its Kronrod-Gauss differences) carried to alpha_c; with ``--refine
grid,cells,follow`` (any subset) also the change when the counting grid in xi_2, the detection
cells in xi_1 or the continuation steps across a cell are doubled at the order listed last.
One process per branch; with the defaults order 12 takes about 13 minutes on 2 cores (the
positional branch), and order 16 took about twice as long as order 12 with one follow step.

alpha_l (``--alpha-l``): the fixed point of the alpha_l branch re-solved on plane averages
(:func:`symattn.refine.plane.plane_alpha_l`: chord iterations from the scramble's fixed
point with the fast rule's Jacobian, the adaptive rule steered by alpha_l itself, so
``--u-tol`` is in units of alpha), for each order in the order listed, each after the first
starting from the previous one's fixed point.  The result is the highest order's.  Error bar:
its change from the next lower order, the adaptive estimate, the last chord change (fixed
point), the slope's relative error times the step in alpha (as in ``confirm_alpha_l``) and
eps_g's quadrature bound; with ``--refine``, one evaluation of the refined rule at the fixed
point of the order listed last (list a low order last to make it cheap), its change of the
averages carried to alpha_l by the goal's weights (a chord step, to first order).  The v lines
are shared by two processes.

Each result is appended to ``--out`` as it finishes; a rerun skips those already there.

Found (docs/numerics.md, 'Plane preintegration: every switch located (studies/plane_route.py)'
and 'Plane preintegration for alpha_l (plane_route.py --alpha-l)'; 2-core machine, bars as of
2026-12-01, commits 4cf59f7 and c665b3a), at the fixed points of scramble 1000 of the default
run:

* "alpha_c = 1.25153561 +- 1.7e-7" (v orders 12 and 16, run by this script's prototype with the
  same settings and one follow step; E[M] at order 16: 0.00225950660084 positional,
  0.00143706324526 semantic).  Order 12 with 4 follow steps gives 1.251535594 against
  1.251535588.  Against the scrambles, every set agrees within 1.4 combined one-standard-error
  bars except the default run's (8 x 2^22 folded, 1.2515389 +- 1.1e-6), which lies 3.0 of its
  own standard errors above (Student's t, 7 degrees of freedom: p about 0.02).  About 50
  minutes on 2 cores for orders 12 and 16.
* "alpha_l = 1.4922707 +- 7.6e-7" (1.4922706746, order 12; order 8: 1.4922706432).  Every
  scramble set agrees within 1.4 combined error bars (one standard error), and within 0.6 at
  95%.  About 85 minutes on 2 cores in all.

Rerun (``high.json`` from ``symattn thresholds --precision high --out high.json``; the docs'
commands, with the ``--out`` names that studies/same_point.py reads there)::

    python studies/plane_route.py --json high.json --v-orders 12,16 --out plane.json
    python studies/plane_route.py --json high.json --v-orders 12 --refine grid,cells --out plane.json
    python studies/plane_route.py --json high.json --alpha-l --v-orders 12,8 --refine cells --out plane_l.json
    python studies/plane_route.py --json high.json --alpha-l --v-orders 12,8 --refine follow --out plane_l.json
    python studies/plane_route.py --json high.json --alpha-l --v-orders 12,8 --refine grid --out plane_l.json

Options: ``[--alpha-l] [--v-orders 12,16] [--u-tol 1e-10] [--min-width 1e-3] [--grid 64]
[--cells 56] [--follow-steps 4] [--refine grid,cells,follow] [--out studies/data/plane.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from symattn.runs import atomic_write_text
from symattn.model import ModelParams
from symattn.numerics.branches import BRANCHES
from symattn.numerics.channel import OutputChannel
from symattn.refine.plane import PlaneChannel, PlaneRule, plane_alpha_l
from symattn.refine.precise import alpha_c_with
from symattn.refine.preintegration import LineRule
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.saddle import SaddlePointMap



def _stats(st, goal: bool) -> dict:
    """The plane channel's diagnostics of one evaluation, under the keys the saved records
    use: its counts, ``goal_error_estimate`` and, without a goal, ``E_M_error_estimate``."""
    out = {**st.diagnostics, "goal_error_estimate": st.error_estimate}
    if not goal:
        out["E_M_error_estimate"] = st.error_estimate
    return out

def _rule(args, v_order, grid, cells, follow):
    return PlaneRule(v_order=v_order, u_tol=args.u_tol, min_width=args.min_width, grid=grid,
                     line=LineRule(cells=cells, follow_steps=follow))


class _Say:
    """Progress of one (branch, order): picklable, so worker processes can call it."""

    def __init__(self, label):
        self.label, self.t0 = label, time.perf_counter()

    def __call__(self, rnd, n):
        print(f"  {self.label}: round {rnd}, {n} intervals "
              f"({time.perf_counter() - self.t0:.0f} s)", flush=True)


def _task(args):
    params, x, branch, (v_order, grid, cells, follow), opts = args
    t0 = time.perf_counter()
    ch = PlaneChannel(params, _rule(opts, v_order, grid, cells, follow))
    st = ch.evaluate(x, progress=_Say(f"{branch} v_order {v_order}"))
    if st.n_failed:
        raise RuntimeError(f"{st.n_failed} prox solves failed")
    return {"branch": branch, **_config(v_order, grid, cells, follow), **_settings(opts),
            "E_M": st.E_M, **_stats(st, goal=False), "wall_time": time.perf_counter() - t0}


def _config(v_order, grid, cells, follow):
    return {"v_order": v_order, "grid": grid, "cells": cells, "follow_steps": follow}


def _settings(opts):
    return {"u_tol": opts.u_tol, "min_width": opts.min_width}


_KEYS = ("kind", "branch", "v_order", "grid", "cells", "follow_steps", "u_tol", "min_width")


def _key(r):
    return tuple(r.get(k) for k in _KEYS)


def _key_of(kind, branch, config, opts):
    return (kind, branch, *config, *_settings(opts).values())


class _Results:
    """The ``--out`` file: a list of records, rewritten atomically after each one."""

    def __init__(self, path):
        self.path = Path(path)
        self.done = json.loads(self.path.read_text()) if self.path.exists() else []

    def get(self, key):
        return next((r for r in self.done if _key(r) == key), None)

    def add(self, rec):
        self.done.append(rec)
        atomic_write_text(self.path, json.dumps(self.done, indent=1))


def _fast_jacobian(params, high, branch, alpha, x):
    """The chord Jacobian as ``--precision high`` builds it: the fast rule's smoothed map at
    ``x`` (the fast rule of the run's settings, smoothing ``jac_eps``)."""
    fast, hp = high["settings"]["fast"], high["settings"]["high"]
    B = BRANCHES[branch]
    ch = OutputChannel(params, SobolRule(fast["log2n"], fast["seed"]).nodes(), gtol=hp["gtol"])
    T = SaddlePointMap(params, alpha, ch, symmetry=B.symmetry)
    return T.jacobian(T(x, hp["jac_eps"]), B.free)


def run_alpha_c(args, high, params, configs, results):
    rule = high["per_rule"][0]
    tasks = [(params, np.array(rule["at_alpha_c"][b]["x"]), b, cf, args)
             for cf in configs for b in ("positional", "semantic")
             if not results.get(_key_of("alpha_c", b, cf, args))]
    with ProcessPoolExecutor(2) as ex:
        for r in ex.map(_task, tasks):
            r["kind"] = "alpha_c"
            results.add(r)
            print(f"{r['branch']} v_order {r['v_order']} grid {r['grid']} cells {r['cells']} "
                  f"follow {r['follow_steps']}: "
                  f"E[M] = {r['E_M']:.13f} (adaptive estimate {r['E_M_error_estimate']:.1e}, "
                  f"{r['lines']} lines, {r['wall_time']:.0f} s)", flush=True)
    alpha = rule["alpha_c_steps"][-1]
    dE = rule["at_alpha_c"]["positional"]["E_M"] - rule["at_alpha_c"]["semantic"]["E_M"]
    rows = []
    print(f"\n{'v_order':>7} {'grid':>5} {'cells':>5} {'follow':>6} {'E[M] pos':>17} "
          f"{'E[M] sem':>17} {'alpha_c':>13} {'adaptive':>9}")
    for cf in configs:
        p, s = (results.get(_key_of("alpha_c", b, cf, args)) for b in ("positional", "semantic"))
        ac = alpha_c_with(rule, p["E_M"], s["E_M"])
        ad = alpha / abs(dE) * (p["E_M_error_estimate"] + s["E_M_error_estimate"])
        rows.append((*cf, ac, ad))
        print(f"{cf[0]:7d} {cf[1]:5d} {cf[2]:5d} {cf[3]:6d} {p['E_M']:17.13f} "
              f"{s['E_M']:17.13f} {ac:13.9f} {ad:9.1e}")
    parts = {"adaptive": max(rows[:len(args.orders)])[-1]}   # of the highest order
    if len(configs) > len(args.orders):
        parts["refined"] = abs(rows[-1][-2] - rows[len(args.orders) - 1][-2])
    return rows, parts


def run_alpha_l(args, high, params, configs, results):
    branch = high["alpha_l_branch"]
    if branch not in ("semantic", "positional"):
        print(f"plane_route: alpha_l = alpha_c here ({branch}); nothing separate to compute",
              file=sys.stderr)
        sys.exit(2)
    rule = high["per_rule"][0]
    at = rule["at_alpha_l"]
    J = _fast_jacobian(params, high, branch, at["alpha"], np.array(at["x"]))
    rows, recs, x0 = [], {}, None
    for cf in configs[:len(args.orders)]:
        o = cf[0]
        r = results.get(_key_of("alpha_l", branch, cf, args))
        if r is None:
            t0 = time.perf_counter()

            def say(row, o=o):
                print(f"  v_order {o}: alpha_l = {row['alpha_l']:.10f}, residual "
                      f"{row['residual']:.1e}, adaptive estimate {row['adaptive']:.1e} "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)

            r = plane_alpha_l(params, branch, rule, J, high["eps_lin"], _rule(args, *cf),
                              x0=x0, workers=2, progress=say)
            r.update({"kind": "alpha_l", "branch": branch, **_config(*cf), **_settings(args)})
            results.add(r)
        x0 = r["x"]
        recs[o] = r
        rows.append((*cf, r["alpha_l"], r["adaptive"]))
        print(f"v_order {o}: alpha_l = {r['alpha_l']:.10f} (adaptive estimate "
              f"{r['adaptive']:.1e}, last chord change {r['fixed_point']:.1e}, "
              f"{len(r['evaluations'])} evaluations, {r['wall_time']:.0f} s)", flush=True)
    last = recs[max(recs)]      # the result: the highest order
    refined = None
    if len(configs) > len(args.orders):
        # one evaluation with the refined rule at the fixed point of the order listed last
        # (list a low order last to make this cheap); alpha_l moves by the goal times the
        # change of the averages (to first order: a chord step)
        cf = configs[-1]
        base = recs[cf[0]]
        refined = results.get(_key_of("alpha_l_refined", branch, cf, args))
        if refined is None:
            t0 = time.perf_counter()
            ch = PlaneChannel(params, _rule(args, *cf), goal=base["goal"], workers=2)
            st = ch.evaluate(np.array(base["x"]), progress=_Say(f"refined v_order {cf[0]}"))
            if st.n_failed:
                raise RuntimeError(f"{st.n_failed} prox solves failed")
            refined = {"kind": "alpha_l_refined", "branch": branch, **_config(*cf),
                       **_settings(args), "means": st.means.tolist(),
                       "shift": float(np.dot(base["goal"],
                                             st.means - np.array(base["means"]))),
                       **_stats(st, goal=True), "wall_time": time.perf_counter() - t0}
            results.add(refined)
        rows.append((*cf, base["alpha_l"] + refined["shift"], refined["goal_error_estimate"]))
        print(f"refined (grid {cf[1]}, cells {cf[2]}, follow {cf[3]}): alpha_l moves by "
              f"{refined['shift']:+.1e} ({refined['wall_time']:.0f} s)")
    slopes = rule["alpha_l_slopes"]
    e = abs(slopes[-1] - slopes[-2]) / abs(slopes[-1]) if len(slopes) > 1 else 1.0
    parts = {"adaptive": last["adaptive"], "fixed_point": last["fixed_point"],
             "slope": e * abs(last["alpha_l"] - at["alpha"]),
             "eps_g_quadrature": last["eps_g_quadrature"]}
    if refined is not None:
        parts["refined"] = abs(refined["shift"])
    return rows, parts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="output of symattn thresholds --precision high")
    ap.add_argument("--alpha-l", action="store_true", help="alpha_l instead of alpha_c")
    ap.add_argument("--v-orders", default="12,16")
    ap.add_argument("--u-tol", type=float, default=None,
                    help="adaptive tolerance: on E[M] for alpha_c (default 1e-10), on alpha_l "
                         "itself for --alpha-l (default 3e-7)")
    ap.add_argument("--min-width", type=float, default=None,
                    help="narrowest u interval (default 1e-3; 0.034 for --alpha-l): the noise "
                         "left near the switching curve's births would otherwise keep the "
                         "adaptive rule bisecting")
    ap.add_argument("--grid", type=int, default=64)
    ap.add_argument("--cells", type=int, default=56)
    ap.add_argument("--follow-steps", type=int, default=4)
    ap.add_argument("--refine", default="",
                    help="comma-separated subset of grid,cells,follow: also the last order with "
                         "those doubled (for --alpha-l one evaluation at its fixed point)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "data" / "plane.json"))
    args = ap.parse_args()
    what = "alpha_l" if args.alpha_l else "alpha_c"
    if args.u_tol is None:
        args.u_tol = 3e-7 if args.alpha_l else 1e-10
    if args.min_width is None:
        args.min_width = 0.034 if args.alpha_l else 1e-3
    try:
        high = json.loads(Path(args.json).read_text())
        params = ModelParams(**high["params"])   # as ModelParams.as_dict wrote it
        high["per_rule"][0]["at_alpha_l" if args.alpha_l else "at_alpha_c"]
        args.orders = [int(v) for v in args.v_orders.split(",")]
        _rule(args, args.orders[0], args.grid, args.cells, args.follow_steps)
        refine = {r for r in args.refine.split(",") if r}
        if refine - {"grid", "cells", "follow"}:
            raise ValueError(f"--refine takes grid, cells, follow: {args.refine!r}")
        results = _Results(args.out)
    except (OSError, KeyError, IndexError, ValueError, TypeError) as exc:
        print(f"plane_route: cannot use {args.json} with these settings: {exc}", file=sys.stderr)
        sys.exit(2)
    configs = [(o, args.grid, args.cells, args.follow_steps) for o in args.orders]
    if refine:
        configs.append((args.orders[-1], *(2 * v if k in refine else v for k, v in
                                           (("grid", args.grid), ("cells", args.cells),
                                            ("follow", args.follow_steps)))))
    rows, parts = (run_alpha_l if args.alpha_l else run_alpha_c)(args, high, params, configs,
                                                                  results)
    plain = sorted(rows[:len(args.orders)])      # by order: the result is the highest
    value = plain[-1][-2]
    parts["v_order"] = abs(plain[-1][-2] - plain[-2][-2]) if len(plain) > 1 else float("inf")
    err = sum(parts.values())
    missing = {"grid", "cells", "follow"} - refine
    print(f"\nplane route: {what} = {value:.9f} +- {err:.1e} "
          f"({', '.join(f'{k} {v:.1e}' for k, v in parts.items())}"
          f"{'; not measured: ' + ', '.join(sorted(missing)) + ' (--refine)' if missing else ''})")
    first = (high[what], high[what + "_err"])
    if math.isinf(err):
        verdict = "no verdict: the plane route has no error bar from one v order"
    else:
        agree = abs(value - first[0]) <= err + first[1]
        verdict = f"{'agree' if agree else 'DISAGREE'} within the two error bars"
    print(f"scrambles:   {what} = {first[0]:.9f} +- {first[1]:.1e}; {verdict} "
          f"(difference {value - first[0]:+.1e})")


if __name__ == "__main__":
    main()
