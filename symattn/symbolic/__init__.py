"""The symbolic derivation: SymPy states the loss and derives everything the solvers use.

- :mod:`.attention` -- attention maps and the per-sentence loss in the high-dimensional limit;
- :mod:`.moreau` -- the Moreau objective, the prox's optimality condition, the envelope theorem;
- :mod:`.expectation` -- Gaussian expectations over the channel's nodes and Stein's lemma;
- :mod:`.free_energy` -- the free-entropy functional and its saddle-point equations;
- :mod:`.general` -- the same for the general model (matrix order parameters);
- :mod:`.finite_temperature` -- the replica-symmetric free entropy at inverse temperature beta.

Nothing here evaluates numbers; :mod:`symattn.compile` turns these expressions into kernels.
"""
