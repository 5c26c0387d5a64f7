"""The replicon ratio d tr(H^-2) / tr(H^-1)^2 of the exact Hessian at finite-size minima.

What is measured
----------------
For the ridge-penalised risk R(Q) of ``symattn.simulation`` (paper's parameters,
``ModelParams()``: omega = 0.3, lam = 0.01, sigma = 0.5), the L-BFGS minimum (gtol 1e-8) from the
semantic or positional (``positional_scale=0.5``, as in studies/hessian_spectrum.py) start, and
there the exact Hessian

    H = lam I + sum_mu J_mu^T D_mu J_mu,   J_mu = dh_mu/dQ = Z_mu / sqrt(d) + s 1^T / d   (2 x d),

D_mu = d^2 l_mu / dh^2 (2 x 2) by central differences of the exact dl/dh
(``block_loss_and_grad_h``; step 1e-5 * max(1, |h_l|); symmetrised); the term
sum_mu (dl_mu/dh) . d^2h/dQ^2 is zero (h is linear in Q).  H is built chunk by chunk (one gemm
per chunk), all of its eigenvalues by ``numpy.linalg.eigvalsh`` (1 BLAS thread throughout), and

    ratio(d) = d tr(H^-2) / tr(H^-1)^2,

which random-matrix theory predicts -> 1/(1 - lambda_R) (RS replicon eigenvalue) as d -> inf when
RS is stable and growing with d when it is not.  1 - 1/ratio is the finite-size estimate of
lambda_R.  The ratio is invariant under H -> cH.  Fits: ratio = a + b/d by least squares, (i) on
the per-d means weighted by 1/se^2 and (ii) unweighted on all instances.  ``share8``: share of
tr(H^-2) carried by the 8 smallest eigenvalues (mean over seeds).

Check (``--check``; d = 200, alpha = 1, seed 0): H against the central-difference Hessian of
``risk_and_grad`` (step 1e-5, symmetrised): max |H - H_fd| / max |H_fd| = 1.40e-10 at the
semantic minimum and 1.28e-10 at a random point (Frobenius 2.04e-10 / 2.74e-10; eigenvalues
agree to 6.4e-12 / 2.4e-11; ratio to 6.4e-10 relative at the minimum).  Also: the 72 instances
shared with studies/hessian_spectrum.py (same data, start and minimum: eps_t identical) have the
same 8 smallest eigenvalues to 7.1e-12.

Measured 2026-12-04 (2 cores, 1 BLAS thread).  Commands:
``python studies/replicon_hessian.py --check``;
``python studies/replicon_hessian.py`` (= ``--d 250 500 1000 2000 --seeds 8``; 126 s wall);
``python studies/replicon_hessian.py --d 4000 --seeds 3 --cases 1.0:semantic 1.5:semantic``
(101 s wall).  Per instance (train + Hessian + eigenvalues): about 3 s at d = 2000, 15-16 s at
d = 4000.  All 166 instances converged (max-norm gradient <= 1e-8) and no Hessian has a negative
eigenvalue.  Mean ± standard error over seeds (n seeds):

====== ========== ==== == ================== ================== =============== ========
alpha  start       d   n  ratio              1 - 1/ratio        tr(H^-1)/d      share8
====== ========== ==== == ================== ================== =============== ========
1      semantic    250 8  1.51333 ± 0.05892  0.33261 ± 0.02438  80.564 ± 0.742  0.352
1      semantic    500 8  1.72610 ± 0.13075  0.39833 ± 0.04241  82.853 ± 1.593  0.361
1      semantic   1000 8  1.56141 ± 0.08361  0.34871 ± 0.02922  82.362 ± 1.159  0.243
1      semantic   2000 8  1.57343 ± 0.07609  0.35509 ± 0.02784  81.598 ± 0.468  0.203
1      semantic   4000 3  1.48890 ± 0.01193  0.32828 ± 0.00540  80.020 ± 0.195  0.132
1      positional  250 8  1.38128 ± 0.04486  0.27124 ± 0.02116  61.042 ± 0.875  0.243
1      positional  500 8  1.43443 ± 0.04716  0.29771 ± 0.02245  62.001 ± 0.904  0.227
1      positional 1000 8  1.46714 ± 0.04316  0.31436 ± 0.01967  61.998 ± 0.555  0.206
1      positional 2000 8  1.37472 ± 0.01527  0.27195 ± 0.00807  61.149 ± 0.464  0.113
1.5    semantic    250 8  1.46154 ± 0.08855  0.30242 ± 0.03162  64.800 ± 0.847  0.263
1.5    semantic    500 8  1.38951 ± 0.01498  0.27974 ± 0.00767  66.377 ± 1.024  0.167
1.5    semantic   1000 8  1.38304 ± 0.02452  0.27547 ± 0.01196  66.347 ± 1.185  0.109
1.5    semantic   2000 8  1.40160 ± 0.02394  0.28511 ± 0.01189  65.336 ± 0.795  0.088
1.5    semantic   4000 3  1.36780 ± 0.01386  0.26875 ± 0.00735  64.120 ± 0.166  0.048
1.5    positional  250 8  1.67027 ± 0.15153  0.37210 ± 0.04660  50.171 ± 1.115  0.343
1.5    positional  500 8  1.76792 ± 0.17733  0.40755 ± 0.03852  52.457 ± 0.738  0.333
1.5    positional 1000 8  1.52539 ± 0.03720  0.34173 ± 0.01586  50.286 ± 0.552  0.193
1.5    positional 2000 8  1.61202 ± 0.09326  0.36763 ± 0.02996  49.837 ± 0.491  0.186
2      semantic    250 8  1.33233 ± 0.00313  0.24941 ± 0.00176  51.167 ± 0.575  0.158
2      semantic    500 8  1.33918 ± 0.00979  0.25300 ± 0.00540  52.660 ± 1.200  0.102
2      semantic   1000 8  1.32975 ± 0.00356  0.24794 ± 0.00201  52.774 ± 0.935  0.055
2      semantic   2000 8  1.32422 ± 0.00230  0.24482 ± 0.00131  51.760 ± 0.611  0.030
====== ========== ==== == ================== ================== =============== ========

Fits ratio = a + b/d (weighted on the per-d means | unweighted on all instances):

* alpha = 1, semantic (d = 250-4000): a = 1.48927 ± 0.01318, b = 13.24 ± 15.64, chi2/dof = 4.46/3
  | a = 1.59313 ± 0.06914, b = -4.92 ± 31.35;
* alpha = 1, positional (d = 250-2000): a = 1.38218 ± 0.01813, b = 6.59 ± 12.92, chi2/dof = 4.85/2
  | a = 1.42990 ± 0.03499, b = -8.27 ± 15.18;
* alpha = 1.5, semantic (d = 250-4000): a = 1.37097 ± 0.01372, b = 11.40 ± 10.56, chi2/dof = 1.61/3
  | a = 1.37001 ± 0.03464, b = 20.39 ± 15.71;
* alpha = 1.5, positional (d = 250-2000): a = 1.50380 ± 0.06259, b = 42.92 ± 47.65, chi2/dof = 2.21/2
  | a = 1.58675 ± 0.10828, b = 30.48 ± 46.98;
* alpha = 2, semantic (d = 250-2000): a = 1.32456 ± 0.00236, b = 2.14 ± 1.09, chi2/dof = 2.29/2
  | a = 1.32765 ± 0.00484, b = 1.98 ± 2.10.

In every case the ratio is steady in d within its errors (none grows with d over 250-2000/4000).
The weighted fits of the two cases with d = 4000 are dominated by that point, whose standard error
comes from 3 seeds only.  The seed-to-seed distribution of the ratio is skewed (single seeds up to
2.3 at alpha = 1 and 3.0 at alpha = 1.5 positional) and share8 is lower at the largest d than at
d = 250 in every case.

Rerun: ``python studies/replicon_hessian.py [--d 250 500 1000 2000] [--seeds 8]
[--cases 1.0:semantic ...]``, ``--check`` (Hessian check only), ``--summary`` (table of the stored
rows only); writes ``studies/data/replicon_hessian.json`` after every instance (and the check's
result under "check") and resumes from it.  Set SYMATTN_CACHE_DIR if the default cache is not
writable.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.simulation._blas import limit_blas_threads
from symattn.simulation.general import (block_loss_and_grad_h, make_dataset, minimise, order_parameters,
                                        pre_activations, warm_start)
from symattn.simulation.instances import paper_order_parameters
from symattn.stats import mean_se

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OUT = Path(__file__).resolve().parent / "data" / "replicon_hessian.json"

CASES = [(1.0, "semantic"), (1.0, "positional"), (1.5, "semantic"), (1.5, "positional"), (2.0, "semantic")]

#: Relative step of the central differences of dl/dh in h (per sentence, per token).
H_STEP = 1e-5


def curvature_h(block, h, Pi, d, step=H_STEP):
    """``D = d^2 l / dh^2`` per sentence, ``(k, 2, 2)``, by central differences of the exact
    ``dl/dh`` (:func:`block_loss_and_grad_h`, rank one: ``h`` is ``(k, 2)``) in ``h``; step
    ``step * max(1, |h_l|)``; symmetrised."""
    D = np.empty(h.shape + (2,))
    for j in range(2):
        dh = step * np.maximum(1.0, np.abs(h[:, j]))
        hp, hm = h.copy(), h.copy()
        hp[:, j] += dh
        hm[:, j] -= dh
        gp = block_loss_and_grad_h(block, hp[:, :, None], Pi, d)[1][:, :, 0]
        gm = block_loss_and_grad_h(block, hm[:, :, None], Pi, d)[1][:, :, 0]
        D[:, :, j] = (gp - gm) / (2.0 * dh[:, None])
    return 0.5 * (D + D.transpose(0, 2, 1))


def exact_hessian(Q, data, chunk_size=None):
    r"""Hessian of R at ``Q``: :math:`\lambda I + \sum_\mu J_\mu^\top D_\mu J_\mu` with
    :math:`J_\mu = Z_\mu/\sqrt{d} + s 1^\top / d` (``2 x d``, exact since h is linear in Q) and
    :math:`D_\mu` from :func:`curvature_h`.  Built chunk by chunk (one ``gemm`` per chunk,
    memory ``O(d^2 + chunk d)``); symmetric."""
    Q = np.asarray(Q, dtype=np.float64).reshape(-1, 1)
    d = data.d
    sqd = np.sqrt(d)
    M = data.P @ Q / d                                     # (m, -m)
    H = np.zeros((d, d))
    for block in data.blocks(chunk_size):
        h = pre_activations(block.Z, Q, M)[:, :, 0]
        D = curvature_h(block, h, data.Pi, d)
        J = block.Z / sqd + data.P[None] / d               # (k, 2, d); rows of P are s_l 1^T
        DJ = np.einsum("kij,kjd->kid", D, J)
        k = J.shape[0]
        H += J.reshape(2 * k, d).T @ DJ.reshape(2 * k, d)
    H = 0.5 * (H + H.T)
    H[np.diag_indices(d)] += data.params.lam
    return H


def fd_hessian(Q, data, step=1e-5):
    """Reference: central differences of the exact gradient (studies/hessian_spectrum.py)."""
    from studies.hessian_spectrum import hessian
    return hessian(Q, data, step)


def spectral_stats(ev, d):
    inv = 1.0 / ev
    t1, t2 = float(np.mean(inv)), float(np.mean(inv ** 2))
    return {"trHinv_d": t1, "trHinv2_d": t2, "ratio": t2 / t1 ** 2}


def check_hessian(d=200, seed=0):
    """Exact Hessian against the finite-difference Hessian of ``risk_and_grad`` at d = ``d``:
    at the alpha = 1 semantic minimum and at a random point.  Returns a dict of relative errors."""
    p = ModelParams()
    out = {}
    with limit_blas_threads(1):
        data = make_dataset(p, d, 1.0, seed)
        mn = minimise(data, warm_start(data, "semantic"))
        Qr = np.random.default_rng(12345).standard_normal(d)
        for name, Q in (("minimum", mn.Q[:, 0]), ("random_point", Qr)):
            He = exact_hessian(Q, data)
            Hf = fd_hessian(Q, data)
            ee, ef = np.linalg.eigvalsh(He), np.linalg.eigvalsh(Hf)
            se, sf = spectral_stats(ee, d), spectral_stats(ef, d)
            out[name] = {
                "max_abs_diff_over_max_abs": float(np.max(np.abs(He - Hf)) / np.max(np.abs(Hf))),
                "frobenius_rel": float(np.linalg.norm(He - Hf) / np.linalg.norm(Hf)),
                "diag_max_rel": float(np.max(np.abs(np.diag(He) - np.diag(Hf)) / np.abs(np.diag(Hf)))),
                "eig_max_abs_diff": float(np.max(np.abs(ee - ef))),
                "smallest_exact": ee[:3].tolist(), "smallest_fd": ef[:3].tolist(),
                "ratio_exact": se["ratio"], "ratio_fd": sf["ratio"],
                "ratio_rel_diff": abs(se["ratio"] - sf["ratio"]) / sf["ratio"],
            }
    out["d"] = d
    out["converged"] = mn.converged
    return out


def load():
    return json.loads(OUT.read_text()) if OUT.exists() else {"rows": []}


def save(obj):
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    tmp.replace(OUT)


def instance(data, start):
    t0 = time.perf_counter()
    mn = minimise(data, warm_start(data, start, positional_scale=0.5))
    t1 = time.perf_counter()
    H = exact_hessian(mn.Q, data)
    t2 = time.perf_counter()
    ev = np.linalg.eigvalsh(H)
    t3 = time.perf_counter()
    del H
    d = data.d
    return {"alpha": data.alpha, "start": start, "d": d, "seed": data.seed,
            "converged": mn.converged, "grad_norm": mn.grad_norm, "iterations": mn.iterations,
            "eps_t": mn.R / d, **paper_order_parameters(order_parameters(mn.Q, data)),
            **spectral_stats(ev, d),
            "smallest": float(ev[0]), "smallest8": ev[:8].tolist(), "largest": float(ev[-1]),
            "n_negative": int((ev < 0).sum()),
            "time_train": t1 - t0, "time_hessian": t2 - t1, "time_eig": t3 - t2,
            "wall_time": t3 - t0}


def wls_fit(x, y, se):
    """Weighted least squares y = a + b x with weights 1/se^2: (a, se_a, b, se_b, chi2, dof)."""
    x, y, se = map(np.asarray, (x, y, se))
    A = np.stack([np.ones_like(x), x], axis=1)
    W = 1.0 / se ** 2
    cov = np.linalg.inv(A.T @ (W[:, None] * A))
    a, b = cov @ (A.T @ (W * y))
    chi2 = float(np.sum(W * (y - a - b * x) ** 2))
    return float(a), float(np.sqrt(cov[0, 0])), float(b), float(np.sqrt(cov[1, 1])), chi2, len(x) - 2


def ols_fit(x, y):
    """Ordinary least squares over all instances: (a, se_a, b, se_b) with the residual variance."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    s2 = float(np.sum((y - A @ coef) ** 2) / (len(x) - 2))
    cov = s2 * np.linalg.inv(A.T @ A)
    return float(coef[0]), float(np.sqrt(cov[0, 0])), float(coef[1]), float(np.sqrt(cov[1, 1]))


def summary(rows, cases):
    print("\nper case and d: mean ± standard error over seeds; share8 = mean share of tr(H^-2) "
          "carried by the 8 smallest eigenvalues")
    print(f"{'alpha':>5} {'start':<10} {'d':>5} {'n':>2}  {'ratio':>22}  {'1 - 1/ratio':>22}  "
          f"{'tr(H^-1)/d':>22}  {'smallest eig':>22}  {'share8':>6}  conv  neg")
    for alpha, start in cases:
        sel = [r for r in rows if (r["alpha"], r["start"]) == (alpha, start)]
        ds = sorted({r["d"] for r in sel})
        xs, ys, ses, xall, yall = [], [], [], [], []
        for d in ds:
            rr = [r for r in sel if r["d"] == d]
            ratio = np.array([r["ratio"] for r in rr])
            lam_est = 1.0 - 1.0 / ratio
            tr1 = np.array([r["trHinv_d"] for r in rr])
            sm = np.array([r["smallest"] for r in rr])
            m_r, e_r = mean_se(ratio)
            m_l, e_l = mean_se(lam_est)
            m_t, e_t = mean_se(tr1)
            m_s, e_s = mean_se(sm)
            share8 = np.mean([np.sum(1.0 / np.array(r["smallest8"]) ** 2) / (d * r["trHinv2_d"]) for r in rr])
            nconv = sum(r["converged"] for r in rr)
            nneg = sum(r["n_negative"] > 0 for r in rr)
            print(f"{alpha:5g} {start:<10} {d:5d} {len(rr):2d}  {m_r:10.5f} ± {e_r:9.5f}  "
                  f"{m_l:10.5f} ± {e_l:9.5f}  {m_t:10.4f} ± {e_t:9.4f}  "
                  f"{m_s:10.6f} ± {e_s:9.6f}  {share8:6.3f}  {nconv}/{len(rr)}  {nneg}")
            if len(rr) > 1:
                xs.append(1.0 / d); ys.append(m_r); ses.append(e_r)
            xall += [1.0 / d] * len(rr); yall += list(ratio)
        if len(xs) >= 3:
            a, ea, b, eb, chi2, dof = wls_fit(xs, ys, ses)
            print(f"      fit ratio = a + b/d (weighted by 1/se^2, d = {ds}): a = {a:.5f} ± {ea:.5f}, "
                  f"b = {b:.2f} ± {eb:.2f}, chi2/dof = {chi2:.2f}/{dof}; 1 - 1/a = {1 - 1 / a:.5f} ± {ea / a ** 2:.5f}")
            a, ea, b, eb = ols_fit(xall, yall)
            print(f"      fit ratio = a + b/d (unweighted, all {len(yall)} instances):          a = {a:.5f} ± {ea:.5f}, "
                  f"b = {b:.2f} ± {eb:.2f}")
    bad = [r for r in rows if not r["converged"] or r["n_negative"] > 0]
    for r in bad:
        print(f"  NOTE alpha={r['alpha']:g} {r['start']} d={r['d']} seed={r['seed']}: converged={r['converged']} "
              f"grad_norm={r['grad_norm']:.2e} n_negative={r['n_negative']} smallest={r['smallest']:.3e}")
    if rows:
        print(f"  total instance wall time: {sum(r['wall_time'] for r in rows):.0f} s")


def parse_case(s):
    a, st = s.split(":")
    return float(a), st


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--cases", nargs="+", type=parse_case, default=None,
                    help="alpha:start, e.g. 1.0:semantic 1.5:semantic (default: all five)")
    ap.add_argument("--check", action="store_true", help="only the exact-vs-finite-difference check")
    ap.add_argument("--check-d", type=int, default=200)
    ap.add_argument("--summary", action="store_true", help="only print the summary of the stored rows")
    args = ap.parse_args(argv)
    cases = args.cases or CASES
    obj = load()
    if args.check:
        t0 = time.perf_counter()
        res = check_hessian(args.check_d)
        res["wall_time"] = time.perf_counter() - t0
        print(json.dumps(res, indent=1))
        obj = load()
        obj["check"] = res
        save(obj)
        return
    if args.summary:
        summary(obj["rows"], cases)
        return
    p = ModelParams()
    done = {(r["alpha"], r["start"], r["d"], r["seed"]) for r in obj["rows"]}
    alphas = sorted({a for a, _ in cases})
    with limit_blas_threads(1):
        for d in args.d:
            for alpha in alphas:
                starts = [st for a, st in cases if a == alpha]
                for seed in range(args.seeds):
                    todo = [st for st in starts if (alpha, st, d, seed) not in done]
                    if not todo:
                        continue
                    data = make_dataset(p, d, alpha, seed)   # shared by the starts of this seed
                    for start in todo:
                        row = instance(data, start)
                        obj = load()
                        obj["rows"].append(row)
                        save(obj)
                        done.add((alpha, start, d, seed))
                        print(f"alpha={alpha:g} {start:<10} d={d:5d} seed={seed}: conv={row['converged']} "
                              f"eps_t={row['eps_t']:.6f} theta={row['theta']:.4f} m={row['m']:.4f} "
                              f"ratio={row['ratio']:.5f} trHinv/d={row['trHinv_d']:.4f} "
                              f"min_ev={row['smallest']:.5f} neg={row['n_negative']} "
                              f"(train {row['time_train']:.0f} s, H {row['time_hessian']:.0f} s, "
                              f"eig {row['time_eig']:.0f} s)", flush=True)
                    del data
    summary(load()["rows"], cases)


if __name__ == "__main__":
    main()
