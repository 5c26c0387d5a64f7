"""What a run records about the software that produced it."""
from __future__ import annotations

import platform

__all__ = ["versions"]


def versions() -> dict:
    """Versions of symattn, Python and the numerical libraries, for a run's metadata."""
    import matplotlib
    import mpmath
    import numpy
    import scipy
    import sympy

    from .. import __version__
    return {"symattn": __version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__, "sympy": sympy.__version__,
            "mpmath": mpmath.__version__, "matplotlib": matplotlib.__version__}
