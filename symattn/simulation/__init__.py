"""Finite-size simulation: data, empirical risk, L-BFGS training (model page §2, §6 and §7).

- :mod:`symattn.simulation.general` -- the simulator, the only one: teacher, sentences and
  their Gram quantities, the empirical risk ``R(Q)`` and its exact gradient (chunked over
  sentences), warm starts, L-BFGS-B minimisation, order parameters, test errors, the linear
  baseline, paired starts and seed averages, for any ``L``, ``Pi``, ``r``, ``r_t``.  The paper's model is
  ``ModelParams()`` given to it, not a second code path.
- :mod:`.instances` -- the paper's shape tabulated in its scalar units (``m = M[0, 0]``,
  ``theta = theta[0, 0]``, ``q = q[0, 0]``): the paired tasks of ``symattn validate`` and the
  seed summary of ``symattn simulate``.
- :mod:`.memory` -- size and memory checks before a run (no scipy).
"""
from importlib import import_module

#: where each public name lives; imported on first use, so that the size checks
#: (:mod:`.memory`) load without scipy, and a bad command line is refused at once
_WHERE = {
    **{name: "general" for name in (
        "STARTS", "PAIRED_STARTS", "Dataset", "make_dataset", "dataset_from_arrays",
        "fresh_sentences", "attention", "teacher_attention", "risk", "risk_and_grad",
        "order_parameters", "fix_gauge", "warm_start", "Minimum", "minimise", "linear_baseline",
        "generalisation_errors", "SimulationResult", "train_starts", "run", "run_paired",
        "simulate", "data_seed")},
    **{name: "instances" for name in (
        "paper_order_parameters", "simulation_task", "simulate_seeds", "SimulationSummary")},
}

__all__ = list(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
