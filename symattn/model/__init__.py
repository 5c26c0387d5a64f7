"""The model: parameters and their validation (model page §2-§3)."""
from .params import APPENDIX_A, PAPER_A, ModelParams, ParameterError, check_alpha

__all__ = ["ModelParams", "ParameterError", "PAPER_A", "APPENDIX_A", "check_alpha"]
