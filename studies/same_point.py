"""The scrambles against plane preintegration, at the same order parameters.

Question: evaluated at the very same order parameters, do scrambled Sobol rules and plane
preintegration give the same alpha_c and alpha_l, so that the default run's offset from the
plane value is a draw of its scrambles rather than a bias of either integrator?

How: ``plane_route.py`` computes the averages at one large scramble's fixed points (and, for
alpha_l, at its own fixed point of the plane map).  This study evaluates the same averages
at the same points on many further scrambled Sobol rules (folded, as ``--precision high``),
seeds independent of the default run's, and turns each into alpha_c and alpha_l exactly as
the plane values were: alpha_c by ``precise.alpha_c_with`` (the fixed points enter at second
order), alpha_l by the plane record's goal weights (``alpha_l + goal . (atoms - atoms_plane)``,
a chord step to first order).  The fixed points are shared, so what is compared is the two
integrators alone, without the scatter of each scramble's own fixed point.  The scrambles'
value is the mean over scrambles, its bar the standard error and the Student-t 95% interval
(K - 1 degrees of freedom).  One cold pass over the rule per branch and point: at 2^23 points
about 23 s each on one core.

Evaluating at one scramble's fixed points leaves an error of second order in their distance to
the true ones, common to both integrators.  ``--records R`` measures it: alpha_c at the fixed
points of the run's scrambles 1..R-1 minus alpha_c at record 0's, paired on the same
``--record-scrambles`` scrambles (so their integration errors nearly cancel).

Each pass is appended to ``--out`` (one JSON line) as it finishes; a rerun skips those done.

Found (docs/numerics.md, 'The two integrators at the same points (studies/same_point.py)';
2-core machine, 2026-11-30 and 2026-12-01, commits 3428535 and 2cfcbf3), 96 folded scrambles
of 2^23 (seeds 5000-5095; 3490 s on 2 cores):
alpha_c = 1.2515359672 +- 3.1e-7 against the plane's 1.2515356133 (plane - scrambles -3.5e-7,
1.2 standard errors), alpha_l = 1.4922711864 +- 1.9e-6 against 1.4922706432 (-5.4e-7, 0.3).
"The integrators agree: alpha_c within 0.7 combined one-standard-error bars (3.1e-7 + 1.7e-7),
alpha_l within 0.2 (1.9e-6 + 7.6e-7)"; "So the default run's offset is its eight scrambles'
draw, not a bias of either integrator".  ``--records 8 --record-scrambles 4`` (684 s more): at
the other seven scrambles' fixed points alpha_c moves by -8.9e-10, -4.4e-9, +3.3e-9, +1.9e-9,
+4e-10, +9e-10 and -3.7e-9 (each +- 1e-10 to 4.4e-9): "So it is below 1e-8".

Rerun (the docs' command, then the same with the docs' ``--records 8 --record-scrambles 4``;
``high.json``, ``plane.json`` and ``plane_l.json`` as in studies/plane_route.py)::

    python studies/same_point.py --json high.json --plane plane.json plane_l.json --log2n 23 --scrambles 96 --plane-bars 1.7e-7,7.6e-7
    python studies/same_point.py --json high.json --plane plane.json plane_l.json --log2n 23 --scrambles 96 --plane-bars 1.7e-7,7.6e-7 --records 8 --record-scrambles 4

Options: ``[--log2n 22] [--scrambles 64] [--seed 5000] [--workers 2] [--records 1]
[--record-scrambles 4] [--plane-bars alpha_c,alpha_l] [--out studies/data/same_point.jsonl]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.refine.precise import ChunkedChannel, alpha_c_with, branch_fold
from symattn.numerics.quadrature import SobolRule
from symattn.stats import mean_se, t_halfwidth


def _pass(args):
    """One scramble, one point: the averages on the folded rule (cold starts)."""
    params, log2n, seed, kind, branch, x = args
    t0 = time.perf_counter()
    nodes = SobolRule(log2n, seed).nodes(fold=branch_fold(params, branch))
    st = ChunkedChannel(params, nodes).evaluate(np.asarray(x, float))
    if st.n_failed:
        raise RuntimeError(f"{st.n_failed} prox solves failed on scramble {seed} ({kind})")
    return {"seed": seed, "kind": kind, "log2n": log2n, "means": st.means.tolist(),
            "wall_time": time.perf_counter() - t0}


def _plane_values(paths):
    """The plane results in the files plane_route.py writes: alpha_c's E[M] per branch at the
    highest (v order, grid, cells, follow steps, ...) run for both branches, and the alpha_l
    record of the highest v order that has its atoms and goal."""
    recs = [r for p in paths for r in json.loads(Path(p).read_text())]
    out = {}
    c = [r for r in recs if r.get("kind") == "alpha_c"]

    def config(r):
        return tuple(r[k] for k in ("v_order", "grid", "cells", "follow_steps", "u_tol",
                                    "min_width"))

    both = [cf for cf in {config(r) for r in c}
            if {r["branch"] for r in c if config(r) == cf} == {"positional", "semantic"}]
    if both:
        cf = max(both)
        out["alpha_c"] = {r["branch"]: r for r in c if config(r) == cf}
        out["alpha_c_config"] = cf
    lrec = [r for r in recs if r.get("kind") == "alpha_l" and "goal" in r]
    if lrec:
        out["alpha_l"] = max(lrec, key=lambda r: r["v_order"])
    return out


_TOKENS = np.array([[0, 2, 4, 5], [1, 3, 6, 7]])   # the atoms of token 1 and token 2


def _pair_sums(v):
    """Atoms summed over the two tokens (folded rules are right only for those), then E[M]
    and E[loss]: ``(eta f, xi f, f, f^2, M, loss)``."""
    v = np.asarray(v, float)
    return np.concatenate([v[_TOKENS[0]] + v[_TOKENS[1]], v[8:10]])


def _summary(name, values, plane, bar=None):
    """One row: the scrambles' mean, standard error and 95% half-width, the plane value, the
    difference in standard errors and, with the plane's error bar, in combined bars (95% half
    width plus the plane's bar)."""
    k = len(values)
    mean, se = mean_se(values)
    t95 = t_halfwidth(se, k)
    d = plane - mean
    combined = f"{abs(d) / (t95 + bar):9.2f}" if bar is not None else f"{'-':>9}"
    print(f"{name:<10} {mean:15.10f} {se:9.1e} {t95:9.1e} {plane:15.10f} {d:+9.1e} "
          f"{abs(d) / se:6.2f} {combined}")
    return {"mean": mean, "se": se, "t95": t95, "plane": plane, "difference": d, "k": k}


def _records(high, by, paired, others, ac):
    """alpha_c at other scrambles' fixed points minus alpha_c at record 0's, on the same
    scrambles (paired: their integration errors nearly cancel).  The fixed points enter at
    second order, so this measures the fixed-point term that evaluating at one scramble's
    fixed points leaves."""
    print(f"\nalpha_c at record k's fixed points minus at record 0's, paired over "
          f"{len(paired)} scrambles:")
    out = {}
    for k in others:
        rec = high["per_rule"][k]
        d = [alpha_c_with(rec, by[(s, f"alpha_c positional record {k}")]["means"][8],
                          by[(s, f"alpha_c semantic record {k}")]["means"][8]) - ac[i]
             for i, s in enumerate(paired)]
        m, se = mean_se(d)
        out[k] = {"difference": m, "se": se}
        print(f"  record {k} (seed {rec['seed']}): {m:+.2e} +- {se:.1e}")
    return out


def _load(path):
    """The passes done so far.  A last line cut short by an interrupted write is removed from
    the file (its pass is recomputed); a bad line elsewhere is an error."""
    if not path.exists():
        return []
    lines = [s for s in path.read_text().splitlines() if s.strip()]
    done = []
    for i, s in enumerate(lines):
        try:
            done.append(json.loads(s))
        except json.JSONDecodeError:
            if i < len(lines) - 1:
                raise ValueError(f"{path}: line {i + 1} is not JSON") from None
            path.write_text("".join(json.dumps(r) + "\n" for r in done))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="output of symattn thresholds --precision high")
    ap.add_argument("--plane", required=True, nargs="+", help="outputs of plane_route.py")
    ap.add_argument("--log2n", type=int, default=22)
    ap.add_argument("--scrambles", type=int, default=64)
    ap.add_argument("--seed", type=int, default=5000, help="first scramble seed")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--records", type=int, default=1,
                    help="also alpha_c at the fixed points of the run's scrambles 1..R-1, "
                         "paired with record 0's (the fixed-point term)")
    ap.add_argument("--record-scrambles", type=int, default=4,
                    help="scrambles used for --records")
    ap.add_argument("--plane-bars", default=None,
                    help="the plane results' error bars, alpha_c,alpha_l (as plane_route.py "
                         "prints them), for the column in combined bars")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "data" / "same_point.jsonl"))
    args = ap.parse_args()
    try:
        high = json.loads(Path(args.json).read_text())
        params = ModelParams(**high["params"])   # as ModelParams.as_dict wrote it
        rule = high["per_rule"][0]
        plane = _plane_values(args.plane)
        if not plane:
            raise ValueError("no alpha_c pair or alpha_l record with atoms in --plane")
        if args.scrambles < 2 or args.workers < 1:
            raise ValueError("need --scrambles >= 2 and --workers >= 1")
        if not 1 <= args.records <= len(high["per_rule"]) or not (
                2 <= args.record_scrambles <= args.scrambles):
            raise ValueError(f"need 1 <= --records <= {len(high['per_rule'])} and "
                             f"2 <= --record-scrambles <= --scrambles")
        SobolRule(args.log2n, args.seed)
        bars = ([float(b) for b in args.plane_bars.split(",")] if args.plane_bars
                else [None, None])
        if len(bars) != 2:
            raise ValueError(f"--plane-bars takes two numbers: {args.plane_bars!r}")
        out = Path(args.out)
        done = _load(out)
    except (OSError, KeyError, IndexError, ValueError, TypeError) as exc:
        print(f"same_point: cannot run with these inputs: {exc}", file=sys.stderr)
        sys.exit(2)

    points = {}
    if "alpha_c" in plane:
        for b in ("positional", "semantic"):
            points[f"alpha_c {b}"] = (b, rule["at_alpha_c"][b]["x"])
    if "alpha_l" in plane:
        points["alpha_l"] = (plane["alpha_l"]["branch"], plane["alpha_l"]["x"])
    seeds = range(args.seed, args.seed + args.scrambles)
    have = {(r["seed"], r["kind"]) for r in done if r["log2n"] == args.log2n}
    tasks = [(params, args.log2n, s, kind, b, x) for s in seeds
             for kind, (b, x) in points.items() if (s, kind) not in have]
    # the other records' fixed points at alpha_c, on the first --record-scrambles scrambles
    others = range(1, args.records if "alpha_c" in plane else 1)
    paired = seeds[:args.record_scrambles]
    tasks += [(params, args.log2n, s, f"alpha_c {b} record {k}", b,
               high["per_rule"][k]["at_alpha_c"][b]["x"])
              for k in others for s in paired for b in ("positional", "semantic")
              if (s, f"alpha_c {b} record {k}") not in have]
    print(f"{len(tasks)} passes of 2^{args.log2n} points to go ({len(done)} in {out})",
          flush=True)
    t0 = time.perf_counter()
    if tasks:
        with ProcessPoolExecutor(args.workers) as ex, out.open("a") as fh:
            futures = [ex.submit(_pass, t) for t in tasks]
            for i, f in enumerate(as_completed(futures), 1):
                r = f.result()
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
                done.append(r)
                el = time.perf_counter() - t0
                print(f"  {i}/{len(tasks)}: scramble {r['seed']} {r['kind']}: E[M] = "
                      f"{r['means'][8]:.12f} ({r['wall_time']:.0f} s; about "
                      f"{el / i * (len(tasks) - i):.0f} s left)", flush=True)

    by = {(r["seed"], r["kind"]): r for r in done if r["log2n"] == args.log2n}
    print(f"\nsame points, {args.scrambles} folded scrambles of 2^{args.log2n} "
          f"(seeds {seeds[0]}-{seeds[-1]}) against plane preintegration")
    print(f"{'':<10} {'scrambles':>15} {'SE':>9} {'t95':>9} {'plane':>15} "
          f"{'plane-mean':>9} {'in SE':>6} {'in bars':>9}")
    result = {}
    if "alpha_c" in plane:
        pe = {b: plane["alpha_c"][b]["E_M"] for b in ("positional", "semantic")}
        em = {b: [by[(s, f"alpha_c {b}")]["means"][8] for s in seeds] for b in pe}
        for b in pe:
            result[f"E_M {b}"] = _summary(f"E[M] {b[:3]}", em[b], pe[b])
        ac = [alpha_c_with(rule, p, s) for p, s in zip(em["positional"], em["semantic"])]
        result["alpha_c"] = _summary("alpha_c", ac, alpha_c_with(rule, pe["positional"],
                                                                 pe["semantic"]), bars[0])
        print(f"  (plane: v_order, grid, cells, follow, u_tol, min_width = "
              f"{plane['alpha_c_config']})")
        if len(others):
            result["records"] = _records(high, by, paired, others, ac)
    if "alpha_l" in plane:
        L = plane["alpha_l"]
        g = _pair_sums(L["goal"]) / 2   # the two tokens' weights agree (swap symmetry)
        base = _pair_sums(L["means"])
        al = [L["alpha_l"] + float(g @ (_pair_sums(by[(s, "alpha_l")]["means"]) - base))
              for s in seeds]
        result["alpha_l"] = _summary("alpha_l", al, L["alpha_l"], bars[1])
        print(f"  (plane: v_order {L['v_order']}, grid {L['grid']}, cells {L['cells']}, "
              f"follow {L['follow_steps']}; token weights differ by "
              f"{np.max(np.abs(np.subtract(*np.asarray(L['goal'])[_TOKENS]))):.1e})")
    print(f"took {time.perf_counter() - t0:.0f} s")
    return result


if __name__ == "__main__":
    main()
