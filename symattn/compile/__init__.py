"""Compilation: the SymPy expressions of :mod:`symattn.symbolic` as fast kernels.

:mod:`.generated` prints them, for a :class:`~.shape.Shape`, into modules that numba compiles
(cached on disk, :mod:`.codegen` prints, :mod:`.drivers` holds the per-node prox);
:mod:`.kernels` adds the paper's channel integrands and equations, and the mpmath kernels of
the checks."""
