r"""The 1RSB point of one branch at one alpha, with error bars over scrambled rules
(``symattn fixed-point --rsb 1``, ``thresholds --rsb 1``; docs: stability, 'One-step RSB').

On each scrambled Sobol rule of ``2^log2n`` outer points, after the RS fixed point on that rule
(a rule on which the branch has none, as near a branch end, *fails*; the others go on):

1. **Reference.** The five 1RSB equations in :math:`(q_0, q_1, m\text{ or }\theta, V)` at
   :math:`x_{\rm ref}` (default 10: the tilt :math:`e^{-x\mathcal M}` varies by about 1e-3 over
   an inner Gaussian there, so the point is RS's up to that, but on the same outer x inner rule),
   from :math:`q_0 = 0.985\,q_{\rm RS}`, :math:`q_1 = q_{\rm RS}`.  :math:`q_0 = q_1` solves the
   1RSB equations at every x and Newton sometimes goes there, or stalls; then once more from
   :math:`q_0 = 0.93\,q_{\rm RS}`.  If both go to :math:`q_0 = q_1` the rule *reduces to RS*.
   With a jump band the starts are :math:`q_{\rm RS} - kD^*`, k in ``BAND_STARTS``.
2. **Profile.** The same at each x of ``xs`` in turn, warm-started, until
   :math:`\Sigma/e = -x^2\partial_x\Phi/|\Phi|` (the complexity relative to the energy) changes
   sign from + to -.  A step that stalls or falls onto :math:`q_0 = q_1` is halved in log x
   (up to ``PROFILE_HALVINGS`` times) from the last good point, and the profile goes on from
   there; with ``profile_skips`` a grid x that still stalls is skipped, and the next one is
   tried from the last good point (Newton's stalls there are sporadic in x).

   2b. **Past a fold.** With ``fold_steps``, where the profile still stalls (Sigma/e > 0 so
   far), the solutions are followed in :math:`q_1 - q_0` instead (held, x free; the same
   equations) from the profile's last point at the finest width, by ``FOLD_SHARE`` of it per
   step the way it moved over the step before, each step started from the line through the
   last two points (docs/stability.md, 'The smoothing width where the gap is tiny'), until
   Sigma/e changes sign or x falls below x_ref.  A fold of the solutions in x, which no fixed-x solve passes, is
   gone round so.  A bracket goes to regula falsi in the gap (step 3's secant), and the x
   equation is integrated along the path in its order (past the fold x runs back).
3. **Stationary x.** All six equations, x free, by Newton from the linear interpolation of the
   two points around the sign change; if Newton wanders off (Sigma/e is rough on a small rule),
   the bracket is bisected ``BISECTIONS`` times in log x by fixed-x solves and Newton starts
   again from closer.  If that fails too, the x equation is solved as a function of x along
   the fixed-x solutions, by regula falsi (Illinois) on the bracket, until
   :math:`|\Sigma/e| \le` ``SIGMA_TOL`` (at most ``SECANT_STEPS`` fixed-x solves): a point
   that solves the five equations to ``tol`` and the x equation to ``SIGMA_TOL`` is stationary.
   With ``profile_skips`` (one budget with the profile's) a secant step that stalls is
   replaced by the log-midpoint of the longer side of the stalled x in the bracket.  A point
   that converged only at a coarser smoothing width than the last of ``eps_stages`` solves
   another map: it counts as stalled where it would end the profile, bound a bracket or solve
   the x equation.

The shifts from the reference are paired on the rule (alone, 2^10 outer points put RS's
:math:`\theta` 3 % off; the pairing cancels that to the size of the effect).  The training loss
shift is estimated twice: the difference of the fixed points' :math:`\varepsilon_t`, and the x
equation integrated along the profile (:math:`d\varepsilon_t/dx = \varepsilon_t\,(\Sigma/e)/x^2`,
the envelope theorem): on a finite rule the equations are stationarity conditions of
:math:`\Phi` only up to the quadrature error, so the two differ by it, and both are reported.
The generalisation error of one state is :math:`\varepsilon_g(q_1, m, \theta)`.

Every solve is handed to ``save`` as it finishes, and a run given the rows of an earlier one
replays them instead of solving again (the steps are deterministic), so a long run resumes
where it stopped.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

__all__ = ["RSBSettings", "RuleRSB", "OneStepRSBEstimate", "one_step_rsb_estimate",
           "rule_one_step_rsb", "rule_channel", "envelope_shift", "COLLAPSED", "STATUSES"]

#: a point whose q_1 - q_0 fell below this share of q_1 has gone to q_0 = q_1 (RS)
COLLAPSED = 1e-5

#: with a jump band, below this share of the small-D theory's D* instead (where the jump set
#: is light, D* itself can be below COLLAPSED q_1: 2e-7 q_1 on the semantic branch at 1.5)
COLLAPSED_BAND = 1e-2

#: q_0 / q_RS of the first start and of the one retry after a collapse
START_RATIOS = (0.985, 0.93)

#: with ``band_points``: the first dense rule tried has 2^(log2n + BAND_FIRST) points, and a
#: band the base rule would hold this many points of on average is not used (the semantic
#: branch at alpha_c holds 0.3-0.6, at alpha_l 0.001-0.002; the positional one 11)
BAND_FIRST = 8
BAND_BASE_ENOUGH = 4.0

#: with a jump band: q_RS - q_0 of the starts, in units of the small-D theory's D* (the band
#: is drawn for D near it; far above, the map is the plain rule's again). The third: at the
#: semantic alpha_l (2^24 band) rule 0 stalls from D* and 3D* (residuals 4e-5 and 7e-5) within
#: 2 % of the point a scratch solve reached from 6D* (D = 1.4 D*); from the search's own 6D*
#: start (q_0/q_RS rounded to 9 digits) it stalls too, at 4e-6 (the alpha_l run files)
BAND_STARTS = (1.0, 3.0, 6.0)

#: how many times a profile step that stalled or fell onto q_0 = q_1 is halved (in log x)
#: before the rule stops with "no sign change"
PROFILE_HALVINGS = 2

#: a rule's status: the six equations solved (by Newton or by the secant in x); the sign
#: change found but neither converged (values interpolated); Newton went to q_0 = q_1 from
#: every start; Sigma/e did not change sign on the grid; the reference did not converge
STATUSES = ("stationary", "interpolated", "reduces to RS", "no sign change", "failed")


@dataclass(frozen=True)
class RSBSettings:
    """The 1RSB search's numerics (module doc).  ``coarse``/``fine``: Gauss--Hermite points per
    axis of the inner rule on the smooth / rough outer nodes
    (:class:`~symattn.numerics.one_step_rsb.OneStepRSBMap`); ``eps_stages``: the smoothing
    widths of near-tied minima (:func:`~symattn.numerics.one_step_rsb.solve_ladder`)."""

    log2n: int = 10
    rules: int = 3
    coarse: int = 12
    fine: int = 32
    x_ref: float = 10.0
    xs: tuple = (30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
    tol: float = 1e-9
    eps_stages: tuple = (1e-4, 1e-5)
    max_iter: int = 30
    #: the jump band's dense rule, ``2^band_log2n`` points (None: the plain outer rule;
    #: :func:`~symattn.numerics.jump_band.jump_band_rule`), its reach in inner standard
    #: deviations and its D over the small-D theory's; a band of more than ``band_max`` points
    #: is not used (where the jump set is heavy the plain rule already resolves the point)
    band_log2n: int | None = None
    band_reach: float = 8.0
    band_factor: float = 4.0
    band_max: int = 4096
    #: with a band: None, the dense rule has ``2^band_log2n`` points; else its size is chosen
    #: per rule, from ``2^(log2n + BAND_FIRST)`` up to ``2^band_log2n``, as the first that puts
    #: at least ``band_points`` points in the band (so that one setting serves searches whose
    #: jump sets differ by orders of magnitude, as ``thresholds`` runs at alpha_c and alpha_l);
    #: a band the base rule holds ``BAND_BASE_ENOUGH`` points of is then not used
    band_points: int | None = None
    #: the rough nodes a jump line crosses get an inner rule split along it, ``split``
    #: points per axis on each side (None: the ``fine`` Gauss--Hermite rule;
    #: :mod:`~symattn.numerics.inner_split`)
    split: int | None = None
    #: from this Parisi x on, the coarse and fine rules are recentred on the tilted inner
    #: measure (:class:`~symattn.numerics.one_step_rsb.InnerRule`; the tilt moves its mode by
    #: about x sqrt(q1 - q0) times the norm of f, in inner standard deviations); None: never
    recentre_from: float | None = None
    #: fixed-x solves that may stall and be stepped over, in all: a grid x of the profile
    #: after its halvings stall too (the next grid x is tried from the last good point), and a
    #: step of the secant in x (the log-midpoint of the longer side of the stalled x is tried
    #: instead). 0: the profile ends at the first such x, and the secant stops. At the semantic
    #: alpha_l, 2^24 band (studies/data/one_step_rsb_cli), rule 1's profile stalls at
    #: x = 209235 and 220000 and converges at 198997 and 227463; which x stall changes with the
    #: last bits of the arithmetic
    profile_skips: int = 0
    #: fixed-gap solves at most in the continuation past a stalled profile (module doc, 2b);
    #: 0: none, the rule ends there. At the semantic alpha = 1.5 rule 0's solutions fold over
    #: in x at x = 21771 (width 1e-7, studies/one_step_rsb_fold.py): the profile stalls there
    fold_steps: int = 0

    def __post_init__(self):
        from ..model.checks import check_int, check_number
        check_int("rsb-log2n", self.log2n, 4, 16)
        check_int("rsb-rules", self.rules, 1, 64)
        check_int("rsb-coarse", self.coarse, 2, 64)
        check_int("rsb-fine", self.fine, 2, 96)
        check_number("rsb-x-ref", self.x_ref, 0.0, None, lo_open=True)
        check_number("tol", self.tol, 0.0, 1e-3, lo_open=True)
        if self.band_log2n is not None:
            check_int("rsb-band-log2n", self.band_log2n, self.log2n + 1, 24)
            check_number("rsb-band-reach", self.band_reach, 0.0, None, lo_open=True)
            check_number("rsb-band-factor", self.band_factor, 0.0, None, lo_open=True)
            check_int("rsb-band-max", self.band_max, 1, 2**20)
            if self.band_points is not None:
                check_int("rsb-band-points", self.band_points, 1, 2**20)
        elif self.band_points is not None:
            from ..model.checks import ParameterError
            raise ParameterError("rsb-band-points", "needs --rsb-band-log2n (the largest dense "
                                                    "rule)")
        if self.split is not None:
            check_int("rsb-split", self.split, 2, 48)
        if self.recentre_from is not None:
            check_number("rsb-recentre-from", self.recentre_from, 0.0, None, lo_open=True)
        check_int("rsb-profile-skips", self.profile_skips, 0, 64)
        check_int("rsb-fold-steps", self.fold_steps, 0, 1000)
        xs = tuple(float(v) for v in self.xs)
        if not xs or any(not (b > a) for a, b in zip((self.x_ref, *xs), xs)):
            from ..model.checks import ParameterError
            raise ParameterError("rsb-xs", f"must be increasing and above x_ref = "
                                           f"{self.x_ref:g}; got {list(xs)}")
        object.__setattr__(self, "xs", xs)
        eps = tuple(float(e) for e in self.eps_stages)
        if not eps or any(not 0 < e <= 1e-2 for e in eps) or any(
                not b < a for a, b in zip(eps, eps[1:])):
            from ..model.checks import ParameterError
            raise ParameterError("rsb-eps", f"must be decreasing widths in (0, 0.01]; got "
                                            f"{list(eps)}")
        object.__setattr__(self, "eps_stages", eps)

    def inner_rules(self, x: float) -> dict:
        """The inner rules of a solve at Parisi ``x``, as keyword arguments of
        :class:`~symattn.numerics.one_step_rsb.OneStepRSBMap` and
        :func:`~symattn.numerics.one_step_rsb.solve_ladder`: ``inner`` (smooth nodes),
        ``fine`` (rough ones), both recentred from ``recentre_from`` on, and ``split``."""
        from .one_step_rsb import InnerRule
        far = self.recentre_from is not None and x >= self.recentre_from
        return {"inner": InnerRule(self.coarse, recentre=far),
                "fine": InnerRule(self.fine, recentre=far),
                "split": None if self.split is None else InnerRule(self.split, split=True)}

    def as_dict(self) -> dict:
        out = {"log2n": self.log2n, "rules": self.rules, "coarse": self.coarse,
               "fine": self.fine, "x_ref": self.x_ref, "xs": list(self.xs), "tol": self.tol,
               "eps_stages": list(self.eps_stages), "max_iter": self.max_iter}
        if self.band_log2n is not None:
            # only with a band, so that run files written before it existed still resume
            out.update(band_log2n=self.band_log2n, band_reach=self.band_reach,
                       band_factor=self.band_factor, band_max=self.band_max)
            if self.band_points is not None:
                out["band_points"] = self.band_points
        for name in ("split", "recentre_from"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("profile_skips", "fold_steps"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out


def _collapsed(row, floor: float | None = None) -> bool:
    """q_1 - q_0 at or below ``floor`` (None: ``COLLAPSED`` q_1)."""
    return row["q1"] - row["q0"] <= (COLLAPSED * row["q1"] if floor is None else floor)


def _usable(row, floor: float | None = None) -> bool:
    return row["converged"] and not _collapsed(row, floor)


def _what(row, finest: bool, failed: str = "") -> str:
    """Why a fixed-x solve is of no use: only solved at a coarser smoothing width, gone to
    q_0 = q_1, or its solver's message."""
    if row["converged"]:
        return "went to q_0 = q_1" if finest else f"solved only at smoothing width {row['eps']:g}"
    return failed + row["message"]


def envelope_shift(profile: list, x_star: float | None = None) -> float:
    r""":math:`\varepsilon_t(x) - \varepsilon_t(x_{\rm ref})` from the x equation: the trapezoid
    rule over ``profile`` (rows with ``x``, ``eps_t``, ``sigma_over_e``, ascending, the first at
    :math:`x_{\rm ref}`) of :math:`d\varepsilon_t/dx = \varepsilon_t(\Sigma/e)/x^2`, and, with
    ``x_star``, half a trapezoid from the last row to :math:`x^*` (where :math:`\Sigma = 0`)."""
    d = [(r["x"], r["eps_t"] * r["sigma_over_e"] / r["x"] ** 2) for r in profile]
    out = sum(0.5 * (a[1] + b[1]) * (b[0] - a[0]) for a, b in zip(d, d[1:]))
    if x_star is not None:
        out += 0.5 * d[-1][1] * (x_star - d[-1][0])
    return out


@dataclass
class RuleRSB:
    """One rule's result: ``status`` (one of :data:`STATUSES`) and ``why``; ``rs``: the RS
    fixed point on the rule; ``ref``: the point at x_ref; ``point``: the stationary (or, if
    ``interpolated``, the interpolated) point; ``x_star``; the paired shifts from ``ref``
    (``d_eps_t`` direct and ``d_eps_t_envelope``, ``d_eps_g``, ``d_q0`` = q_0 - q_1(ref),
    ``d_q1``, ``d_m``, ``d_theta``, ``d_V``); ``rows``: every solve."""

    seed: int
    status: str
    why: str = ""
    rs: dict = field(default_factory=dict)
    ref: dict | None = None
    point: dict | None = None
    x_star: float | None = None
    shifts: dict = field(default_factory=dict)
    rows: list = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        return {"seed": self.seed, "status": self.status, "why": self.why, "rs": self.rs,
                "ref": self.ref, "point": self.point, "x_star": self.x_star,
                "shifts": self.shifts, "rows": self.rows}


#: the shifts reported, as keys of RuleRSB.shifts
SHIFTS = ("d_eps_t", "d_eps_t_envelope", "d_eps_g", "d_q0", "d_q1", "d_m", "d_theta", "d_V")


def rule_channel(params, branch: str, alpha: float, seed: int, settings: RSBSettings):
    """Rule ``seed``'s outer channel of the 1RSB search and its RS fixed point:
    ``(channel, fp, band, used)``; with ``settings.band_log2n`` the jump band
    (:func:`~symattn.numerics.jump_band.jump_band_rule`, drawn at the plain rule's RS point,
    then RS again on the banded rule) and whether it is used: not with too many points (the
    jump set is heavy enough for the plain rule), none (D* = 0: nothing to band) or, with
    ``band_points``, where the plain rule holds ``BAND_BASE_ENOUGH`` of them on average."""
    from .branches import solve_branch
    from .channel import OutputChannel
    from .jump_band import jump_band_rule
    from .quadrature import SobolRule
    s = settings
    ch = OutputChannel(params, SobolRule(s.log2n, seed).nodes())
    fp = solve_branch(params, branch, alpha, ch)
    band, used = None, False
    if s.band_log2n is not None:
        k = s.band_log2n if s.band_points is None else min(s.band_log2n, s.log2n + BAND_FIRST)
        while True:
            band = jump_band_rule(params, alpha, (fp.q, fp.m, fp.theta, fp.V), ch.nodes,
                                  dense_log2n=k, seed=seed, reach=s.band_reach,
                                  factor=s.band_factor)
            if s.band_points is None or band.n_band >= s.band_points or k == s.band_log2n:
                break
            # the band's count grows like the dense rule's size
            k = min(s.band_log2n, k + max(1, math.ceil(math.log2(
                s.band_points / max(band.n_band, 1)))))
        used = 0 < band.n_band <= s.band_max and band.D_pred > 0
        if s.band_points is not None:
            # the base rule's expected count in the band: where it is several, the plain
            # rule resolves the point (the positional branch at alpha_c: 11 of 2^10 at 2^18)
            used = used and band.n_band * 2.0 ** (s.log2n - band.dense_log2n) < BAND_BASE_ENOUGH
        if used:
            ch = OutputChannel(params, band.nodes)
            fp = solve_branch(params, branch, alpha, ch, x0=(fp.q, fp.m, fp.theta, fp.V))
    return ch, fp, band, used


def rule_one_step_rsb(params, branch: str, alpha: float, seed: int, settings: RSBSettings, *,
                      rows=(), save=None, progress=None) -> RuleRSB:
    """The 1RSB search on one rule (module doc).  ``rows``: this rule's solves from an earlier
    run (replayed, not solved again); ``save(row)``: called after every new solve;
    ``progress(text)``: one line per solve."""
    from .observables import generalisation_error
    from .one_step_rsb import solve_ladder

    if branch not in ("positional", "semantic"):
        from ..model.checks import ParameterError
        raise ParameterError("branch", f"1RSB needs positional or semantic, got {branch!r}")
    from .branches import BranchNotFound
    pin = "m" if branch == "semantic" else "theta"
    s = settings
    try:
        ch, fp, band, used = rule_channel(params, branch, alpha, seed, s)
    except BranchNotFound as exc:
        # near a branch end a small rule may have no fixed point of the branch (the semantic
        # alpha = 0.8 on rule 2 of 2^10): this rule fails, the others go on
        if progress:
            progress(f"rule {seed}: no RS fixed point on this rule: {exc}")
        return RuleRSB(seed, "failed", f"no RS fixed point of the branch on this rule: {exc}")
    if band is not None and progress:
        base = band.n_band * 2.0 ** (s.log2n - band.dense_log2n)
        why = ("no point in it" if band.n_band == 0 or band.D_pred <= 0 else
               f"more than {s.band_max} points" if band.n_band > s.band_max else
               f"the plain rule holds {base:.1f} of them on average")
        progress(f"rule {seed}: jump band of {band.n_band} points of 2^{band.dense_log2n} "
                 f"for D = {band.D_band:.2e} ({s.band_factor:g} x the small-D theory's)"
                 + ("" if used else f": not used ({why}), the plain rule instead"))
    rs = {"q": fp.q, "m": fp.m, "theta": fp.theta, "V": fp.V, "eps_t": fp.eps_t}
    if band is not None:
        rs["band"] = {**band.as_dict(), "used": used}
    stored = {tuple(r["key"]): r for r in rows}
    done = []
    floor = COLLAPSED_BAND * band.D_pred if used else None

    def collapsed(row):
        return _collapsed(row, floor)

    def usable(row):
        return _usable(row, floor)

    def finest(row):
        # solved at the finest smoothing width: only such a point may end a profile, bound a
        # bracket or solve the x equation (at the semantic alpha_l a point solved only at 1e-4
        # had Sigma/e = -6e-9 at x = 1000, where the 1e-5 solves change sign near 2e5)
        return row.get("eps", s.eps_stages[-1]) <= s.eps_stages[-1]

    def solve(key, z, hold="x", eps_stages=s.eps_stages):
        # hold: "x" (a profile point), None (the six equations) or "gap" (q1 - q0 held, x free)
        if tuple(key) in stored:
            row = stored[tuple(key)]
        else:
            t0 = time.perf_counter()
            pt = solve_ladder(ch, alpha, z, pin=pin, **s.inner_rules(z[5]),
                              eps_stages=eps_stages, hold_x=hold == "x",
                              hold_gap=hold == "gap", tol=s.tol, max_iter=s.max_iter)
            row = {"key": list(key), "seed": seed, **pt.as_dict(),
                   "z": [float(v) for v in pt.z], "wall": time.perf_counter() - t0}
            if save:
                save(row)
            if progress:
                progress(f"rule {seed}, {key[0]} x = {row['x']:g}: {row['message']} "
                         f"(residual {row['residual']:.1e}; q0/q1 = {row['q0'] / row['q1']:.5f},"
                         f" Sigma/e = {row['sigma_over_e']:+.2e}, {row['wall']:.0f} s)")
        done.append(row)
        return row

    # stalled solves stepped over (one budget): x of the profile, x of the secant in x, gaps
    # of the secant in the gap
    skipped, stepped, stepped_gap = [], [], []

    def result(status, why, **kw):
        for xs, what in ((skipped, "the profile skipped x"),
                         (stepped, "the secant stepped over x"),
                         (stepped_gap, "the secant in the gap stepped over q_1 - q_0")):
            if xs:
                why = "; ".join(filter(None, (why, f"{what} = " + ", ".join(
                    f"{v:g}" for v in xs) + " (stalled)")))
        return RuleRSB(seed, status, why, rs=rs, rows=done, **kw)

    def gap(row):
        return row["q1"] - row["q0"]

    def at_gap(key, z, d):
        # the solution with q1 - q0 = d and x free, from z moved to that gap about its common
        # level; at the finest width only (warm-started from a point solved there)
        z = list(z)
        mid = (z[0] + z[1]) / 2
        z[0], z[1] = mid - d / 2, mid + d / 2
        return solve(key, z, hold="gap", eps_stages=(s.eps_stages[-1],))

    def no_change(why, path):
        # Sigma/e did not change sign: the shifts at the last good point, the x equation
        # integrated along the way (in path order: past a fold x runs back)
        return result("no sign change", why, ref=ref, point=path[-1],
                      shifts=_shifts(params, ref, path[-1], envelope_shift(path),
                                     generalisation_error))

    def continue_in_gap(profile):
        # past a stall of the profile: the solutions followed in q1 - q0 (x free), the way the
        # gap moved over the step before, by FOLD_SHARE of the gap per step
        # (a step that stalls halved, FOLD_HALVINGS times), at most fold_steps solves, until
        # Sigma/e changes sign from + to -. Returns the path (from the profile's last point at
        # the finest width: the steps are solved there) and why it ended ("" at a sign
        # change, its last two points around it)
        fine = [r for r in profile if finest(r)]
        if len(fine) < 2:
            return fine[-1:] or profile[-1:], "fewer than two profile points at the last width"
        path, before = [fine[-1]], fine[-2]
        sign = -1.0 if gap(path[0]) < gap(before) else 1.0
        share, halvings = FOLD_SHARE, 0
        for i in range(s.fold_steps):
            last = path[-1]
            d = gap(last) * (1.0 + sign * share)
            # predictor: the line through the last two points, in the gap
            run = gap(last) - gap(before)
            t = (d - gap(last)) / run if run else 0.0
            z = [u + t * (u - v) for u, v in zip(last["z"], before["z"])]
            if not s.x_ref < z[5]:
                # the branch runs back to small x (past a fold, with Sigma/e -> 0 as x -> 0)
                return path, (f"x falls below x_ref = {s.x_ref:g} (the next step's start: "
                              f"x = {z[5]:.4g})")
            row = at_gap(("gap", i, d), z, d)
            if not row["converged"]:
                if halvings == FOLD_HALVINGS:
                    return path, (f"at q_1 - q_0 = {d:.4g} the solve failed: {row['message']} "
                                  f"(the step halved {FOLD_HALVINGS} times)")
                share, halvings = share / 2, halvings + 1
                continue
            if not usable(row):
                return path, f"went to q_0 = q_1 (q_1 - q_0 = {gap(row):.3g})"
            if not s.x_ref < row["x"] <= s.xs[-1]:
                return path, f"x left [{s.x_ref:g}, {s.xs[-1]:g}] (x = {row['x']:g})"
            before = last
            path.append(row)
            share, halvings = min(FOLD_SHARE, 2 * share), 0
            if last["sigma_over_e"] > 0 >= row["sigma_over_e"]:
                return path, ""
        return path, f"no sign change in {s.fold_steps} steps"

    def secant(lo, hi, below, newton, by_gap):
        # the x equation as a function of x (by_gap: of q1 - q0) along the solutions holding
        # it: its root by regula falsi (Illinois) on the bracket [lo, hi], each point solved to
        # tol in the five others (the x equation's rounding, 2e-9, is below SIGMA_TOL; the
        # six-equation Newton can stall above it). Illinois halves the value kept at an end
        # only when that end is kept twice running. ``below``: the solves up to lo, in the
        # order of the path (by_gap) or any
        par = gap if by_gap else (lambda r: r["x"])
        name = "q_1 - q_0" if by_gap else "x"
        halved, last, i, stalled = [0, 0], None, 0, None
        while i < SECANT_STEPS:
            if stalled is None:
                fl = lo["sigma_over_e"] / 2 ** halved[0]
                fh = hi["sigma_over_e"] / 2 ** halved[1]
                t = fl / (fl - fh)
            else:
                # the last step stalled (at a point, not for want of one: which x stalls
                # changes with the last bits of the arithmetic): the log-midpoint of the longer
                # side of it
                lp, sp, hp = (math.log(v) for v in (par(lo), stalled, par(hi)))
                v = math.exp((lp + sp) / 2 if abs(sp - lp) > abs(hp - sp) else (sp + hp) / 2)
                t = (v - par(lo)) / (par(hi) - par(lo))
            z = [u + t * (v - u) for u, v in zip(lo["z"], hi["z"])]
            if by_gap:
                d = par(lo) + t * (par(hi) - par(lo))
                row = at_gap(("gap-secant", i, d), z, d)
            else:
                # keyed by the x solved at: a resumed run replays a row only where it lands
                # again
                row = solve(("secant", i, z[5]), z)
            i += 1
            inside = min(par(lo), par(hi)) < par(row) < max(par(lo), par(hi))
            if not (usable(row) and finest(row) and inside):
                coarse = row["converged"] and not finest(row)
                budget = len(skipped) + len(stepped) + len(stepped_gap)
                if (coarse or not row["converged"]) and budget < s.profile_skips:
                    (stepped_gap if by_gap else stepped).append(par(row))
                    stalled = par(row)
                    continue
                newton += (f"; the secant in {name} stopped at step {i}: "
                           + _what(row, finest(row)))
                break
            stalled = None
            if abs(row["sigma_over_e"]) <= max(SIGMA_TOL, s.tol):
                pt = {**row, "residual": max(row["residual"], abs(row["sigma_over_e"])),
                      "message": f"converged (the x equation by a secant in {name} on "
                                 f"solves holding it, {i} steps)"}
                return result("stationary", newton + f"; solved by the secant in {name}",
                              ref=ref, point=pt, x_star=pt["x"],
                              shifts=_shifts(params, ref, pt, envelope(below, pt["x"], by_gap),
                                             generalisation_error))
            side = 0 if row["sigma_over_e"] > 0 else 1
            halved[side] = 0
            halved[1 - side] += last == side
            last = side
            if side == 0:
                lo = row
                below = below + [row]
            else:
                hi = row
        else:
            newton += (f"; the secant in {name} did not reach |Sigma/e| <= {SIGMA_TOL:g} in "
                       f"{i} steps")
        t = lo["sigma_over_e"] / (lo["sigma_over_e"] - hi["sigma_over_e"])
        why = newton + f"; values interpolated between x = {lo['x']:g} and {hi['x']:g}"
        interp = {k: lo[k] + t * (hi[k] - lo[k])
                  for k in ("q0", "q1", "m", "theta", "V", "x", "eps_t")}
        interp.update(converged=False, message=why, sigma_over_e=0.0)
        return result("interpolated", why, ref=ref, point=interp, x_star=interp["x"],
                      shifts=_shifts(params, ref, interp, envelope(below, interp["x"], by_gap),
                                     generalisation_error))

    tries = []
    ratios = START_RATIOS
    if used:
        ratios = tuple(round(1.0 - k * band.D_pred / fp.q, 9) for k in BAND_STARTS)
    for ratio in ratios:
        ref = solve(("ref", s.x_ref, ratio),
                    [ratio * fp.q, fp.q, fp.m, fp.theta, fp.V, s.x_ref])
        tries.append(ref)
        if usable(ref):
            break
    else:
        starts = " and ".join(map(str, ratios))
        if all(collapsed(r) for r in tries):
            return result("reduces to RS", f"Newton went to q_0 = q_1 from q_0/q_RS = {starts}",
                          ref=tries[-1])
        return result("failed", f"the reference point at x = {s.x_ref:g} from q_0/q_RS = "
                                f"{starts}: " + "; ".join(
                                    "went to q_0 = q_1" if collapsed(r) else r["message"]
                                    for r in tries))
    profile = [ref]
    pending, halvings, tried = list(s.xs), 0, set()
    while pending:
        x = pending[0]
        z = list(profile[-1]["z"])
        z[5] = x
        # a second try at x (after a halving) starts from another point: its own key, so that
        # a resumed run replays each solve in order
        row = solve(("profile", x) if x not in tried else ("profile", x, profile[-1]["x"]), z)
        tried.add(x)
        if not usable(row) or (row["sigma_over_e"] <= 0 and not finest(row)):
            if halvings < PROFILE_HALVINGS:
                # a long step in x stalled or fell onto q0 = q1: try halfway (in log x) from
                # the last good point, then this x again from there
                pending.insert(0, math.sqrt(profile[-1]["x"] * x))
                halvings += 1
                continue
            # drop this grid step (and its halving points); the next grid x from the last
            # good point
            while pending and pending.pop(0) not in s.xs:
                pass
            if len(skipped) + len(stepped) < s.profile_skips and pending:
                skipped.append(x)
                halvings = 0
                continue
            last = profile[-1]["x"]
            what = _what(row, finest(row), "failed: ")
            if not s.fold_steps or len(profile) < 2:
                return no_change(f"no change of sign of Sigma/e from + to - up to x = {last:g}; "
                                 f"at x = {x:g} the solve {what}", profile)
            path, end = continue_in_gap(profile)
            # the way in order: the profile up to the path's start, then the path
            trail = profile[:profile.index(path[0])] + path
            why = (f"the profile stalled at x = {x:g} (the solve {what}) with Sigma/e > 0 up "
                   f"to x = {last:g}; continued in q_1 - q_0 from {gap(path[0]):.4g} "
                   f"(x = {path[0]['x']:g}) to {gap(path[-1]):.4g} (x = {path[-1]['x']:g}, "
                   f"Sigma/e = {path[-1]['sigma_over_e']:+.2e})")
            if end:
                return no_change(f"no change of sign of Sigma/e from + to -: {why}: {end}",
                                 trail)
            return secant(path[-2], path[-1], trail[:-1], why, by_gap=True)
        if pending.pop(0) in s.xs:
            # halvings count per grid step: after this many, a step that keeps failing ends
            # the profile however close the last good point came
            halvings = 0
        profile.append(row)
        if profile[-2]["sigma_over_e"] > 0 >= row["sigma_over_e"]:
            break
    else:
        return no_change(f"no change of sign of Sigma/e from + to - up to x = {s.xs[-1]:g}",
                         profile)
    lo, hi = profile[-2], profile[-1]
    below = profile[:-1]

    def start(lo, hi):
        t = lo["sigma_over_e"] / (lo["sigma_over_e"] - hi["sigma_over_e"])
        return [u + t * (v - u) for u, v in zip(lo["z"], hi["z"])], t

    def good(st, lo, hi):
        return usable(st) and lo["x"] / 2 <= st["x"] <= 2 * hi["x"]

    z0, t = start(lo, hi)
    st = solve(("stationary",), z0, hold=None, eps_stages=(s.eps_stages[-1],))
    if not good(st, lo, hi):
        # Newton wandered (Sigma/e is rough on a small rule): narrow the bracket by bisection
        # in log x on fixed-x solves, then Newton again from closer
        for i in range(BISECTIONS):
            z, _ = start(lo, hi)
            z[5] = math.sqrt(lo["x"] * hi["x"])
            mid = solve(("bisect", i), z)
            if not (usable(mid) and finest(mid)):
                break
            if mid["sigma_over_e"] > 0:
                lo = mid
                below = below + [mid]
            else:
                hi = mid
        z0, t = start(lo, hi)
        st = solve(("stationary", 2), z0, hold=None, eps_stages=(s.eps_stages[-1],))
    if good(st, lo, hi):
        return result("stationary", "", ref=ref, point=st, x_star=st["x"],
                      shifts=_shifts(params, ref, st, _below(below, st["x"]),
                                     generalisation_error))
    newton = (f"the six-equation Newton from x = {z0[5]:g}: "
              + (st["message"] if not st["converged"] else
                 "went to q_0 = q_1" if collapsed(st) else f"left the bracket (x = {st['x']:g})"))
    return secant(lo, hi, below, newton, by_gap=False)


#: the continuation past a stalled profile: its step, a share of q1 - q0, and how many times
#: a step that stalls is halved before it stops (studies/one_step_rsb_fold.py: steps of 1 %
#: pass the fold at the semantic alpha = 1.5 on rule 0)
FOLD_SHARE = 0.01
FOLD_HALVINGS = 3

#: fixed-x bisections of the bracket before Newton is tried a second time
BISECTIONS = 3

#: regula falsi steps in x on fixed-x solves after the second Newton (each one full solve)
SECANT_STEPS = 8

#: |Sigma/e| at which the secant's fixed-x point is taken to solve the x equation: above the
#: 40-digit x equation's rounding at the semantic alpha_c, 1.5 - 7e-9
#: (studies/one_step_rsb_x_noise.py), where tol = 1e-9 is out of reach
SIGMA_TOL = 1e-8


def _below(rows, x_star) -> float:
    """The x equation integrated from x_ref to ``x_star`` over the solves below it."""
    return envelope_shift(sorted((r for r in rows if r["x"] < x_star), key=lambda r: r["x"]),
                          x_star)


def envelope(rows, x_star, path: bool) -> float:
    """The x equation integrated from x_ref to ``x_star``: over ``rows`` in their order (a path
    that may run back in x past a fold; its last row next to ``x_star``), else over the rows
    below ``x_star`` (:func:`_below`)."""
    return envelope_shift(rows, x_star) if path else _below(rows, x_star)


def _shifts(params, ref, pt, d_env, generalisation_error) -> dict:
    def eg(r):
        return generalisation_error(params, r["q1"], r["m"], r["theta"], coarse=0)[0]
    return {"d_eps_t": pt["eps_t"] - ref["eps_t"], "d_eps_t_envelope": d_env,
            "d_eps_g": eg(pt) - eg(ref), "d_q0": pt["q0"] - ref["q1"],
            "d_q1": pt["q1"] - ref["q1"], "d_m": pt["m"] - ref["m"],
            "d_theta": pt["theta"] - ref["theta"], "d_V": pt["V"] - ref["V"]}


@dataclass
class OneStepRSBEstimate:
    """The 1RSB point of ``branch`` at ``alpha`` over ``settings.rules`` rules.

    ``status``: ``converged`` (at least two rules solved all six equations; the means are over
    them), ``interpolated`` (at least two rules found the sign change of Sigma/e but not all
    solved the six equations), ``reduces to RS`` (Newton went to q_0 = q_1 on every rule: no
    1RSB point distinct from RS was found, the shifts are 0), or ``not resolved``; ``note``
    says why.  ``shifts``: mean and standard error over the rules used of each paired shift
    (:data:`SHIFTS`) and of ``x_star`` and ``q0_over_q1``; ``rs``: an accurate RS fixed point
    (:func:`~symattn.numerics.estimates.fixed_point_estimate`), to which the shifts are added
    in :meth:`values`."""

    branch: str
    alpha: float
    settings: RSBSettings
    per_rule: list
    status: str
    note: str
    shifts: dict
    rs: dict | None = None
    wall_time: float = 0.0

    @property
    def converged(self) -> bool:
        return self.status in ("converged", "reduces to RS")

    def values(self) -> dict:
        """The 1RSB prediction: the accurate RS values plus the mean shifts, ``(value, error)``
        (the error: the shift's standard error over rules and the RS error, in quadrature);
        both training-loss routes."""
        if self.rs is None or not self.shifts:
            return {}
        out = {}
        for name, key, rs_key in (("eps_t", "d_eps_t", "eps_t"),
                                  ("eps_t_envelope", "d_eps_t_envelope", "eps_t"),
                                  ("eps_g", "d_eps_g", "eps_g"), ("q0", "d_q0", "q"),
                                  ("q1", "d_q1", "q"), ("m", "d_m", "m"),
                                  ("theta", "d_theta", "theta"), ("V", "d_V", "V")):
            d, e = self.shifts[key]
            out[name] = (self.rs[rs_key] + d, math.hypot(e, self.rs.get(rs_key + "_err", 0.0)))
        return out

    def to_dict(self) -> dict:
        return {"branch": self.branch, "alpha": self.alpha, "rsb": 1, "status": self.status,
                "converged": self.converged, "note": self.note,
                "settings": self.settings.as_dict(),
                "shifts": {k: list(v) for k, v in self.shifts.items()},
                "values": {k: list(v) for k, v in self.values().items()},
                "rs": self.rs, "wall_time": self.wall_time,
                "per_rule": [r.as_dict() for r in self.per_rule]}


def one_step_rsb_estimate(params, branch: str, alpha: float,
                          settings: RSBSettings = RSBSettings(), *, rs=None, rows=(), save=None,
                          progress=None) -> OneStepRSBEstimate:
    """:func:`rule_one_step_rsb` on rules ``0 .. settings.rules - 1`` (one after the other:
    each is a chain of warm-started solves), and the mean shifts (class doc).  ``rs``: the
    accurate RS fixed point's dict (``value`` and ``value_err`` keys), if known; ``rows``:
    earlier solves (each with its ``seed``) to replay."""
    from ..stats import mean_se
    t0 = time.perf_counter()
    per = []
    for seed in range(settings.rules):
        mine = [r for r in rows if r["seed"] == seed]
        per.append(rule_one_step_rsb(params, branch, alpha, seed, settings, rows=mine,
                                     save=save, progress=progress))
    counts = {st: sum(r.status == st for r in per) for st in STATUSES}
    solved = [r for r in per if r.status == "stationary"]
    found = [r for r in per if r.status in ("stationary", "interpolated")]
    tally = ", ".join(f"{n} {st}" for st, n in counts.items() if n)
    if len(solved) >= 2:
        status, used = "converged", solved
    elif len(found) >= 2:
        status, used = "interpolated", found
    elif counts["reduces to RS"] == len(per):
        status, used = "reduces to RS", []
    else:
        status, used = "not resolved", []
    note = f"rules: {tally}" + (
        "" if not used else "; means over the rules with a stationary x"
        + (" or one interpolated in its bracket" if status == "interpolated" else ""))
    shifts = {}
    if used:
        shifts = {k: mean_se([r.shifts[k] for r in used]) for k in SHIFTS}
        shifts["x_star"] = mean_se([r.x_star for r in used])
        shifts["q0_over_q1"] = mean_se([r.point["q0"] / r.point["q1"] for r in used])
    elif status == "reduces to RS":
        shifts = {k: (0.0, 0.0) for k in SHIFTS}
    return OneStepRSBEstimate(branch, float(alpha), settings, per, status, note, shifts,
                              rs=rs, wall_time=time.perf_counter() - t0)
