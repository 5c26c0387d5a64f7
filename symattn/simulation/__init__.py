"""Finite-size simulation: data, empirical risk, L-BFGS training (model page §2 and §6).

- :mod:`.data`  -- teacher, sentences and their per-sentence Gram quantities (``L = 2``);
- :mod:`.empirical_risk`  -- the empirical risk ``R(Q)`` and its exact gradient, chunked over sentences;
- :mod:`.train` -- warm starts, L-BFGS-B minimisation, order parameters, test errors, the linear
  baseline, paired starts and seed averages.
"""
from .data import Dataset, fresh_sentences, make_dataset, student_attention, teacher_attention
from .empirical_risk import order_parameters, risk, risk_and_grad
from .train import (STARTS, Minimum, SimulationResult, linear_baseline, minimise, run, run_paired,
                    simulate, generalisation_errors, train_starts, warm_start)

__all__ = [
    "Dataset", "make_dataset", "fresh_sentences", "student_attention", "teacher_attention",
    "risk", "risk_and_grad", "order_parameters",
    "STARTS", "Minimum", "SimulationResult", "warm_start", "minimise", "linear_baseline",
    "generalisation_errors", "train_starts", "run", "run_paired", "simulate",
]
