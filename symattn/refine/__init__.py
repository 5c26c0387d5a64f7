"""Refinement: the precision routes built on the core solver, and the mpmath checks.

- :mod:`.precise` -- ``thresholds --precision high``: large folded scrambles, chord solves,
  the error budget, and the second route's confirmation of ``alpha_c`` and ``alpha_l``;
- :mod:`.preintegration` -- line preintegration: one Gaussian direction integrated exactly
  between the switches of the global prox;
- :mod:`.plane` -- plane preintegration: two directions, adaptive in one of them;
- :mod:`.highprec` -- the output channel in mpmath at any precision (a check of the double
  precision kernels).

The core (:mod:`symattn.numerics`) never imports this room.
"""
