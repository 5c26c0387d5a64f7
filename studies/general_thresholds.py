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
from symattn.numerics.thresholds import ThresholdNotFound
from symattn.results import format_estimate

OUT = Path(__file__).resolve().parent / "data" / "general_thresholds"
A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))

#: case: (parameters, bracket).  The brackets are from the searches of
#: ``general_validation_theory.py`` (data/general_validation): the rank-2 student's global
#: minimum is positional at small alpha and mixed from alpha = 1 on; L = 3's is positional at
#: small alpha and semantic from 0.5 on.  At alpha = 0.1 L = 3's positional point has
#: |M| = 0.006, near the search's threshold for "present" (5e-3): on 2^14 points it is
#: labelled trivial, and the trivial branch (pinned at M = 0) is not the global one, so the
#: bracket starts at 0.2.
CASES = {
    "rank2": (ModelParams(omega=0.3, r=2), (0.5, 1.0)),
    "L3": (ModelParams(A=A3, Pi="simplex", omega=0.3), (0.2, 0.5)),
}


def _x(d) -> OrderParameters:
    return OrderParameters(*(np.array(d[k], float) for k in ("q", "M", "theta", "V")))


def _validated_branches(case, bracket):
    """The global minima at the bracket's ends as the validation sweep found them (its first
    scramble of 2^12 points, ``data/general_validation/theory_<case>.json``): characters and
    start points, so that a run on larger rules skips its own searches there (on 2^14 points
    a search at one alpha takes 20 minutes or more for the rank-2 student)."""
    d = json.loads((OUT.parent / "general_validation" / f"theory_{case}.json").read_text())
    sweep = d["omega0.3"]["alphas"]
    out = {}
    for side, a in zip(("below", "above"), bracket):
        g = next(f for f in sweep[f"{a:g}"]["rules"][0]["fixed_points"] if f["global_minimum"])
        out[side] = (g["character"], _x(g), a)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="L3,rank2")
    ap.add_argument("--rules", type=int, default=4)
    ap.add_argument("--log2n", type=int, default=14)
    ap.add_argument("--root-tol", type=float, default=1e-6)
    ap.add_argument("--validated-ends", action="store_true",
                    help="take the branches at the bracket's ends from the validation sweep "
                         "(2^12 points) instead of searching there")
    ap.add_argument("--verify-rules", type=int, default=None,
                    help="search for lower fixed points at alpha_c on the first K scrambles "
                         "only (default: all; the search is most of a later scramble's time)")
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
            if args.validated_ends:
                kw = {"branches": _validated_branches(case, bracket)}
                data["ends"] = "validation sweep (2^12, first scramble)"
            if data["per_rule"]:      # start from the first scramble's branches near alpha_c
                first = data["per_rule"][0]
                pts = first.get("branch_points") or {      # (older files: at alpha_c)
                    side: {**first["at_alpha_c"][side], "alpha": first["alpha_c"]}
                    for side in ("below", "above")}
                kw = {"alpha0": first["alpha_c"], "branches": {
                    side: (first[side], _x(pts[side]), pts[side]["alpha"])
                    for side in ("below", "above")}}
            try:
                r = general_thresholds_on_nodes(
                    params, nodes_for(params, args.log2n, seed), bracket=bracket, seed=seed,
                    root_tol=args.root_tol,
                    verify=args.verify_rules is None or seed < args.verify_rules,
                    progress=lambda text: print(f"  {case} seed {seed}: {text} "
                                                f"({time.perf_counter() - t0:.0f} s)",
                                                flush=True),
                    **kw)
            except ThresholdNotFound as exc:       # named, not recorded; the next scramble
                print(f"{case} seed {seed}: failed: {exc}", flush=True)
                continue
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
