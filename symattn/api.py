"""The Python API: one function per command of the command line, with plain keyword arguments.

>>> import symattn
>>> th = symattn.thresholds(omega=0.3)              # doctest: +SKIP
>>> th.alpha_c, th.alpha_c_err                      # doctest: +SKIP

Each function takes the model's parameters (``omega, sigma, lam, A``; the paper's defaults) and
the numerical settings under the command line's names (``log2n, rules, tol``), and returns a
result object that prints readably and whose ``to_dict()`` is the command line's JSON:

- :func:`thresholds` (``symattn thresholds``): a :class:`~symattn.refine.precise.PreciseThresholds`
  (the main job's refined thresholds, or ``precision="high"``), or with ``precision="fast"`` a
  :class:`~symattn.numerics.thresholds.Thresholds`;
- :func:`fixed_point` (``symattn fixed-point``): a :class:`~symattn.numerics.estimates.FixedPointEstimate`;
- :func:`simulate` (``symattn simulate``): a :class:`~symattn.simulation.instances.SimulationSummary`;
- :func:`phase_diagram` (``symattn phase-diagram``): a :class:`PhaseDiagram`;
- :func:`validate` (``symattn validate``): a :class:`Validation`;
- :func:`latex` (``symattn latex``): the LaTeX text.

Bad input raises :class:`~symattn.model.ParameterError` naming the parameter; a branch or
threshold that does not exist raises :class:`~symattn.numerics.branches.BranchNotFound` or
:class:`~symattn.numerics.thresholds.ThresholdNotFound` with the reason.
"""

from __future__ import annotations

from dataclasses import replace

from dataclasses import dataclass, field
from pathlib import Path

from .model.checks import check_choice, check_int
from .model.params import PAPER_A, ModelParams, ParameterError, check_alpha
from .results import format_estimate

__all__ = ["thresholds", "fixed_point", "simulate", "phase_diagram", "validate", "latex",
           "model_params", "PhaseDiagram", "Validation"]


def model_params(*, omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01, A=PAPER_A,
                 Pi=None, r: int = 1, r_t: int = 1) -> ModelParams:
    """The validated :class:`~symattn.model.ModelParams` (model page §2, §7; the paper's
    defaults)."""
    return ModelParams(sigma=sigma, lam=lam, omega=omega, A=A, Pi=Pi, r=r, r_t=r_t)


def _settings(log2n, rules, tol, **more):
    from .numerics.settings import NumericalSettings
    return NumericalSettings(log2n=log2n, rules=rules, tol=tol, **more)


def thresholds(*, omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01, A=PAPER_A,
               log2n: int | None = None, rules: int | None = None, tol: float = 1e-10,
               precision: str = "standard", high_log2n: int | None = None,
               high_rules: int | None = None, executor=None, progress=None, note=None,
               checkpoint=None):
    """``alpha_c`` and ``alpha_l`` with error bars (``symattn thresholds``).

    ``precision="standard"`` (the main job): located on one scramble of ``2**log2n`` points
    (default 2^12; ``rules`` scrambles if given), then refined on ``high_rules`` (default 10)
    folded scrambles of ``2**high_log2n`` (default 2^17) points
    (:func:`symattn.refine.precise.refine_thresholds`, shared fixed points); ``"high"``: the
    same with 8 scrambles of 2^22 and the second route for ``alpha_c`` (its cost is measured in
    ``docs/numerics.md``, section 'High precision'); ``"fast"``: the mean over ``rules``
    (default 8) scrambles of ``2**log2n`` (default 2^14) points, no refinement (a
    :class:`~symattn.numerics.thresholds.Thresholds`; the refined precisions return a
    :class:`~symattn.refine.precise.PreciseThresholds`).  Where ``alpha_c`` is undefined
    (no positional branch), ``"standard"`` returns the fast route's ``alpha_l``.
    ``progress(k, n, rule)`` is called as each scramble finishes; ``executor`` runs the
    scrambles (default: one process per core).
    """
    from .numerics.thresholds import compute_thresholds
    if precision not in ("fast", "standard", "high"):
        raise ParameterError("precision", "must be 'fast', 'standard' or 'high', got "
                                          f"{precision!r}")
    if precision == "fast" and (high_log2n is not None or high_rules is not None):
        raise ParameterError("precision", "high_log2n and high_rules need precision "
                                          "'standard' or 'high'")
    params = model_params(omega=omega, sigma=sigma, lam=lam, A=A)
    fast = precision == "fast"
    first_only = not fast and rules is None
    settings = _settings((14 if fast else 12) if log2n is None else log2n,
                         (8 if fast else 2) if rules is None else rules, tol)
    th = compute_thresholds(params, settings, executor=executor, progress=progress,
                            first_only=first_only)
    if fast:
        return th
    from .numerics.thresholds import ThresholdNotFound
    from .refine.precise import STANDARD, HighPrecisionSettings, refine_thresholds
    if th.alpha_c_note:
        if precision == "standard":
            return compute_thresholds(params, _settings(14, 8, tol), executor=executor,
                                      progress=progress)
        raise ThresholdNotFound(f"precision='high' refines alpha_c and alpha_l together; "
                                f"{th.alpha_c_note}")
    defaults = STANDARD if precision == "standard" else HighPrecisionSettings()
    hp = replace(defaults, log2n=high_log2n or defaults.log2n,
                 rules=high_rules or defaults.rules)
    res = refine_thresholds(params, th, hp, executor=executor, progress=progress, note=note,
                            checkpoint=checkpoint)
    res.precision = precision
    return res


def fixed_point(*, branch: str, alpha: float, omega: float = 0.3, sigma: float = 0.5,
                lam: float = 0.01, A=PAPER_A, log2n: int = 14, rules: int = 8,
                tol: float = 1e-10):
    """One branch's fixed point at one ``alpha``: mean and error over ``rules`` scrambles
    (``symattn fixed-point``).  ``branch`` is ``"positional"``, ``"semantic"`` or ``"trivial"``."""
    from .numerics.branches import BRANCHES
    from .numerics.estimates import fixed_point_estimate
    if branch not in BRANCHES:
        raise ParameterError("branch", f"must be one of {sorted(BRANCHES)}, got {branch!r}")
    params = model_params(omega=omega, sigma=sigma, lam=lam, A=A)
    return fixed_point_estimate(params, branch, check_alpha(alpha),
                                _settings(log2n, rules, tol))


def simulate(*, d: int, alpha: float, start: str, seeds: int = 1, n_test: int = 2000,
             omega: float = 0.3, sigma: float = 0.5, lam: float = 0.01, A=PAPER_A,
             Pi=None, r: int = 1, r_t: int = 1, progress=None):
    """Finite-size training from a warm start on ``seeds`` independent instances
    (``symattn simulate``; model page §6).  ``start`` is ``"semantic"``, ``"positional"`` or
    ``"random"``; the first two are paired with the other on the same data.
    ``progress(k, n, seconds)`` is called after each seed.

    Both run the one simulator (:mod:`symattn.simulation.general`).  The paper's shape returns
    a :class:`~symattn.simulation.instances.SimulationSummary` (the paper's scalars ``m``,
    ``theta``, ``q``); any other (``Pi``, ``r``, ``r_t``, an ``L x L`` ``A``; model page §7) the
    dict of :func:`symattn.simulation.general.simulate` (matrices)."""
    from .simulation.general import STARTS, simulate as simulate_matrices
    from .simulation.instances import simulate_seeds
    from .simulation.memory import check_size
    check_choice("start", start, STARTS)
    check_int("seeds", seeds, 1)
    params = model_params(omega=omega, sigma=sigma, lam=lam, A=A, Pi=Pi, r=r, r_t=r_t)
    if not params.is_paper_shape:
        return simulate_matrices(params, d, alpha, start, seeds, n_test=n_test, progress=progress)
    d, alpha = check_size(d, alpha, n_test)
    return simulate_seeds(params, d, alpha, start, seeds, n_test=n_test, progress=progress)


@dataclass
class PhaseDiagram:
    """The points of a phase diagram saved in ``out`` (one dict per ``omega``, the keys of
    ``DIR/points/*.json``; :data:`~symattn.experiments.phase_diagram.CSV_COLUMNS` is the
    summary)."""

    out: Path
    points: list = field(repr=False)

    def to_dict(self) -> dict:
        return {"out": str(self.out), "points": self.points}

    def __repr__(self) -> str:
        lines = [f"PhaseDiagram({len(self.points)} values of omega in {self.out})",
                 f"  {'omega':>7s}  {'alpha_c':>22s}  {'alpha_l':>22s}  status"]
        for p in self.points:
            cells = [format_estimate(p.get(k), p.get(k + "_err")) if p.get(k) is not None
                     else "-" for k in ("alpha_c", "alpha_l")]
            lines.append(f"  {p['omega']:7.4f}  {cells[0]:>22s}  {cells[1]:>22s}  "
                         f"{p.get('status', '')}")
        return "\n".join(lines)


def phase_diagram(*, out, omegas="0:0.45:0.025", sigma: float = 0.5, lam: float = 0.01,
                  A=PAPER_A, log2n: int = 12, rules: int = 4, refine_log2n: int = 15,
                  refine_rules: int = 6, alpha_max: float = 4.0, below_ends: bool = False,
                  executor=None, progress=None, note=None) -> PhaseDiagram:
    """``alpha_c``, ``alpha_l``, the branch ends and curves for each ``omega``, saved in
    ``out`` as each finishes (``symattn phase-diagram``; rerun to resume).  ``omegas`` is
    ``"start:stop:step"`` (stop included), a comma list, or a sequence of numbers; the
    settings are those of
    :class:`~symattn.experiments.phase_diagram.PhaseDiagramSettings`.
    ``note(text)`` is told what a resumed run finds done; ``out`` is locked for the run."""
    from .experiments.phase_diagram import PhaseDiagramSettings, run_phase_diagram
    params = model_params(sigma=sigma, lam=lam, A=A)
    settings = PhaseDiagramSettings(log2n=log2n, rules=rules, refine_log2n=refine_log2n,
                                    refine_rules=refine_rules, alpha_max=alpha_max,
                                    below_ends=below_ends)
    points = run_phase_diagram(params, omegas, out, settings, executor=executor,
                               progress=progress, note=note)
    return PhaseDiagram(Path(out), points)


@dataclass
class Validation:
    """A validation run's statistics (:func:`symattn.experiments.validation.summarise`'s
    dict) and where its files are."""

    out: Path
    result: dict = field(repr=False)

    @property
    def failed(self) -> list:
        return self.result.get("failed", [])

    def __repr__(self) -> str:
        th = self.result.get("theory_thresholds", {})
        lines = [f"Validation(results in {self.out}; {len(self.failed)} failed task(s))"]
        for t in self.result.get("thresholds", []):
            cells = [format_estimate(t[k], t[k + "_err"]) if t[k] is not None else t[k + "_note"]
                     for k in ("alpha_c", "alpha_l")]
            lines.append(f"  d = {t['d']:6d}: alpha_c = {cells[0]}, alpha_l = {cells[1]}")
        if "alpha_c" in th:
            lines.append(f"  theory:    alpha_c = {format_estimate(th['alpha_c'], th['alpha_c_err'])}"
                         f", alpha_l = {format_estimate(th['alpha_l'], th['alpha_l_err'])}")
        return "\n".join(lines)


def validate(*, out, alphas=(1.0, 1.25, 1.5, 1.75, 2.0), ds=(250, 500, 1000, 2000, 4000),
             seeds: int = 8, same_seeds: bool = False, n_test: int = 10000,
             positional_scale: float = 1.0, workers: int = 2, omega: float = 0.3,
             sigma: float = 0.5, lam: float = 0.01, A=PAPER_A, log2n: int = 13, rules: int = 4,
             tol: float = 1e-10, figures: bool = True, note=None) -> Validation:
    """Theory against finite-size training over an ``alphas x ds`` grid (``symattn validate``),
    saved in ``out`` (rerun to resume; locked for the run); the report and (``figures``) the
    figures are written there too.  ``note(text)`` is told what a resumed run finds done and
    what it repaired (default: a line on stderr)."""
    from .experiments.validation import ValidationGrid, run_validation
    from .outputs.report import write_validation_report
    params = model_params(omega=omega, sigma=sigma, lam=lam, A=A)
    grid = ValidationGrid(alphas=tuple(alphas), ds=tuple(ds), seeds=seeds,
                          n_test=n_test, scale_seeds=not same_seeds,
                          positional_scale=positional_scale)

    def report(o, res, g, theory):
        return write_validation_report(o, res, g, theory, make_plots=figures)
    res = run_validation(params, grid, _settings(log2n, rules, tol), Path(out), workers=workers,
                         report=report, note=note)
    return Validation(Path(out), res)


def latex(*, standalone: bool = False) -> str:
    """The model's equations as LaTeX, printed from the SymPy objects the solvers are compiled
    from (``symattn latex``): a fragment to ``\\input`` (needs amsmath, amssymb) or, with
    ``standalone``, a complete document."""
    from .outputs.latex import document
    return document(standalone=standalone)
