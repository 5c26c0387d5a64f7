"""The semantic 1RSB search on one chosen rule at the converged smoothing width (issue 21;
docs/stability.md, 'The smoothing width where the gap is tiny').

``symattn fixed-point --rsb 1`` runs its rules in order, and at the semantic alpha_l and 1.5
rule 0's solution folds over in x at widths below 1e-5 (``studies/one_step_rsb_fold.py``), so
a run stopped for time never reaches rules 1 and 2.  At width 1e-5 those rules had profiles
that changed sign near x = 2-3e5.  This runs the search (``rule_one_step_rsb``, the run files'
settings with ``--rsb-eps 1e-4,1e-5,1e-7`` and an x grid dense past 1e5) on one rule, saving
every solve to ``--out`` and replaying them when rerun.

Rerun: ``python studies/one_step_rsb_one_rule.py --alpha 1.5 --seed 2`` (writes
``studies/data/one_step_rsb_one_rule-alpha1.5-seed2.json``; 8 GB for the 2^24 band, minutes to
an hour on one core).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from symattn.model.params import ModelParams
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_one_step_rsb

DATA = Path(__file__).resolve().parent / "data"
XS = (30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0, 100000.0, 140000.0, 180000.0,
      220000.0, 260000.0, 300000.0, 350000.0, 400000.0, 500000.0, 600000.0, 800000.0,
      1000000.0, 1500000.0, 2000000.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or DATA / f"one_step_rsb_one_rule-alpha{args.alpha:g}-seed{args.seed}.json"
    s = RSBSettings(log2n=10, rules=1, band_log2n=24, split=16, recentre_from=1e4,
                    profile_skips=8, eps_stages=(1e-4, 1e-5, 1e-7), xs=XS)
    head = {"alpha": args.alpha, "seed": args.seed, "rsb": s.as_dict()}
    rows = []
    if out.exists():
        old = json.loads(out.read_text())
        if old["header"] != head:
            raise SystemExit(f"{out} holds another run ({old['header']}); give another --out")
        rows = old["rows"]
    print(f"alpha = {args.alpha:g}, rule {args.seed}: {len(rows)} solves to replay", flush=True)
    done = list(rows)

    def save(row):
        done.append(row)
        out.write_text(json.dumps({"header": head, "rows": done, "result": None}, indent=1)
                       + "\n")

    t0 = time.perf_counter()
    res = rule_one_step_rsb(ModelParams(), "semantic", args.alpha, args.seed, s, rows=rows,
                            save=save, progress=lambda text: print(" ", text, flush=True))
    result = {k: v for k, v in res.as_dict().items() if k != "rows"}
    out.write_text(json.dumps({"header": head, "rows": done, "result": result}, indent=1)
                   + "\n")
    print(f"rule {args.seed}: {res.status} ({res.why}); x* = {res.x_star}; shifts "
          f"{json.dumps(res.shifts)} ({time.perf_counter() - t0:.0f} s); written {out}",
          flush=True)


if __name__ == "__main__":
    main()
