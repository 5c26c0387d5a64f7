"""Finite-size side of three validations of the GENERAL attention model (model page §7).

What it measures
----------------
For each case below, each dimension ``d``, each sample complexity ``alpha`` and each instance
(seed ``k`` -> data seed :func:`symattn.simulation.instances.data_seed` ``(d, k) = 10^6 d + k``,
as :func:`symattn.simulation.general.simulate`), the empirical risk is minimised with
L-BFGS-B (:func:`symattn.simulation.general.run_paired`, ``gtol = 1e-8``) from THREE
starts on the SAME data: ``semantic`` (``Q = Q*``), ``positional`` (``Q`` along the encodings)
and ``random`` (``Q`` iid ``N(0, 1)``).  All minima are scored on the same ``n_test = 2000``
fresh sentences.  Per start it records ``eps_t`` (``R(Q)/d``, penalty included), ``eps_g`` and
its Monte Carlo standard error, ``eps_lin`` (least-squares positional baseline) and its error,
``converged`` (``max|grad R| <= gtol``), ``grad_norm``, ``iterations``, the order parameters in
theory units (``q``, ``M``, ``theta``, in the module's gauge) and the gauge invariants
(``q_eigs``, ``Tr_q``, ``MM``, ``thth``, ``thM``), ``teacher_norm`` (``Q*^T Q*/d``) and the solve's
wall time; per instance the start with the lowest ``eps_t`` (``lowest``), the starts within a
relative ``1e-6`` of it (``tied``: the same minimum reached from several starts) and the instance's
wall time (data, three solves, scoring).

Cases (sigma = 0.5, lam = 0.01 throughout):

* ``rank2``    L = 2, Pi antipodal (the paper's), A = [[0.6,0.4],[0.4,0.6]], student rank r = 2,
               teacher rank r_t = 1, omega in {0.1, 0.3}, alpha in {0.5, 0.75, ..., 2.0};
* ``L3``       L = 3, Pi "simplex", A = 0.6 on the diagonal, 0.2 off it, r = r_t = 1,
               omega = 0.3, same alphas;
* ``appendix`` L = 2, paper Pi, A = [[0.3,0.7],[0.8,0.2]], r = r_t = 1, omega = 0.14,
               alpha in {0.8, 1.0, 1.1, 1.2, 1.3, 1.5} (the "mixed-looking" minima of model
               page §5).

Output
------
One JSON file per case, ``<out-dir>/<case>.json`` (default ``studies/data/general_validation/``;
with ``--quick``, ``studies/data/general_validation/quick/``)::

    {"case": ..., "meta": {params per omega, n_test, gtol, maxiter, starts, seed rule,
                           provenance (git commit, sha256 of symattn/simulation/general.py)},
     "runs": [{"omega", "d", "alpha", "seed", "data_seed", "n", "lowest", "tied", "wall_time",
               "starts": {"semantic": {...}, "positional": {...}, "random": {...}}}, ...]}

The file is rewritten atomically after every instance, so an interrupted run keeps what it
finished; a rerun skips the (omega, d, alpha, seed) entries already present.  A rerun whose
settings (parameters, n_test, gtol, maxiter, starts) differ from the file's is refused: use
another ``--out-dir``.  Summaries: ``studies/general_validation_summary.py``.

Rerun
-----
::

    source .venv/bin/activate
    python studies/general_validation_runs.py --quick            # < 1 min, checks the script
    python studies/general_validation_runs.py                    # all cases, d 250 500 1000, 5 seeds
    python studies/general_validation_runs.py --cases rank2 --omegas 0.3 --d 2000 --seeds 3
    python studies/general_validation_runs.py --cases L3 --d 2000 --seeds 3
    python studies/general_validation_summary.py

Inputs: only the library (``symattn.simulation.general``); one process, one BLAS thread (the
module's default).  Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from symattn.model import ModelParams
from symattn.simulation.general import run_paired
from symattn.simulation.instances import alpha_key, data_seed

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "studies" / "data" / "general_validation"
STARTS = ("semantic", "positional", "random")
SIGMA, LAM = 0.5, 0.01
#: Starts whose eps_t is within this relative distance of the lowest are "tied" (same minimum).
TIE_RTOL = 1e-6

ALPHAS_MAIN = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
CASES = {
    "rank2": dict(A=((0.6, 0.4), (0.4, 0.6)), Pi="antipodal", r=2, r_t=1, omegas=(0.1, 0.3),
                  alphas=ALPHAS_MAIN),
    "L3": dict(A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)), Pi="simplex", r=1, r_t=1,
               omegas=(0.3,), alphas=ALPHAS_MAIN),
    "appendix": dict(A=((0.3, 0.7), (0.8, 0.2)), Pi="antipodal", r=1, r_t=1, omegas=(0.14,),
                     alphas=(0.8, 1.0, 1.1, 1.2, 1.3, 1.5)),
}
#: Keys of SimulationResult.as_dict kept per start (d, alpha, L, r, r_t, start, seed are per run).
KEEP = ("eps_t", "eps_g", "eps_g_err", "eps_lin", "eps_lin_err", "converged", "grad_norm",
        "iterations", "q", "M", "theta", "q_eigs", "Tr_q", "MM", "thth", "thM", "teacher_norm",
        "wall_time")


def params_for(case: str, omega: float) -> ModelParams:
    c = CASES[case]
    return ModelParams(sigma=SIGMA, lam=LAM, omega=omega, A=c["A"], Pi=c["Pi"], r=c["r"],
                       r_t=c["r_t"])


def okey(omega: float) -> str:
    return f"{float(omega):g}"


def run_key(omega, d, alpha, seed) -> tuple:
    return (okey(omega), int(d), alpha_key(alpha), int(seed))


def _clean(x):
    """JSON-ready: numpy to Python, non-finite floats to null, floats to 12 significant digits."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer, int)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return float(f"{x:.12g}") if math.isfinite(x) else None
    return x


def provenance() -> dict:
    out = {}
    try:
        out["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                           capture_output=True, check=True).stdout.strip()
    except Exception:                               # pragma: no cover - no git
        out["git_commit"] = None
    src = ROOT / "symattn" / "simulation" / "general.py"
    out["general_py_sha256"] = hashlib.sha256(src.read_bytes()).hexdigest() if src.exists() else None
    return out


def settings(case: str, omegas, n_test: int, gtol: float, maxiter: int) -> dict:
    return {"params": {okey(w): params_for(case, w).as_dict() for w in omegas},
            "n_test": n_test, "gtol": gtol, "maxiter": maxiter, "starts": list(STARTS)}


def load(path: Path) -> dict | None:
    if not path.exists():
        return None
    with open(path) as f:
        return json.load(f)


def check_compatible(doc: dict, case: str, want: dict, path: Path) -> None:
    meta = doc["meta"]
    for k in ("n_test", "gtol", "maxiter", "starts"):
        if meta[k] != want[k]:
            sys.exit(f"{path}: stored {k} = {meta[k]!r}, this run {want[k]!r}; use another "
                     "--out-dir")
    for w, p in want["params"].items():
        if w in meta["params"] and meta["params"][w] != _clean(p):
            sys.exit(f"{path}: stored parameters at omega = {w} differ from this run's; use "
                     "another --out-dir")


def save(path: Path, doc: dict) -> None:
    """Atomic write: one meta entry per line, one run per line (compact, diff-friendly)."""
    meta = ",\n  ".join(f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                         for k, v in doc["meta"].items())
    text = '{\n "case": ' + json.dumps(doc["case"]) + ',\n "meta": {\n  ' + meta + "\n }"
    runs = sorted(doc["runs"], key=lambda r: (float(r["omega"]), r["d"], r["alpha"], r["seed"]))
    body = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in runs)
    text += ',\n "runs": [\n  ' + body + "\n ]\n}\n" if runs else ',\n "runs": []\n}\n'
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def one_instance(params: ModelParams, d: int, alpha: float, seed: int, n_test: int, gtol: float,
                 maxiter: int) -> dict:
    t0 = time.perf_counter()
    ds = data_seed(d, seed)
    res = run_paired(params, d, alpha, ds, starts=STARTS, n_test=n_test, gtol=gtol,
                     maxiter=maxiter)
    wall = time.perf_counter() - t0
    starts = {}
    for name, r in res.items():
        row = {k: v for k, v in r.as_dict().items() if k in KEEP}
        if not r.converged:
            row["message"] = r.message
        starts[name] = row
    eps = {k: v["eps_t"] for k, v in starts.items()}
    lowest = min(eps, key=eps.get)
    tied = [k for k in STARTS if eps[k] - eps[lowest] <= TIE_RTOL * abs(eps[lowest])]
    return _clean({"omega": params.omega, "d": d, "alpha": alpha, "seed": seed, "data_seed": ds,
                   "n": int(round(alpha * d)), "lowest": lowest, "tied": tied,
                   "wall_time": wall, "starts": starts})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--d", nargs="+", type=int, default=None,
                    help="dimensions (default 250 500 1000; --quick: 60)")
    ap.add_argument("--seeds", type=int, default=None,
                    help="number of instances, seeds first-seed .. (default 5; --quick: 2)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--omegas", nargs="+", type=float, default=None,
                    help="restrict to these omegas (they must belong to the case)")
    ap.add_argument("--alphas", nargs="+", type=float, default=None,
                    help="override the case's alpha grid")
    ap.add_argument("--n-test", type=int, default=None, help="test sentences (default 2000; "
                                                             "--quick: 200)")
    ap.add_argument("--gtol", type=float, default=1e-8)
    ap.add_argument("--maxiter", type=int, default=10000)
    ap.add_argument("--out-dir", type=Path, default=None)
    ap.add_argument("--quick", action="store_true",
                    help="tiny run (d = 60, 2 seeds, first two alphas, n_test = 200) into "
                         "<out>/quick/, to check the script")
    a = ap.parse_args(argv)

    d_list = a.d or ([60] if a.quick else [250, 500, 1000])
    n_seeds = a.seeds if a.seeds is not None else (2 if a.quick else 5)
    n_test = a.n_test or (200 if a.quick else 2000)
    out_dir = a.out_dir or (DEFAULT_OUT / "quick" if a.quick else DEFAULT_OUT)
    out_dir.mkdir(parents=True, exist_ok=True)
    seeds = list(range(a.first_seed, a.first_seed + n_seeds))

    plan = []
    for case in a.cases:
        c = CASES[case]
        omegas = c["omegas"]
        if a.omegas:
            omegas = tuple(w for w in omegas if any(abs(w - x) < 1e-12 for x in a.omegas))
        alphas = tuple(a.alphas) if a.alphas else c["alphas"]
        if a.quick and not a.alphas:
            alphas = alphas[:2]
        plan.append((case, omegas, alphas))

    t_start = time.perf_counter()
    for case, omegas, alphas in plan:
        if not omegas:
            print(f"[{case}] no omega selected, skipped", file=sys.stderr)
            continue
        path = out_dir / f"{case}.json"
        want = settings(case, CASES[case]["omegas"], n_test, a.gtol, a.maxiter)
        doc = load(path)
        if doc is None:
            doc = {"case": case, "meta": _clean({**want, "sigma": SIGMA, "lam": LAM,
                                                 "seed_rule": "data_seed = 10^6 d + seed",
                                                 "tie_rtol": TIE_RTOL, **provenance()}),
                   "runs": []}
        else:
            check_compatible(doc, case, want, path)
            doc["meta"].setdefault("provenance_later", [])
            prov = provenance()
            if prov["general_py_sha256"] != doc["meta"].get("general_py_sha256") and \
                    prov not in doc["meta"]["provenance_later"]:
                doc["meta"]["provenance_later"].append(prov)
        done = {run_key(r["omega"], r["d"], r["alpha"], r["seed"]) for r in doc["runs"]}
        todo = [(w, d, al, s) for d in d_list for w in omegas for al in alphas for s in seeds
                if run_key(w, d, al, s) not in done]
        n_total = len(d_list) * len(omegas) * len(alphas) * len(seeds)
        print(f"[{case}] {path}: {n_total - len(todo)} of {n_total} requested instances already "
              f"done, {len(todo)} to run", file=sys.stderr)
        t_case = time.perf_counter()
        for i, (w, d, al, s) in enumerate(todo):
            row = one_instance(params_for(case, w), d, al, s, n_test, a.gtol, a.maxiter)
            doc["runs"].append(row)
            save(path, doc)
            st = row["starts"]
            eps = " ".join(f"{k[:3]}={st[k]['eps_t']:.6f}{'' if st[k]['converged'] else '(NC)'}"
                           for k in STARTS)
            print(f"[{case}] {i + 1}/{len(todo)} omega={w:g} d={d} alpha={al:g} seed={s}: {eps} "
                  f"lowest={row['lowest']} tied={','.join(row['tied'])} "
                  f"{row['wall_time']:.1f}s (case {time.perf_counter() - t_case:.0f}s, "
                  f"total {time.perf_counter() - t_start:.0f}s)", file=sys.stderr, flush=True)
        if not doc["runs"]:
            save(path, doc)
        print(f"[{case}] done in {time.perf_counter() - t_case:.1f}s", file=sys.stderr)
    print(f"all done in {time.perf_counter() - t_start:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
