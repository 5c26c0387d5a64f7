"""Do the validation's theory points still stand with today's solver?  (issue 20)

``studies/data/general_validation/theory_*.json`` were computed before the prox's
leading-eigenvector starts and the smoothed solver (docs/numerics.md, 'The general model').  Each
global minimum stored there is given back to :func:`symattn.numerics.general.solve_general` as
its start, on the same rule (pinned at ``theta = 0`` where it has none, as the search solved
it), and the change in ``eps_t`` and in the order parameters is printed.  A rerun of the searches
is needed only if a point moves by more than the scrambles' spread.

Measured 2026-12-04 (``--cases rank2 L3 appendix``): every point is a fixed point of today's map
as it stands (0 Newton steps) except the rank-2 student's pinned positional ones at alpha = 0.5 on
seed 0 of both omegas, which converge only with the smoothing ladder (at
``eps = 1e-7``) and move by ``2.2e-9`` and ``3.1e-9`` in ``eps_t`` (``3e-4`` and ``6e-3`` in
``V``), against a scramble spread of ``1e-6`` in ``eps_t``: the stored theory stands.

Rerun: ``python studies/general_validation_recheck.py [--cases rank2 L3 appendix]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.general import GeneralChannel, OrderParameters, nodes_for, solve_general

DATA = Path(__file__).resolve().parent / "data" / "general_validation"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["rank2"])
    args = ap.parse_args(argv)
    for case in args.cases:
        data = json.loads((DATA / f"theory_{case}.json").read_text())
        for sub, part in data.items():
            p = ModelParams(**part["params"])
            log2n = part.get("log2n", 12)
            for a, entry in part["alphas"].items():
                for rule in entry["rules"]:
                    fp = next(f for f in rule["fixed_points"] if f["global_minimum"])
                    x = OrderParameters(*(np.array(fp[k]) for k in ("q", "M", "theta", "V")))
                    pin = ("theta",) if not np.any(x.theta) else ()
                    ch = GeneralChannel(p, nodes_for(p, log2n, rule["seed"]))
                    t0 = time.perf_counter()
                    new = solve_general(ch, float(a), x, pin=pin)
                    dx = float(np.max(np.abs(new.x.flat() - x.flat())))
                    print(f"{case} {sub} alpha={a} seed={rule['seed']} {fp['character']:<10} "
                          f"eps_t {fp['eps_t']:.9f} -> {new.eps_t:.9f} "
                          f"({new.eps_t - fp['eps_t']:+.1e}), max|dx| {dx:.1e}, "
                          f"{new.iterations} steps, converged {new.converged} at eps "
                          f"{new.eps:g}, {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
