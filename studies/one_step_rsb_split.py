"""How accurate the inner rule is on the jump band at the semantic alpha_c (issue 21; docs/stability.md,
'An inner rule split along the jump').

The 1RSB point at the semantic alpha_c is made by the band's few hundred outer nodes whose inner
Gaussian meets the prox's jump line.  There the inner integrand jumps.  This study evaluates the
1RSB map of rule 0 (band of 2^20, the search's channel: ``rule_channel``) at one fixed point
``z`` with the band's nodes integrated by

- tensor Gauss--Hermite rules of 32, 48, 64, 96 points per axis, with the tie blend of width
  1e-5 the searches use (how the band runs before the split rule were solved), and of 32, 64,
  96 without the blend;
- split rules (``symattn.numerics.inner_split``) of 8, 16, 24, 32 points per axis and side
  (no blend: the points keep off the line).

It records the map's residual (new minus old order parameters, and Sigma/e) for each, so the
spread of the Gauss--Hermite rows is their integration error, and the split rows' spread theirs.
``z`` is the reference point (x = 10) solved before the split rule existed
(studies/data/one_step_rsb_cli/, band20 run file).

Writes studies/data/one_step_rsb_split.json.  Rerun: ``python studies/one_step_rsb_split.py``
(about three minutes on one core).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from symattn.model.params import ModelParams
from symattn.numerics.one_step_rsb import InnerRule, OneStepRSBMap
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_channel

ROOT = Path(__file__).resolve().parent
RUN = ROOT / "data" / "one_step_rsb_cli" / \
    "fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20.json"
OUT = ROOT / "data" / "one_step_rsb_split.json"
#: the tie blend's width of the searches, and one so small that nothing is blended
BLEND, NO_BLEND = 1e-5, 1e-300
NAMES = ("q0", "q1", "m", "theta", "V", "sigma_over_e")


def main() -> None:
    run = json.loads(RUN.read_text())
    alpha = run["header"]["alpha"]
    settings = RSBSettings(**{k: v for k, v in run["header"]["rsb"].items()
                              if k in ("log2n", "band_log2n", "band_reach", "band_factor",
                                       "band_max")})
    ref = next(r for r in run["rows"] if r["key"][0] == "ref" and r["converged"])
    z = np.array(ref["z"])
    params = ModelParams()
    ch, fp, band, used = rule_channel(params, "semantic", alpha, 0, settings)
    assert used
    rough = OneStepRSBMap(ch, alpha, inner=InnerRule(12), pin="m", fine=InnerRule(32)).classify(z)
    rows = []
    rules = [("gauss-hermite", n, BLEND, InnerRule(n), None) for n in (32, 48, 64, 96)]
    rules += [("gauss-hermite", n, NO_BLEND, InnerRule(n), None) for n in (32, 64, 96)]
    rules += [("split", n, BLEND, InnerRule(32), InnerRule(n, split=True))
              for n in (8, 16, 24, 32)]
    for kind, n, eps, fine, split in rules:
        fmap = OneStepRSBMap(ch, alpha, inner=InnerRule(12), pin="m", eps=eps, fine=fine,
                             rough=rough, split=split)
        t0 = time.perf_counter()
        res, _, phi = fmap.evaluate(z)
        row = {"rule": kind, "size": n, "eps": eps, **dict(zip(NAMES, map(float, res))),
               "eps_t": -float(phi), "wall": time.perf_counter() - t0,
               "n_split": int(np.sum(fmap.lined_nodes)) if split is not None else 0}
        rows.append(row)
        print(f"{kind:14s} {n:3d} eps {eps:.0e}: " + " ".join(f"{k} {row[k]:+.3e}" for k in NAMES)
              + f"  ({row['wall']:.0f} s)", flush=True)
    out = {"z": list(map(float, z)), "q1_minus_q0": float(z[1] - z[0]), "alpha": alpha,
           "n_band": band.n_band, "n_rough": int(rough.sum()), "rows": rows}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
