"""How far does one-step RSB move alpha_c?  (issue 21, 'Done when'; docs/stability.md,
'One-step RSB'.)

alpha_c is where the two branches' zero-temperature free energies cross: D(alpha) =
eps_t^sem - eps_t^pos = 0 at alpha_c^RS = 1.2515356 (omega = 0.3).  With 1RSB corrections
Delta^sem, Delta^pos to each branch's eps_t (small: parts in 1e4), the crossing moves to first
order by

    delta alpha_c = -(Delta^sem - Delta^pos) / D'(alpha_c).

Inputs: D' from RS fixed points at alpha_c +- 0.05 (``symattn.api.fixed_point``, 4 scrambles
of 2^13 points; cached in studies/data/one_step_rsb_alpha_c_rs.json); Delta^pos from the
profile of studies/one_step_rsb_energy.py at alpha = 1.2515356 (both estimates, at the
stationary x of each rule: ``stationary``); Delta^sem from the semantic profile there if it has
a stationary point, else taken as 0 and said so.

The same shift from the run files of ``symattn fixed-point --rsb 1`` at alpha_c (``RUN_FILES``:
positional on rules of 2^12 outer points, semantic with the jump band and the split inner rule;
commands in studies/data/one_step_rsb_cli/README.md): each file's result holds both estimates as
mean +- standard error over its stationary rules; the shift is also printed over every
positional rule with shifts, those without a stationary x at their last point.

Rerun: ``python studies/one_step_rsb_alpha_c.py`` (about 2 minutes for the RS input the first
time).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HERE = Path(__file__).resolve().parent
ALPHA_C = 1.2515356
RS_CACHE = HERE / "data" / "one_step_rsb_alpha_c_rs.json"
PROFILES = HERE / "data" / "one_step_rsb_energy"
CLI = HERE / "data" / "one_step_rsb_cli"
#: branch -> run files at alpha_c, the first that exists with a result is used
RUN_FILES = {
    "positional": ("fixed-point-rsb1-positional-alpha1.2515356-omega0.3-log2n12-rules4.json",
                   "fixed-point-rsb1-positional-alpha1.2515356-omega0.3-log2n12.json"),
    "semantic": ("fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20-split16.json",),
}
#: the run files' names for the two estimates -> the profile study's
ROUTES = {"d_eps_t_envelope": "x equation", "d_eps_t": "difference"}


def slope() -> tuple:
    """``(D', its standard error)`` from the RS fixed points at alpha_c -+ 0.05."""
    if not RS_CACHE.exists():
        from symattn.api import fixed_point
        out = {}
        for b in ("semantic", "positional"):
            for a in (ALPHA_C - 0.05, ALPHA_C + 0.05):
                d = fixed_point(branch=b, alpha=a, log2n=13, rules=4).to_dict()
                out[f"{b}:{a:.7f}"] = [d["eps_t"], d["eps_t_err"]]
        RS_CACHE.write_text(json.dumps(out, indent=1))
    rs = json.loads(RS_CACHE.read_text())
    lo, hi = f"{ALPHA_C - 0.05:.7f}", f"{ALPHA_C + 0.05:.7f}"
    d_hi = rs[f"semantic:{hi}"][0] - rs[f"positional:{hi}"][0]
    d_lo = rs[f"semantic:{lo}"][0] - rs[f"positional:{lo}"][0]
    err = math.sqrt(sum(rs[f"{b}:{a}"][1] ** 2 for b in ("semantic", "positional")
                        for a in (lo, hi))) / 0.1
    return (d_hi - d_lo) / 0.1, err


def correction(branch: str):
    """``(per-rule dicts, note)`` at alpha_c for ``branch`` (``stationary``)."""
    from studies.one_step_rsb_energy import stationary
    path = PROFILES / f"{branch}_{ALPHA_C:g}.json"
    if not path.exists():
        return [], "no profile"
    entry = json.loads(path.read_text())
    per = stationary(entry, branch)
    n_conv = sum(r["converged"] for r in entry["rows"])
    return per, f"{n_conv} of {len(entry['rows'])} solves converged"


def shift(delta_sem, delta_pos, Dp) -> tuple:
    """``(delta alpha_c, its standard error)`` from the branches' ``(mean, se)`` corrections."""
    (ds, dse), (dp, dpe) = delta_sem, delta_pos
    return -(ds - dp) / Dp, math.sqrt(dpe ** 2 + dse ** 2) / abs(Dp)


def from_run_files(Dp: float) -> None:
    """alpha_c^1RSB from the run files' results (``RUN_FILES``), both estimates."""
    got = {}
    for b, names in RUN_FILES.items():
        for name in names:
            path = CLI / name
            res = json.loads(path.read_text()).get("result") if path.exists() else None
            if res and res.get("shifts"):
                got[b] = res
                print(f"{b}: {name}: {res['note']}; x* = {res['shifts']['x_star'][0]:.0f} +- "
                      f"{res['shifts']['x_star'][1]:.0f}")
                break
        else:
            print(f"{b}: no run file with a result ({', '.join(names)})")
    if len(got) < 2:
        return
    from symattn.stats import mean_se
    for key, route in ROUTES.items():
        sem, pos = got["semantic"]["shifts"][key], got["positional"]["shifts"][key]
        delta, err = shift(sem, pos, Dp)
        print(f"{route:>10s}: Delta^pos = {pos[0]:+.3e} +- {pos[1]:.1e}, Delta^sem = "
              f"{sem[0]:+.2e} +- {sem[1]:.1e}: delta alpha_c = {delta:+.2e} +- {err:.1e}  ->  "
              f"alpha_c^1RSB = {ALPHA_C + delta:.5f} +- {err:.5f}")
        # every positional rule with shifts, those without a stationary x at their last point
        # (leaving them out is a selection)
        every = [r for r in got["positional"].get("per_rule", []) if r.get("shifts")]
        if len(every) > sum(r["status"] == "stationary" for r in every) and len(every) > 1:
            pos_all = mean_se([r["shifts"][key] for r in every])
            delta, err = shift(sem, pos_all, Dp)
            print(f"{'':>10s}  all {len(every)} positional rules (the others at their last "
                  f"point): Delta^pos = {pos_all[0]:+.3e} +- {pos_all[1]:.1e}: delta alpha_c = "
                  f"{delta:+.2e} +- {err:.1e}")


def main():
    from symattn.stats import mean_se
    Dp, Dp_err = slope()
    print(f"D'(alpha_c) = d(eps_sem - eps_pos)/d alpha = {Dp:.4e} +- {Dp_err:.1e} (RS, 4 x 2^13)")
    shifts = {}
    for b in ("positional", "semantic"):
        per, note = correction(b)
        good = [p for p in per if p.get("x_star") is not None]
        print(f"{b}: {note}; stationary x on {len(good)} of {len(per)} rules"
              + "".join(f"\n  rule {p['seed']}: {p['why']}" for p in per if not p.get("x_star")))
        if good:
            shifts[b] = {k: mean_se([p[k] for p in good]) for k in
                         ("x_star", "d_eps_envelope", "d_eps_direct")}
            s = shifts[b]
            print(f"  x* = {s['x_star'][0]:.0f} +- {s['x_star'][1]:.0f}; Delta eps_t = "
                  f"{s['d_eps_envelope'][0]:+.2e} +- {s['d_eps_envelope'][1]:.1e} (x equation), "
                  f"{s['d_eps_direct'][0]:+.2e} +- {s['d_eps_direct'][1]:.1e} (difference)")
    if "positional" not in shifts:
        print("no positional correction: alpha_c^1RSB not estimated")
        return
    sem = shifts.get("semantic")
    if sem is None:
        print("semantic correction taken as 0 (no 1RSB point distinct from RS found at alpha_c);"
              " a positive one would add Delta^sem / |D'| to alpha_c")
    for route in ("d_eps_envelope", "d_eps_direct"):
        delta, err = shift(sem[route] if sem else (0.0, 0.0), shifts["positional"][route], Dp)
        print(f"{route.split('_')[-1]:>9s}: delta alpha_c = {delta:+.2e} +- {err:.1e}  ->  "
              f"alpha_c^1RSB = {ALPHA_C + delta:.5f} +- {err:.5f} (RS {ALPHA_C})")
    print("\nfrom the run files of fixed-point --rsb 1:")
    from_run_files(Dp)


if __name__ == "__main__":
    main()
