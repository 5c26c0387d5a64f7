"""How accurate is the 1RSB channel's inner integral?  (issue 21, item 3; docs/stability.md,
'One-step RSB: where it stands'.)

The 1RSB output channel averages, at each outer node, over the inner Gaussian of width
sqrt(q_1 - q_0), tilted by exp(-x M).  Where the prox jumps or turns steeply inside that Gaussian
the inner integrand is rough and a Gauss-Hermite rule converges slowly; where the tilt is strong
(x sqrt(q_1 - q_0) |f| of order one and more, x >~ 3000 at alpha = 1) a rule centred at zero
misses the tilted measure.  This script measures, at one order-parameter point, the map's
residual and eps_t = -Phi for:

* ``plain``: the tensor Gauss-Hermite rule of n x n points centred at zero (the first scheme);
* ``recentred``: the same rule on the tilt's Gaussian approximation, reweighted
  (``InnerRule(recentre=True)``);
* ``hybrid``: recentred n x n on the smooth nodes and n_f x n_f on the rough ones
  (``OneStepRSBMap(fine=...)``, nodes classified by ``OneStepRSBMap.classify``);
* ``per-node``: at x = 1000, which nodes carry the difference between 24 and 40 points.

Inputs: the paper's parameters, alpha = 1, the semantic RS fixed point on one scrambled Sobol
rule of 2^10 points (seed 0), and z = (0.985 q, q, 0, theta, V, x) for x in {1e3, 3e3, 1e4}.

Rerun: ``python studies/one_step_rsb_inner.py`` (about 2 minutes on 2 cores); writes
studies/data/one_step_rsb_inner.json.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "data" / "one_step_rsb_inner.json"


def main():
    from symattn.model import ModelParams
    from symattn.numerics.branches import solve_branch
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.one_step_rsb import InnerRule, OneStepRSBMap, rsb_node_moments
    from symattn.numerics.quadrature import SobolRule
    p = ModelParams()
    ch = OutputChannel(p, SobolRule(10, 0).nodes())
    fp = solve_branch(p, "semantic", 1.0, ch)
    rows = []

    def run(label, x, inner, fine=None):
        z = [0.985 * fp.q, fp.q, 0.0, fp.theta, fp.V, x]
        t0 = time.perf_counter()
        fm = OneStepRSBMap(ch, 1.0, inner=inner, fine=fine, pin="m", eps=1e-6)
        res, _, phi = fm.evaluate(z)
        row = {"scheme": label, "x": x, "inner": str(inner), "fine": str(fine),
               "n_rough": int(fm.rough.sum()) if fm.rough is not None else 0,
               "residual": res.tolist(), "eps_t": -phi, "wall": time.perf_counter() - t0}
        rows.append(row)
        print(f"x = {x:g} {label:9s} {inner!s:28s} fine {fine!s:28s} rough {row['n_rough']:4d} "
              f"res(q1) {res[1]:+.6e} res(V) {res[4]:+.5f} res(x) {res[5]:+.5f} "
              f"eps_t {-phi:.11f}", flush=True)

    for x in (1e3, 3e3, 1e4):
        for n in (10, 16, 24):
            run("plain", x, InnerRule(n))
            run("recentred", x, InnerRule(n, recentre=True))
        for n, nf in ((8, 32), (10, 32), (12, 48), (16, 64)):
            run("hybrid", x, InnerRule(n), InnerRule(nf))

    # which nodes carry the difference between 24 and 40 recentred points at x = 1000
    x = 1e3
    z = [0.985 * fp.q, fp.q, 0.0, fp.theta, fp.V, x]
    w0, t = ch.diagonal_nodes(z[0], 0.0, z[3])
    F = {n: rsb_node_moments(w0, t, fp.V, z[1] - z[0], x, p.sigma, inner=InnerRule(n),
                             eps=1e-6) for n in (24, 40)}
    rough = OneStepRSBMap(ch, 1.0, inner=InnerRule(10), fine=InnerRule(32),
                          pin="m", eps=1e-6).classify(z)
    d = np.abs(F[24].F2 - F[40].F2)
    share = float(d[rough].sum() / d.sum())
    print(f"x = 1000: the rough nodes ({rough.sum()} of {len(rough)}) carry {share:.7f} of "
          f"sum |<|f|^2>_24 - <|f|^2>_40|")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"rs": {"q": fp.q, "theta": fp.theta, "V": fp.V,
                                      "eps_t": fp.eps_t},
                               "rows": rows, "rough_share_24_40": share,
                               "n_rough": int(rough.sum())}, indent=1))


if __name__ == "__main__":
    main()
