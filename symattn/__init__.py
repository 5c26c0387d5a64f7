"""symattn: the positional-to-semantic transition of a solvable model of dot-product attention.

Implements the high-dimensional theory of H. Cui, F. Behrens, F. Krzakala, L. Zdeborova,
"A phase transition between positional and semantic learning in a solvable model of
dot-product attention", NeurIPS 2024 (arXiv:2402.03902).
"""
from .model import ModelParams, ParameterError

__version__ = "0.1.0"
__all__ = ["ModelParams", "ParameterError", "__version__"]
