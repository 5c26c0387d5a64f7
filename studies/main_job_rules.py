"""How many large scrambles the main job needs for error bars of at most 1e-4.

Question: the main job (``symattn``, ``--precision standard``) refines on folded scrambles
of 2^17 points (:data:`symattn.refine.precise.STANDARD`).  Its error bars are one standard
error over the scrambles (plus bounds far below it), itself an estimate from their values; on
other scramble sets, how large are they, and how often would they pass 1e-4 with 8, 10, 12 or
16 scrambles?

How: one location (one scramble of 2^12, as the main job), then the refinement on ``--sets``
sets of ``--rules`` scrambles of ``2^--log2n`` (set ``k`` starts at seed ``1000 k``); per set
the error bars (standard error plus the other parts) of its first 8, 10, 12 and 16 scrambles.
``--json FILE`` keeps every scramble's thresholds.

Rerun::

    python studies/main_job_rules.py --sets 1,2,3,4,5 --rules 16 \\
        --json studies/data/main_job_rules.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import symattn.compile.generated  # noqa: F401  (numba's threading layer chosen first)
from symattn.model import ModelParams
from symattn.numerics.settings import NumericalSettings
from symattn.numerics.thresholds import compute_thresholds
from symattn.refine.precise import STANDARD, refine_thresholds
from symattn.stats import mean_se


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="1,2,3,4,5")
    ap.add_argument("--rules", type=int, default=16)
    ap.add_argument("--log2n", type=int, default=STANDARD.log2n)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    params = ModelParams(omega=args.omega)
    fast = compute_thresholds(params, NumericalSettings(log2n=12, rules=2), first_only=True)
    out = {"params": params.as_dict(), "args": vars(args), "sets": []}
    print(f"{'set':>5} {'n':>3} {'alpha_c':>10} {'err':>8} {'alpha_l':>10} {'err':>8}")
    for k in (int(v) for v in args.sets.split(",")):
        hp = replace(STANDARD, log2n=args.log2n, rules=args.rules, seed=1000 * k)
        t0 = time.perf_counter()
        res = refine_thresholds(params, fast, hp)
        wall = time.perf_counter() - t0
        out["sets"].append({"seed": hp.seed, "wall_time": wall, "budget": res.budget,
                            "per_rule": [{key: r[key] for key in ("seed", "route", "alpha_c",
                                                                  "alpha_l", "wall_time")}
                                         for r in res.per_rule]})
        for n in (8, 10, 12, 16):
            if n > args.rules:
                continue
            cells = []
            for key in ("alpha_c", "alpha_l"):
                mean, se = mean_se([r[key] for r in res.per_rule[:n]])
                other = sum(v for part, v in res.budget[key].items() if part != "integration")
                cells.append(f"{mean:10.6f} {se + other:8.1e}")
            print(f"{hp.seed:5d} {n:3d} " + " ".join(cells), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
