"""How large the 1RSB solution is where the prox's jump set is light: the small-(q1 - q0) theory,
checked where the solver resolves the point, used where it does not (issue 21; docs/stability.md,
'Where the jump set is light').

Near RS, D = q1 - q0 obeys (x -> 0, the reference x of the searches)

    D = lambda_cont D + C sqrt(D),    C = alpha rho(0) E|Delta|^3 / (V sqrt(pi)),

the first term the continuous replicon, the second the outer nodes whose inner Gaussian meets the
surface where the prox jumps by Delta (rho(0): density of the signed gap between the two lowest
Moreau minima at zero; the gap's gradient in w is Delta / V, and int Phi(1 - Phi) = 1/sqrt(pi)).
So D* = (C / (1 - lambda_cont))^2: the 1RSB solution is a pure jump-set effect, and its size goes
with the square of the jump set's strength.  C and lambda_cont are RS quantities, measured here at
the RS fixed point on fresh scrambles (``--log2n``, ``--rules``); D at the reference x and the
stationary x, x*, and the training-loss shift come from the run files of ``symattn ... --rsb 1``
(studies/data/one_step_rsb_cli/).  Where the run files resolve the point, the table compares;
where they do not (semantic branch at alpha_c and alpha_l), the measured amplitudes of
x* D* (D* the theory's, at x -> 0) and of Delta eps_t / (C^2 / (1 - lambda_cont)) (the
training-loss shift grows like x times D*^2-order terms up to x* ~ 1 / D*) give the predicted
size, with their spread as the uncertainty, and bound the thresholds' shifts.

Writes studies/data/one_step_rsb_scaling.json.  Rerun: ``python studies/one_step_rsb_scaling.py``
(about two minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from symattn.numerics.jump_band import GAP_WINDOWS, gap_density

ROOT = Path(__file__).resolve().parent
RUNS = ROOT / "data" / "one_step_rsb_cli"
OUT = ROOT / "data" / "one_step_rsb_scaling.json"
#: gap windows for rho(0) E|Delta|^3 (the two windows' spread is part of the error)
DELTAS = GAP_WINDOWS


def jump_strength(params, alpha, x, *, log2n=14, rules=16, seed0=5000):
    r"""At the RS point ``x = (q, m, theta, V)``, means and standard errors over ``rules``
    scrambles of ``2**log2n`` points (and the gap windows ``DELTAS``) of ``lambda_cont`` and of
    ``rho_k``, the density at zero of the signed gap weighted by :math:`|\Delta|^k`, k = 1, 2, 3."""
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.prox import prox
    from symattn.numerics.quadrature import SobolRule
    from symattn.numerics.stability import rs_stability
    from symattn.stats import mean_se
    q, m, theta, V = x
    rho, lams = {1: [], 2: [], 3: []}, []
    for k in range(rules):
        ch = OutputChannel(params, SobolRule(log2n, seed0 + k).nodes(), gtol=1e-13)
        w, t = ch.diagonal_nodes(q, m, theta)
        pr = prox(w, t, V, params.sigma, gtol=ch.gtol)
        lams.append(rs_stability(ch, x, alpha, minima=pr).replicon)
        jump = np.linalg.norm(pr.h - pr.h2, axis=1)
        wt = ch.nodes.weights
        for d in DELTAS:
            for p in rho:
                rho[p].append(gap_density(wt, pr.converged, pr.gap, jump, p, d))
    return {p: mean_se(v) for p, v in rho.items()}, mean_se(lams)


def check_kink(params, alpha, x, D, *, log2n=14, rules=8, order=48, reach=6.0, seed0=6000):
    """The jump set's part of ``alpha E[Var_inner(h - w)]`` at ``q1 - q0 = D``, integrated
    directly: on the outer nodes within ``reach`` inner standard deviations of a tie, the inner
    variance of ``h - w`` on a ``order``^2 Gauss--Hermite rule minus its continuous part
    ``D ||J - I||_F^2`` (``J`` at the centre's minimum); farther nodes have none.  Returns the
    ratio of its mean over ``rules`` scrambles to the mean of ``C sqrt(D)``, ``C`` from the same
    rules' gap densities (the surface formula), with the ratio estimator's standard error, and
    the number of nodes in reach (ratio ``nan`` if none): 1 if the theory's coefficient is
    right, and the same at every small ``D`` if the part grows like ``sqrt(D)``.  (The ratio of
    means, not the mean of per-rule ratios: a rule with no node near a tie is an estimate of
    zero, not a missing one.)"""
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.finite_temperature import _hessian
    from symattn.numerics.one_step_rsb import _inner_rule
    from symattn.numerics.prox import prox
    from symattn.numerics.quadrature import SobolRule
    from symattn.stats import mean_se
    q, m, theta, V = x
    zeta, g = _inner_rule(order)
    k = len(g)
    kinks, surface, n_near = [], [], 0
    for r in range(rules):
        ch = OutputChannel(params, SobolRule(log2n, seed0 + r).nodes(), gtol=1e-13)
        w, t = ch.diagonal_nodes(q, m, theta)
        pr = prox(w, t, V, params.sigma, gtol=ch.gtol)
        jump = np.linalg.norm(pr.h - pr.h2, axis=1)
        wt = ch.nodes.weights
        near = pr.converged & np.isfinite(pr.gap) & (pr.gap < reach * math.sqrt(D) * jump / V)
        idx = np.flatnonzero(near)
        n_near += len(idx)
        w1 = (w[idx, None, :] + math.sqrt(D) * zeta[None]).reshape(-1, 2)
        p1 = prox(w1, np.repeat(t[idx], k, axis=0), V, params.sigma, gtol=ch.gtol)
        v = (p1.h - w1).reshape(len(idx), k, 2)
        mean = np.einsum("k,nki->ni", g, v)
        var = np.einsum("k,nk->n", g, np.sum((v - mean[:, None, :]) ** 2, axis=2))
        J = np.linalg.inv(V * _hessian(pr.h[idx], w[idx], t[idx], V, params.sigma))
        cont = D * np.sum((J - np.eye(2)) ** 2, axis=(1, 2))
        kink = alpha * float(wt[idx] @ (var - cont))
        dens = np.mean([gap_density(wt, pr.converged, pr.gap, jump, 3, d) for d in DELTAS])
        kinks.append(kink)
        surface.append(alpha * dens / (V * math.sqrt(math.pi)) * math.sqrt(D))
    kinks, surface = np.array(kinks), np.array(surface)
    if not n_near or not surface.any():
        return math.nan, math.nan, n_near
    ratio = kinks.mean() / surface.mean()
    err = mean_se(kinks - ratio * surface)[1] / surface.mean()
    return float(ratio), float(err), n_near


def _rs_x(rs):
    return [rs["q"], rs["m"], rs["theta"], rs["V"]]


def cases():
    """(label, branch, alpha, estimate dict) for every search in the run files."""
    out = []
    for path in sorted(RUNS.glob("fixed-point-rsb1-*.json")):
        res = json.loads(path.read_text()).get("result")
        if res:
            out.append((path.name, res["branch"], res["alpha"], res))
    th = RUNS / "thresholds-rsb1-omega0.3.json"
    res = json.loads(th.read_text())["result"]
    for key, est in res["estimates"].items():
        out.append((f"{th.name}: {key}", est["branch"], est["alpha"], est))
    return out


def measured(est):
    """D = q1 - q0 at the reference x on every rule whose reference solve converged off
    q0 = q1; and, on the rules with a stationary (or interpolated) x, D there, x* and the
    training-loss shifts.  ``None`` where no rule has a reference point."""
    refs = [r["ref"] for r in est.get("per_rule", [])
            if r.get("ref") and r["ref"]["converged"]
            and r["ref"]["q1"] - r["ref"]["q0"] > 1e-5 * r["ref"]["q1"]]
    if not refs:
        return None
    rules = [r for r in est["per_rule"] if r["status"] in ("stationary", "interpolated")]
    d_star = [r["point"]["q1"] - r["point"]["q0"] for r in rules]
    x_star = [r["x_star"] for r in rules]
    return {"rules": len(rules), "D_ref": [r["q1"] - r["q0"] for r in refs],
            "D_star": d_star, "x_star": x_star,
            "d_eps_t": [r["shifts"]["d_eps_t"] for r in rules],
            "d_eps_t_envelope": [r["shifts"]["d_eps_t_envelope"] for r in rules],
            "d_eps_g": [r["shifts"]["d_eps_g"] for r in rules]}


def main(argv=None):
    from symattn.model import ModelParams
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2n", type=int, default=14)
    ap.add_argument("--rules", type=int, default=32)
    a = ap.parse_args(argv)
    params = ModelParams()
    rows = []
    for label, branch, alpha, est in cases():
        x = _rs_x(est["rs"])
        V = x[3]
        rho, (lam, lam_err) = jump_strength(params, alpha, x, log2n=a.log2n, rules=a.rules)
        c, c_err = (alpha * v / (V * math.sqrt(math.pi)) for v in rho[3])
        pred = (c / (1 - lam)) ** 2
        # first-order error of (C / (1 - lambda))^2
        pred_err = pred * math.hypot(2 * c_err / c, 2 * lam_err / (1 - lam)) if c else 0.0
        rows.append({
            "case": label, "branch": branch, "alpha": alpha, "status": est["status"],
            "V": V, "q_rs": x[0], "rho": {k: list(v) for k, v in rho.items()},
            "C": c, "C_err": c_err, "lambda_cont": lam, "lambda_cont_err": lam_err,
            "D_pred": pred, "D_pred_err": pred_err, "scale": c ** 2 / (1 - lam),
            # the share of outer nodes within one inner standard deviation of the jump
            # surface (gap < sqrt(D) |Delta| / V), and the energy the jump set can move:
            # alpha times that share times the gap's spread over it
            "reach": 2 * math.sqrt(pred) * rho[1][0] / V,
            "kink_energy": 2 * alpha * pred * rho[2][0] / V ** 2,
            "measured": measured(est),
            # the sqrt(D) law and C, checked by integrating the inner variance directly
            "kink_check": {f"{f:g} D*": list(check_kink(params, alpha, x, f * pred,
                                                         rules=a.rules // 2))
                           for f in (0.1, 1.0)} if c else None})
        print(f"{label}: C = {c:.3e} +- {c_err:.1e}, lambda = {lam:.3f} +- {lam_err:.3f}, "
              f"D* predicted {pred:.2e} +- {pred_err:.1e}; direct / surface "
              f"{rows[-1]['kink_check']}", flush=True)
    amp = amplitudes(rows)
    bounds = threshold_bounds(rows)
    OUT.write_text(json.dumps({"log2n": a.log2n, "rules": a.rules, "deltas": DELTAS,
                               "amplitudes": amp, "bounds": bounds, "rows": rows}, indent=1))
    print(report(rows))
    print(json.dumps({"amplitudes": amp, "bounds": bounds}, indent=1))


def threshold_bounds(rows):
    """How far the semantic 1RSB correction, at its predicted size, can move alpha_c (the
    largest of the predicted training-loss shifts, both routes, and the kink energy, over D') and
    alpha_l (the largest measured |Delta eps_g| / D* times the predicted D*, over the slope of
    eps_g), to first order as in thresholds --rsb 1."""
    res = json.loads((RUNS / "thresholds-rsb1-omega0.3.json").read_text())["result"]
    out = {}
    for key, slope, name in ((": semantic", res["slopes"]["D_prime"][0], "alpha_c"),
                             (": semantic_l", res["slopes"]["eps_g_sem"][0], "alpha_l")):
        r = next(r for r in rows if r["case"].endswith(key))
        p = r["predicted"]
        if p is None:
            out[name] = None
            continue
        if name == "alpha_c":
            de = max(abs(v) for v in p["d_eps_t"] + p["d_eps_t_envelope"] + [r["kink_energy"]])
        else:
            de = p["d_eps_g_abs"]
        out[name] = {"d_eps_bound": de, "shift_bound": de / abs(slope)}
    return out


def amplitudes(rows):
    """The measured x* D* and Delta eps_t / (C^2 / (1 - lambda)) over every resolved rule, and
    from them the predicted x*, D* and Delta eps_t where the point is not resolved."""
    from symattn.stats import mean_se
    xd, amp, amp_env, amp_g = [], [], [], []
    for r in rows:
        m = r["measured"]
        if m and m["rules"]:
            # x* times D at x -> 0 (the theory's D*, which the predictions scale)
            xd += [x * r["D_pred"] for x in m["x_star"]]
            # eps_g of one state moves with the order parameters, to first order in D
            amp_g += [abs(d) / r["D_pred"] for d in m["d_eps_g"]]
            amp += [d / r["scale"] for d in m["d_eps_t"]]
            amp_env += [d / r["scale"] for d in m["d_eps_t_envelope"]]
    for r in rows:
        if not r["D_pred"]:
            # no node of the rules lies within the gap windows of a tie: nothing to scale
            r["predicted"] = None
            continue
        r["predicted"] = {
            "x_star": [min(xd) / r["D_pred"], max(xd) / r["D_pred"]],
            "d_eps_t": [min(amp) * r["scale"], max(amp) * r["scale"]],
            "d_eps_t_envelope": [min(amp_env) * r["scale"], max(amp_env) * r["scale"]],
            "d_eps_g_abs": max(amp_g) * r["D_pred"]}
    return {"xD": mean_se(xd), "amp": mean_se(amp), "amp_envelope": mean_se(amp_env),
            "amp_eps_g_max": max(amp_g)}


def report(rows) -> str:
    head = ("case", "alpha", "C", "lambda_cont", "D* predicted (x -> 0)", "D at x_ref, measured",
            "nodes in reach per 2^10", "direct / surface at D*", "x* measured / predicted",
            "Delta eps_t measured (x eq.; difference) / predicted (x eq.)", "kink energy")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m, p, kc = r["measured"], r["predicted"], r["kink_check"]
        dref = ", ".join(f"{d:.2e}" for d in m["D_ref"]) if m else "not resolved"
        xs = de = "—"
        if m and m["rules"]:
            xs = ", ".join(f"{x:.0f}" for x in m["x_star"])
            de = "; ".join(", ".join(f"{d:.1e}" for d in m[k])
                           for k in ("d_eps_t_envelope", "d_eps_t"))
        kc = kc and kc["1 D*"]
        kc = f"{kc[0]:.2f} ± {kc[1]:.2f}" if kc and math.isfinite(kc[0]) else "no node"
        if p is None:
            cells = ("no tie in the rules", f"{r['lambda_cont']:.3f}", "—", dref, "0", "—",
                     xs, de, "—")
        else:
            cells = (f"{r['C']:.2e} ± {r['C_err']:.0e}",
                     f"{r['lambda_cont']:.3f} ± {r['lambda_cont_err']:.3f}",
                     f"{r['D_pred']:.1e} ± {r['D_pred_err']:.0e}", dref,
                     f"{1024 * r['reach']:.2g}", kc,
                     f"{xs} / {p['x_star'][0]:.2g}–{p['x_star'][1]:.2g}",
                     f"{de} / {p['d_eps_t_envelope'][0]:.1e}–{p['d_eps_t_envelope'][1]:.1e}",
                     f"{r['kink_energy']:.1e}")
        lines.append("| " + " | ".join((f"{r['branch']} ({r['case']})", f"{r['alpha']:.4g}",
                                         *cells)) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
