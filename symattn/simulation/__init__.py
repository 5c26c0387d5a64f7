"""Finite-size simulation: data, empirical risk, L-BFGS training (model page §2 and §6).

- :mod:`.data`  -- teacher, sentences and their per-sentence Gram quantities (``L = 2``);
- :mod:`.empirical_risk`  -- the empirical risk ``R(Q)`` and its exact gradient, chunked over sentences;
- :mod:`.train` -- warm starts, L-BFGS-B minimisation, order parameters, test errors, the linear
  baseline, paired starts and seed averages.
"""
from importlib import import_module

#: where each public name lives; imported on first use, so that the size checks
#: (:mod:`.memory`) load without scipy, and a bad command line is refused at once
_WHERE = {
    "Dataset": "data", "make_dataset": "data", "fresh_sentences": "data",
    "student_attention": "data", "teacher_attention": "data",
    "risk": "empirical_risk", "risk_and_grad": "empirical_risk",
    "order_parameters": "empirical_risk",
    **{name: "train" for name in (
        "STARTS", "Minimum", "SimulationResult", "warm_start", "minimise", "linear_baseline",
        "generalisation_errors", "train_starts", "run", "run_paired", "simulate")},
    **{name: "general" for name in (
        "GeneralDataset", "make_general_dataset", "run_general", "run_general_paired",
        "simulate_general")},
}

__all__ = list(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
