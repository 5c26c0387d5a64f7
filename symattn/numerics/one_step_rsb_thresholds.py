r"""alpha_c and alpha_l with one-step RSB corrections (``symattn thresholds --rsb 1``; docs:
stability, 'One-step RSB').

The 1RSB corrections are parts in 1e4 of the losses, so the thresholds move to first order:

* :math:`\alpha_c`, where :math:`D = \varepsilon_t^{\rm sem} - \varepsilon_t^{\rm pos}`
  vanishes: :math:`\delta\alpha_c = -(\Delta^{\rm sem} - \Delta^{\rm pos})/D'(\alpha_c)`, with
  :math:`\Delta` each branch's 1RSB training-loss shift at the RS :math:`\alpha_c`
  (:func:`~symattn.numerics.one_step_rsb_search.one_step_rsb_estimate`, both of its routes);
* :math:`\alpha_l`, where the semantic :math:`\varepsilon_g` meets the linear baseline's
  (which does not depend on alpha): :math:`\delta\alpha_l = -\Delta\varepsilon_g^{\rm sem}/
  \partial_\alpha\varepsilon_g^{\rm sem}`.

The slopes come from RS fixed points at the threshold :math:`\pm` ``h``
(:func:`~symattn.numerics.estimates.fixed_point_estimate`).  A branch whose 1RSB point is not
resolved enters with a zero shift and the result says so (``assumed``); a branch that
*reduces to RS* (no 1RSB point distinct from it found) enters with zero, which is its answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["OneStepRSBThresholds", "one_step_rsb_thresholds", "SLOPE_STEP", "SLOPE_SETTINGS"]

#: the half-width of the central differences of the slopes D'(alpha_c) and d eps_g/d alpha
SLOPE_STEP = 0.05


def _slope_settings():
    from .settings import NumericalSettings
    return NumericalSettings(log2n=13, rules=4)


#: the RS fixed points of the slopes and of the accurate RS values: 4 scrambles of 2^13 points
#: (D'(alpha_c) to 1.5 %, studies/one_step_rsb_alpha_c.py; the 1RSB shifts' own errors are
#: tens of percent)
SLOPE_SETTINGS = _slope_settings()


@dataclass
class OneStepRSBThresholds:
    """``alpha_c`` and ``alpha_l`` per training-loss route (``"direct"``: the difference of
    fixed points; ``"envelope"``: the integrated x equation; alpha_l uses eps_g, one route)
    as ``(value, error)``; ``rs``: the RS thresholds they start from; ``estimates``: the 1RSB
    searches (``positional``/``semantic`` at alpha_c, ``semantic_l`` at alpha_l);
    ``slopes``: ``(value, error)``; ``assumed``: the branches whose correction was taken as
    zero without being resolved."""

    rs: dict
    alpha_c: dict
    alpha_l: tuple | None
    slopes: dict
    estimates: dict
    assumed: list = field(default_factory=list)
    note: str = ""

    @property
    def status(self) -> str:
        return "partial" if self.assumed else "converged"

    def to_dict(self) -> dict:
        return {"rsb": 1, "status": self.status, "note": self.note, "assumed": self.assumed,
                "rs": self.rs, "alpha_c": {k: list(v) for k, v in self.alpha_c.items()},
                "alpha_l": list(self.alpha_l) if self.alpha_l else None,
                "slopes": {k: list(v) for k, v in self.slopes.items()},
                "estimates": {k: e.to_dict() for k, e in self.estimates.items()}}


def _slope(params, branch, alpha, key, settings):
    """``(d key/d alpha, error)`` of ``branch``'s RS fixed point by a central difference."""
    from .estimates import fixed_point_estimate
    lo, hi = (fixed_point_estimate(params, branch, alpha + s * SLOPE_STEP, settings).to_dict()
              for s in (-1, 1))
    return ((hi[key] - lo[key]) / (2 * SLOPE_STEP),
            math.hypot(hi[key + "_err"], lo[key + "_err"]) / (2 * SLOPE_STEP))


def one_step_rsb_thresholds(params, rs, rsb_settings, slope_settings, *, rows=(), save=None,
                            progress=None) -> OneStepRSBThresholds:
    """The 1RSB thresholds from the RS ones ``rs`` (a dict with ``alpha_c``, ``alpha_c_err``,
    ``alpha_l``, ``alpha_l_err``; ``alpha_c`` may be None); ``rsb_settings``: the 1RSB searches'
    (:class:`~symattn.numerics.one_step_rsb_search.RSBSettings`); ``slope_settings``: the RS
    fixed points' of the slopes and of the accurate RS values; ``rows``: earlier solves, each
    with ``run`` naming its search (replayed); ``save(row)`` after each new solve."""
    from .estimates import fixed_point_estimate
    from .one_step_rsb_search import one_step_rsb_estimate

    def search(run, branch, alpha):
        def tagged(row):
            if save:
                save({**row, "run": run})
        if progress:
            progress(f"1RSB search: {branch} branch at alpha = {alpha:.7g}")
        acc = fixed_point_estimate(params, branch, alpha, slope_settings).to_dict()
        return one_step_rsb_estimate(params, branch, alpha, rsb_settings, rs=acc,
                                     rows=[r for r in rows if r.get("run") == run],
                                     save=tagged, progress=progress)

    def shift(est, key):
        if est.status in ("converged", "interpolated", "reduces to RS"):
            return est.shifts[key]
        assumed.append(f"{est.branch} at alpha = {est.alpha:.7g} ({est.status}: {est.note})")
        return 0.0, 0.0

    assumed, estimates, slopes, alpha_c = [], {}, {}, {}
    notes = []
    if rs.get("alpha_c") is not None:
        ac = rs["alpha_c"]
        for b in ("positional", "semantic"):
            estimates[b] = search(f"{b}@alpha_c", b, ac)
        d_sem, d_pos = (_slope(params, b, ac, "eps_t", slope_settings)
                        for b in ("semantic", "positional"))
        slopes["D_prime"] = (d_sem[0] - d_pos[0], math.hypot(d_sem[1], d_pos[1]))
        Dp, Dp_err = slopes["D_prime"]
        for route, key in (("direct", "d_eps_t"), ("envelope", "d_eps_t_envelope")):
            (ds, dse), (dp, dpe) = (shift(estimates[b], key) for b in ("semantic", "positional"))
            delta = -(ds - dp) / Dp
            err = math.sqrt(((dse ** 2 + dpe ** 2) / Dp ** 2) + (delta * Dp_err / Dp) ** 2
                            + rs["alpha_c_err"] ** 2)
            alpha_c[route] = (ac + delta, err)
        assumed[:] = sorted(set(assumed))
        if assumed:
            notes.append("alpha_c's correction of the " + " and ".join(
                a.split(" at ")[0] for a in assumed) + " branch taken as 0")
        if estimates["positional"].status == "interpolated" or \
                estimates["semantic"].status == "interpolated":
            notes.append("a stationary x was interpolated, not solved, on some rules")
    else:
        notes.append("no RS alpha_c (the positional branch is not the global minimum below "
                      "alpha_l here)")
    al = rs["alpha_l"]
    est = search("semantic@alpha_l", "semantic", al)
    estimates["semantic_l"] = est
    slopes["eps_g_sem"] = _slope(params, "semantic", al, "eps_g", slope_settings)
    g, g_err = slopes["eps_g_sem"]
    n_before = len(assumed)
    dg, dge = shift(est, "d_eps_g")
    delta = -dg / g
    alpha_l = (al + delta, math.sqrt((dge / g) ** 2 + (delta * g_err / g) ** 2
                                     + rs["alpha_l_err"] ** 2))
    if len(assumed) > n_before:
        notes.append("alpha_l's semantic correction taken as 0")
    return OneStepRSBThresholds({k: rs[k] for k in ("alpha_c", "alpha_c_err", "alpha_l",
                                                     "alpha_l_err")},
                                alpha_c, alpha_l, slopes, estimates, assumed, "; ".join(notes))
