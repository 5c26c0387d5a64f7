"""``symattn simulate``: finite-size training from a warm start, K seeds (model page §6)."""

from __future__ import annotations

import json
import sys

from .common import (EXIT_NOT_FOUND, add_model_group, alpha_arg, int_arg, params_from, STARTS)


def add_parser(sub):
    s = sub.add_parser("simulate", help="finite-size training from a warm start, K seeds "
                       "(model page §6)")
    s.add_argument("--d", required=True, type=int_arg("d", 2, 10**7), help="dimension d >= 2")
    s.add_argument("--alpha", required=True, type=alpha_arg(),
                   help="sample complexity n/d > 0; n = round(alpha d) >= 1 sentences")
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


def _general_text(res: dict) -> str:
    """Plain-text summary of :func:`symattn.simulation.general.simulate`'s result."""
    from ..results import format_estimate
    lines = [f"general model L = {res['L']}, r = {res['r']}, r_t = {res['r_t']}: d = {res['d']}, "
             f"alpha = {res['alpha']:g}, start = {res['start']}, {len(res['seeds'])} seed(s)"]
    for k in ("eps_t", "eps_g", "eps_lin", "Tr_q"):
        if res.get(k) is not None:
            lines.append(f"  {k:8s} {format_estimate(res[k], res.get(k + '_err'))}")
    if "delta_eps_t" in res:
        lines.append(f"  eps_t(semantic) - eps_t(positional) = "
                     f"{format_estimate(res['delta_eps_t'], res.get('delta_eps_t_err'))}")
    lines.append(f"  converged {res['n_converged']} of {len(res['seeds'])}; "
                 f"took {res['wall_time']:.1f} s (--json for every order parameter)")
    return "\n".join(lines)


def run(args) -> int:
    from ..simulation.memory import check_size
    params = params_from(args, general=True)           # bad input: one line, before any output
    d, alpha = check_size(args.d, args.alpha, args.n_test, n_test_name="n-test")
    print(f"symattn: simulate d = {d}, alpha = {alpha:g}, start = {args.start}, "
          f"{args.seeds} seed(s)", file=sys.stderr, flush=True)
    from ..api import simulate
    res = simulate(d=d, alpha=alpha, start=args.start, seeds=args.seeds, n_test=args.n_test,
                   omega=args.omega, sigma=args.sigma, lam=args.lam, A=params.A, Pi=params.Pi,
                   r=params.r, r_t=params.r_t, progress=_simulate_progress)
    if not params.is_paper_shape:       # the general model's summary (a JSON-ready dict)
        print(json.dumps(res, indent=2) if args.json else _general_text(res))
        if res["failures"]:
            print(f"symattn: {'; '.join(res['failures'])}", file=sys.stderr)
            return EXIT_NOT_FOUND
        return 0
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        print(repr(res))
        print(f"took {res['wall_time']:.1f} s")
    failed = res.failures()
    if failed:
        print(f"symattn: {failed}", file=sys.stderr)
        return EXIT_NOT_FOUND
    return 0
