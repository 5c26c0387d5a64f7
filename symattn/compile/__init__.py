"""Compilation: the SymPy expressions of :mod:`symattn.symbolic` as fast numpy kernels (and
mpmath for checks), built once per process; see :mod:`.kernels`."""
