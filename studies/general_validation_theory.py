"""Theory side of issue 20's validations: the general model's fixed points over alpha
(model page §7), for comparison with finite-size training
(``studies/general_validation_runs.py``, whose cases this script shares).

For each case and alpha, on ``--rules`` independent scrambles of ``2^--log2n`` points:
every distinct fixed point found by :func:`symattn.numerics.general_search.find_fixed_points`
(its character, ``eps_t``, ``eps_g`` on an independent rule of ``2^--eps-g-log2n`` points,
the order parameters), and which is the global minimum.  The spread over scrambles of the
global minimum's ``eps_t`` and ``eps_g`` is the integration error bar.  Results go to
``studies/data/general_validation/theory_<case>.json``, written after every alpha (a rerun
skips the alphas present).

Rerun: ``python studies/general_validation_theory.py --cases rank2 [--rules 2 --log2n 12]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from symattn.model import APPENDIX_A, ModelParams
from symattn.numerics.general import GeneralChannel, general_eps_g, nodes_for
from symattn.numerics.general_search import find_fixed_points

OUT = Path(__file__).resolve().parent / "data" / "general_validation"
A3 = ((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6))
ALPHAS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)

CASES = {
    "rank2": [(f"omega{om}", ModelParams(omega=om, r=2), ALPHAS) for om in (0.1, 0.3)],
    "L3": [("omega0.3", ModelParams(A=A3, Pi="simplex"), ALPHAS)],
    "appendix": [("omega0.14", ModelParams(A=APPENDIX_A, omega=0.14),
                  (0.8, 1.0, 1.1, 1.2, 1.3, 1.5))],
}


def _load(path):
    return json.loads(path.read_text()) if path.exists() else {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="rank2,L3,appendix")
    ap.add_argument("--rules", type=int, default=2)
    ap.add_argument("--log2n", type=int, default=12)
    ap.add_argument("--eps-g-log2n", type=int, default=14)
    ap.add_argument("--alphas", default=None, help="comma-separated subset of the alphas")
    ap.add_argument("--subs", default=None, help="comma-separated subset of the cases' parts, "
                                                 "e.g. omega0.3")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for case in args.cases.split(","):
        path = OUT / f"theory_{case}.json"
        data = _load(path)
        for sub, p, alphas in CASES[case]:
            if args.subs and sub not in args.subs.split(","):
                continue
            if args.alphas:
                alphas = [float(a) for a in args.alphas.split(",")]
            block = data.setdefault(sub, {"params": p.as_dict(), "rules": args.rules,
                                          "log2n": args.log2n, "alphas": {}})
            eps_nodes = nodes_for(p, args.eps_g_log2n, 999)
            for a in alphas:
                key = f"{a:g}"
                if key in block["alphas"]:
                    continue
                t0 = time.perf_counter()
                per_rule = []
                for seed in range(args.rules):
                    ch = GeneralChannel(p, nodes_for(p, args.log2n, seed))
                    found, failed = find_fixed_points(ch, a)
                    rows = []
                    for f in found:
                        row = f.as_dict()
                        row["eps_g"] = general_eps_g(p, f.fixed_point.x, eps_nodes)
                        rows.append(row)
                    per_rule.append({"seed": seed, "fixed_points": rows,
                                     "failed": [list(x) for x in failed]})
                glob = [r["fixed_points"][0] for r in per_rule if r["fixed_points"]]
                summary = {}
                for k in ("eps_t", "eps_g"):
                    v = np.array([g[k] for g in glob])
                    summary[k] = float(v.mean()) if len(v) else None
                    summary[k + "_err"] = (float(v.std(ddof=1) / np.sqrt(len(v)))
                                           if len(v) > 1 else None)
                summary["characters"] = [g["character"] for g in glob]
                block["alphas"][key] = {"global": summary, "rules": per_rule,
                                        "wall_time": time.perf_counter() - t0}
                path.write_text(json.dumps(data, indent=1))
                print(f"{case} {sub} alpha={a:g}: global {summary['characters']} eps_t "
                      f"{summary['eps_t']:.6g} eps_g {summary['eps_g']:.6g} "
                      f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
