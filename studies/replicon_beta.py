"""The replicon eigenvalue along both branches, its growth with beta, and the finite-size check
(issue 21, item 2; model page §8; docs/stability.md).

For each (alpha, branch): the RS fixed point and its stability report (``symattn.api.fixed_point``:
8 scrambles of 2^14 points; the report's replicon of the continuous prox, lambda_cont, and its
jump coefficient s, the growth of lambda_R with beta at zero temperature); then lambda_R(beta)
from the Gibbs covariance (``symattn.numerics.stability.replicon_at_beta``, order parameters held
at the zero-temperature fixed point, which moves by O(1/beta)) on 4 fresh scrambles of 2^13
points at beta = 256 ... 16384, against the zero-temperature prediction lambda_cont + s beta.
Finally the finite-size route of studies/replicon_hessian.py: 1 - 1/a with a the d -> inf
limit of d tr(H^-2)/tr(H^-1)^2 at the trained minima (random-matrix theory: -> lambda_R where
RS is stable; tests/test_replicon.py checks the identity on synthetic matrices).

Writes studies/data/replicon_beta.json (after every case; resumes) and
docs/figures/replicon_beta.png.  Rerun: ``python studies/replicon_beta.py`` (about 10 minutes
on 2 cores; ``--figure`` redraws from the JSON).  Results: docs/stability.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "data" / "replicon_beta.json"
HESSIAN = ROOT / "data" / "replicon_hessian.json"
FIGURE = ROOT.parent / "docs" / "figures" / "replicon_beta.png"
CASES = [(1.0, "semantic"), (1.0, "positional"), (1.25, "semantic"), (1.25, "positional"),
         (1.5, "semantic"), (1.5, "positional"), (2.0, "semantic")]
BETAS = (256.0, 1024.0, 4096.0, 16384.0)


def _beta_task(task):
    from symattn.model import ModelParams
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.quadrature import SobolRule
    from symattn.numerics.stability import replicon_at_beta
    alpha, x, seed, log2n = task
    ch = OutputChannel(ModelParams(), SobolRule(log2n, seed).nodes())
    with np.errstate(all="ignore"):
        return [replicon_at_beta(ch, x, alpha, b) for b in BETAS]


def run_case(alpha, branch, pool, log2n_beta=13, rules_beta=4):
    from symattn.api import fixed_point
    from symattn.runs.executors import map_tasks
    from symattn.stats import mean_se
    t0 = time.perf_counter()
    est = fixed_point(branch=branch, alpha=alpha)
    m = est.means
    x = [m[k] for k in ("q", "m", "theta", "V")]
    lam = map_tasks(_beta_task, [(alpha, x, 2000 + k, log2n_beta) for k in range(rules_beta)],
                    pool)
    lam = np.array(lam)
    by_beta = [mean_se(lam[:, j]) for j in range(len(BETAS))]
    return {"alpha": alpha, "branch": branch, "x": x, "converged": est.status.converged,
            "stability": est.stability.to_dict(),
            "per_rule": [r.to_dict() for r in est.stability.per_rule],
            "betas": list(BETAS), "lambda_beta": [b[0] for b in by_beta],
            "lambda_beta_err": [b[1] for b in by_beta], "wall_time": time.perf_counter() - t0}


def hessian_limits():
    """``{(alpha, start): (1 - 1/a, err)}`` with ``a`` the weighted fit ratio = a + b/d of
    studies/replicon_hessian.py (its ``wls_fit``) over the stored per-d means."""
    from studies.replicon_hessian import wls_fit

    from symattn.stats import mean_se
    if not HESSIAN.exists():
        return {}
    rows = json.loads(HESSIAN.read_text())["rows"]
    out = {}
    for key in sorted({(r["alpha"], r["start"]) for r in rows}):
        xs, ys, ses = [], [], []
        for d in sorted({r["d"] for r in rows if (r["alpha"], r["start"]) == key}):
            v = [r["ratio"] for r in rows if (r["alpha"], r["start"], r["d"]) == (*key, d)]
            if len(v) > 1:
                mu, se = mean_se(v)
                xs.append(1 / d), ys.append(mu), ses.append(se)
        a, a_err, *_ = wls_fit(xs, ys, ses)
        out[key] = (1 - 1 / a, a_err / a**2)
    return out


def report(rows):
    print(f"{'alpha':>5} {'branch':<10} {'verdict':<9} {'lambda_cont':>16} {'s (per beta)':>18} "
          f"{'near tie':>9} {'beta*':>8}  lambda_R(beta) at " + ", ".join(f"{b:g}" for b in BETAS)
          + "  [lambda_cont + s beta]")
    for r in rows:
        st = r["stability"]
        pred = [st["replicon"] + st["growth"] * b for b in r["betas"]]
        bstar = (1 - st["replicon"]) / st["growth"] if st["growth"] > 0 else float("inf")
        print(f"{r['alpha']:>5g} {r['branch']:<10} {st['verdict']:<9} "
              f"{st['replicon']:8.4f} ± {st['replicon_err']:.4f} "
              f"{st['growth']:9.2e} ± {st['growth_err']:.1e} {st['near_tie']:9.2e} "
              f"{bstar:8.3g}  "
              + ", ".join(f"{v:.3f}±{e:.3f}" for v, e in zip(r["lambda_beta"],
                                                          r["lambda_beta_err"]))
              + "  [" + ", ".join(f"{p:.3f}" for p in pred) + "]")
    fs = hessian_limits()
    if fs:
        print("\nfinite-size route (1 - 1/a, a the d -> inf limit of d tr(H^-2)/tr(H^-1)^2 at "
              "the trained minima; studies/replicon_hessian.py) against lambda_cont:")
        for r in rows:
            key = (r["alpha"], r["branch"])
            if key in fs:
                v, e = fs[key]
                st = r["stability"]
                print(f"  alpha = {key[0]:g} {key[1]:<10} finite size {v:.4f} ± {e:.4f}   RS "
                      f"lambda_cont {st['replicon']:.4f} ± {st['replicon_err']:.4f}   "
                      f"({st['verdict']})")


def figure(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    bb = np.geomspace(100, 3e4, 50)
    for ax, branch in zip(axes, ("semantic", "positional")):
        for k, r in enumerate(x for x in rows if x["branch"] == branch):
            st = r["stability"]
            c = f"C{k}"
            ax.errorbar(r["betas"], r["lambda_beta"], yerr=r["lambda_beta_err"], fmt="o",
                        color=c, capsize=3, label=f"alpha = {r['alpha']:g} ({st['verdict']})")
            ax.plot(bb, st["replicon"] + st["growth"] * bb, "-", color=c, lw=1)
        ax.axhline(1, color="k", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("beta")
        ax.set_title(f"{branch} branch, omega = 0.3")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("replicon eigenvalue lambda_R")
    fig.suptitle("points: Gibbs covariance at finite beta (4 x 2^13 nodes); lines: "
                 "lambda_cont + s beta (zero temperature, 8 x 2^14)", fontsize=9)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=120)
    print(f"figure: {FIGURE}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figure", action="store_true", help="only redraw from the JSON")
    args = ap.parse_args(argv)
    rows = json.loads(OUT.read_text())["rows"] if OUT.exists() else []
    if not args.figure:
        from symattn.runs.executors import process_pool
        done = {(r["alpha"], r["branch"]) for r in rows}
        with process_pool() as pool:
            for alpha, branch in CASES:
                if (alpha, branch) in done:
                    continue
                rows.append(run_case(alpha, branch, pool))
                OUT.parent.mkdir(parents=True, exist_ok=True)
                OUT.write_text(json.dumps({"rows": rows}, indent=1))
                print(f"alpha = {alpha:g} {branch}: {rows[-1]['wall_time']:.0f} s", flush=True)
    rows.sort(key=lambda r: (r["branch"], r["alpha"]))
    report(rows)
    figure(rows)


if __name__ == "__main__":
    main()
