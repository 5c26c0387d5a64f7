"""Outputs: rendering only -- figures, LaTeX and reports from results computed elsewhere.

- :mod:`.latex` -- the model's equations as LaTeX, printed from the SymPy objects;
- :mod:`.report` -- the Markdown report of a validation run;
- :mod:`.plots` -- the figures of a validation run;
- :mod:`.phase_figures` -- the figures of a phase diagram.

Nothing here solves or simulates; it reads results (objects or files) and draws or prints them.
"""
