"""The zero-temperature 1RSB energy as a function of the Parisi parameter x, against RS
(issue 21, item 3; docs/stability.md, 'One-step RSB: where it stands').

For one branch at one alpha, on each of several scrambled Sobol outer rules, the five 1RSB
equations in (q_0, q_1, m or theta, V) are solved at fixed x (``solve_ladder``, hold_x, smoothing
widths 1e-4 then 1e-5) with the hybrid inner rule: Gauss-Hermite ``--coarse`` x ``--coarse``
on the smooth outer nodes and ``--fine`` x ``--fine`` on the rough ones (``OneStepRSBMap.
classify``), no recentring.  The reference is the same solve at ``x_ref`` (default 10: the tilt
exp(-x M) varies by 1e-3 over an inner Gaussian there, so the point is RS's up to that, but on
the same nested outer x inner rule): ``eps_t(x) - eps_t(x_ref)`` removes the offset between
splitting the Gaussian field into outer and inner parts and RS's single rule (2.5e-7 at
alpha = 1 on 2^10 points, the size of the effect).  Reported per x: mean +- standard error over
the rules of that difference, of q_0, q_1, (q_1 - q_0)/q_1, m, theta, V and Sigma/e =
-x^2 dPhi/dx / |Phi| (the residual of the x equation: the complexity relative to the energy);
the stationary x is where Sigma/e changes sign, and the 1RSB energy there is the extremum of
eps_t(x).  The difference of two fixed points' eps_t carries the quadrature's inconsistency
between the equations and Phi (the envelope theorem holds only up to it); the x equation itself
is the partial derivative of Phi (checked against a finite difference to 1e-4), so the profile
is also integrated from it: ``d_eps_t_envelope``, the trapezoid rule over the x grid of
eps_t Sigma/e / x^2 = d eps_t/dx.

q_0 = q_1 (RS) solves the 1RSB equations at every x, and Newton sometimes goes there
(``COLLAPSED``: q_1 - q_0 below 1e-5 q_1); such points are kept in the data as the record of
that and not used; ``--retry --q0-ratio`` starts again further from q_0 = q_1.  Where the jump
set is light (the semantic branch at alpha_c, 0.3 % of the measure) a rule of 2^10 outer
points may hold no node whose inner Gaussian meets a jump at small q_1 - q_0: then q_0 = q_1 is
also the only solution of the discretised equations, and the 1RSB point is not resolved.

Writes (after every solve; resumable) studies/data/one_step_rsb_energy/<branch>_<alpha>.json.
The data there came from (2026-12-05, commits 2394ceb-6f4a6d1; one solve takes 0.5-10 minutes
on one core, more when the machine is shared)::

    python studies/one_step_rsb_energy.py --branch positional --alpha 1 --seeds 0,1 \
        --xs 30,100,200,300,500,1000          # seed 0 also has 1500, 2000, 3000
    python studies/one_step_rsb_energy.py --branch positional --alpha 1 --seeds 2 \
        --xs 30,100,200,300,500,1000 --retry --q0-ratio 0.93    # collapsed onto RS
    python studies/one_step_rsb_energy.py --branch semantic --alpha 1 --seeds 0,1 \
        --xs 100,300,1000,2000,3000,5000 --retry    # then --seeds 2 likewise
    python studies/one_step_rsb_energy.py --branch positional --alpha 1.2515356 \
        --seeds 0,1,2 --xs 30,100,200,300,500 --retry    # seed 2 again with --q0-ratio 0.93
    python studies/one_step_rsb_energy.py --branch semantic --alpha 1.2515356 \
        --seeds 0,1 --xs 100,300,1000,2000 --retry --q0-ratio 0.99    # not resolved
    python studies/one_step_rsb_energy.py --branch positional --alpha 1.5 --seeds 0,1,2 \
        --xs 30,100,200,300,500,1000 --retry    # 2026-12-05 (58da3c0); rule 2 went to RS

then ``python studies/one_step_rsb_energy.py --plot`` draws docs/figures/one_step_rsb_energy.png
from every profile in the folder.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path


OUT = Path(__file__).resolve().parent / "data" / "one_step_rsb_energy"


def _save(path, entry):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entry, indent=1))
    os.replace(tmp, path)


def _envelope(rows, seed, x_ref, x):
    """eps_t(x) - eps_t(x_ref) along one rule's profile from the x equation (envelope theorem:
    d eps_t/dx = eps_t (Sigma/e) / x^2 at each fixed point), by the trapezoid rule over the
    converged points of that rule between x_ref and x (``envelope_shift``)."""
    from symattn.numerics.one_step_rsb_search import envelope_shift
    return envelope_shift(sorted((r for r in rows if r["seed"] == seed and _usable(r)
                                  and x_ref <= r["x"] <= x), key=lambda r: r["x"]))


#: a solve whose q_1 - q_0 fell below this share of q_1 has collapsed onto RS (q_0 = q_1 is a
#: solution of the 1RSB equations at every x): recorded, not used as a 1RSB point
COLLAPSED = 1e-5


def _usable(r) -> bool:
    return r["converged"] and (r["q1"] - r["q0"]) > COLLAPSED * r["q1"]


def _interp(a, b, key, t):
    return a[key] + t * (b[key] - a[key])


def stationary(entry: dict, branch: str) -> list:
    """Per rule: the stationary x* (linear interpolation of Sigma/e between the grid points
    around its first change of sign from + to -; ``x_star`` None if there is none on the grid,
    and then the values are those at the largest x reached, ``x_last``) and, at x*, the shifts from the rule's x_ref point: ``d_q1``, ``d_q0`` (q_0(x*) - q_1(x_ref)),
    ``d_order`` (m or theta), ``q0_over_q1``, and ``d_eps_direct`` / ``d_eps_envelope``, the two
    estimates of the 1RSB training loss minus its RS limit (module doc)."""
    x_ref = entry["x_ref"]
    k = "m" if branch == "positional" else "theta"
    per = []
    for seed in sorted({r["seed"] for r in entry["rows"]}):
        rows = sorted((r for r in entry["rows"] if r["seed"] == seed and _usable(r)),
                      key=lambda r: r["x"])
        ref = [r for r in rows if r["x"] == x_ref]
        if not ref:
            per.append({"seed": seed, "x_star": None, "why": "no converged x_ref point with "
                        "q_0 < q_1"})
            continue
        ref = ref[0]
        cross = next(((a, b) for a, b in zip(rows, rows[1:])
                      if a["sigma_over_e"] > 0 >= b["sigma_over_e"]), None)
        if cross is None:
            # no stationary point on the grid: the shifts at the largest x reached, flagged
            a = b = rows[-1]
            t, xs = 0.0, None
            env = _envelope(rows, seed, x_ref, a["x"])
            why = f"Sigma/e does not change sign up to x = {a['x']:g}"
        else:
            a, b = cross
            t = a["sigma_over_e"] / (a["sigma_over_e"] - b["sigma_over_e"])
            xs = a["x"] + t * (b["x"] - a["x"])
            # the envelope integral to a, then half a trapezoid from a to x* (Sigma = 0 there)
            env = _envelope(rows, seed, x_ref, a["x"]) + 0.5 * (
                a["eps_t"] * a["sigma_over_e"] / a["x"] ** 2) * (xs - a["x"])
            why = ""
        per.append({"seed": seed, "x_star": xs, "x_last": a["x"], "why": why,
                    "d_q1": _interp(a, b, "q1", t) - ref["q1"],
                    "d_q0": _interp(a, b, "q0", t) - ref["q1"],
                    "d_order": _interp(a, b, k, t) - ref[k],
                    "q0_over_q1": _interp(a, b, "q0", t) / _interp(a, b, "q1", t),
                    "d_eps_direct": _interp(a, b, "eps_t", t) - ref["eps_t"],
                    "d_eps_envelope": env})
    return per


def summary(entry: dict) -> list:
    from symattn.stats import mean_se
    rows = entry["rows"]
    xs = sorted({r["x"] for r in rows if r["x"] != entry["x_ref"]})
    out = []
    for x in xs:
        per = []
        for r in rows:
            if r["x"] != x or not _usable(r):
                continue
            ref = [s for s in rows if s["seed"] == r["seed"] and s["x"] == entry["x_ref"]
                   and _usable(s)]
            if ref:
                per.append((r, ref[0]))
        if not per:
            out.append({"x": x, "n": 0})
            continue
        row = {"x": x, "n": len(per)}
        row["d_eps_t"] = mean_se([r["eps_t"] - s["eps_t"] for r, s in per])
        row["d_eps_t_envelope"] = mean_se([_envelope(rows, r["seed"], entry["x_ref"], x)
                                           for r, _ in per])
        for k in ("q0", "q1", "m", "theta", "V", "sigma_over_e"):
            row[k] = mean_se([r[k] for r, _ in per])
        row["dq_rel"] = mean_se([(r["q1"] - r["q0"]) / r["q1"] for r, _ in per])
        out.append(row)
    return out


FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "one_step_rsb_energy.png"


def plot(folder: Path, out: Path = FIGURE) -> None:
    """Sigma/e, the two estimates of eps_t(x) - eps_t(x_ref) and (q1 - q0)/q1 against x, for
    every profile in ``folder`` (mean +- standard error over rules)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    for path in sorted(folder.glob("*.json")):
        entry = json.loads(path.read_text())
        rows = [r for r in summary(entry) if r["n"]]
        if not rows:
            continue
        label = path.stem.replace("_", ", alpha = ")
        x = [r["x"] for r in rows]
        def pick(k):
            return [r[k][0] for r in rows], [r[k][1] for r in rows]
        y, e = pick("sigma_over_e")
        line = ax[0].errorbar(x, y, e, marker="o", capsize=3, label=label)[0]
        y, e = pick("d_eps_t")
        ax[1].errorbar(x, y, e, marker="o", capsize=3, color=line.get_color(),
                       label=f"{label}: difference of fixed points")
        y, e = pick("d_eps_t_envelope")
        ax[1].errorbar(x, y, e, marker="s", ls="--", capsize=3, color=line.get_color(),
                       label=f"{label}: integrated x equation")
        y, e = pick("dq_rel")
        ax[2].errorbar(x, y, e, marker="o", capsize=3, color=line.get_color(), label=label)
    ax[0].axhline(0, color="k", lw=0.8)
    ax[0].set_yscale("symlog", linthresh=1e-3)     # the sign change is at small |Sigma/e|
    ax[1].axhline(0, color="k", lw=0.8)
    ax[0].set_ylabel(r"$\Sigma/e = -x^2\partial_x\Phi/|\Phi|$")
    ax[1].set_ylabel(r"$\varepsilon_t(x) - \varepsilon_t(x_{\rm ref})$")
    ax[2].set_ylabel(r"$(q_1 - q_0)/q_1$")
    ax[0].set_title("x equation (stationary x where it crosses 0)")
    ax[1].set_title("1RSB training loss against its x -> 0 limit")
    ax[2].set_title("gap between the overlaps")
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("Parisi parameter x")
        a.legend(fontsize=7)
    fig.suptitle("Zero-temperature 1RSB at omega = 0.3 (mean +- s.e. over scrambled rules of "
                 "2^10 outer points)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", action="store_true", help="draw the figure from the saved profiles")
    ap.add_argument("--branch", choices=("semantic", "positional"))
    ap.add_argument("--alpha", type=float)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--log2n", type=int, default=10)
    ap.add_argument("--coarse", type=int, default=12)
    ap.add_argument("--fine", type=int, default=32)
    ap.add_argument("--x-ref", type=float, default=10.0)
    ap.add_argument("--xs", default="500,1000,1500,2000,3000")
    ap.add_argument("--out-dir", type=Path, default=OUT)
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("--retry", action="store_true",
                    help="solve again the points that failed or collapsed onto RS")
    ap.add_argument("--q0-ratio", type=float, default=0.985,
                    help="start at q_0 = ratio x q_RS, q_1 = q_RS (default 0.985)")
    args = ap.parse_args(argv)
    if args.plot:
        plot(args.out_dir)
        return
    if args.branch is None or args.alpha is None:
        ap.error("--branch and --alpha are required (or --plot)")
    key = f"{args.branch}:{args.alpha:g}"
    path = args.out_dir / f"{args.branch}_{args.alpha:g}.json"
    entry = (json.loads(path.read_text()) if path.exists() else
             {"args": {k: str(v) for k, v in vars(args).items()}, "x_ref": args.x_ref,
              "rows": []})
    if not args.summary_only:
        from symattn.model import ModelParams
        from symattn.numerics.branches import solve_branch
        from symattn.numerics.channel import OutputChannel
        from symattn.numerics.one_step_rsb import InnerRule, OneStepRSBMap, solve_ladder
        from symattn.numerics.quadrature import SobolRule
        p = ModelParams()
        pin = "m" if args.branch == "semantic" else "theta"
        coarse = InnerRule(args.coarse, recentre=False)
        fine = InnerRule(args.fine, recentre=False)
        # converged points are kept; a point that did not converge is tried again (with
        # --retry) or kept as the record of the failure
        done = {(r["seed"], r["x"]) for r in entry["rows"] if _usable(r) or not args.retry}
        for seed in (int(s) for s in args.seeds.split(",")):
            ch = OutputChannel(p, SobolRule(args.log2n, seed).nodes())
            fp = solve_branch(p, args.branch, args.alpha, ch)
            z = [args.q0_ratio * fp.q, fp.q, fp.m, fp.theta, fp.V, args.x_ref]
            for x in [args.x_ref] + [float(v) for v in args.xs.split(",")]:
                prev = [r for r in entry["rows"] if r["seed"] == seed and _usable(r)
                        and r["x"] <= x]
                if prev:
                    z = list(max(prev, key=lambda r: r["x"])["z"])
                if (seed, x) in done:
                    continue
                z[5] = x
                t0 = time.perf_counter()
                pt = solve_ladder(ch, args.alpha, z, pin=pin, inner=coarse, fine=fine,
                                  eps_stages=(1e-4, 1e-5), hold_x=True, tol=1e-9)
                res = OneStepRSBMap(ch, args.alpha, inner=coarse, fine=fine, pin=pin,
                                    eps=1e-5 if math.isnan(pt.eps) else pt.eps).evaluate(pt.z)[0]
                row = {"seed": seed, "x": x, **pt.as_dict(), "z": [float(v) for v in pt.z],
                       "sigma_over_e": float(-res[5]), "rs": {"q": fp.q, "m": fp.m,
                       "theta": fp.theta, "V": fp.V, "eps_t": fp.eps_t},
                       "wall": time.perf_counter() - t0}
                entry["rows"] = [r for r in entry["rows"]
                                 if (r["seed"], r["x"]) != (seed, x)] + [row]
                _save(path, entry)
                print(f"{key} seed {seed} x = {x:g}: {pt.message} (residual {pt.residual:.1e}, "
                      f"{pt.n_rough} rough) q0 {pt.z[0]:.6f} q1 {pt.z[1]:.6f} V {pt.z[4]:.4f} "
                      f"eps_t {pt.eps_t:.11f} (RS {fp.eps_t:.11f}) Sigma/e {-res[5]:+.3e} "
                      f"{row['wall']:.0f} s", file=sys.stderr, flush=True)
    entry["summary"] = summary(entry)
    if not args.summary_only:
        _save(path, entry)
    print(f"{key}: x_ref = {entry['x_ref']:g}; mean +- se over rules")
    for r in entry["summary"]:
        if not r["n"]:
            print(f"  x = {r['x']:g}: no converged pair")
            continue
        print(f"  x = {r['x']:6g} (n = {r['n']}): eps_t - eps_t(x_ref) = "
              f"{r['d_eps_t'][0]:+.3e} +- {r['d_eps_t'][1]:.1e} (envelope "
              f"{r['d_eps_t_envelope'][0]:+.3e} +- {r['d_eps_t_envelope'][1]:.1e}), (q1-q0)/q1 = "
              f"{r['dq_rel'][0]:.5f} +- {r['dq_rel'][1]:.1e}, q1 = {r['q1'][0]:.6f}, theta = "
              f"{r['theta'][0]:.6f}, m = {r['m'][0]:.6f}, Sigma/e = {r['sigma_over_e'][0]:+.3e}"
              f" +- {r['sigma_over_e'][1]:.1e}")


if __name__ == "__main__":
    main()
