r"""The phase diagram of a general model (model page §7) in the ``(alpha, omega)`` plane.

For every ``omega`` of a grid, one task: :func:`~symattn.numerics.general_thresholds.
compute_general_thresholds` on ``rules`` scrambles of ``2^log2n`` points (the global minimum's
character at both ends of ``bracket``, ``alpha_c`` where it changes, first-order or continuous,
and ``alpha_l``; error bar: one standard error plus the root finders' bounds; the RS-stability
reports of both branches at ``alpha_c``, combined over the scrambles, in the point file under
``rs_stability``, not in the CSV).  It runs through
the paper's phase-diagram machinery (:func:`~symattn.experiments.phase_diagram.run_phase_diagram`:
one JSON file per ``omega`` as it finishes, resumable, locked folder, any executor); the branch
ends and curves of the paper's diagram are not computed for the general model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..model.checks import check_number
from ..model.params import ModelParams, ParameterError
from ..numerics.settings import NumericalSettings

__all__ = ["GeneralPhaseDiagramSettings", "general_phase_point", "GENERAL_CSV_COLUMNS"]

#: the CSV of a general model's phase diagram
GENERAL_CSV_COLUMNS = ("omega", "alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err", "below",
                       "above", "transition", "verified", "eps_lin", "eps_lin_err", "status",
                       "wall_time")


@dataclass(frozen=True)
class GeneralPhaseDiagramSettings:
    """Numerical settings of a general model's phase diagram (stored with the results)."""

    log2n: int = 12          #: Sobol points per rule
    rules: int = 2           #: independent scrambles (the error bars)
    tol: float = 1e-10       #: fixed-point tolerance
    root_tol: float = 1e-5   #: root finders' stopping step in alpha
    alpha_lo: float = 0.1    #: the bracket of alpha_c: the searches' alphas (the command
    alpha_hi: float = 2.0    #: line's default, symattn.cli.common.GENERAL_BRACKET)
    verify: bool = True      #: search for lower fixed points at every alpha_c
    seed: int = 0

    def __post_init__(self):
        NumericalSettings(log2n=self.log2n, rules=self.rules, tol=self.tol, seed=self.seed,
                          root_tol=self.root_tol)
        check_number("alpha_lo", self.alpha_lo, 0.0, lo_open=True)
        check_number("alpha_hi", self.alpha_hi, 0.0, 64.0, lo_open=True)
        if not self.alpha_lo < self.alpha_hi:
            raise ParameterError("alpha_hi", f"must exceed alpha_lo = {self.alpha_lo:g}, got "
                                             f"{self.alpha_hi:g}")


def general_phase_point(params_dict: dict, omega: float, settings_dict: dict) -> dict:
    """One task: the thresholds at one ``omega`` (pure function of its arguments; picklable).
    A failure is kept in ``status``, never raised: one ``omega`` must not lose the others."""
    from ..numerics.general_thresholds import compute_general_thresholds
    from ..runs.executors import InProcess
    t0 = time.perf_counter()
    s = GeneralPhaseDiagramSettings(**settings_dict)
    params = ModelParams(**{**params_dict, "omega": omega})
    out = {"omega": omega, "status": "ok", "alpha_c": None, "alpha_l": None,
           "transition": None, "below": None, "above": None}
    try:
        res = compute_general_thresholds(params, log2n=s.log2n, rules=s.rules, seed=s.seed,
                                         bracket=(s.alpha_lo, s.alpha_hi), tol=s.tol,
                                         root_tol=s.root_tol, verify=s.verify,
                                         executor=InProcess())
        d = res.to_dict()
        out.update({k: d[k] for k in ("alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err",
                                      "below", "above", "transition", "verified", "eps_lin",
                                      "eps_lin_err", "rs_stability")})
        out["rules"] = [{k: r[k] for k in ("seed", "alpha_c", "alpha_l", "alpha_l_branch",
                                           "verified", "lower_points", "wall_time")}
                        for r in d["per_rule"]]
    except Exception as exc:  # noqa: BLE001 - kept in the point file with its reason
        out["status"] = f"failed: {type(exc).__name__}: {exc}"
    out["wall_time"] = time.perf_counter() - t0
    return out
