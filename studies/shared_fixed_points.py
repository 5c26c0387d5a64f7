"""Shared fixed points on the large scrambles: the same thresholds as solving every scramble?

Question: the large-rule route can solve the fixed points and thresholds on its first scramble
only and evaluate every other scramble there (two cold passes per fixed point, one Newton step
in alpha: :func:`symattn.refine.precise._shared_rule_task`), instead of solving each scramble
(:func:`symattn.refine.precise._large_rule_task`).  Does it give each scramble's thresholds to
well within its error bars, and what does it save?

How: one fast route (``--fast-log2n``, 2 scrambles), then for each size in ``--log2n`` the
refinement on ``--rules`` folded scrambles three times on the same scrambles: shared
(``shared=True``; its passes after a chord step warm-started), shared with cold passes only
(``warm_starts=False``) and solved (``shared=False``).  Printed per size: the results with
their budgets and wall times, and per scramble the difference of the shared and solved
alpha_c and alpha_l against that scramble's own fixed-point and root-finding bounds, and the
difference that the warm starts make.  ``--json FILE`` keeps everything.

Rerun::

    python studies/shared_fixed_points.py --log2n 16,17 --rules 8 \\
        --json studies/data/shared_fixed_points.json
"""

from __future__ import annotations

import argparse
import json
import time

import symattn.compile.generated  # noqa: F401  (numba's threading layer chosen first)
from symattn.model import ModelParams
from symattn.numerics.settings import NumericalSettings
from symattn.numerics.thresholds import compute_thresholds
from symattn.refine.precise import HighPrecisionSettings, refine_thresholds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", default="16,17")
    ap.add_argument("--rules", type=int, default=8)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--fast-log2n", type=int, default=12)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    params = ModelParams(omega=args.omega)
    fast = compute_thresholds(params, NumericalSettings(log2n=args.fast_log2n, rules=2))
    print(f"fast route (2 x 2^{args.fast_log2n}): alpha_c = {fast.alpha_c:.6f}, "
          f"alpha_l = {fast.alpha_l:.6f}", flush=True)
    out = {"params": params.as_dict(), "args": vars(args), "sizes": []}
    for k in (int(v) for v in args.log2n.split(",")):
        row = {"log2n": k}
        for name, shared, warm in (("shared", True, True), ("shared_cold", True, False),
                                   ("solved", False, True)):
            hp = HighPrecisionSettings(log2n=k, rules=args.rules, seed=args.seed,
                                       confirm_orders=(), shared=shared, warm_starts=warm)
            t0 = time.perf_counter()
            res = refine_thresholds(params, fast, hp)
            row[name] = {"wall_time": time.perf_counter() - t0,
                         "alpha_c": res.alpha_c, "alpha_c_err": res.alpha_c_err,
                         "alpha_l": res.alpha_l, "alpha_l_err": res.alpha_l_err,
                         "budget": res.budget, "per_rule": res.per_rule}
            b = res.budget
            print(f"\n{args.rules} x 2^{k} folded, {name}: {row[name]['wall_time']:.1f} s\n"
                  f"  alpha_c = {res.alpha_c:.8f} +- {res.alpha_c_err:.1e} "
                  f"(integration {b['alpha_c']['integration']:.1e}, root "
                  f"{b['alpha_c']['root_finding']:.1e}, fixed point "
                  f"{b['alpha_c']['fixed_point']:.1e})\n"
                  f"  alpha_l = {res.alpha_l:.8f} +- {res.alpha_l_err:.1e} "
                  f"(integration {b['alpha_l']['integration']:.1e}, root "
                  f"{b['alpha_l']['root_finding']:.1e}, fixed point "
                  f"{b['alpha_l']['fixed_point']:.1e})", flush=True)
        print("  per scramble: shared - solved, and the larger of the two routes' "
              "root + fixed-point bounds; shared with warm - with cold passes")
        for a, s, c in zip(row["shared"]["per_rule"], row["solved"]["per_rule"],
                           row["shared_cold"]["per_rule"]):
            parts = []
            for key in ("alpha_c", "alpha_l"):
                bound = max(r[key + "_root_bound"] + r[key + "_fixed_point"] for r in (a, s))
                parts.append(f"{key} {a[key] - s[key]:+.1e} (bound {bound:.1e}, warm - cold "
                             f"{a[key] - c[key]:+.0e})")
            print(f"    {a['seed']} ({a['route']}): " + ", ".join(parts))
        out["sizes"].append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
