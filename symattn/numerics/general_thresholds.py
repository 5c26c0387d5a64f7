r"""The thresholds of the general model: ``alpha_c`` where the global minimum changes character,
and ``alpha_l`` (model page §7).

On one scrambled rule (:func:`general_thresholds_on_nodes`):

1. **Which branches.**  :func:`~symattn.numerics.general_search.find_fixed_points` at both ends
   of a bracket ``[alpha_lo, alpha_hi]`` gives the global minimum's character below
   (``below``) and above (``above``); they must differ (else :class:`ThresholdNotFound`).  The
   characters may also be given, with start points, to skip the searches.
2. **Following them.**  Each branch is solved by :func:`~symattn.numerics.general.solve_general`
   warm-started from its nearest solved ``alpha`` (:class:`GeneralBranch`; if that fails, in
   four sub-steps, then from the search's cold starts of its character), *pinned* where the
   character makes a symmetry exact (positional: ``theta = 0``; semantic: ``M = 0``; both
   invariant subspaces for every shape,
   :data:`~symattn.numerics.general.PINNABLE`), unpinned for a mixed branch.  A solve counts
   only if it converged and kept its character; otherwise the branch is *missing* there.
3. **alpha_c**, first-order transitions: root of :math:`\Delta(\alpha) = \varepsilon_t^{\rm below} -
   \varepsilon_t^{\rm above}` in the bracket by safeguarded Newton, with
   :math:`\Delta' = \mathbb E\mathcal M^{\rm below} - \mathbb E\mathcal M^{\rm above}` (envelope
   theorem, as :mod:`symattn.numerics.thresholds`); a branch missing counts as the other one
   being global (``below`` missing: ``Delta > 0``).  Newton steps leaving the bracket are
   replaced by bisection.  A Newton step below ``root_tol`` is accepted only when the point
   just past it has the opposite sign (a *confirmed* sign change: branches that merely touch
   give :math:`\Delta \to 0` with :math:`\Delta' \to 0` and must not pass for a crossing).
   Its error is the width of that last bracket.

   *Continuous* transitions, positional to mixed (the rank-2 student: a second column learns
   the semantic direction on top of the positional one): the mixed branch is born off the
   positional one where the positional point turns unstable in ``theta``, the largest
   eigenvalue of the map's ``theta`` block (:func:`theta_stability`, exact likelihood-ratio
   derivatives) crossing one; ``alpha_c`` is that point, by Brent's method along the
   positional branch.  There the branches' ``eps_t`` differ by the square of the small
   ``theta``: a root of ``Delta`` would be ill-conditioned, and on rules of ``2^12`` to
   ``2^14`` points it is below the integration error (docs/numerics.md).  Whether the birth
   is super- or subcritical (the mixed branch lower or higher just above it) is not decided
   here; other continuous transitions (off a semantic branch, in ``M``) are treated as
   first-order.
4. **Is it global?**  With ``verify`` (default), :func:`find_fixed_points` at ``alpha_c``.
   A point found there of a branch's own character that, solved as that branch (pinned), lies
   lower than it by more than ``verify_margin`` means the branch followed was not the lowest
   of its kind (``L = 3``: the simplex encodings' positional points in different directions
   of ``Pi``'s two-dimensional eigenspace have different ``eps_t``): that branch is replaced
   and ``alpha_c`` located again (at most twice; ``switches``).  An unpinned twin of a pinned
   branch, which the rule's error moves by about ``1e-8``, solves back to the branch and
   changes nothing.  Points found lower than both branches are reported in
   ``lower_points``; ``verified`` is False if one of them has another character than the
   two branches.
5. **alpha_l**: where the global minimum's :math:`\varepsilon_g` crosses
   :math:`\varepsilon_{\rm lin}`, by Brent's method on the branch that is global there (as
   the paper's route).  ``eps_g`` and ``eps_lin`` are the RQMC values on the same rule
   (:func:`~symattn.numerics.general.general_eps_g`, :func:`~symattn.numerics.general.
   general_eps_lin`); for the paper's shape the paper's Gauss-Hermite values
   (:mod:`symattn.numerics.observables`), so that its thresholds through this path are the
   paper route's (``tests/test_general_thresholds.py``).  Where the global branch's
   ``eps_g`` does not cross ``eps_lin`` up to ``alpha = 8`` (``L = 3``: the semantic student
   cannot represent the teacher's positional part), ``alpha_l`` is ``nan`` and
   ``alpha_l_branch`` says why; ``alpha_c`` stands.

6. **RS stability.**  The two branches' fixed points at ``alpha_c`` (``at_alpha_c``) carry
   their RS-stability report on the rule
   (:func:`~symattn.numerics.general_stability.general_rs_stability`); the searches' points,
   used internally, do not.

:func:`compute_general_thresholds`: the mean over scrambles, with one standard error plus the
largest root bracket as the error bar (as :mod:`symattn.numerics.thresholds`), and the reports
at each scramble's ``alpha_c`` combined per branch (``rs_stability``, keyed by character;
:func:`~symattn.numerics.stability.combine_stability`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize

from ..model import ModelParams
from ..results import format_estimate
from ..stats import mean_se
from .coordinates import InvalidOrderParameters
from .general import (GeneralChannel, GeneralFixedPoint,
                      OrderParameters, general_eps_g, general_eps_lin, nodes_for, solve_general)
from .general_search import character, find_fixed_points, search_starts
from .general_stability import general_rs_stability
from .stability import combine_stability
from .thresholds import ThresholdNotFound

__all__ = ["GeneralBranch", "GeneralRuleThresholds", "GeneralThresholds",
           "general_thresholds_on_nodes", "compute_general_thresholds", "combine_rules",
           "pin_for", "theta_stability", "ThresholdNotFound"]

_MAX_ROOT_STEPS = 60
#: at most this many times a branch is replaced by a lower one of its kind (module doc, step 4)
_MAX_SWITCHES = 2
#: how far up the alpha_l search may follow the upper branch (as the paper's route)
_ALPHA_SCAN_MAX = 8.0


def pin_for(kind: str) -> tuple:
    """The exact pin of a branch of character ``kind`` (module doc, step 2)."""
    return {"positional": ("theta",), "semantic": ("M",), "mixed": (),
            "trivial": ("M", "theta")}[kind]


class GeneralBranch:
    """One branch of character ``kind`` followed along ``alpha`` on one rule (module doc,
    step 2): ``at(alpha)`` is its converged fixed point there, or ``None`` (missing; the
    reason in ``last_failure``)."""

    def __init__(self, channel: GeneralChannel, kind: str, alpha0: float, x0: OrderParameters,
                 tol: float = 1e-10, max_iter: int = 40, substeps: int = 4):
        self.channel, self.kind, self.tol = channel, kind, tol
        self.max_iter, self.substeps = max_iter, substeps
        self.pin = pin_for(kind)
        self.solved = {float(alpha0): x0}
        self.last_failure = ""
        self.solves = 0

    def _solve(self, alpha, x0):
        self.solves += 1
        try:
            fp = solve_general(self.channel, alpha, x0, tol=self.tol, max_iter=self.max_iter,
                               pin=self.pin)
        except InvalidOrderParameters as exc:
            self.last_failure = f"alpha = {alpha:.6g}: {exc}"
            return None
        if not fp.converged:
            self.last_failure = f"alpha = {alpha:.6g}: {fp.message}"
            return None
        got = character(fp.x)
        if got != self.kind:
            self.last_failure = f"alpha = {alpha:.6g}: the solve became {got}"
            return None
        self.solved[float(alpha)] = fp.x
        return fp

    def at(self, alpha: float) -> GeneralFixedPoint | None:
        """Warm-started from the nearest solved ``alpha``; failing that, in ``substeps``
        steps from there; failing that, from the search's cold starts of this character
        (:func:`~symattn.numerics.general_search.search_starts`, pinned as the branch is)."""
        a0 = min(self.solved, key=lambda a: abs(a - alpha))
        fp = self._solve(alpha, self.solved[a0])
        if fp is None and self.substeps > 1 and a0 != alpha:
            for a in np.linspace(a0, alpha, self.substeps + 1)[1:]:
                fp = self._solve(float(a), self.solved[min(self.solved,
                                                          key=lambda b: abs(b - a))])
                if fp is None:
                    break
        if fp is None:
            why = self.last_failure
            for label, x0, _ in search_starts(self.channel.params):
                if label.startswith(self.kind):
                    fp = self._solve(alpha, x0)
                    if fp is not None:
                        break
            if fp is None:
                self.last_failure = why + "; and from the cold starts"
        return fp


def theta_stability(channel: GeneralChannel, x: OrderParameters, alpha: float) -> tuple:
    r"""``(eigenvalue, J)``: the Jacobian ``J`` of the map's ``theta`` block at a point with
    ``theta = 0`` (a positional or trivial fixed point), ``(r_t r) x (r_t r)``, and its largest
    eigenvalue (real part); a mixed branch is born off the positional one where it crosses
    one (module doc, step 3).

    At ``theta = 0`` the map is block diagonal (``theta`` is odd under ``eta -> -eta``, the
    other order parameters even), and the ``theta`` block is taken exactly by likelihood
    ratios, as :mod:`symattn.numerics.bifurcation` does for the paper's trivial point, so that
    the surface terms of the prox's jumps are kept: per token :math:`(w_l - M_l, h^*_l)` is
    centred Gaussian with cross-covariance :math:`\theta`, whose score at :math:`\theta = 0` is
    :math:`\partial_{\theta_{cb}}\log p = \sum_l \eta_{l,c}(K^{-\top}\xi_l)_b/\sqrt\rho`; with
    :math:`\hat\theta = \alpha B^{-\top}\sum_l\mathbb E[\eta_l f_l^\top]` and
    :math:`\eta_l = B^{-1}(h^*_l - \theta K^{-\top}\xi_l)` (``B`` is even in ``theta``),

    .. math::

        \frac{\partial\hat\theta_{c'b'}}{\partial\theta_{cb}} = \frac{\alpha}{\sqrt\rho}\Big(
          \mathbb E\Big[\sum_l\eta_{l,c'}f_{l,b'}\;\partial_{\theta_{cb}}\log p\Big]
          - \delta_{cc'}\,\big(K^{-\top}\textstyle\sum_l\mathbb E[\xi_lf_l^\top]\big)_{bb'}/\sqrt\rho\Big),

    and :math:`\delta\theta = \sigma^2\rho\,\delta\hat\theta\,\mathcal A^{-1}` (the prior
    equation's derivative, generated: ``prior_theta_jacobian`` of
    :mod:`symattn.compile.general_equations`).  At the paper's shape this is :mod:`symattn.numerics.bifurcation`'s
    :math:`\lambda_\theta` (``tests/test_general_thresholds.py``).
    """
    from .channel import OutputChannel
    from .coordinates import Coordinates
    from .saddle import SaddlePointMap
    p = channel.params
    if np.any(x.theta != 0):
        raise ValueError("theta_stability is the linearisation at theta = 0")
    rho = p.rho
    L, r = p.L, p.r
    K, _ = channel.factors(x)
    coords = Coordinates(p, gauge=False)
    F = SaddlePointMap(p, alpha, OutputChannel(p, channel.nodes, channel.gtol,
                                               coordinates=coords, general=channel),
                       symmetry="eta_flip")
    st = F(coords.project(x, ("theta",)), eps=0.0)   # the hard choice, the rule averaged
    n = channel.nodes.size
    f = (st.channel.prox.h - st.channel.w).reshape(n, L, r) @ np.linalg.inv((x.V + x.V.T) / 2)
    u = channel.xi @ np.linalg.inv(K)                                # u_l = K^-T xi_l
    wt = channel.weights
    score = np.einsum("nlc,nlb->ncb", channel.eta, u) / np.sqrt(rho)  # (n, r_t, r)
    ef = np.einsum("nlc,nlb->ncb", channel.eta, f)                   # sum_l eta_l f_l^T
    D = np.einsum("n,npq,ncb->pqcb", wt, ef, score)
    uf = np.einsum("n,nlb,nlq->bq", wt, u, f) / np.sqrt(rho)         # (K^-T Sxf) / sqrt(rho)
    for c in range(p.r_t):
        D[c, :, c, :] -= uf.T
    D *= alpha / np.sqrt(rho)
    n = p.r_t * p.r
    V_hat = st.hats[coords.blocks["V"]]
    prior = np.reshape(channel.equations.prior_theta_jacobian(
        V_hat, float(p.sigma), float(p.lam), float(rho)), (n, n))
    J = np.empty((n, n))
    for k in range(n):
        c, b = divmod(k, p.r)
        J[:, k] = prior @ D[:, :, c, b].ravel()
    return float(np.max(np.linalg.eigvals(J).real)), J


@dataclass
class GeneralRuleThresholds:
    """The thresholds on one rule, with the two branches' fixed points at ``alpha_c``."""

    seed: int
    below: str
    above: str
    #: ``first-order`` (the branches cross) or ``continuous`` (the upper one is born off the
    #: lower one; module doc, step 3)
    transition: str
    alpha_c: float
    alpha_c_err: float
    alpha_l: float
    alpha_l_err: float
    alpha_l_branch: str
    eps_lin: float
    at_alpha_c: dict
    root_steps: int
    solves: int
    verified: bool | None
    lower_points: list
    searches: dict
    wall_time: float
    #: how often a lower point of a branch's own character found at ``alpha_c`` replaced the
    #: branch (module doc, step 4)
    switches: int = 0
    #: each branch's solved point nearest ``alpha_c`` (``{"alpha": a, "q": ..., ...}``): where
    #: other scrambles start (for a branch born at ``alpha_c``, a point above it)
    branch_points: dict = field(default_factory=dict)

    def starts(self) -> dict:
        """``branches`` for :func:`general_thresholds_on_nodes` on another scramble."""
        out = {}
        for side, kind in (("below", self.below), ("above", self.above)):
            d = self.branch_points[side]
            x = OrderParameters(*(np.array(d[k], float) for k in ("q", "M", "theta", "V")))
            out[side] = (kind, x, d["alpha"])
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        d["at_alpha_c"] = {k: v.as_dict() for k, v in self.at_alpha_c.items()}
        if math.isnan(self.alpha_l):
            d["alpha_l"] = d["alpha_l_err"] = None
        return d


@dataclass
class GeneralThresholds:
    """Mean over scrambles with error bars (one standard error plus the largest root bracket)."""

    alpha_c: float
    alpha_c_err: float
    alpha_l: float
    alpha_l_err: float
    eps_lin: float
    eps_lin_err: float
    below: str
    above: str
    transition: str
    params: dict
    settings: dict
    per_rule: list = field(repr=False)
    wall_time: float = 0.0
    #: why ``alpha_l`` is ``nan`` (not found on some scramble), or ""
    alpha_l_note: str = ""
    #: per branch character, the RS-stability reports at each scramble's ``alpha_c`` combined
    #: (module doc, step 6; empty when combined from saved per-rule dicts)
    rs_stability: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (f"GeneralThresholds({self.below} -> {self.above} ({self.transition}): alpha_c = "
                f"{format_estimate(self.alpha_c, self.alpha_c_err)}, alpha_l = "
                f"{format_estimate(self.alpha_l, self.alpha_l_err)}; {len(self.per_rule)} "
                f"scrambles of 2^{self.settings['log2n']} points, {self.wall_time:.0f} s)")

    def to_dict(self) -> dict:
        """JSON-ready (``alpha_l`` not found: ``None``, with ``alpha_l_note``)."""
        al = (None, None) if math.isnan(self.alpha_l) else (self.alpha_l, self.alpha_l_err)
        return {"alpha_c": self.alpha_c, "alpha_c_err": self.alpha_c_err,
                "alpha_l": al[0], "alpha_l_err": al[1],
                "eps_lin": self.eps_lin, "eps_lin_err": self.eps_lin_err,
                "alpha_l_note": self.alpha_l_note,
                "below": self.below, "above": self.above, "transition": self.transition,
                "params": self.params,
                "settings": self.settings, "wall_time": self.wall_time,
                "verified": all(_get(r, "verified") is not False for r in self.per_rule),
                "rs_stability": {k: r.to_dict() for k, r in self.rs_stability.items()},
                "per_rule": [r if isinstance(r, dict) else r.as_dict() for r in self.per_rule]}


def _get(r, k):
    return r[k] if isinstance(r, dict) else getattr(r, k)


def _observables(params: ModelParams, nodes):
    """``(eps_g(x), eps_lin)`` (module doc, step 5)."""
    if params.is_paper_shape:
        from .observables import generalisation_error, linear_baseline_error
        return (lambda x: generalisation_error(params, x.q[0, 0], x.M[0, 0], x.theta[0, 0])[0],
                linear_baseline_error(params)[0])
    return (lambda x: general_eps_g(params, x, nodes), general_eps_lin(params, nodes))


def _global(found, failed, alpha):
    if not found:
        raise ThresholdNotFound(f"no fixed point converged at alpha = {alpha:g} "
                                f"({len(failed)} starts failed)")
    return found[0]


def _alpha_c(below: GeneralBranch, above: GeneralBranch, lo: float, hi: float, root_tol: float,
             alpha0: float | None):
    """Module doc, step 3: ``(alpha_c, bracket width, fp_below, fp_above, steps)``."""
    alpha = math.sqrt(lo * hi) if alpha0 is None else float(np.clip(alpha0, lo, hi))
    for it in range(1, _MAX_ROOT_STEPS + 1):
        fb, fa = below.at(alpha), above.at(alpha)
        if fb is None and fa is None:
            raise ThresholdNotFound(f"alpha_c: neither branch at alpha = {alpha:.6g} "
                                    f"({below.kind}: {below.last_failure}; {above.kind}: "
                                    f"{above.last_failure})")
        if fb is None or fa is None:
            delta, new = (1.0 if fb is None else -1.0), None
        else:
            delta = fb.eps_t - fa.eps_t
            slope = fb.E_M - fa.E_M
            new = alpha - delta / slope if slope != 0 else None
        if delta < 0:
            lo = alpha
        else:
            hi = alpha
        if hi - lo <= root_tol and fb is not None and fa is not None:
            return alpha, hi - lo, fb, fa, it
        if new is not None and abs(new - alpha) < root_tol:
            # confirm the sign change just past the Newton root
            past = new + math.copysign(root_tol, new - alpha)
            gb, ga = below.at(past), above.at(past)
            if gb is not None and ga is not None:
                d2 = gb.eps_t - ga.eps_t
                if np.sign(d2) != np.sign(delta):
                    return alpha, abs(past - alpha), fb, fa, it
                if d2 < 0:
                    lo = max(lo, past)
                else:
                    hi = min(hi, past)
        if new is None or not lo < new < hi:
            new = 0.5 * (lo + hi)
        alpha = new
    raise ThresholdNotFound(f"alpha_c: no convergence in {_MAX_ROOT_STEPS} steps "
                            f"(bracket [{lo:.8g}, {hi:.8g}])")


def _birth(below: GeneralBranch, lo: float, hi: float, root_tol: float):
    """Module doc, step 3 (continuous case): ``(alpha_b, error, fp_below, steps)``, where the
    ``theta`` eigenvalue of the ``below`` (positional) branch crosses one: scanned up from
    ``lo`` by factors of 1.25 to ``hi`` (halving a step where the branch is missing, three
    times at most), then Brent's method in the last interval."""
    steps = [0]

    def g(alpha):
        fp = below.at(alpha)
        if fp is None:
            raise ThresholdNotFound(f"alpha_c: the {below.kind} branch is missing at "
                                    f"alpha = {alpha:.6g} ({below.last_failure})")
        steps[0] += 1
        return theta_stability(below.channel, fp.x, alpha)[0] - 1.0

    a, ga = lo, g(lo)
    if ga >= 0:
        raise ThresholdNotFound(f"alpha_c: the {below.kind} branch is already unstable in "
                                f"theta at alpha = {lo:g} (eigenvalue {ga + 1:.4f}): lower the "
                                "bracket")
    while True:
        b = min(a * 1.25, hi)
        for _ in range(3):            # the branch missing at b: try closer to a
            try:
                gb = g(b)
                break
            except ThresholdNotFound:
                b = 0.5 * (a + b)
        else:
            gb = g(b)                 # raises, naming the branch and why
        if gb >= 0:
            break
        if b >= hi:
            raise ThresholdNotFound(f"alpha_c: the {below.kind} branch stays stable in theta "
                                    f"up to alpha = {hi:g} (eigenvalue {gb + 1:.4f})")
        a, ga = b, gb
    root, info = optimize.brentq(g, a, b, xtol=root_tol, full_output=True, disp=False)
    if not info.converged:
        raise ThresholdNotFound(f"alpha_c: Brent's method did not converge ({info.flag})")
    return root, root_tol, below.at(root), steps[0]


def _alpha_l(branches, alpha_c, fps, eps_g, eps_lin, alpha_hi, root_tol):
    """Module doc, step 5: ``(alpha_l, error, branch)``."""
    below, above = branches
    g = {k: eps_g(fp.x) - eps_lin for k, fp in zip(("below", "above"), fps)}
    if g["below"] > 0 and g["above"] <= 0:
        return alpha_c, 0.0, "at alpha_c"
    if g["above"] > 0:
        br, a, ga, step, limit = above, alpha_c, g["above"], 1.25, max(_ALPHA_SCAN_MAX, alpha_hi)
    else:
        br, a, ga, step, limit = below, alpha_c, g["below"], 1 / 1.25, alpha_c / 10

    known = {alpha_c: ga}    # the value at alpha_c (on a branch born there: the parent's)

    def f(alpha):
        if alpha in known:
            return known[alpha]
        fp = br.at(alpha)
        if fp is None:
            raise ThresholdNotFound(f"alpha_l: the {br.kind} branch is missing at "
                                    f"alpha = {alpha:.6g} ({br.last_failure})")
        return eps_g(fp.x) - eps_lin

    b = a * step
    gb = f(b)
    while np.sign(gb) == np.sign(ga):
        a, ga, b = b, gb, b * step
        if (step > 1 and b > limit) or (step < 1 and b < limit):
            raise ThresholdNotFound(f"alpha_l: eps_g of the {br.kind} branch does not cross "
                                    f"eps_lin between alpha = {alpha_c:g} and {a:g}")
        gb = f(b)
    root, info = optimize.brentq(f, min(a, b), max(a, b), xtol=root_tol, full_output=True,
                                 disp=False)
    if not info.converged:
        raise ThresholdNotFound(f"alpha_l: Brent's method did not converge ({info.flag})")
    return root, root_tol + 4 * np.finfo(float).eps * abs(root), br.kind


def general_thresholds_on_nodes(params: ModelParams, nodes, *, bracket=(0.5, 2.0), seed: int = -1,
                                tol: float = 1e-10, root_tol: float = 1e-6,
                                branches: dict | None = None, alpha0: float | None = None,
                                verify: bool = True, verify_margin: float = 1e-9,
                                progress=None) -> GeneralRuleThresholds:
    """``alpha_c`` and ``alpha_l`` on one rule (module doc).

    ``branches``: ``{"below": (kind, x0, alpha), "above": (kind, x0, alpha)}`` (the branches'
    characters and a point of each at ``alpha``) to skip the searches at the bracket's ends.
    ``progress(text)`` is told each stage.
    """
    t0 = time.perf_counter()
    lo, hi = map(float, bracket)
    if not 0 < lo < hi:
        raise ValueError(f"bracket must be 0 < alpha_lo < alpha_hi, got {bracket}")
    say = progress or (lambda text: None)
    channel = GeneralChannel(params, nodes)
    searches = {}
    if branches is None:
        branches = {}
        for side, a in (("below", lo), ("above", hi)):
            say(f"search at alpha = {a:g}")
            found, failed = find_fixed_points(channel, a, tol=tol, stability=False)
            g = _global(found, failed, a)
            searches[side] = {"alpha": a, "fixed_points": [(f.character, f.eps_t) for f in found],
                              "failed": len(failed)}
            branches[side] = (g.character, g.fixed_point.x, a)
    kinds = (branches["below"][0], branches["above"][0])
    if kinds[0] == kinds[1]:
        raise ThresholdNotFound(f"the global minimum is {kinds[0]} at both alpha = {lo:g} and "
                                f"{hi:g}: no change of character in the bracket")
    below = GeneralBranch(channel, kinds[0], branches["below"][2], branches["below"][1], tol)
    above = GeneralBranch(channel, kinds[1], branches["above"][2], branches["above"][1], tol)
    continuous = kinds == ("positional", "mixed")
    say(f"alpha_c: {kinds[0]} -> {kinds[1]} in [{lo:g}, {hi:g}]"
        + (" (continuous: where the positional branch turns unstable in theta)"
           if continuous else ""))
    switches = 0
    while True:
        if continuous:
            ac, ac_err, fb, steps = _birth(below, lo, hi, root_tol)
            fa = fb          # the mixed branch is born there: the same point
        else:
            ac, ac_err, fb, fa, steps = _alpha_c(below, above, lo, hi, root_tol, alpha0)
        lower, verified = [], None
        if not verify:
            break
        say(f"search at alpha_c = {ac:.6g}")
        found, _ = find_fixed_points(channel, ac, tol=tol, stability=False)
        floor = min(fb.eps_t, fa.eps_t) - verify_margin
        lower = [{"character": f.character, "eps_t": f.eps_t,
                  "theta": float(np.abs(f.fixed_point.x.theta).max()),
                  "M": float(np.abs(f.fixed_point.x.M).max())} for f in found
                 if f.eps_t < floor]
        verified = not [f for f in lower if f["character"] not in kinds]
        # (continuous: the mixed branch is born at alpha_c; a mixed point found lower there is
        # reported in lower_points, not followed)
        better = None if switches >= _MAX_SWITCHES else _lower_sheet(
            channel, found, ac, ((below, fb),) if continuous else ((below, fb), (above, fa)),
            verify_margin, tol)
        if better is None:
            break
        say(f"a lower {better[1].kind} point at alpha_c: following it instead")
        below, above = (better[1], above) if better[0] == 0 else (below, better[1])
        switches += 1
    say("RS stability at alpha_c")
    for fp in {id(fp): fp for fp in (fb, fa)}.values():   # one point if the transition is continuous
        fp.stability = general_rs_stability(channel, fp.x, fp.alpha)
    eps_g, eps_lin = _observables(params, nodes)
    say("alpha_l")
    try:
        al, al_err, al_branch = _alpha_l((below, above), ac, (fb, fa), eps_g, eps_lin, hi,
                                         root_tol)
    except ThresholdNotFound as exc:     # alpha_c stands; alpha_l is reported as not found
        al, al_err, al_branch = math.nan, math.nan, f"not found: {exc}"
    return GeneralRuleThresholds(
        seed=seed, below=kinds[0], above=kinds[1],
        transition="continuous" if continuous else "first-order", alpha_c=ac,
        alpha_c_err=ac_err, alpha_l=al, alpha_l_err=al_err, alpha_l_branch=al_branch,
        eps_lin=eps_lin,
        at_alpha_c={"below": fb, "above": fa}, root_steps=steps,
        solves=below.solves + above.solves, verified=verified, lower_points=lower,
        searches=searches, wall_time=time.perf_counter() - t0, switches=switches,
        branch_points={side: _nearest_point(br, ac)
                       for side, br in (("below", below), ("above", above))})


def _lower_sheet(channel, found, alpha, branches, margin, tol):
    """``(index, branch)``: a fixed point of ``found`` with a branch's own character that,
    solved as that branch (pinned as it is) at ``alpha``, lies lower than the branch by more
    than ``margin``; ``None`` if there is none (module doc, step 4)."""
    for k, (br, fp) in enumerate(branches):
        for f in found:
            if f.character != br.kind or not f.eps_t < fp.eps_t - margin:
                continue
            trial = GeneralBranch(channel, br.kind, alpha, f.fixed_point.x, tol)
            g = trial.at(alpha)
            if g is not None and g.eps_t < fp.eps_t - margin:
                return k, trial
    return None


def _nearest_point(branch: GeneralBranch, alpha: float) -> dict:
    a = min(branch.solved, key=lambda b: abs(b - alpha))
    return {"alpha": a, **branch.solved[a].as_dict()}


def _rule_task(args):
    params, log2n, seed, kw = args
    return general_thresholds_on_nodes(params, nodes_for(params, log2n, seed), seed=seed, **kw)


def compute_general_thresholds(params: ModelParams, *, log2n: int = 12, rules: int = 4,
                               seed: int = 0, progress=None, executor=None,
                               **kw) -> GeneralThresholds:
    """The mean over ``rules`` scrambles of ``2^log2n`` points (``seed``, ``seed + 1``, ...)
    of :func:`general_thresholds_on_nodes` (keywords passed on).  The first scramble searches
    for the branches, in this process; the others start from its branches' points nearest its
    ``alpha_c`` (:meth:`GeneralRuleThresholds.starts`) and run on ``executor`` (default: a
    process pool with one worker per core; :class:`~symattn.runs.executors.InProcess` inside
    a task).  ``progress(k, text)``: the first scramble's stages, then each other scramble as
    it finishes."""
    from ..runs.executors import map_tasks
    t0 = time.perf_counter()
    say = (lambda text: progress(0, text)) if progress else None
    first = general_thresholds_on_nodes(params, nodes_for(params, log2n, seed), seed=seed,
                                        progress=say, **kw)
    per = [first]
    if rules > 1:
        kw_rest = kw if "branches" in kw else {**kw, "alpha0": first.alpha_c,
                                               "branches": first.starts()}
        tasks = [(params, log2n, seed + k, kw_rest) for k in range(1, rules)]

        def done(k, total, r):
            if progress:
                progress(k - 1, f"alpha_c = {r.alpha_c:.6g}, alpha_l = {r.alpha_l:.6g} "
                                f"({r.wall_time:.0f} s)")
        per += map_tasks(_rule_task, tasks, executor, done, total=rules, done=1)
    return combine_rules(params, per, {"log2n": log2n, "rules": rules, "seed": seed, **{
        k: v for k, v in kw.items() if k in ("bracket", "tol", "root_tol", "verify",
                                             "verify_margin")}}, time.perf_counter() - t0)


def combine_rules(params: ModelParams, per: list, settings: dict,
                  wall_time: float = 0.0) -> GeneralThresholds:
    """The mean over scrambles of per-rule results (:class:`GeneralRuleThresholds`, or their
    :meth:`~GeneralRuleThresholds.as_dict`, as a study saves them) with one standard error plus
    the largest root bracket as the error bar."""
    kinds = {(_get(r, "below"), _get(r, "above"), _get(r, "transition")) for r in per}
    if len(kinds) > 1:
        raise ThresholdNotFound(f"the scrambles disagree on the branches: {sorted(kinds)}")
    out = {}
    for k in ("alpha_c", "alpha_l"):
        # nan if any scramble has none (saved per-rule dicts hold None)
        m, se = mean_se([math.nan if _get(r, k) is None else _get(r, k) for r in per])
        out[k], out[k + "_err"] = m, se + max(math.nan if _get(r, k + "_err") is None
                                              else _get(r, k + "_err") for r in per)
    missing = [_get(r, "alpha_l_branch") for r in per if _get(r, "alpha_l") is None
               or math.isnan(_get(r, "alpha_l"))]
    out["alpha_l_note"] = missing[0] if missing else ""
    el, el_se = mean_se([_get(r, "eps_lin") for r in per])
    if params.is_paper_shape:
        el_se = 0.0     # the Gauss-Hermite value: the same on every rule
    (below, above, transition), = kinds
    reports = {}
    for side, kind in (("below", below), ("above", above)):
        got = [None if isinstance(r, dict) else r.at_alpha_c[side].stability for r in per]
        if got and all(g is not None for g in got):
            reports[kind] = combine_stability(got)
    return GeneralThresholds(**out, eps_lin=el, eps_lin_err=el_se, below=below, above=above,
                             transition=transition,
                             params=params.as_dict(), settings=settings, per_rule=per,
                             wall_time=wall_time, rs_stability=reports)

