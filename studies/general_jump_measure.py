"""Where does the global prox jump?  The measure behind issue 20's validation criterion
("agreement wherever the global minimum's prox has no jumps on a set of positive measure").

At each validation case's replica-symmetric global minimum (``studies/general_validation_
theory.py``'s fixed points on its first scramble) and, for calibration, at the paper's
branches (solved on the same rule as the paper's route), the prox is evaluated on an
independent rule of ``2^--log2n`` points (:func:`symattn.numerics.general.prox_jump_measure`):
the Gaussian weight of the nodes where the start set finds a second local minimum, and of
those whose two lowest minima lie within ``delta`` of each other.  Where a second minimum
exists on a set of positive measure, the two minima trade places across a surface inside it,
and the weight within ``delta`` of a tie falls like ``delta`` (its density, weight / delta,
finite): the prox jumps there.  Where no node has a second minimum the prox is continuous.

The order parameters are those of a ``2^12``-point fixed point evaluated on another rule, so
they are off the new rule's fixed point by its integration error (about ``1e-3`` relative);
the weights move by as much, which does not change a verdict of zero or not.

Rerun: ``python studies/general_jump_measure.py [--log2n 16] [--seed 7]``; writes
``studies/data/general_validation/jump_measure.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.branches import solve_branch
from symattn.numerics.channel import OutputChannel
from symattn.numerics.general import (GeneralChannel, OrderParameters, nodes_for,
                                      prox_jump_measure)
from symattn.numerics.quadrature import SobolRule

DATA = Path(__file__).resolve().parent / "data" / "general_validation"
DELTAS = (1e-2, 1e-3, 1e-4)


def validation_points():
    """``(case, alpha, character, params, x)``: the global minimum on the first scramble of
    every alpha in the validation theory files."""
    for case in ("rank2", "L3", "appendix"):
        data = json.loads((DATA / f"theory_{case}.json").read_text())
        for sub, part in data.items():
            p = ModelParams(**part["params"])
            for a, entry in part["alphas"].items():
                fp = next(f for f in entry["rules"][0]["fixed_points"] if f["global_minimum"])
                x = OrderParameters(*(np.array(fp[k]) for k in ("q", "M", "theta", "V")))
                yield f"{case} {sub}", float(a), fp["character"], p, x


def paper_points(alphas=(1.0, 1.25, 1.5)):
    """The paper's two branches, solved by the paper's route on 2^14 points (seed 0)."""
    p = ModelParams()
    ch = OutputChannel(p, SobolRule(log2n=14, seed=0).nodes(dim=4))
    for branch in ("semantic", "positional"):
        for a in alphas:
            fp = solve_branch(p, branch, a, ch, with_eps_g=False)
            x = OrderParameters(np.array([[fp.q]]), np.array([[fp.m], [-fp.m]]),
                                np.array([[fp.theta]]), np.array([[fp.V]]))
            yield "paper omega0.3", a, branch, p, x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7, help="the rule's scramble (independent of "
                                                        "the fixed points' seeds 0 and 1)")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'case':<18} {'alpha':>5} {'character':<11} {'two minima':>10}  "
          + "  ".join(f"{'<' + format(d, 'g'):>7} (n)   " for d in DELTAS)
          + "  density at 1e-3")
    for case, a, char, p, x in [*paper_points(), *validation_points()]:
        m = prox_jump_measure(GeneralChannel(p, nodes_for(p, args.log2n, args.seed)), x,
                              DELTAS)
        rows.append({"case": case, "alpha": a, "character": char, **m})
        below = m["below"]
        print(f"{case:<18} {a:>5g} {char:<11} {m['two_minima']:>10.4f}  "
              + "  ".join(f"{below[d]['weight']:>7.2e} ({below[d]['count']:>4})"
                          for d in DELTAS)
              + f"  {below[1e-3]['weight'] / 1e-3:.3g}", flush=True)
    out = DATA / "jump_measure.json"
    out.write_text(json.dumps({"log2n": args.log2n, "seed": args.seed, "rows": rows},
                              indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
