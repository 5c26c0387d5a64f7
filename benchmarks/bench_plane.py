"""alpha_c by plane preintegration, against the scrambles of a ``--precision high`` run.

Reads the JSON of ``symattn thresholds --precision high --out F`` and recomputes ``E[M]`` at
the fixed points of its first large scramble with :class:`symattn.numerics.plane.PlaneChannel`
(every switch located: lines in xi_1, located count changes in xi_2, adaptive Gauss-Kronrod in
u, Gauss-Hermite in v), for each order in ``--v-orders``; ``alpha_c`` follows as in the second
route (``symattn.numerics.precise.alpha_c_with``: the fixed points enter at second order).

Error bar of the last order: the change from the previous order, plus the adaptive rule's
estimate (its Kronrod-Gauss differences) carried to alpha_c; with ``--refine`` also the change
when the counting grid in xi_2 and the detection cells in xi_1 are doubled at the last order.

Each (branch, order) result is appended to ``--out`` as it finishes; a rerun skips those already
there.  Two processes.  Orders 12 and 16 take about 50 minutes on 2 cores at the
defaults.

    python benchmarks/bench_plane.py --json high.json [--v-orders 12,16] [--u-tol 1e-10]
                                     [--grid 64] [--cells 56] [--refine] [--out plane.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.plane import PlaneChannel, PlaneRule
from symattn.numerics.precise import alpha_c_with
from symattn.numerics.preintegration import LineRule


def _task(args):
    params, x, branch, v_order, u_tol, grid, cells = args
    t0 = time.perf_counter()
    ch = PlaneChannel(params, PlaneRule(v_order=v_order, u_tol=u_tol, grid=grid,
                                        line=LineRule(cells=cells)))

    def say(rnd, n):
        print(f"  {branch} v_order {v_order}: round {rnd}, {n} intervals "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)

    st = ch.evaluate(x, progress=say)
    if st.n_failed:
        raise RuntimeError(f"{st.n_failed} prox solves failed")
    return {"branch": branch, "v_order": v_order, "u_tol": u_tol, "grid": grid, "cells": cells,
            "E_M": st.E_M, **ch.last_stats, "wall_time": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="output of symattn thresholds --precision high")
    ap.add_argument("--v-orders", default="12,16")
    ap.add_argument("--u-tol", type=float, default=1e-10)
    ap.add_argument("--grid", type=int, default=64)
    ap.add_argument("--cells", type=int, default=56)
    ap.add_argument("--refine", action="store_true",
                    help="also the last order with 2x grid and 2x cells")
    ap.add_argument("--out", default="plane.json")
    args = ap.parse_args()
    try:
        high = json.loads(Path(args.json).read_text())
        rule = high["per_rule"][0]
        params = ModelParams(**{k: high["params"][k] for k in ("sigma", "lam", "omega", "A")})
        orders = [int(v) for v in args.v_orders.split(",")]
    except (OSError, KeyError, ValueError) as exc:
        print(f"bench_plane: cannot use {args.json}: {exc}", file=sys.stderr)
        sys.exit(2)
    configs = [(o, args.grid, args.cells) for o in orders]
    if args.refine:
        configs.append((orders[-1], 2 * args.grid, 2 * args.cells))
    out_path = Path(args.out)
    done = json.loads(out_path.read_text()) if out_path.exists() else []
    key = lambda r: (r["branch"], r["v_order"], r["u_tol"], r["grid"], r["cells"])
    have = {key(r) for r in done}
    tasks = [(params, np.array(rule["at_alpha_c"][b]["x"]), b, o, args.u_tol, g, c)
             for o, g, c in configs for b in ("positional", "semantic")
             if (b, o, args.u_tol, g, c) not in have]
    with ProcessPoolExecutor(2) as ex:
        for r in ex.map(_task, tasks):
            done.append(r)
            tmp = out_path.with_name(out_path.name + ".tmp")
            tmp.write_text(json.dumps(done, indent=1))
            os.replace(tmp, out_path)
            print(f"{r['branch']} v_order {r['v_order']} grid {r['grid']} cells {r['cells']}: "
                  f"E[M] = {r['E_M']:.13f} (adaptive estimate {r['E_M_error_estimate']:.1e}, "
                  f"{r['lines']} lines, {r['wall_time']:.0f} s)", flush=True)
    res = {key(r): r for r in done}
    alpha = rule["alpha_c_steps"][-1]
    dE = rule["at_alpha_c"]["positional"]["E_M"] - rule["at_alpha_c"]["semantic"]["E_M"]
    rows = []
    print(f"\n{'v_order':>7} {'grid':>5} {'cells':>5} {'E[M] pos':>17} {'E[M] sem':>17} "
          f"{'alpha_c':>13} {'adaptive':>9}")
    for o, g, c in configs:
        p, s = res[("positional", o, args.u_tol, g, c)], res[("semantic", o, args.u_tol, g, c)]
        ac = alpha_c_with(rule, p["E_M"], s["E_M"])
        ad = alpha / abs(dE) * (p["E_M_error_estimate"] + s["E_M_error_estimate"])
        rows.append((o, g, c, ac, ad))
        print(f"{o:7d} {g:5d} {c:5d} {p['E_M']:17.13f} {s['E_M']:17.13f} {ac:13.9f} {ad:9.1e}")
    plain = [r for r in rows if r[1] == args.grid]
    value = plain[-1][3]
    parts = {"v_order": abs(plain[-1][3] - plain[-2][3]) if len(plain) > 1 else float("inf"),
             "adaptive": plain[-1][4]}
    if args.refine:
        parts["grid_and_cells"] = abs(rows[-1][3] - value)
    err = sum(parts.values())
    print(f"\nplane route: alpha_c = {value:.9f} +- {err:.1e} "
          f"({', '.join(f'{k} {v:.1e}' for k, v in parts.items())}"
          f"{'' if args.refine else '; grid and cells not measured: --refine'})")
    first = (high["alpha_c"], high["alpha_c_err"])
    agree = abs(value - first[0]) <= err + first[1]
    print(f"scrambles:   alpha_c = {first[0]:.9f} +- {first[1]:.1e}; "
          f"{'agree' if agree else 'DISAGREE'} within the two error bars "
          f"(difference {value - first[0]:+.1e})")


if __name__ == "__main__":
    main()
