"""Does the compiled kernel layer give the numpy path's numbers (issue 19)?

The same node sets in both: the prox and the atoms at fixed order parameters, the fixed points
of both branches, and the thresholds of single scrambles.  Record on each code base, then
compare::

    # the numpy path: a checkout of 71aeaed (the last commit before the compiled layer)
    git worktree add /tmp/numpy-path 71aeaed
    (cd /tmp/numpy-path && python /work/main/studies/compiled_equivalence.py --record old.json)
    # this checkout
    python studies/compiled_equivalence.py --record new.json
    python studies/compiled_equivalence.py --compare old.json new.json

The script imports ``symattn`` from the working directory it runs in, so it measures that
checkout.  Timings are after a warm-up (a scramble of 2^8), one process, both cores free.  Stored results: ``studies/data/compiled_equivalence_*.json``.

The same records answer whether the one engine (issue 46: the paper's channel as the general
fused pass at the paper's instance) keeps the paper's numbers: ``..._one_engine_before.json``
is a checkout of edde352 (the last commit before it), ``..._one_engine_after.json`` of b845616
(2026-12-08; docs/numerics.md, 'The general model').
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

#: order parameters (q, m, theta, V) near alpha_c (the main job's fixed points)
POINTS = {
    "positional": (0.04705195, 0.2525654, 0.0, 14.87689),
    "semantic": (0.08164738, 0.0, 0.1179633, 18.31522),
}
#: fixed points: (branch, alpha) on scramble 0 of 2^12
FIXED = [("positional", 1.0), ("positional", 1.25), ("semantic", 1.25), ("semantic", 1.6)]
LOG2N = 12


def record(path):
    from symattn.model.params import ModelParams
    from symattn.numerics.branches import solve_branch
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.quadrature import SobolRule
    from symattn.numerics.settings import NumericalSettings
    from symattn.numerics.thresholds import thresholds_for_rule

    import symattn
    params = ModelParams()
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    out = {"commit": head.strip(), "module": symattn.__file__, "log2n": LOG2N, "atoms": {}, "fixed_points": {},
           "thresholds": {}, "timings": {}}
    # warm-up outside the timings: derivation, lambdify or compilation / cache loading
    thresholds_for_rule(params, NumericalSettings(log2n=8, rules=2), 0)
    nodes = SobolRule(LOG2N, 0).nodes()
    ch = OutputChannel(params, nodes)
    for name, x in POINTS.items():
        t = time.perf_counter()
        st = ch.evaluate(np.array(x))
        out["timings"][f"evaluate {name}"] = time.perf_counter() - t
        out["atoms"][name] = {"means": st.means.tolist(), "prox_h": st.prox.h[:64].tolist(),
                              "prox_value": st.prox.value[:64].tolist()}
    if hasattr(ch, "coordinates"):    # the one engine's order (_in_paper_order)
        out["atom_keys"] = list(ch.coordinates.atom_keys)
    for branch, alpha in FIXED:
        t = time.perf_counter()
        fp = solve_branch(params, branch, alpha, ch)
        out["timings"][f"fixed point {branch} {alpha}"] = time.perf_counter() - t
        out["fixed_points"][f"{branch} {alpha}"] = {"x": list(map(float, fp.x)),
                                                   "eps_t": fp.eps_t, "eps_g": fp.eps_g}
    settings = NumericalSettings(log2n=LOG2N, rules=2)
    for seed in (0, 1):
        t = time.perf_counter()
        r = thresholds_for_rule(params, settings, seed)
        out["timings"][f"thresholds seed {seed}"] = time.perf_counter() - t
        out["thresholds"][str(seed)] = {"alpha_c": r.alpha_c, "alpha_l": r.alpha_l}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out["timings"], indent=1))


def _maxdiff(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)))


def _in_paper_order(rec, means):
    """A record's means with the atoms in the paper's order (records before the one engine
    have no ``atom_keys``: they are in it; later ones are in the generated equations' order)."""
    keys = rec.get("atom_keys")
    if keys is None:
        return means
    from symattn.compile.kernels import equations_module
    order = [keys.index(k) for k in equations_module().ATOM_KEYS]
    return [means[i] for i in order] + list(means[len(keys):])


def compare(old_path, new_path):
    old, new = (json.load(open(p)) for p in (old_path, new_path))
    for rec in (old, new):
        for name in rec["atoms"]:
            rec["atoms"][name]["means"] = _in_paper_order(rec, rec["atoms"][name]["means"])
    print(f"old {old['commit'][:10]}  new {new['commit'][:10]}  (Sobol 2^{old['log2n']})")
    print(f"{'quantity':42s} {'max |new - old|':>16s}")
    for name in old["atoms"]:
        for key in ("means", "prox_h", "prox_value"):
            print(f"{'atoms ' + name + ' ' + key:42s} "
                  f"{_maxdiff(old['atoms'][name][key], new['atoms'][name][key]):16.2e}")
    for name in old["fixed_points"]:
        o, n = old["fixed_points"][name], new["fixed_points"][name]
        print(f"{'fixed point ' + name + ' x':42s} {_maxdiff(o['x'], n['x']):16.2e}")
        print(f"{'fixed point ' + name + ' eps_t, eps_g':42s} "
              f"{_maxdiff([o['eps_t'], o['eps_g']], [n['eps_t'], n['eps_g']]):16.2e}")
    for seed in old["thresholds"]:
        o, n = old["thresholds"][seed], new["thresholds"][seed]
        print(f"{'thresholds seed ' + seed + ' alpha_c':42s} {abs(o['alpha_c'] - n['alpha_c']):16.2e}")
        print(f"{'thresholds seed ' + seed + ' alpha_l':42s} {abs(o['alpha_l'] - n['alpha_l']):16.2e}")
    print(f"\n{'timing':42s} {'old s':>8s} {'new s':>8s} {'ratio':>7s}")
    for k in old["timings"]:
        a, b = old["timings"][k], new["timings"][k]
        print(f"{k:42s} {a:8.2f} {b:8.2f} {a / b:7.1f}")


def main(argv=None):
    sys.path.insert(0, os.getcwd())      # the symattn of the checkout it runs in (module doc)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", metavar="FILE")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    args = ap.parse_args(argv)
    if args.record:
        record(args.record)
    if args.compare:
        compare(*args.compare)


if __name__ == "__main__":
    main()
