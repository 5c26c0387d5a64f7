"""Convergence of the output-channel integrals: scrambled Sobol (RQMC) against Gauss-Hermite.

Question: how fast do the 4-D output-channel integrals converge with the number of nodes, for
scrambled Sobol rules (RQMC) and for tensor Gauss-Hermite rules?

How: at fixed order parameters (the semantic fixed point near alpha_c, or --x q,m,theta,V) the
hat integrals ``E[f_l xi_l]`` etc. jump where the global prox switches.  For each rule size
this prints the error of ``V_hat`` (the stiffest direction of the saddle point) and of
``E[M]`` (continuous, with kinks):

* RQMC: root-mean-square error over ``--scrambles`` independent scrambles of 2^k points
  (measured against the reference; the scatter is the error itself);
* Gauss-Hermite: error of the tensor rule with ``order^4`` nodes against the same reference.

The reference is the mean of the scrambles at the largest size (``--ref``).  The fitted
slopes of log(error) against log(nodes) summarise the convergence.

Found (docs/numerics.md, 'Integration: measured convergence'; 2-core machine, 2026-11-30,
commit 55c39e8), errors against 8 x 2^18 RQMC: "Fitted slopes (error ~ nodes^s): RQMC -0.81
(V_hat), -0.93 (E[M]); Gauss-Hermite -0.60, -0.52."  At 65536 nodes the errors of V_hat and
E[M] are 3.0e-05 and 1.7e-07 (RQMC 2^16) against 5.1e-05 and 7.5e-07 (GH 16^4); "The RQMC 2^16
point is close to the reference's own error, 4.7e-06."

Rerun (the docs' command)::

    python studies/quadrature_convergence.py

Options: ``[--ref 18] [--scrambles 8] [--x q,m,theta,V]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from symattn.model import ModelParams
from symattn.numerics.channel import OutputChannel
from symattn.numerics.quadrature import GaussHermiteRule, SobolRule
from symattn.numerics.saddle import SaddlePointMap

X_SEMANTIC = (0.0816, 0.0, 0.118, 18.3)


def values(params, nodes, x, symmetry):
    T = SaddlePointMap(params, 1.25, OutputChannel(params, nodes), symmetry=symmetry)
    st = T(x)
    return st.hats[3], st.channel.E_M


def slope(n, err):
    n, err = np.asarray(n, float), np.asarray(err, float)
    ok = err > 0
    return np.polyfit(np.log(n[ok]), np.log(err[ok]), 1)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", type=int, default=18)
    ap.add_argument("--scrambles", type=int, default=8)
    ap.add_argument("--x", default=",".join(map(str, X_SEMANTIC)))
    args = ap.parse_args()
    params = ModelParams()
    x = np.array([float(v) for v in args.x.split(",")])
    sym = "full_flip" if x[1] == 0 else "eta_flip"
    S = args.scrambles
    big = np.array([values(params, SobolRule(args.ref, s).nodes(), x, sym) for s in range(S)])
    ref, ref_se = big.mean(axis=0), big.std(axis=0, ddof=1) / np.sqrt(S)
    print(f"x = (q, m, theta, V) = {tuple(float(v) for v in x)}; reference from {S} x 2^{args.ref} RQMC: "
          f"V_hat = {ref[0]:.10f} +- {ref_se[0]:.1e}, E[M] = {ref[1]:.12f} +- {ref_se[1]:.1e}")
    print(f"{'rule':>16} {'nodes':>8} {'err V_hat':>11} {'err E[M]':>11}")
    rq = []
    for k in range(8, args.ref - 1, 2):
        v = np.array([values(params, SobolRule(k, 100 + s).nodes(), x, sym) for s in range(S)])
        rms = np.sqrt(np.mean((v - ref) ** 2, axis=0))
        rq.append((2**k, *rms))
        print(f"{f'RQMC 2^{k}':>16} {2**k:8d} {rms[0]:11.2e} {rms[1]:11.2e}", flush=True)
    gh = []
    for order in (4, 6, 8, 10, 12, 14, 16, 20):
        v = np.array(values(params, GaussHermiteRule(order).nodes(), x, sym))
        err = np.abs(v - ref)
        gh.append((order**4, *err))
        print(f"{f'GH {order}^4':>16} {order**4:8d} {err[0]:11.2e} {err[1]:11.2e}", flush=True)
    rq, gh = np.array(rq), np.array(gh)
    print(f"fitted slopes (error ~ nodes^s):  RQMC V_hat {slope(rq[:, 0], rq[:, 1]):.2f}, "
          f"E[M] {slope(rq[:, 0], rq[:, 2]):.2f};  GH V_hat {slope(gh[:, 0], gh[:, 1]):.2f}, "
          f"E[M] {slope(gh[:, 0], gh[:, 2]):.2f}")


if __name__ == "__main__":
    main()
