"""Where the semantic 1RSB profile at alpha_l stops, what it shows up to there, and the alpha_l
shift the finer run brackets (issue 21; docs/stability.md, 'The semantic branch at alpha_l').

The search at the RS alpha_l with a 2^24 band and the split inner rule on the coarse x grid (run
file ``--run``) solves rule 1's profile up to x = 173205 with Sigma/e > 0 and falling, then
stalls at every x it tries beyond (227951, 300000).  This study

1. computes, along that profile, the paired shift of the generalisation error of one state,
   eps_g(q1, m, theta) - eps_g at x_ref, and the alpha_l shift it would give,
   -Delta eps_g / (d eps_g^sem / d alpha) (the slope from the thresholds run file);
2. continues rule 1's profile from x = 173205 in steps of 7 % (``XS``), with the run's inner
   rules, to see whether the stall is the step's length;
3. at the first x where that stalls, solves again with the split inner rule off (the fine
   Gauss-Hermite rule on every rough node, recentred on the tilted measure like the coarse
   one): the split rule is drawn for the untilted inner Gaussian;
4. for the run on the fine x grid with ``--rsb-profile-skips 4`` (``--fine-run``), the same
   paired shifts along each rule's fixed-x solves, and the alpha_l shifts at the two converged
   ones around the last sign change of Sigma/e: the interval the interpolated x* lies in.

Writes studies/data/one_step_rsb_alpha_l_profile.json.  Rerun:
``python studies/one_step_rsb_alpha_l_profile.py`` (4 to 15 minutes on one core: part 2 stops
at the first stall; 8 GB for the 2^24 band).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from symattn.model.params import ModelParams
from symattn.numerics.observables import generalisation_error
from symattn.numerics.one_step_rsb import InnerRule, solve_ladder
from symattn.numerics.one_step_rsb_search import RSBSettings, rule_channel

ROOT = Path(__file__).resolve().parent
RUN = ROOT / "data" / "one_step_rsb_cli" / \
    "fixed-point-rsb1-semantic-alpha1.4922707-omega0.3-band24-split16.json"
FINE_RUN = RUN.with_name(RUN.stem + "-fine.json")
THRESHOLDS = ROOT / "data" / "one_step_rsb_cli" / "thresholds-rsb1-omega0.3.json"
OUT = ROOT / "data" / "one_step_rsb_alpha_l_profile.json"
SEED = 1
XS = (185000.0, 198000.0, 212000.0, 227951.0)


def profile_shifts(rows, params, slope):
    """Per converged fixed-x row of the rule (the reference, the profile, the bisections and
    the secant's steps), by x: x, D, Sigma/e and the paired shifts.

    The reference is the rule's last converged ``ref`` row: the search tries its starts in
    order and keeps the first usable point, so an earlier converged one was rejected (it went
    to q0 = q1) and the profile does not start from it."""
    refs = [r for r in rows if r["converged"] and r["key"][0] == "ref"]
    ref = refs[-1]
    rows = sorted([ref] + [r for r in rows if r["converged"]
                           and r["key"][0] in ("profile", "bisect", "secant")],
                  key=lambda r: r["x"])

    def eps_g(r):
        return generalisation_error(params, r["q1"], r["m"], r["theta"], coarse=0)[0]

    g0 = eps_g(ref)
    out = []
    for r in rows:
        d_eps_g = eps_g(r) - g0
        out.append({"x": r["x"], "D": r["q1"] - r["q0"], "sigma_over_e": r["sigma_over_e"],
                    "d_q1": r["q1"] - ref["q1"], "d_theta": r["theta"] - ref["theta"],
                    "d_V": r["V"] - ref["V"], "d_eps_t": r["eps_t"] - ref["eps_t"],
                    "d_eps_g": d_eps_g, "d_alpha_l": -d_eps_g / slope})
    return out


def bracket(along):
    """The two profile points around the last sign change of Sigma/e from + to -, or None."""
    for lo, hi in zip(along[::-1][1:], along[::-1]):
        if lo["sigma_over_e"] > 0 > hi["sigma_over_e"]:
            return [lo, hi]
    return None


def fine_run_shifts(path, params, slope):
    """Per rule of the fine-grid run: the paired shifts along the profile and the bracket."""
    data = json.loads(path.read_text())
    out = {"run": path.name, "rules": []}
    for rule in data["result"]["per_rule"]:
        rows = [r for r in data["rows"] if r["seed"] == rule["seed"]]
        along = profile_shifts(rows, params, slope) if any(r["converged"] for r in rows) else []
        br = bracket(along)
        out["rules"].append({"seed": rule["seed"], "status": rule["status"],
                             "x_star": rule["x_star"], "along_profile": along, "bracket": br})
        if br:
            print(f"fine run, rule {rule['seed']} ({rule['status']}): x* in "
                  f"({br[0]['x']:.0f}, {br[1]['x']:.0f}), d alpha_l in "
                  f"({br[0]['d_alpha_l']:+.2e}, {br[1]['d_alpha_l']:+.2e})", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, default=RUN)
    ap.add_argument("--fine-run", type=Path, default=FINE_RUN)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    params = ModelParams()
    data = json.loads(args.run.read_text())
    head = data["header"]
    alpha, rsb = head["alpha"], head["rsb"]
    slope = json.loads(THRESHOLDS.read_text())["result"]["slopes"]["eps_g_sem"][0]
    rows = [r for r in data["rows"] if r["seed"] == SEED]
    along = profile_shifts(rows, params, slope)
    for a in along:
        print(f"x = {a['x']:9.6g}: D = {a['D']:.3e}, Sigma/e = {a['sigma_over_e']:+.2e}, "
              f"d eps_g = {a['d_eps_g']:+.2e}, d alpha_l = {a['d_alpha_l']:+.1e}", flush=True)
    fine = fine_run_shifts(args.fine_run, params, slope)

    s = RSBSettings(log2n=rsb["log2n"], band_log2n=rsb["band_log2n"], split=rsb["split"],
                    recentre_from=rsb["recentre_from"])
    t0 = time.perf_counter()
    ch, fp, band, used = rule_channel(params, "semantic", alpha, SEED, s)
    print(f"rule {SEED}: band of {band.n_band} points ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    last = max((r for r in rows if r["converged"] and r["key"][0] == "profile"),
               key=lambda r: r["x"])

    def solve(z, x, split):
        t0 = time.perf_counter()
        z = list(z)
        z[5] = x
        pt = solve_ladder(ch, alpha, z, pin="m", inner=InnerRule(s.coarse, recentre=True),
                          fine=InnerRule(s.fine, recentre=True), eps_stages=s.eps_stages,
                          hold_x=True, tol=s.tol, max_iter=s.max_iter,
                          split=InnerRule(s.split, split=True) if split else None)
        out = {"x": x, "split": split, "converged": pt.converged, "message": pt.message,
               "residual": pt.residual, "D": float(pt.z[1] - pt.z[0]),
               "sigma_over_e": pt.sigma_over_e, "eps_t": pt.eps_t, "z": [float(v) for v in pt.z],
               "wall": time.perf_counter() - t0}
        print(f"x = {x:g} (split {'on' if split else 'off'}): {pt.message}, residual "
              f"{pt.residual:.1e}, D = {out['D']:.3e}, Sigma/e = {pt.sigma_over_e:+.2e} "
              f"({out['wall']:.0f} s)", flush=True)
        return out

    steps, z, retry = [], last["z"], None
    for x in XS:
        step = solve(z, x, True)
        steps.append(step)
        if not step["converged"]:
            retry = solve(z, x, False)
            break
        z = step["z"]
    args.out.write_text(json.dumps({
        "run": args.run.name, "seed": SEED, "alpha": alpha, "eps_g_slope": slope,
        "band": band.as_dict(), "from_x": last["x"], "along_profile": along,
        "steps": steps, "split_off_retry": retry, "fine_run": fine}, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
