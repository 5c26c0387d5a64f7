"""The error budget of alpha_c and alpha_l at the paper's defaults, component by component.

Question: which error sources limit the main job's alpha_c and alpha_l (8 rules of 2^14), and
how large is each one?

How: each component measured separately:

* integration: one standard error over the scrambles (the main job's 8 rules of 2^14);
* root finding in alpha: the last step of the root finders (bound);
* fixed-point tolerance (and the selection smoothing tied to it): rule 0 solved again with
  ``tol`` 100 times smaller; the change of alpha_c, alpha_l;
* floating point: the node averages re-computed in mpmath at 40 digits at both fixed points at
  alpha_c on rule 0 (:mod:`symattn.refine.highprec`); the change of E[M] moves the training-
  loss difference by alpha |dE[M]| per branch (Phi is stationary, so E[M] is the only
  first-order route), i.e. alpha_c by that over |E[M]_pos - E[M]_sem| (its derivative in alpha).

Found (docs/numerics.md, 'Error budget'; 2-core machine, 2026-11-30, commit 843e018), alpha_c
and alpha_l: integration 5.0e-4 and 6.3e-4; root finding in alpha 2.4e-10 and 1.0e-9;
fixed-point tolerance 1e-10 3.3e-14 and 2.2e-12; floating point 5.9e-15 (alpha_c only).  "The
stated error bar is integration plus root finding. The other two are smaller by ten orders of
magnitude or more."

Rerun (about 1 minute; no options)::

    python studies/error_budget.py
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from symattn.model.params import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.refine.highprec import channel_in_mpmath
from symattn.numerics.quadrature import SobolRule
from symattn.numerics.settings import NumericalSettings
from symattn.numerics.thresholds import compute_thresholds, thresholds_for_rule
from symattn.stats import mean_se


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    P, S = ModelParams(), NumericalSettings()
    t0 = time.time()
    th = compute_thresholds(P, S)
    ac_se = mean_se([r.alpha_c for r in th.per_rule])[1]
    al_se = mean_se([r.alpha_l for r in th.per_rule])[1]
    r0 = th.per_rule[0]
    t1 = time.time()
    tight = thresholds_for_rule(P, replace(S, tol=S.tol / 100), S.seed)
    t2 = time.time()
    ch = OutputChannel(P, SobolRule(S.log2n, S.seed).nodes(4))
    dEM = []
    for fp in (r0.positional, r0.semantic):
        hp = channel_in_mpmath(ch, fp.x, dps=40)
        dEM.append(abs(hp.atoms_double[-1] - hp.atoms_mp[-1]))
    slope = abs(r0.positional.E_M - r0.semantic.E_M)
    fp_ac = r0.alpha_c * sum(dEM) / slope
    t3 = time.time()
    print(f"alpha_c = {th.alpha_c:.6f}, alpha_l = {th.alpha_l:.6f}  (8 rules of 2^14)")
    print(f"{'component':<40} {'alpha_c':>10} {'alpha_l':>10}   how")
    print(f"{'integration (standard error, 8 rules)':<40} {ac_se:10.1e} {al_se:10.1e}   spread of scrambles")
    print(f"{'root finding in alpha (bound)':<40} {max(r.alpha_c_step for r in th.per_rule):10.1e} "
          f"{max(r.alpha_l_step for r in th.per_rule):10.1e}   last root-finder step")
    print(f"{'fixed-point tolerance 1e-10 (rule 0)':<40} {abs(tight.alpha_c - r0.alpha_c):10.1e} "
          f"{abs(tight.alpha_l - r0.alpha_l):10.1e}   re-solved at tol 1e-12")
    print(f"{'floating point (rule 0)':<40} {fp_ac:10.1e} {'':>10}   mpmath 40 digits, "
          f"|dE[M]| = {dEM[0]:.1e}, {dEM[1]:.1e}")
    print(f"wall time: thresholds {t1 - t0:.0f} s, tight rule {t2 - t1:.0f} s, mpmath {t3 - t2:.0f} s")


if __name__ == "__main__":
    main()
