"""At alpha = 1 (omega = 0.3): RS, 1RSB and the lowest finite-size minima side by side (issue 21,
'Done when'; docs/stability.md, 'At alpha = 1: RS, 1RSB and finite-size minima').

Inputs, all in the repository:

* RS: ``symattn.api.fixed_point`` on 8 scrambles of 2^14 points (computed once, cached in
  studies/data/alpha1_table_rs.json);
* 1RSB: the profiles of studies/one_step_rsb_energy.py (studies/data/one_step_rsb_energy/
  <branch>_1.json).  Per scrambled rule, the stationary x is where Sigma/e changes sign (linear
  interpolation between the grid points around the first sign change; ``none`` if it does
  not change sign on the grid), and the 1RSB shifts at x* relative to the same rule's x_ref
  point (the RS limit on the same nested rule): Delta q_1, Delta q_0, Delta theta or m, and
  Delta eps_t by both routes of the profile study (difference of fixed points; x equation
  integrated).  Shifts are mean +- standard error over the rules; the 1RSB column adds them to
  the RS values of the first input (2^10-point rules are 3 % off in theta by themselves, their
  differences are not); and, where ``CLI_FILES`` names one, a second 1RSB row from the result of
  a ``symattn fixed-point --rsb 1`` run file on larger outer rules (its shifts, mean +-
  standard error over its stationary rules, added to the same RS values);
* finite size: studies/data/minima_landscape.json, the lowest minimum of each class per
  instance: the intercept of the least-squares fit on the teacher norm |Q*|^2/d - 1 (the
  control variate of studies/alpha1_discrepancy.py: eps_t and theta scale with the teacher's
  norm, and the seeds 0-39 have it about 3 standard errors low), with its standard error;
  and 1 - r between the two lowest minima (mean +- standard error).

Rerun: ``python studies/alpha1_table.py`` (a minute for the RS input the first time; prints the
markdown table and writes it to studies/data/alpha1_table.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HERE = Path(__file__).resolve().parent
RS_CACHE = HERE / "data" / "alpha1_table_rs.json"
PROFILES = HERE / "data" / "one_step_rsb_energy"
LANDSCAPE = HERE / "data" / "minima_landscape.json"
OUT = HERE / "data" / "alpha1_table.md"
BRANCHES = ("positional", "semantic")
#: branch -> a fixed-point --rsb 1 run file at alpha = 1 on larger outer rules (commands:
#: studies/data/one_step_rsb_cli/README.md)
CLI_FILES = {"positional": "fixed-point-rsb1-positional-alpha1-omega0.3-log2n12.json"}


def rs_values() -> dict:
    if RS_CACHE.exists():
        return json.loads(RS_CACHE.read_text())
    from symattn.api import fixed_point
    out = {}
    for b in BRANCHES:
        d = fixed_point(branch=b, alpha=1.0).to_dict()
        out[b] = {k: d[k] for k in ("q", "q_err", "m", "m_err", "theta", "theta_err", "V",
                                    "eps_t", "eps_t_err")}
    RS_CACHE.write_text(json.dumps(out, indent=1))
    return out


def rsb_shifts(branch: str):
    """Per rule: x* and the shifts at x* from the rule's x_ref point (module doc)."""
    path = PROFILES / f"{branch}_1.json"
    if not path.exists():
        return None
    from studies.one_step_rsb_energy import stationary
    return stationary(json.loads(path.read_text()), branch)


def cli_row(branch: str, r: dict, k: str) -> str | None:
    """The table row of ``CLI_FILES[branch]``'s result, or ``None`` (no file, no result)."""
    name = CLI_FILES.get(branch)
    path = HERE / "data" / "one_step_rsb_cli" / (name or "")
    if not name or not path.exists():
        return None
    data = json.loads(path.read_text())
    res = data.get("result") or {}
    sh = res.get("shifts")
    if not sh:
        return None
    log2n = data["header"]["rsb"]["log2n"]
    d_k = sh["d_m" if k == "m" else "d_theta"]
    return (f"| 1RSB, 2^{log2n} outer points, x* = {pm(*sh['x_star'], '.0f')} ({res['note']}) | "
            f"{fmt(r['q'] + sh['d_q1'][0], sh['d_q1'][1])} | "
            f"{fmt(r['q'] + sh['d_q0'][0], sh['d_q0'][1])} | "
            f"{fmt(r[k] + d_k[0], d_k[1])} | "
            f"RS + {pm(*sh['d_eps_t_envelope'], '.1e')} (x equation) or "
            f"{pm(*sh['d_eps_t'], '.1e')} (difference) | "
            f"{pm(1 - sh['q0_over_q1'][0], sh['q0_over_q1'][1], '.4f')} |")


def landscape():
    from studies.alpha1_discrepancy import _cv
    from symattn.stats import mean_se
    if not LANDSCAPE.exists():
        return {}
    data = json.loads(LANDSCAPE.read_text())
    out = {}
    for b in BRANCHES:
        for d in sorted({i["d"] for i in data["instances"] if i["alpha"] == 1.0}):
            low, one_r, tn = [], [], []
            for inst in data["instances"]:
                if inst["alpha"] != 1.0 or inst["d"] != d:
                    continue
                mins = sorted((m for m in inst["minima"] if m["cls"] == b),
                              key=lambda m: m["eps_t"])
                if not mins:
                    continue
                low.append(mins[0])
                tn.append(inst["tnorm"] - 1.0)
                pairs = [p for p in inst["pairs"].get(b, [])
                         if {p["a"], p["b"]} == {mins[0]["id"], mins[1]["id"]}] \
                    if len(mins) > 1 else []
                if pairs:
                    one_r.append(1 - pairs[0]["r_ab"])
            out[(b, d)] = {k: _cv([m[k] for m in low], tn) for k in ("q", "m", "theta", "eps_t")}
            out[(b, d)]["n"] = len(low)
            out[(b, d)]["one_minus_r"] = mean_se(one_r) if len(one_r) > 1 else (
                (one_r[0], float("nan")) if one_r else (float("nan"), float("nan")))
            out[(b, d)]["n_pairs"] = len(one_r)
    return out


def fmt(v, e=None, p=5):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "--"
    if e is None or np.isnan(e):
        return f"{v:.{p}f}"
    return f"{v:.{p}f} ± {e:.1g}"


def pm(v, e, spec: str) -> str:
    """``v ± e`` in ``spec``, or ``v`` alone where there is no error bar (one rule)."""
    es = spec if spec in (".0f",) or "e" in spec else ".1g"
    return f"{v:{spec}}" if np.isnan(e) else f"{v:{spec}} ± {e:{es}}"


def main():
    from symattn.stats import mean_se
    rs = rs_values()
    fs = landscape()
    lines = []
    for b in BRANCHES:
        k = "m" if b == "positional" else "theta"
        r = rs[b]
        per = rsb_shifts(b) or []
        good = [p for p in per if p.get("x_star") is not None]
        last = [p for p in per if p.get("x_star") is None and "d_q1" in p]
        lines.append(f"\n**{b} branch** (RS: 8 x 2^14; 1RSB: RS + the shift at x* on "
                     f"{len(good)} of {len(per)} rules of 2^10 points; finite size: lowest "
                     f"{b} minimum per instance, teacher-norm control variate, "
                     f"studies/minima_landscape.py)\n")
        lines.append(f"| | q (= q_1) | q_0 | {k} | eps_t | 1 - q_0/q_1 or 1 - r (two lowest) |")
        lines.append("|---|---|---|---|---|---|")
        lines.append(f"| RS | {fmt(r['q'], r['q_err'])} | = q | {fmt(r[k], r[k + '_err'])} | "
                     f"{fmt(r['eps_t'], r['eps_t_err'], 7)} | 0 |")
        if good or last:
            pts, xkey = (good, "x_star") if good else (last, "x_last")
            sh = {key: mean_se([p[key] for p in pts]) for key in (
                xkey, "d_q1", "d_q0", "d_order", "q0_over_q1", "d_eps_direct",
                "d_eps_envelope")}
            env, dirc = sh["d_eps_envelope"], sh["d_eps_direct"]
            label = (f"1RSB, x* = {pm(*sh[xkey], '.0f')} ({len(pts)} rule(s))" if good else
                     f"1RSB at the largest x solved, {sh[xkey][0]:.0f} (no stationary x yet: "
                     f"Sigma > 0)")
            lines.append(
                f"| {label} | {fmt(r['q'] + sh['d_q1'][0], sh['d_q1'][1])} | "
                f"{fmt(r['q'] + sh['d_q0'][0], sh['d_q0'][1])} | "
                f"{fmt(r[k] + sh['d_order'][0], sh['d_order'][1])} | "
                f"RS + {pm(*env, '.1e')} (x equation) or {pm(*dirc, '.1e')} (difference) | "
                f"{pm(1 - sh['q0_over_q1'][0], sh['q0_over_q1'][1], '.4f')} |")
        else:
            why = "; ".join(sorted({p["why"] for p in per})) or "no profile"
            lines.append(f"| 1RSB | no 1RSB point ({why}) | | | | |")
        row = cli_row(b, r, k)
        if row:
            lines.append(row)
        for (bb, d), v in sorted(fs.items()):
            if bb != b:
                continue
            lines.append(f"| d = {d} ({v['n']} inst.) | {fmt(*v['q'])} | | {fmt(*v[k])} | "
                         f"{fmt(*v['eps_t'], 7)} | {fmt(*v['one_minus_r'], 4)} "
                         f"({v['n_pairs']} inst.) |")
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text + "\n")


if __name__ == "__main__":
    main()
