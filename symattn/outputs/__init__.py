"""Outputs: theory-versus-simulation validation (:mod:`.validate`) and its figures (:mod:`.plots`).

This layer sits on top of everything else (MODEL.md sections 5 and 6): it calls the theory
(:mod:`symattn.numerics`) and the finite-size simulator (:mod:`symattn.simulation`), and nothing
below imports it.
"""
