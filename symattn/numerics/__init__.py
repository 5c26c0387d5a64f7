"""The core solver: from order parameters to fixed points, branches and thresholds.

Read in this order (each module builds on the ones above it):

- :mod:`.quadrature` -- node sets for the Gaussian expectations (scrambled Sobol rules with folds,
  Gauss-Hermite products);
- :mod:`.prox` -- the global proximal operator of the non-convex loss at every node;
- :mod:`.channel` -- the output channel: the expectation atoms of the hat equations;
- :mod:`.saddle` -- the saddle-point map and its fixed points, with status;
- :mod:`.observables` -- ``eps_g`` and ``eps_lin``;
- :mod:`.branches` -- the positional, semantic and trivial fixed points;
- :mod:`.thresholds` -- ``alpha_c`` and ``alpha_l`` with error bars;
- :mod:`.continuation`, :mod:`.bifurcation` -- following a branch in ``alpha`` and where it ends.

The precision routes built on this core live in :mod:`symattn.refine`; nothing here imports them.
"""
