"""Convergence table of the high-precision route (``symattn thresholds --precision high``).

Question: do the high-precision route's alpha_c and alpha_l converge as its large scrambles
grow, with error bars that shrink and rows that agree within them, on plain and folded rules?

How: the fast route (8 scrambles of 2^14, the main job) runs once; its answer is then refined
on ``--rules`` large scrambles of 2^k points for each k in ``--log2n``.  Printed per k: alpha_c
and alpha_l with their error bars, the four parts of each error budget, and the wall time.
``--no-fold`` uses plain scrambles for both branches (``HighPrecisionSettings(fold=False)``),
as before the folded rules; ``--seed`` is the first large scramble.  The second route is not
run (``confirm_orders=()``).

Found (docs/numerics.md, 'Convergence of the large-rule route'; 2-core machine, 2026-11-30,
commits 61cc06a and e846475), scrambles 1000-1007, alpha_c and alpha_l:

* plain: 8 x 2^16 1.251296 +- 1.1e-4 and 1.492389 +- 2.4e-4; 8 x 2^18 1.251376 +- 4.0e-5 and
  1.492377 +- 1.2e-4; 8 x 2^20 1.251520 +- 2.1e-5 and 1.492278 +- 2.6e-5;
* folded: 8 x 2^16 1.251414 +- 7.5e-5 and 1.492326 +- 8.9e-5; 8 x 2^18 "no fixed point on
  scramble 1001" (the ``alpha_l`` solve alternates between two states; no number is given);
  8 x 2^20 1.2515369 +- 9.4e-6 and 1.4923007 +- 2.6e-5;
* the larger rows come from ``symattn thresholds --precision high``, not this script: 8 x 2^22
  folded (the default) 1.2515389 +- 1.1e-6 and 1.4922811 +- 7.0e-6, 8 x 2^23 folded
  1.2515368 +- 7.2e-7 and 1.4922759 +- 5.2e-6.

"The error comes from E[M]. At fixed order parameters, its per-scramble error falls roughly like
n^-0.85, from 2.3e-7 at 2^16 to 1.8e-8 at 2^20 (positional)."  "Eight digits are out of reach
with this integrator."

Rerun (the docs' commands)::

    python studies/high_precision_convergence.py --log2n 16,18,20
    python studies/high_precision_convergence.py --log2n 16,18,20 --no-fold

Options: ``[--log2n 16,18,20] [--rules 8] [--omega 0.3] [--seed 1000] [--no-fold]``.
"""

from __future__ import annotations

import argparse
import time

from symattn.model import ModelParams
from symattn.refine.precise import HighPrecisionSettings, NotConverged, refine_thresholds
from symattn.numerics.settings import NumericalSettings
from symattn.numerics.thresholds import compute_thresholds

PARTS = ("integration", "root_finding", "fixed_point", "floating_point")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", default="16,18,20")
    ap.add_argument("--rules", type=int, default=8)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--no-fold", dest="fold", action="store_false")
    args = ap.parse_args()
    params = ModelParams(omega=args.omega)
    t0 = time.perf_counter()
    fast = compute_thresholds(params, NumericalSettings())
    print(f"params: {params.as_dict()}")
    print(f"fast route (8 x 2^14): alpha_c = {fast.alpha_c:.7f} +- {fast.alpha_c_err:.1e}, "
          f"alpha_l = {fast.alpha_l:.7f} +- {fast.alpha_l_err:.1e}  "
          f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    head = " ".join(f"{p[:11]:>11}" for p in PARTS)
    for k in (int(v) for v in args.log2n.split(",")):
        t1 = time.perf_counter()
        hp = HighPrecisionSettings(log2n=k, rules=args.rules, seed=args.seed,
                                   fold=args.fold, confirm_orders=())
        label = (f"{args.rules} x 2^{k}, scrambles {args.seed}-{args.seed + args.rules - 1}, "
                 f"{'folded' if args.fold else 'plain'}")
        try:
            res = refine_thresholds(params, fast, hp)
        except NotConverged as exc:   # no number for this size; the others still run
            print(f"\n{label}: not converged ({exc})", flush=True)
            continue
        dt = time.perf_counter() - t1
        print(f"\n{label}  ({dt:.0f} s)")
        print(f"  {'':8} {'value':>14} {'error bar':>10} {head}")
        for key in ("alpha_c", "alpha_l"):
            b = res.budget[key]
            parts = " ".join(f"{b[p]:11.1e}" for p in PARTS)
            print(f"  {key:8} {getattr(res, key):14.9f} {getattr(res, key + '_err'):10.1e} "
                  f"{parts}")
        print("  per rule alpha_c: " + " ".join(f"{r['alpha_c']:.8f}" for r in res.per_rule))
        print("  per rule alpha_l: " + " ".join(f"{r['alpha_l']:.8f}" for r in res.per_rule),
              flush=True)


if __name__ == "__main__":
    main()
