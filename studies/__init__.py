"""Investigations behind the numbers in the documentation; the index is studies/README.md.

Each study is a script, run from the repository root as ``python -m studies.NAME [args]``.
Importing one runs nothing.
"""
