"""Why the six-equation Newton stops short at the semantic alpha_c: the x equation's rounding
(issue 21; docs/stability.md, 'An inner rule split along the jump').

At the semantic alpha_c (band of 2^20, split inner rule, rule 0) the fixed-x solves converge to
residuals of 1e-11, Sigma/e changes sign between x = 17320 and 19870, and the six-equation Newton
from that bracket stops with Sigma/e at 2.5e-6.  This study evaluates the map at the bracket's
upper point, the full evaluation against the warm one (the prox from the last minima only, as
the Jacobian's columns are), and along x at relative steps 1e-5 ... 1e-2: how far Sigma/e
differs between two evaluations of one point, against the five other residuals and against
what a step in x moves it by; with the x equation evaluated in 15 digits and in the 40 the
solver now uses (``X_EQ_DIGITS``); and the prior part's terms against their sum.

Reads the run file ``--run`` (default: the banded, split run in studies/data/one_step_rsb_cli/);
writes studies/data/one_step_rsb_x_noise.json.  Rerun: ``python studies/one_step_rsb_x_noise.py``
(about a minute).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from symattn.model.params import ModelParams
from symattn.numerics import one_step_rsb
from symattn.numerics.one_step_rsb import InnerRule, OneStepRSBMap
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_channel

ROOT = Path(__file__).resolve().parent
RUN = ROOT / "data" / "one_step_rsb_cli" / \
    "fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20-split16.json"
OUT = ROOT / "data" / "one_step_rsb_x_noise.json"
#: the x equation's evaluation: in 15 digits (about double precision, as before 2026-12-06) and in
#: the 40 the solver now uses (one_step_rsb.X_EQ_DIGITS)
DIGITS = (15, 40)
STEPS = (-1e-2, -1e-3, -1e-4, -1e-5, 1e-5, 1e-4, 1e-3, 1e-2)


def prior_cancellation(z, hats, alpha) -> dict:
    """The x equation's numerator over a common denominator (as derived), its terms without the
    channel's atoms, evaluated at ``z`` and ``hats``: the largest term's size against their sum
    (how many digits the sum loses)."""
    import sympy as sp

    from symattn.model.symbols import alpha as a_sym, lam, rho, sigma
    from symattn.symbolic.expectation import Expect
    from symattn.symbolic.one_step_rsb import HATS, ORDER, derive_one_step_rsb, x as x_sym
    p = ModelParams()
    num = sp.fraction(sp.together(derive_one_step_rsb().x_equation))[0]
    terms = [t for t in sp.Add.make_args(sp.expand(num)) if not t.has(Expect)]
    vals = {**dict(zip(ORDER, z[:5])), **dict(zip(HATS, hats)), x_sym: z[5], a_sym: alpha,
            rho: p.rho, sigma: p.sigma, lam: p.lam}
    import mpmath as mp
    mp.mp.dps = 40
    nums = [mp.mpf(str(sp.N(t.xreplace(vals), 40))) for t in terms]
    return {"n_terms": len(terms), "largest": float(max(abs(v) for v in nums)),
            "sum": float(mp.fsum(nums))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, default=RUN)
    args = ap.parse_args()
    run = json.loads(args.run.read_text())
    h = run["header"]
    s = RSBSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in h["rsb"].items()})
    ch, _, _, used = rule_channel(ModelParams(), "semantic", h["alpha"], 0, s)
    assert used
    rows = [r for r in run["rows"] if r["seed"] == 0 and r["key"][0] == "bisect"
            and r["converged"] and r["sigma_over_e"] < 0]
    row = min(rows, key=lambda r: r["x"])
    z = np.array(row["z"])
    far = InnerRule(s.coarse, recentre=True), InnerRule(s.fine, recentre=True)
    fmap = OneStepRSBMap(ch, h["alpha"], inner=far[0], pin="m", eps=s.eps_stages[-1],
                         fine=far[1], split=InnerRule(s.split, split=True))
    out = {"x": float(z[5]), "key": row["key"]}
    for digits in DIGITS:
        one_step_rsb.X_EQ_DIGITS = digits
        base, hats, _ = fmap.evaluate(z)
        res = {"residual": list(map(float, base)), "steps": []}
        print(f"x equation in {digits} digits; x = {z[5]:.1f}: residuals "
              f"{np.array2string(base, precision=2)}")
        for dl in STEPS:
            zp = z.copy()
            zp[5] *= 1 + dl
            warm = fmap.evaluate(zp, warm=True)[0]
            full = fmap.evaluate(zp)[0]
            res["steps"].append({"relative_step": dl, "change": list(map(float, warm - base)),
                                 "full_minus_warm": list(map(float, full - warm))})
            print(f"  x (1 {dl:+.0e}): change {np.array2string(warm - base, precision=2)}; "
                  f"full - warm {np.array2string(full - warm, precision=2)}", flush=True)
        out[f"digits_{digits}"] = res
    out["prior_terms"] = prior_cancellation(z, hats, h["alpha"])
    print(f"the x equation's prior part: largest term {out['prior_terms']['largest']:.2e}, "
          f"their sum {out['prior_terms']['sum']:.2e}")
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
