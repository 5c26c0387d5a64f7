"""Why the 1RSB Newton stalled where the jump set is light, and the Jacobian basis that fixed it
(issue 21; docs/stability.md, 'Newton's Jacobian along the common level and the gap').

At the semantic alpha = 1.5 with a 2^24 jump band, rule 2's fixed-x solves stalled near the
solutions (residuals 1e-6 - 1e-5) while their neighbours converged.  The point here is the one
that rule's profile converged to at x = 260000 in the run file as of de7f3c4 (``Z_260000``),
evaluated on a map classified afresh at that point (its rough and split nodes frozen there,
as every solve does at its start), where its residual is 9e-5.  The study

1. computes the finite-difference columns of the five equations' Jacobian in q0 and in q1
   apart, each stepped by 1e-4, 1e-3 and 1e-2 of q1 - q0 (the old rule, ``JAC_SHARE``), and
   their sum, against the column of a common step of q0 and q1 by 1e-6 ... 1e-9 (the
   derivative along q0 + q1 that the sum should give);
2. runs Newton from that point at fixed x with the old basis (q0 and q1 apart) and the new
   one (:func:`symattn.numerics.one_step_rsb._jacobian_basis`), and prints each step.

Writes studies/data/one_step_rsb_jacobian_basis.json.  Rerun:
``python studies/one_step_rsb_jacobian_basis.py`` (about 4 minutes on one core, 8 GB for the
2^24 band).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from unittest import mock

import numpy as np

from symattn.numerics import one_step_rsb
from symattn.numerics.one_step_rsb import OneStepRSBMap, solve_one_step_rsb
from one_step_rsb_fold import band_rule

OUT = Path(__file__).resolve().parent / "data" / "one_step_rsb_jacobian_basis.json"
ALPHA, SEED = 1.5, 2
#: rule 2's converged profile point at x = 260000 in
#: studies/data/one_step_rsb_cli/fixed-point-rsb1-semantic-alpha1.5-omega0.3-band24-split16.json
#: as committed at de7f3c4 (q0, q1, m, theta, V, x)
Z_260000 = [0.09270963494411726, 0.09270969070478505, 0.0, 0.13297010815093585,
            16.098662603028476, 260000.0]
FREE = [0, 1, 3, 4]          # q0, q1, theta, V (m pinned, x held)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    s, ch, band = band_rule(ALPHA, SEED)

    def fresh():
        return OneStepRSBMap(ch, ALPHA, pin="m", eps=s.eps_stages[-1],
                             **s.inner_rules(Z_260000[5]))

    z = np.array(Z_260000)
    D = z[1] - z[0]
    fmap = fresh()
    r0 = fmap.evaluate(z)[0]
    print(f"x = {z[5]:g}, q1 - q0 = {D:.3e}: residual on a fresh map {np.abs(r0[FREE]).max():.2e}",
          flush=True)

    def column(d, h):
        return ((fmap.evaluate(z + h * d, warm=True)[0][FREE] - r0[FREE]) / h).tolist()

    e = np.eye(6)
    apart = []
    for share in (1e-4, 1e-3, 1e-2):
        h = share * D
        a, b = column(e[0], h), column(e[1], h)
        apart.append({"share": share, "h": h, "q0": a, "q1": b,
                      "sum": [u + v for u, v in zip(a, b)]})
        print(f"apart, h = {share:g} D: sum of the q0 and q1 columns "
              f"{np.array2string(np.array(apart[-1]['sum']), precision=3)} "
              f"(the q1 column {np.array2string(np.array(b), precision=1)})", flush=True)
    common = []
    for h in (1e-6, 1e-7, 1e-8, 1e-9):
        common.append({"h": h, "column": column(e[0] + e[1], h)})
        print(f"common step h = {h:g}: {np.array2string(np.array(common[-1]['column']), precision=4)}",
              flush=True)

    newton = {}
    for name, basis in (("apart", lambda free: np.eye(len(free))),
                        ("common and gap", one_step_rsb._jacobian_basis)):
        steps = []

        def progress(it, zz, r):
            steps.append({"iteration": it, "residual": r, "dz": (zz - z).tolist()})
            print(f"  {name}: step {it}, residual {r:.2e}", flush=True)

        with mock.patch.object(one_step_rsb, "_jacobian_basis", basis):
            pt = solve_one_step_rsb(fresh(), z, hold_x=True, tol=s.tol, max_iter=s.max_iter,
                                    progress=progress)
        newton[name] = {"converged": pt.converged, "message": pt.message,
                        "residual": pt.residual, "sigma_over_e": pt.sigma_over_e,
                        "z": pt.z.tolist(), "steps": steps}
        print(f"{name}: {pt.message} (residual {pt.residual:.1e}, Sigma/e "
              f"{pt.sigma_over_e:+.2e}, q1 moved by {pt.z[1] - z[1]:+.2e})", flush=True)
    args.out.write_text(json.dumps({
        "alpha": ALPHA, "seed": SEED, "band": band.as_dict(), "z": Z_260000, "D": D,
        "residual_fresh": r0.tolist(), "apart": apart, "common": common,
        "newton": newton}, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
