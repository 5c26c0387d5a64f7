"""Theory against finite-size training for the general model (issue 20's validations).

Reads ``studies/data/general_validation/theory_<case>.json`` (``general_validation_theory.py``)
and ``<case>.json`` (``general_validation_runs.py``) and, per case and omega, plots ``eps_t`` and
``eps_g`` against alpha: the replica-symmetric global minimum (mean over scrambles, with their
standard error) and every other fixed point found, against the lowest training minimum per
instance (mean and standard error over seeds) at each ``d``.  It prints, per alpha, the gap
``training(d) - theory`` and the exponent ``a`` of a fit ``|gap| = c d^-a`` over the ``d``
values (weighted least squares in log-log; printed with the fit's standard error; ``-`` when the
gaps are not all of one sign or fewer than three ``d`` are available).

Then, per case, the gaps with the teacher-norm control variate (:func:`symattn.stats.
regression_estimate`: the lowest minimum's ``eps_t`` regressed on ``Q*^T Q* / d``, whose mean is
1, which removes most of the instance-to-instance spread) and one exponent shared by the alphas
where the global minimum's prox is continuous (:func:`symattn.stats.fit_power_law`, one amplitude
per alpha; "continuous" from ``studies/general_jump_measure.py``'s table: less than ``1e-4`` of
the weight within ``1e-3`` of a tie, i.e. at most a few of its ``2^16`` nodes, where the points
with jumps have ``2e-4`` to ``9e-3``), and separately by those where it jumps; and the order
parameters of the lowest minimum (``|theta|``, ``|M| / sqrt(L)`` for ``r_t = 1``) against the
theory's.

Rerun: ``python studies/general_validation_figures.py [--cases rank2,L3,appendix]``; figures go
to ``docs/figures/general_<case>_<omega>.png``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "general_validation"
FIGS = Path(__file__).resolve().parent.parent / "docs" / "figures"


def training_table(case: str) -> dict:
    """``{(omega, d, alpha): {"eps_t": [..], "eps_g": [..]}}`` of the lowest minimum per seed."""
    data = json.loads((DATA / f"{case}.json").read_text())
    out = defaultdict(lambda: defaultdict(list))
    for run in data["runs"]:
        low = run["starts"][run["lowest"]]
        key = (round(run["omega"], 6), run["d"], round(run["alpha"], 6))
        for k in ("eps_t", "eps_g"):
            out[key][k].append(low[k])
        out[key]["teacher_norm"].append(float(np.trace(np.atleast_2d(low["teacher_norm"]))))
        out[key]["theta"].append(float(np.sqrt(np.trace(np.atleast_2d(low["thth"])))))
        out[key]["M"].append(float(np.sqrt(np.trace(np.atleast_2d(low["MM"])))))
    return out


def continuous_prox(case: str, sub: str, alpha: float):
    """Whether the jump-measure table puts (almost) no weight near a tie at this point (module
    doc; None: not measured)."""
    path = DATA / "jump_measure.json"
    if not path.exists():
        return None
    for row in json.loads(path.read_text())["rows"]:
        if row["case"] == f"{case} {sub}" and abs(row["alpha"] - alpha) < 1e-9:
            return row["below"]["0.001"]["weight"] < 1e-4
    return None


def control_variate_table(case, sub, block, train):
    """Print the control-variate gaps of ``eps_t`` and ``eps_g``, the shared exponents, and the
    order parameters against the theory (module doc)."""
    from symattn.stats import fit_power_law, regression_estimate
    omega = block["params"]["omega"]
    L = len(block["params"]["A"])
    alphas = sorted(float(a) for a in block["alphas"])
    ds = sorted({d for (om, d, a) in train if abs(om - omega) < 1e-9})
    print(f"-- {case} omega = {omega}: control-variate gaps (training - theory)")
    for k in ("eps_t", "eps_g"):
        pooled = {True: ([], [], [], []), False: ([], [], [], [])}
        for gi, a in enumerate(alphas):
            g = block["alphas"][f"{a:g}"]["global"]
            cont = continuous_prox(case, sub, a)
            cells = []
            for d in ds:
                run = train.get((round(omega, 6), d, round(a, 6)))
                if not run or len(run[k]) < 4:
                    continue
                est, se = regression_estimate(run[k], run["teacher_norm"], 1.0)
                err = float(np.hypot(se, g[k + "_err"] or 0.0))
                cells.append(f"d={d}: {est - g[k]:+.2e}±{err:.1e} ({len(run[k])})")
                if cont is not None:
                    for lst, v in zip(pooled[cont], (d, est - g[k], err, gi)):
                        lst.append(v)
            label = {True: "continuous", False: "jumps", None: "not measured"}[cont]
            print(f"  {k} alpha={a:g} [{label}]  " + "  ".join(cells))
        for cont, (dd, gg, ee, grp) in pooled.items():
            fit = fit_power_law(dd, gg, ee, grp) if dd else None
            name = "continuous prox" if cont else "prox jumps"
            txt = ("no fit" if fit is None else
                   f"a = {fit.exponent:.2f} ± {fit.exponent_err:.2f} (chi2 {fit.chi2:.1f} on "
                   f"{fit.dof} dof, {fit.n_significant} of {fit.n_points} gaps > 2 s.e.)")
            print(f"  {k}, shared exponent where the {name}: {txt}")
    print(f"-- {case} omega = {omega}: order parameters of the lowest minimum (theory | "
          f"training mean ± s.e.)")
    for a in alphas:
        fps = [next(f for f in r["fixed_points"] if f["global_minimum"])
               for r in block["alphas"][f"{a:g}"]["rules"]]
        th = np.mean([np.linalg.norm(f["theta"]) for f in fps])
        mm = np.mean([np.linalg.norm(f["M"]) for f in fps]) / np.sqrt(L)
        cells = []
        for d in ds:
            run = train.get((round(omega, 6), d, round(a, 6)))
            if run and len(run["theta"]) > 1:
                (t, te), (m, me) = mean_se(run["theta"]), mean_se(run["M"])
                cells.append(f"d={d}: {t:.4f}±{te:.4f} {m / np.sqrt(L):.4f}±"
                             f"{me / np.sqrt(L):.4f}")
        print(f"  alpha={a:g} |theta|, |M|/sqrt(L): {th:.4f} {mm:.4f} | " + "  ".join(cells))


def mean_se(v):
    v = np.asarray(v, float)
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan)


def fit_exponent(ds, gaps, errs):
    """``(a, a_err)`` of ``|gap| = c d^-a``, or ``None``."""
    ds, gaps, errs = map(np.asarray, (ds, gaps, errs))
    if len(ds) < 3 or not (np.all(gaps > 0) or np.all(gaps < 0)):
        return None
    y = np.log(np.abs(gaps))
    w = (np.abs(gaps) / np.maximum(errs, 1e-300)) ** 2
    X = np.stack([np.ones_like(ds, float), -np.log(ds)], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    beta = cov @ X.T @ (w * y)
    return float(beta[1]), float(np.sqrt(cov[1, 1]))


def main(argv=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="rank2,L3,appendix")
    args = ap.parse_args(argv)
    FIGS.mkdir(parents=True, exist_ok=True)
    for case in args.cases.split(","):
        tpath = DATA / f"theory_{case}.json"
        if not tpath.exists() or not (DATA / f"{case}.json").exists():
            print(f"{case}: missing data, skipped")
            continue
        theory = json.loads(tpath.read_text())
        train = training_table(case)
        for sub, block in theory.items():
            omega = block["params"]["omega"]
            alphas = sorted(float(a) for a in block["alphas"])
            fig, axes = plt.subplots(1, 2, figsize=(10, 4))
            print(f"== {case} omega = {omega}")
            for ax, k in zip(axes, ("eps_t", "eps_g")):
                g = [block["alphas"][f"{a:g}"]["global"] for a in alphas]
                y = np.array([x[k] for x in g], float)
                e = np.array([x[k + "_err"] if x[k + "_err"] is not None else np.nan for x in g])
                ax.errorbar(alphas, y, yerr=e, color="k", lw=2, label="RS global minimum")
                others = defaultdict(list)
                for a in alphas:
                    rule0 = block["alphas"][f"{a:g}"]["rules"][0]["fixed_points"]
                    for fp in rule0[1:]:
                        others[fp["character"]].append((a, fp[k]))
                for ch, pts in others.items():
                    pa, pv = zip(*pts)
                    ax.plot(pa, pv, ".", alpha=0.5, label=f"other fixed points ({ch})")
                ds = sorted({d for (om, d, a) in train if abs(om - omega) < 1e-9})
                for d in ds:
                    pts = [(a, *mean_se(train[(round(omega, 6), d, round(a, 6))][k]))
                           for a in alphas if (round(omega, 6), d, round(a, 6)) in train]
                    if pts:
                        pa, pm, pe = zip(*pts)
                        ax.errorbar(pa, pm, yerr=pe, fmt="o", ms=4, capsize=2,
                                    label=f"training, d = {d}")
                ax.set_xlabel(r"$\alpha$")
                ax.set_ylabel(k)
                ax.set_title(f"{case}, omega = {omega}: {k}")
                ax.legend(fontsize=7)
                for a, th, te in zip(alphas, y, e):
                    rows = [(d, *mean_se(train[(round(omega, 6), d, round(a, 6))][k]))
                            for d in ds if (round(omega, 6), d, round(a, 6)) in train]
                    if not rows:
                        continue
                    gaps = [m - th for _, m, _ in rows]
                    errs = [np.hypot(se if np.isfinite(se) else 0, te if np.isfinite(te) else 0)
                            for _, _, se in rows]
                    fit = fit_exponent([d for d, _, _ in rows], gaps, errs)
                    txt = "-" if fit is None else f"{fit[0]:.2f} ± {fit[1]:.2f}"
                    cells = "  ".join(f"d={d}: {gp:+.2e}±{er:.1e}" for (d, _, _), gp, er
                                      in zip(rows, gaps, errs))
                    print(f"  {k} alpha={a:g} theory {th:.6f}  gap {cells}  exponent {txt}")
            control_variate_table(case, sub, block, train)
            fig.tight_layout()
            out = FIGS / f"general_{case}_{sub}.png"
            fig.savefig(out, dpi=110)
            plt.close(fig)
            print(f"wrote {out}")


if __name__ == "__main__":
    main()
