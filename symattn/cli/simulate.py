"""``symattn simulate``: finite-size training from a warm start, K seeds (model page §6)."""

from __future__ import annotations

import json
import sys

from .common import (add_model_group, check_alpha, float_arg, int_arg, json_safe,
                     params_from, STARTS)


def add_parser(sub):
    s = sub.add_parser("simulate", help="finite-size training from a warm start, K seeds "
                       "(model page §6)")
    s.add_argument("--d", required=True, type=int_arg("d", 2, 10**7), help="dimension d >= 2")
    s.add_argument("--alpha", required=True, type=float_arg("alpha"), help="sample complexity n/d > 0")
    s.add_argument("--start", required=True, choices=STARTS,
                   help="warm start; semantic and positional are also run paired with the other")
    s.add_argument("--seeds", type=int_arg("seeds", 1, 100000), default=1,
                   help="independent instances k = 0..K-1, data seed 10^6 d + k (default 1)")
    s.add_argument("--n-test", dest="n_test", type=int_arg("n-test", 1, 10**7), default=2000,
                   help="fresh test sentences per instance (default 2000)")
    add_model_group(s)
    s.add_argument("--json", action="store_true", help="print JSON instead of text")


def _simulate_progress(k, n, seconds):
    print(f"  seed {k}/{n} done, elapsed {seconds:.1f} s", file=sys.stderr, flush=True)


def run(args) -> int:
    from ..simulation.instances import QUANTITIES, simulate_seeds
    from ..simulation.memory import check_memory
    alpha = check_alpha(args.alpha)
    params = params_from(args)
    check_memory(args.d, alpha, copies=1, name="d")
    print(f"symattn: simulate d = {args.d}, alpha = {alpha:g}, start = {args.start}, "
          f"{args.seeds} seed(s)", file=sys.stderr, flush=True)
    data = simulate_seeds(params, args.d, alpha, args.start, args.seeds, n_test=args.n_test,
                          progress=_simulate_progress)
    if args.json:
        print(json.dumps(json_safe(data), indent=2))
        return 0
    n = args.seeds
    print(f"{args.start} start, d = {args.d}, alpha = {alpha:g} (n = {round(alpha * args.d)} "
          f"sentences): mean +- standard error over {n} seed(s)")
    cols = [args.start] + list(data.get("paired", {}))
    stats = [data] + list(data.get("paired", {}).values())
    print(f"  {'':13s}" + "".join(f"{c + ' start':>26s}" for c in cols))
    for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
        print(f"  {k:13s}" + "".join(f"{st[k]:>14.7g} +- {st[k + '_err']:8.1e}" for st in stats))
    print(f"  {'converged':13s}" + "".join(f"{str(st['n_converged']) + '/' + str(n):>26s}"
                                             for st in stats))
    if "delta_eps_t" in data:
        print(f"paired eps_t(semantic) - eps_t(positional) = {data['delta_eps_t']:.4e} +- "
              f"{data['delta_eps_t_err']:.1e} (semantic lower in {data['semantic_lower']}/{n} "
              "seeds)")
    print(f"took {data['wall_time']:.1f} s")
    return 0
