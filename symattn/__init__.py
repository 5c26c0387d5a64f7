"""symattn: the positional-to-semantic transition of a solvable model of dot-product attention.

Implements the high-dimensional theory of H. Cui, F. Behrens, F. Krzakala, L. Zdeborova,
"A phase transition between positional and semantic learning in a solvable model of
dot-product attention", NeurIPS 2024 (arXiv:2402.03902).

The Python API mirrors the command line (:mod:`symattn.api`)::

    import symattn
    th = symattn.thresholds(omega=0.3)           # alpha_c, alpha_l with error bars
    fp = symattn.fixed_point(branch="semantic", alpha=1.5)
    sim = symattn.simulate(d=1000, alpha=1.5, start="semantic", seeds=8)
    tex = symattn.latex()

The rooms of the package, from the model up: :mod:`symattn.model`, :mod:`symattn.stats`,
:mod:`symattn.results`, :mod:`symattn.runs`, :mod:`symattn.symbolic`, :mod:`symattn.compile`,
:mod:`symattn.numerics`, :mod:`symattn.simulation`, :mod:`symattn.refine`,
:mod:`symattn.experiments`, :mod:`symattn.outputs`, :mod:`symattn.api`, :mod:`symattn.cli`.
"""
from .api import fixed_point, latex, model_params, phase_diagram, simulate, thresholds, validate
from .model import ModelParams, ParameterError

__version__ = "0.1.0"
__all__ = ["thresholds", "fixed_point", "simulate", "phase_diagram", "validate", "latex",
           "model_params", "ModelParams", "ParameterError", "__version__"]
