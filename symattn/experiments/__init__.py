"""Experiments: long runs that orchestrate the theory and the simulator, resumable on disk.

- :mod:`.phase_diagram` -- per ``omega``: ``alpha_c``, ``alpha_l``, the branch ends and curves;
- :mod:`.validation` -- the theory against finite-size training over an ``alpha x d`` grid.

They call the core solver (:mod:`symattn.numerics`) and the simulator
(:mod:`symattn.simulation`), and store their results with :mod:`symattn.runs`; rendering the
results is :mod:`symattn.outputs`' job.
"""
