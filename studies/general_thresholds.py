"""alpha_c and alpha_l of the general model (issue 20): the rank-2 student and L = 3 at
omega = 0.3 (the cases of ``studies/general_validation_theory.py``).

For each case, on ``--rules`` scrambles of ``2^--log2n`` points:
:func:`symattn.numerics.general_thresholds.general_thresholds_on_nodes` (searches at the
bracket's ends on the first scramble, the branches followed from its ``alpha_c`` on the others,
a search at every scramble's ``alpha_c`` to check that no other fixed point lies lower).  Each
scramble's result is written to ``studies/data/general_thresholds/<case>_2^<log2n>.json`` as it
finishes (a rerun skips the scrambles present), with the mean and error bar over those done.

Rerun: ``python studies/general_thresholds.py --cases L3,rank2 --log2n 14 --rules 4``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.general import OrderParameters, nodes_for
from symattn.numerics.general_thresholds import combine_rules, general_thresholds_on_nodes
from symattn.results import format_estimate

OUT = Path(__file__).resolve().parent / "data" / "general_thresholds"
A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))

#: case: (parameters, bracket).  The brackets are from the searches of
#: ``general_validation_theory.py`` (data/general_validation): the rank-2 student's global
#: minimum is positional at small alpha and mixed from alpha = 1 on; L = 3's is positional at
#: alpha = 0.1 and semantic from 0.5 on.
CASES = {
    "rank2": (ModelParams(omega=0.3, r=2), (0.3, 1.0)),
    "L3": (ModelParams(A=A3, Pi="simplex", omega=0.3), (0.1, 0.5)),
}


def _x(d) -> OrderParameters:
    return OrderParameters(*(np.array(d[k], float) for k in ("q", "M", "theta", "V")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="L3,rank2")
    ap.add_argument("--rules", type=int, default=4)
    ap.add_argument("--log2n", type=int, default=14)
    ap.add_argument("--root-tol", type=float, default=1e-6)
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for case in args.cases.split(","):
        params, bracket = CASES[case]
        path = OUT / f"{case}_2^{args.log2n}.json"
        data = json.loads(path.read_text()) if path.exists() else {
            "params": params.as_dict(), "bracket": bracket, "log2n": args.log2n, "per_rule": []}
        for seed in range(args.rules):
            if any(r["seed"] == seed for r in data["per_rule"]):
                continue
            t0 = time.perf_counter()
            kw = {}
            if data["per_rule"]:      # start from the first scramble's branches at its alpha_c
                first = data["per_rule"][0]
                kw = {"alpha0": first["alpha_c"], "branches": {
                    side: (first[side], _x(first["at_alpha_c"][side]), first["alpha_c"])
                    for side in ("below", "above")}}
            r = general_thresholds_on_nodes(
                params, nodes_for(params, args.log2n, seed), bracket=bracket, seed=seed,
                root_tol=args.root_tol,
                progress=lambda text: print(f"  {case} seed {seed}: {text} "
                                            f"({time.perf_counter() - t0:.0f} s)", flush=True),
                **kw)
            data["per_rule"].append(r.as_dict())
            path.write_text(json.dumps(data, indent=1, default=float))
            res = combine_rules(params, data["per_rule"], {"log2n": args.log2n}).to_dict()
            data["result"] = {k: res[k] for k in (
                "alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err", "alpha_l_note", "eps_lin",
                "eps_lin_err", "below", "above", "transition", "verified")}
            path.write_text(json.dumps(data, indent=1, default=float))
            print(f"{case} seed {seed}: {r.below} -> {r.above}, alpha_c = {r.alpha_c:.6f}, "
                  f"alpha_l = {r.alpha_l:.6f} ({r.alpha_l_branch}), verified {r.verified}, "
                  f"{r.wall_time:.0f} s", flush=True)
        if data["per_rule"]:
            res = combine_rules(params, data["per_rule"], {"log2n": args.log2n})
            print(f"{case}: {res.below} -> {res.above} ({res.transition}), alpha_c = "
                  f"{format_estimate(res.alpha_c, res.alpha_c_err)}, alpha_l = "
                  + (format_estimate(res.alpha_l, res.alpha_l_err) if not res.alpha_l_note
                     else res.alpha_l_note)
                  + f" ({len(data['per_rule'])} scrambles of 2^{args.log2n})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
