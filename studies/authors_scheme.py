r"""The authors' numerical scheme, re-implemented, measured side by side with symattn.

Question
--------
Where do the published thresholds ``alpha_c(0.3) ~ 1.24`` and ``alpha_l(0.3) ~ 1.45`` come from, and
why do they differ from symattn's ``alpha_c = 1.2504 +- 0.0005``, ``alpha_l = 1.4924 +- 0.0006``?
This module re-implements, in plain numpy/scipy, the scheme the paper's authors used to solve the
saddle-point equations of model page §4 (L = 2, r = r_t = 1, p_2 = -p_1), and splits the gap to
symattn into its parts: the stopping rule, the prox, and the cubature.  It replaces the old
``benchmarks/naive.py`` (BFGS from ``h = w`` on a 4^4 Gauss-Hermite rule), which is *not* the authors'
scheme and lands on a spurious positional point (``m ~ 0.14``).

Rerun
-----
``.venv/bin/python studies/authors_scheme.py`` runs the default study (16 min on one core of a shared
2-core machine) and writes ``studies/data/authors_scheme.json``; pieces already in that file
are skipped on a rerun (``--only 1,3a`` restricts, ``--force`` recomputes the selected pieces,
``--summary`` prints the table of saved results).  ``--only 4w`` adds the threshold scan with warm starts
(3 min more).  ``--help`` lists options.
Progress goes to stderr.  symattn is called only through its command line (``symattn fixed-point``,
``symattn thresholds``), so this study does not depend on symattn's internal layout; from symattn
the module imports only :class:`symattn.model.params.ModelParams` and the atomic file writer.

Sources (all public; read 2026-12-02 from ``github.com/SPOC-group/positional-and-semantic-attention`` at
commit 0b867faf505ddf358f44c076367018fbfdf88af7)
-----------------------------------------------------------------------------------------------------
``theory/theory.ipynb``, the cells this module follows (cited by execution count ``In[..]``):

* ``In[2]``: ``scheme = quadpy.e2r2.get_good_scheme(7)``; every 2-D expectation is
  ``scheme.integrate(lambda x: g(sqrt(2) x)) / pi``, i.e. a rule for the weight ``exp(-x^2-y^2)``
  rescaled to ``N(0, I_2)``.  The two rules are in ``studies/data/authors_cubature.json`` (a copy of the
  shared reference data: degree 7 = Stroud-Secrest VI, 12 points; degree 11 = Rabinowitz-Richter 2,
  28 points; weights sum to 1) because quadpy is no longer freely licensed.
* ``In[3]``, ``In[25]``, ``In[26]``: ``sigma = 0.5, lambda = 0.01, A = [[.6,.4],[.4,.6]], rho = sigma^2,
  omega = 0.3``, token covariance ``rho_xx = sigma^2 I``.  (``rho_xxi`` and ``rho_xixi`` in ``Moreau`` are
  defined in cells that were deleted; ``sigma^2 I`` for both reproduces the notebook's printed numbers,
  see below.)
* ``In[28]``, ``In[31]``: the linear baseline ``mse_lin`` (``What`` from the degree-7 rule, the three
  terms on the degree-11 rule); printed value 0.00398091773693432.
* ``In[48]``: ``update_overlaps`` = the prior channel of model page §4.
* ``In[49]``: ``Moreau`` and ``prox``: ``optimize.minimize(lambda x: Moreau(...), init)`` with
  ``init = [0, 0]`` -- scipy's default method (BFGS), no ``jac`` (forward finite differences, absolute
  step 1.49e-8), default options (``gtol = 1e-5``).  Their objective is **twice** the model page's,
  ``|h - w|^2 / V + sigma^2 ||S||^2 - 2 sigma^2 tr(T S^T)`` (the constant ``sigma^2 ||T||^2`` is added
  only when the value is needed, ``full=True``); same minimiser.
* ``In[50]``: the hat integrals.  Outer rule over ``xi = (xi_1, xi_2)``, inner rule over
  ``eta = (eta_1, eta_2)`` ("Y" in the notebook): a 12 x 12 = 144-node product.  Each hat recomputes the
  prox at all 144 nodes (576 BFGS runs per iteration); this module runs BFGS once per node and reuses
  it, which gives bit-identical numbers because the runs are deterministic.
* ``In[51]``: ``damp(new, old) = (1 - 0.8) new + 0.8 old`` -- the new iterate keeps 80 % of the old one.
* ``In[52]``: ``mse`` = ``sigma^2 E||S - T||_F^2`` = **2 eps_g** (the notebook plots ``mse/2``, ``In[59]``),
  computed as three terms: ``E||T||^2`` and ``E||S||^2`` on the 28-point rule, the cross term on a
  28 x 12 = 336-node product (outer ``u`` on the degree-11 rule; the inner ``integW`` reads the *global*
  degree-7 ``scheme``, not the degree-11 one that ``mse`` binds locally).  With this the stored CSV
  ``mse`` is reproduced to 3.7e-4 relative from its own (q, m, theta); with 784 nodes it would be 5.5e-3
  off on the positional branch.
* ``In[53]``: ``Phi`` = ``trace_term + entro - alpha E[Moreau_full] / 2`` on the 784-node product
  (outer ``xi``, inner ``eta``), prox again BFGS from 0.  ``eps_t = -Phi``.
* ``In[54]``: ``iterate(alpha, max_iter=300, tol=1e-4)``: compute ``F(x)`` (hats at ``x``, then overlaps;
  ``F`` is the saddle-point map, ``T`` stays the teacher's matrix);
  **stop if max(|dq|, |dm|, |dtheta|) < 1e-4 on the undamped difference ``F(x) - x``, V not tested**;
  return ``x`` (the point where ``F`` was evaluated) with its hats; otherwise damp all four overlaps
  ``q, m, V, theta`` (not the hats) and go on.
* ``In[55]``: ``get_curves``: every alpha starts from the same initial condition (no warm start):
  positional ``(q, m, V, theta) = (0.0206838209589, 0.2, 14.575, 0)``, semantic
  ``(0.906838209589, 0.0002, 14.575, 0.3472)``.
* ``In[56]``: a printed semantic run at alpha = 2, 1.79, ... from the semantic initial condition (our
  faithfulness check, piece ``0`` below).

Stored theory curves, ``theory/repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv`` (semantic) and
``..._omega0.3_para.csv`` (positional): their columns ``alpha, q, m, V, theta, mse, Phi`` are copied
into :data:`AUTHORS_CSV` below (the ``_agno`` file, theta = m = 0, is the trivial point and not used).

Findings (measured 2026-12-02 with ``.venv/bin/python studies/authors_scheme.py``; the full table is in
``studies/data/authors_scheme.json``)
---------------------------------------------------------------------------------------------------
Machine: 2 cores, shared with other jobs (load 2-4 during the run); the whole default study took 16.3 min
wall.  "authors/symattn - 1" is the relative difference of the authors' scheme to symattn.

0. *Faithful.*  Semantic run at alpha = 2 from the notebook's start: stops after 51 evaluations like the
   printout; q, theta, V within 4.3e-4, 2.4e-4, 1.9e-4 of the printed values (the first step's hats within
   0.4e-4..3.1e-4): the level of BFGS's own stopping noise (scipy 1.17 here, the notebook's 2021 scipy there).
   ``eps_lin`` = 0.00199045886846722 against the printed ``mse_lin/2`` = 0.00199045886846716.
1. *alpha = 1.25, authors' scheme* (their CSV in brackets): positional q = 0.046353 (0.046361),
   m = 0.253351 (0.253345), V = 14.4566 (14.4547), 29 iterations, residual 8.2e-5 but |dV| = 2.4e-2
   (untested), eps_t = 0.0027091 (0.0027097), eps_g = 0.0034172 (0.0034185); semantic q = 0.081870
   (0.081882), theta = 0.121700 (0.121715), V = 17.2701 (17.2670), 54 iterations, residual 9.2e-5,
   |dV| = 1.5e-2, eps_t = 0.0027198 (0.0027203), eps_g = 0.0022721 (0.0022725).
2. *Against symattn* (authors/symattn - 1): positional V -2.84 %, q -1.48 %, m +0.31 %, eps_t -0.43 %,
   eps_g +0.68 %; semantic V -5.73 %, theta +3.19 %, q +0.30 %, eps_t -0.05 %, eps_g -3.27 %.
3. *Attribution.*  (a) BFGS from 0 returns the global minimiser at every node: 0/144 and 0/784 misses on
   both branches (largest excess 2.9e-10, BFGS's tolerance); few nodes have a second minimum at all
   (positional 8/144 and 68/784, semantic 0/144 and 12/784).  (b) Converging the 144-node equations
   tightly, with BFGS-from-0 and then with the global prox, splits authors/symattn - 1 into stopping rule +
   prox + cubature: semantic V -5.73 % = +0.12 + 0.00 - 5.84 %, theta +3.19 % = -0.10 + 0.00 + 3.30 %;
   positional V -2.84 % = -0.20 - 0.01 - 2.64 %.  The 144-node rule is the whole story.  The positional
   fixed point of the 144-node map has a Jacobian eigenvalue -4.03: damping 0.8 is needed (contraction
   0.84; with damping 0.5 the iteration diverges, factor 1.51).
4. *Thresholds.*  Authors' scheme: alpha_c = 1.2633 (their cold starts; warm starts 1.2632), alpha_l =
   1.4497 (warm 1.4494).  Their stored curves cross at alpha_c = 1.2621 (linear, 1.25..1.357; spline 1.2631)
   and alpha_l = 1.4508 (spline 1.4503).  symattn: 1.25038 +- 0.0005 and 1.49239 +- 0.0006.  So the
   published alpha_l = 1.45 is the authors' scheme; the published alpha_c = 1.24 is reproduced neither by
   the scheme nor by their own curves (at 1.24 their positional eps_t is still lower, by 1.8e-5).
   alpha_c gap +0.0129 (linearised at 1.25): stopping rule -0.0007, prox 0.0000, 144-node hat rule +0.0091,
   784-node Phi rule +0.0045 (at symattn's exact points the 784-node Phi is 0.55 % / 0.42 % low on the
   positional / semantic branch).  alpha_l gap +0.0427: their eps_lin is 1.0 % high (W = E[T] from the
   12-point rule; 0.0019905 against 0.0019714), worth +0.0150; their semantic eps_g is 2.0 % low at
   alpha = 1.45 (V 15.76 against 16.44, theta 0.1336 against 0.1315), worth +0.0277.
5. *Time* (wall; cpu in brackets).  Authors' fixed point: 16 s (11 s) positional, 24 s (17 s) semantic,
   plus 2-3 s for eps_t and eps_g -- after two exact speed-ups (one BFGS per node instead of four, scipy's
   finite difference passed as ``jac``); the notebook as written would take about 150 s and 280 s of cpu.
   ``symattn fixed-point``: 18 s (18 s) and 24 s (19 s), with error bars and residual 1e-10.  Threshold
   scan: 474 s for 28 fixed points plus 114 s of root finding, against 73 s (119 s cpu, 2 cores) for
   ``symattn thresholds``, which also gives error bars.

Formulas (model page §3-§4, s = (+1, -1), rho = sigma^2)
--------------------------------------------------------------
::

    loss(h, h*) = sigma^2 [(S11 - T11)^2 + (S22 - T22)^2]          (= (sigma^2/2) ||S - T||_F^2)
    S11 = logistic(h1^2 - h1 h2),  S22 = logistic(h2^2 - h1 h2),
    T   = (1 - omega) S(h*) + omega A
    w_l = sqrt(q) xi_l + s_l m,    h*_l = (theta/sqrt(q)) xi_l + sqrt(rho - theta^2/q) eta_l
    M(xi, eta) = min_h [ |h - w|^2 / (2V) + loss(h, h*) ],   f = (prox - w) / V
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq, minimize
from scipy.special import expit

from symattn.model.params import ModelParams
from symattn.runs import atomic_write_text

HERE = Path(__file__).resolve().parent
CUBATURE_FILE = HERE / "data" / "authors_cubature.json"
RESULTS_FILE = HERE / "data" / "authors_scheme.json"
SYMATTN = HERE.parent / ".venv" / "bin" / "symattn"

#: The authors' iteration (notebook In[51], In[54]).
DAMPING = 0.8
TOL = 1e-4
MAX_ITER = 300
#: Initial conditions of notebook In[55], as (q, m, V, theta) -> dict.
POSITIONAL_INIT = {"q": 0.0206838209589, "m": 0.2, "V": 14.575, "theta": 0.0}
SEMANTIC_INIT = {"q": 0.906838209589, "m": 0.0002, "V": 14.575, "theta": 0.3472}
INITS = {"positional": POSITIONAL_INIT, "semantic": SEMANTIC_INIT}
#: scipy's default absolute finite-difference step for BFGS without ``jac`` (sqrt of machine epsilon).
BFGS_FD_STEP = 1.4901161193847656e-08
#: Signs of the positional encodings, p_2 = -p_1.
SIGNS = np.array([1.0, -1.0])
KEYS = ("q", "m", "theta", "V")
HAT_KEYS = ("q_hat", "m_hat", "theta_hat", "V_hat")

#: The authors' stored theory curves at omega = 0.3 (columns alpha, q, m, V, theta, mse, Phi; mse = 2 eps_g,
#: Phi = -eps_t), copied from theory/repl_softmax_Mixed_sig0.5_lamb0.01_omega0.3.csv (semantic) and
#: ..._omega0.3_para.csv (positional) of SPOC-group/positional-and-semantic-attention @ 0b867fa.
AUTHORS_CSV = {
    "semantic": """\
2.0,0.11415017990617564,1.226894055183022e-08,12.327885683844869,0.15856055220203275,0.0027930868446673918,-0.003599352337970492
1.8928571428571428,0.11014649764532011,-1.1322142260842072e-08,12.919840974635399,0.15445692236230554,0.0029856497711678864,-0.0034959108698126955
1.7857142857142856,0.10593059646286317,-6.902304582982855e-09,13.551331034014186,0.14998815739148297,0.0031976643474393995,-0.0033862429701897725
1.6785714285714286,0.10149280424613175,9.080439488817476e-09,14.218274679453838,0.14516174323088654,0.0034277898816461594,-0.0032697439458375345
1.5714285714285714,0.09688052784921801,2.2277800634388286e-08,14.922364869278569,0.13996884412896857,0.003676414893391655,-0.0031456625892836675
1.4642857142857142,0.0920768413833623,5.257254287890221e-09,15.658780436831105,0.13436694104585886,0.00394461574494942,-0.003013283246736562
1.3571428571428572,0.08707740631062527,5.652074558546317e-09,16.43027861942045,0.12833381226310503,0.00423210380773964,-0.002871874137655124
1.25,0.08188248022049105,-1.2594374808338696e-08,17.26700951687913,0.12171494957975484,0.004545061800608985,-0.002720275075475354
1.24,0.08138604822097394,-9.54706201647387e-09,17.35195535814113,0.12105288186377183,0.004576183940087408,-0.002705535166287802
1.1281818181818182,0.07566384430449109,1.665047502655403e-08,18.361808765516404,0.11322287196073384,0.0049396637185087355,-0.00253395569947562
1.0163636363636364,0.0695638809100648,-2.0345155060514986e-08,19.606356268981273,0.10404938376407896,0.005352672762019561,-0.002347899442909628
0.9045454545454545,0.06304331513058851,-2.1991948054254478e-08,21.52332785630633,0.091554737522032,0.005880634531333695,-0.002141732874676963
0.7927272727272727,0.05650952872590989,-2.505286953535827e-08,23.999390516755163,0.07545842320883178,0.0064818600650380365,-0.0019182948984104047
0.6809090909090909,0.04959268199440639,-5.3253864476524376e-08,26.065661729953632,0.06037588639853319,0.006974518030512522,-0.0016854349600811775
0.5690909090909091,0.04248337256731916,-4.24540684868276e-08,27.795975941649246,0.045671764667954216,0.007391606531999995,-0.001438862215475021
0.4572727272727273,0.03513188903915426,-2.3104731405258798e-07,28.956230905930298,0.033118791200089384,0.0077178769012503645,-0.0011846725594785374
0.34545454545454546,0.027416592811154054,-1.5200297166257634e-08,29.590448092347117,0.022254571347277142,0.00799620333665696,-0.0009229475923100369
0.23363636363636364,0.01911387842581389,1.111413748080237e-07,29.67889045685034,0.013192013709445609,0.00825845037606665,-0.0006492471504873764
0.12181818181818181,0.010152799549034698,2.0322465623899603e-07,29.004722691705048,0.005749346816452465,0.00853528451301877,-0.0003592411772520447
0.01,0.0008232063662072006,1.020479332863489e-06,26.062115279484185,0.0003085759133657204,0.008841244559214423,-3.31016138235573e-05
""",
    "positional": """\
2.0,0.050012313500147836,0.25856717789921435,11.036146049061081,-1.0801904480463917e-19,0.006980917367439443,-0.004515268863535892
1.8928571428571428,0.04988822326460753,0.2581244305902345,11.429631659895424,1.0094417048932276e-19,0.006975311080302582,-0.004246136441382172
1.7857142857142856,0.04965335483689055,0.2576490185704795,11.850938645849864,-4.328947313587262e-19,0.006965355156855035,-0.0039802674964443145
1.6785714285714286,0.04930292772177656,0.2570704652471532,12.30239813205764,-1.1700650704169505e-20,0.00695086800343192,-0.003717891876506665
1.5714285714285714,0.04881737760455837,0.25643038584980393,12.784354732301859,1.9401112762684345e-20,0.0069312850355564,-0.0034593699366973754
1.4642857142857142,0.048172220235666675,0.2556383636214654,13.29733732543082,1.2940427620511123e-20,0.006905794875290083,-0.0032050072938785206
1.3571428571428572,0.0473672731001681,0.25463244848497696,13.854253413280054,1.0052125204282734e-19,0.006874731407277124,-0.0029549732535783108
1.25,0.04636068503764697,0.2533450029525329,14.454688224214648,1.881640744148352e-19,0.006837080443428012,-0.002709734719703341
1.24,0.04625578195734526,0.2532064635060227,14.513903025676948,-4.249833524128698e-19,0.0068332358327019005,-0.002687095285384909
1.1281818181818182,0.04493989668379427,0.251419856363587,15.199692308559658,3.1686629598997605e-19,0.00678634665307376,-0.0024370231610927238
1.0163636363636364,0.043326595670197955,0.24903839123373667,15.951294872747738,-1.6028094641610023e-19,0.006732561596736963,-0.002192713914498436
0.9045454545454545,0.04085747194427131,0.2485350808596336,16.396116984149007,2.2894123975087624e-19,0.006648746641588987,-0.001957669792627567
0.7927272727272727,0.03867631813197352,0.24396287664812324,17.298968897685313,-7.734582726141714e-20,0.006592667540390451,-0.0017239532624523976
0.6809090909090909,0.03607600177492187,0.23760713569964148,18.273290880317035,1.228517912842247e-19,0.00654446715126944,-0.0014960673870802643
0.5690909090909091,0.032870620066194255,0.22850826710070685,19.436247588841802,1.6818961097984566e-19,0.006517927966931736,-0.001273086085467474
0.4572727272727273,0.028969467525742486,0.2153152566215703,20.68538171848898,7.295898782849572e-20,0.006545241732684115,-0.0010534624726485334
0.34545454545454546,0.02420215830208673,0.19505067242329416,22.053588865887757,1.2169926364552118e-19,0.006692371499548377,-0.0008335853429290326
0.23363636363636364,0.018254804457196194,0.1598106952301209,23.80083727703223,-9.77880820901292e-20,0.007114275645729751,-0.0006055915662005899
0.12181818181818181,0.01037030646823761,0.10175436163849302,25.335642067617762,8.623818045139146e-20,0.007937401092254937,-0.0003526733735845839
0.01,0.0007534157713460449,0.0022045125250461906,26.245425197081076,3.520996188596589e-21,0.008843329607687966,-3.3105185369604495e-05
""",
}
#: The notebook's printed linear-baseline value (In[31]), sigma^2 E||T - W||^2 = 2 eps_lin.
AUTHORS_MSE_LIN = 0.00398091773693432
#: The notebook's printed semantic run at alpha = 2 (In[56]): the first damped step and the converged point.
NOTEBOOK_ALPHA2 = {
    "first_hats": {"q_hat": 0.00042269794929215696, "m_hat": -2.501155470133591e-05,
                   "V_hat": 0.034937490034936444, "theta_hat": 0.03529234793560631},
    "first_step": {"q": 0.7516150339383423, "m": -0.00010701246267709607, "V": 14.328891097189917,
                   "theta": 0.30130785830106716},
    "converged": {"q": 0.1141873088275243, "m": -1.4535733919606975e-08, "V": 12.328583344082624,
                  "theta": 0.15858571671173405, "iterations": 51},
}

_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress line on stderr with the elapsed wall time of this process."""
    print(f"[{time.perf_counter() - _T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


# ==================================================================================================
# Cubature
# ==================================================================================================

@dataclass(frozen=True)
class GaussianRule2D:
    """A 2-D cubature rule for ``N(0, I_2)``: ``E[g(x)] ~ sum_i weights_i g(points_i)``.

    ``points`` (n, 2), ``weights`` (n,) summing to 1.  Loaded from a rule for the weight
    ``exp(-x^2 - y^2)`` whose points are multiplied by sqrt(2) (notebook In[2]: ``g(sqrt(2) x) / pi``).
    """

    name: str
    degree: int
    points: np.ndarray
    weights: np.ndarray

    @classmethod
    def load(cls, key: str, path: Path = CUBATURE_FILE) -> "GaussianRule2D":
        r = json.loads(path.read_text())[key]
        return cls(r["name"], int(key.split("_")[1]), math.sqrt(2.0) * np.array(r["points"], float),
                   np.array(r["weights"], float))


@dataclass(frozen=True)
class ProductRule:
    """The nested rule ``E_xi E_eta`` of notebook In[50]/In[53]: outer rule over ``xi = (xi_1, xi_2)``,
    inner over ``eta = (eta_1, eta_2)``.  ``xi``, ``eta`` (n_o n_i, 2); ``weights`` (n_o n_i,)."""

    name: str
    xi: np.ndarray
    eta: np.ndarray
    weights: np.ndarray

    @classmethod
    def nest(cls, outer: GaussianRule2D, inner: GaussianRule2D) -> "ProductRule":
        n_o, n_i = len(outer.weights), len(inner.weights)
        return cls(f"{outer.name} x {inner.name} ({n_o * n_i} nodes)",
                   np.repeat(outer.points, n_i, axis=0), np.tile(inner.points, (n_o, 1)),
                   np.repeat(outer.weights, n_i) * np.tile(inner.weights, n_o))

    def __len__(self) -> int:
        return len(self.weights)


RULE7 = GaussianRule2D.load("degree_7")
RULE11 = GaussianRule2D.load("degree_11")
HAT_RULE = ProductRule.nest(RULE7, RULE7)        # 144 nodes, hat equations
PHI_RULE = ProductRule.nest(RULE11, RULE11)      # 784 nodes, Phi


# ==================================================================================================
# The channel: loss, Moreau objective, their derivatives (pure, vectorised kernels)
# ==================================================================================================

def _logistic(z: float) -> float:
    """logistic(z) = 1 / (1 + exp(-z)), scalar, overflow-free (= the notebook's softmax of two logits)."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def teacher_diag(hs: np.ndarray, params: ModelParams) -> np.ndarray:
    """(T11, T22) of ``T(h*) = (1 - omega) softmax(h* h*^T) + omega A``; ``hs`` (..., 2) -> (..., 2)."""
    a1, a2 = hs[..., 0], hs[..., 1]
    om = params.omega
    return np.stack([(1 - om) * expit(a1 * a1 - a1 * a2) + om * params.A[0][0],
                     (1 - om) * expit(a2 * a2 - a1 * a2) + om * params.A[1][1]], axis=-1)


def node_map(x: dict, rule: ProductRule, params: ModelParams):
    """``w_l = sqrt(q) xi_l + s_l m``, ``h*_l = (theta/sqrt(q)) xi_l + sqrt(rho - theta^2/q) eta_l``.

    Returns ``w`` (n, 2) and the teacher diagonal ``t = (T11, T22)(h*)`` (n, 2)."""
    q, m, theta = x["q"], x["m"], x["theta"]
    w = math.sqrt(q) * rule.xi + SIGNS * m
    hs = (theta / math.sqrt(q)) * rule.xi + math.sqrt(params.rho - theta ** 2 / q) * rule.eta
    return w, teacher_diag(hs, params)


def moreau_parts(h1, h2, w1, w2, t11, t22, V, s2, order=2):
    r"""the model page's Moreau objective, its gradient and Hessian, elementwise over arrays.

    .. math::
        \mathcal M(h) = \frac{|h - w|^2}{2V} + \sigma^2 [(S_{11} - T_{11})^2 + (S_{22} - T_{22})^2],
        \quad S_{11} = \mathrm{logistic}(a),\ a = h_1^2 - h_1 h_2,\quad S_{22} = \mathrm{logistic}(b),\
        b = h_2^2 - h_1 h_2

    ``grad = (h - w)/V + 2 s2 [r1 S11' grad a + r2 S22' grad b]`` with ``r = S - T``,
    ``S' = S(1 - S)``, ``grad a = (2h1 - h2, -h1)``, ``grad b = (-h2, 2h2 - h1)``; the Hessian adds
    ``S'' = S'(1 - 2S)`` and ``Hess a = [[2, -1], [-1, 0]]``, ``Hess b = [[0, -1], [-1, 2]]``.
    Returns ``M`` (order 0), ``M, g1, g2`` (1) or ``M, g1, g2, H11, H12, H22`` (2).
    """
    a = h1 * h1 - h1 * h2
    b = h2 * h2 - h1 * h2
    S11, S22 = expit(a), expit(b)
    r1, r2 = S11 - t11, S22 - t22
    M = ((h1 - w1) ** 2 + (h2 - w2) ** 2) / (2 * V) + s2 * (r1 * r1 + r2 * r2)
    if order == 0:
        return M
    d1, d2 = S11 * (1 - S11), S22 * (1 - S22)
    a1, a2 = 2 * h1 - h2, -h1            # grad a
    b1, b2 = -h2, 2 * h2 - h1            # grad b
    c1, c2 = 2 * s2 * r1 * d1, 2 * s2 * r2 * d2
    g1 = (h1 - w1) / V + c1 * a1 + c2 * b1
    g2 = (h2 - w2) / V + c1 * a2 + c2 * b2
    if order == 1:
        return M, g1, g2
    e1 = 2 * s2 * (d1 * d1 + r1 * d1 * (1 - 2 * S11))   # coefficient of grad a grad a^T
    e2 = 2 * s2 * (d2 * d2 + r2 * d2 * (1 - 2 * S22))
    H11 = 1 / V + e1 * a1 * a1 + e2 * b1 * b1 + c1 * 2
    H12 = e1 * a1 * a2 + e2 * b1 * b2 - c1 - c2
    H22 = 1 / V + e1 * a2 * a2 + e2 * b2 * b2 + c2 * 2
    return M, g1, g2, H11, H12, H22


# ==================================================================================================
# Prox, two ways: the authors' BFGS from h = 0, and a dense multi-start global minimiser
# ==================================================================================================

def _authors_objective(w1, w2, t11, t22, V, s2):
    r"""The notebook's ``Moreau(..., full=False)`` (In[49]) as a fast scalar function of ``(h1, h2)``:

    .. math:: |h - w|^2 / V + \sigma^2 \|S\|_F^2 - 2 \sigma^2 \mathrm{tr}(T S^T)
              \;=\; 2\mathcal M(h) - \sigma^2 \|T\|_F^2 .

    Written with ``math`` on floats: values agree with the notebook's numpy version to ~1e-16, and the BFGS
    answers to ~1e-7 (rounding steers the iterates slightly; piece 5 measures it), far below BFGS's own
    tolerance.
    """
    def f(h1: float, h2: float) -> float:
        s11 = _logistic(h1 * h1 - h1 * h2)
        s22 = _logistic(h2 * h2 - h1 * h2)
        return (((h1 - w1) ** 2 + (h2 - w2) ** 2) / V
                + s2 * (s11 * s11 + (1 - s11) ** 2 + s22 * s22 + (1 - s22) ** 2)
                - 2 * s2 * (t11 * s11 + (1 - t11) * (1 - s11) + t22 * s22 + (1 - t22) * (1 - s22)))
    return f


def prox_bfgs_from_zero(w: np.ndarray, t: np.ndarray, V: float, params: ModelParams) -> np.ndarray:
    """The authors' prox (notebook In[49]): ``scipy.optimize.minimize(obj, [0, 0])`` at every node.

    Default method BFGS, default options (``gtol = 1e-5``), gradient by scipy's forward differences.  To
    save time we pass that same forward difference as ``jac`` -- ``(f(h + eps e_i) - f(h)) / dx_i`` with
    ``eps = 1.49e-8`` absolute and ``dx_i = (h_i + eps) - h_i``, exactly what scipy's ``approx_derivative``
    computes when BFGS has no ``jac`` -- which gives bit-identical iterates (checked on 300 random nodes)
    at half the cost.  ``w``, ``t`` (n, 2) -> prox (n, 2).
    """
    s2 = params.sigma ** 2
    out = np.empty_like(w)
    for i in range(len(w)):
        f = _authors_objective(float(w[i, 0]), float(w[i, 1]), float(t[i, 0]), float(t[i, 1]), V, s2)

        def fun(h, f=f):
            return f(float(h[0]), float(h[1]))

        def jac(h, f=f):
            h1, h2 = float(h[0]), float(h[1])
            f0 = f(h1, h2)
            a, b = h1 + BFGS_FD_STEP, h2 + BFGS_FD_STEP
            return np.array([(f(a, h2) - f0) / (a - h1), (f(h1, b) - f0) / (b - h2)])

        out[i] = minimize(fun, np.zeros(2), jac=jac).x
    return out


def multistart_starts(w: np.ndarray, V: float, grid: int = 7) -> np.ndarray:
    """Starts of the dense multi-start, (n, 7 + grid^2, 2): ``0, w, -w, (w1,-w2), (-w1,w2), (w1,0), (0,w2)``
    and a ``grid x grid`` lattice over the box ``[-R, R]^2``, ``R = 3 sqrt(V) + |w|`` (every minimiser lies
    within ``|h - w| <= sqrt(2 V max loss) <= sqrt(4 sigma^2 V)`` of ``w``, as ``M(prox) <= M(w) = loss``; at
    sigma = 1/2 that is ``sqrt(V)``, so the box is generous)."""
    n = len(w)
    w1, w2 = w[:, 0], w[:, 1]
    z = np.zeros(n)
    structured = np.stack([np.stack(p, axis=-1) for p in
                           [(z, z), (w1, w2), (-w1, -w2), (w1, -w2), (-w1, w2), (w1, z), (z, w2)]], axis=1)
    R = 3 * math.sqrt(V) + np.linalg.norm(w, axis=1)
    u = np.linspace(-1.0, 1.0, grid)
    U1, U2 = np.meshgrid(u, u, indexing="ij")
    lattice = R[:, None, None] * np.stack([U1.ravel(), U2.ravel()], axis=-1)[None]
    return np.concatenate([structured, lattice], axis=1)


def newton_minimise(h0, w, t, V, s2, gtol=1e-11, max_iter=200):
    """Local minimisation of the model page's Moreau objective from many starts at once.

    Newton with the Hessian shifted to ``lambda_min >= 0.1/V`` where it is not (a descent direction
    everywhere) and Armijo backtracking (c = 1e-4).  ``h0`` (n, k, 2); ``w``, ``t`` (n, 2).  Returns
    ``h`` (n, k, 2), ``M`` (n, k) and the final max |grad| (n, k).
    """
    h1, h2 = h0[..., 0].copy(), h0[..., 1].copy()
    W1, W2 = w[:, 0:1] + 0 * h1, w[:, 1:2] + 0 * h1
    T1, T2 = t[:, 0:1] + 0 * h1, t[:, 1:2] + 0 * h1
    gmax = np.full(h1.shape, np.inf)
    active = np.ones(h1.shape, bool)
    delta = 0.1 / V
    for _ in range(max_iter):
        idx = np.nonzero(active)
        if len(idx[0]) == 0:
            break
        x1, x2 = h1[idx], h2[idx]
        w1, w2, t1, t2 = W1[idx], W2[idx], T1[idx], T2[idx]
        M, g1, g2, A, B, C = moreau_parts(x1, x2, w1, w2, t1, t2, V, s2)
        g = np.maximum(np.abs(g1), np.abs(g2))
        gmax[idx] = g
        done = g < gtol
        lam_min = (A + C) / 2 - np.sqrt(((A - C) / 2) ** 2 + B ** 2)
        shift = np.where(lam_min < delta, delta - lam_min, 0.0)
        A, C = A + shift, C + shift
        det = A * C - B * B
        p1, p2 = -(C * g1 - B * g2) / det, -(A * g2 - B * g1) / det
        slope = g1 * p1 + g2 * p2
        step = np.ones_like(x1)
        ok = done.copy()
        for _ in range(60):
            trial = moreau_parts(x1 + step * p1, x2 + step * p2, w1, w2, t1, t2, V, s2, order=0)
            ok |= trial <= M + 1e-4 * step * slope
            if ok.all():
                break
            step = np.where(ok, step, step / 2)
        move = ~done & ok
        x1, x2 = np.where(move, x1 + step * p1, x1), np.where(move, x2 + step * p2, x2)
        h1[idx], h2[idx] = x1, x2
        # converged, or the line search cannot make progress at double precision
        active[idx] = ~done & ok & (np.abs(step * p1) + np.abs(step * p2) > 1e-15 * (1 + np.abs(x1) + np.abs(x2)))
    M = moreau_parts(h1, h2, W1, W2, T1, T2, V, s2, order=0)
    return np.stack([h1, h2], axis=-1), M, gmax


def prox_global(w, t, V, params, extra=None):
    """Global minimiser of the Moreau objective by a dense multi-start (:func:`multistart_starts`,
    56 starts, :func:`newton_minimise`), keeping the lowest value; ``extra`` (n, 2), e.g. the BFGS-from-0
    answer, is polished and added as a candidate.  Returns ``prox`` (n, 2) and ``M`` (n,) (model page units)."""
    s2 = params.sigma ** 2
    starts = multistart_starts(w, V)
    if extra is not None:
        starts = np.concatenate([starts, extra[:, None, :]], axis=1)
    h, M, _ = newton_minimise(starts, w, t, V, s2)
    best = np.argmin(M, axis=1)
    rows = np.arange(len(w))
    return h[rows, best], M[rows, best]


def count_local_minima(w, t, V, params, xtol=1e-6):
    """Number of distinct local minimisers found by the 56 starts at each node (endpoints with
    max |grad| < 1e-9 and a positive definite Hessian, merged when closer than ``xtol``); (n,) ints."""
    s2 = params.sigma ** 2
    h, M, g = newton_minimise(multistart_starts(w, V), w, t, V, s2)
    _, _, _, A, B, C = moreau_parts(h[..., 0], h[..., 1], w[:, :1], w[:, 1:], t[:, :1], t[:, 1:], V, s2)
    ok = (g < 1e-9) & (A > 0) & (A * C - B * B > 0)
    counts = np.zeros(len(w), int)
    for i in range(len(w)):
        pts = []
        for p in h[i][ok[i]]:
            if all(np.abs(p - q).max() > xtol for q in pts):
                pts.append(p)
        counts[i] = len(pts)
    return counts


def moreau_value(h, w, t, V, params):
    """``M(h)`` in the model page's units at given ``h`` (n, 2)."""
    return moreau_parts(h[:, 0], h[:, 1], w[:, 0], w[:, 1], t[:, 0], t[:, 1], V, params.sigma ** 2, order=0)


# ==================================================================================================
# The saddle-point map and the authors' iteration
# ==================================================================================================

def hat_update(x: dict, alpha: float, params: ModelParams, rule: ProductRule = HAT_RULE,
               prox: str = "bfgs0") -> dict:
    r"""Output channel at ``x = (q, m, theta, V)`` (notebook In[50]; model page §4):

    .. math::
        \hat q = \alpha E[f_1^2 + f_2^2],\quad \hat m = \alpha E[f_1 - f_2],\quad
        \hat\theta = \alpha E[f\cdot\eta] / \sqrt{\rho - \theta^2/q},\quad
        \hat V = -\alpha E[f\cdot\xi]/\sqrt q + \theta\hat\theta/q

    with ``f = (prox - w)/V`` and ``prox`` the authors' BFGS from 0 (``"bfgs0"``) or the global multi-start
    minimiser (``"global"``).
    """
    w, t = node_map(x, rule, params)
    V = x["V"]
    h = prox_bfgs_from_zero(w, t, V, params)
    if prox == "global":
        h, _ = prox_global(w, t, V, params, extra=h)
    f = (h - w) / V
    E = lambda g: float(np.dot(rule.weights, g))  # noqa: E731
    spread = math.sqrt(params.rho - x["theta"] ** 2 / x["q"])
    q_hat = alpha * E(f[:, 0] ** 2 + f[:, 1] ** 2)
    m_hat = alpha * E(f[:, 0] - f[:, 1])
    theta_hat = alpha * E(f[:, 0] * rule.eta[:, 0] + f[:, 1] * rule.eta[:, 1]) / spread
    V_hat = (-alpha * E(f[:, 0] * rule.xi[:, 0] + f[:, 1] * rule.xi[:, 1]) / math.sqrt(x["q"])
             + x["theta"] * theta_hat / x["q"])
    return {"q_hat": q_hat, "m_hat": m_hat, "theta_hat": theta_hat, "V_hat": V_hat}


def prior_update(hats: dict, params: ModelParams) -> dict:
    r"""Prior (ridge) channel, closed form (notebook In[48]; model page §4), ``D = lambda + V_hat sigma^2``:

    .. math::
        V = \sigma^2/D,\quad m = \hat m/D,\quad \theta = \sigma^2\rho\hat\theta/D,\quad
        q = \sigma^2(\hat q\sigma^2 + \hat m^2 + \hat\theta^2\sigma^2\rho)/D^2
    """
    s2, rho = params.sigma ** 2, params.rho
    D = params.lam + hats["V_hat"] * s2
    return {"q": s2 * (hats["q_hat"] * s2 + hats["m_hat"] ** 2 + hats["theta_hat"] ** 2 * s2 * rho) / D ** 2,
            "m": hats["m_hat"] / D, "theta": s2 * rho * hats["theta_hat"] / D, "V": s2 / D}


@dataclass
class FixedPoint:
    """A (possibly unconverged) solution of the saddle-point equations with its status.

    ``residual`` is the authors' test quantity ``max(|dq|, |dm|, |dtheta|)`` of ``F(x) - x`` (V excluded);
    ``residual_V`` is ``|dV|`` (not tested by the authors); both at the returned ``x``.
    """

    q: float
    m: float
    theta: float
    V: float
    q_hat: float
    m_hat: float
    theta_hat: float
    V_hat: float
    iterations: int
    converged: bool
    residual: float
    residual_V: float
    wall_time: float
    scheme: str
    cpu_time: float = 0.0
    history: list = field(default_factory=list)

    @property
    def x(self) -> dict:
        return {k: getattr(self, k) for k in KEYS}

    @property
    def hats(self) -> dict:
        return {k: getattr(self, k) for k in HAT_KEYS}


def authors_iterate(alpha, params, init, prox="bfgs0", max_iter=MAX_ITER, tol=TOL, damping=DAMPING,
                    tol_V=None, label="") -> FixedPoint:
    """The notebook's ``iterate`` (In[54]), with its stopping rule.

    Loop: ``hats = hat_update(x)``, ``Fx = prior_update(hats)``; stop if
    ``max |Fx - x|`` over ``q, m, theta`` is ``< tol`` (and, only if ``tol_V`` is given,
    ``|Fx_V - V| < tol_V``), returning ``x`` with ``hats``; else ``x <- (1 - damping) Fx + damping x`` on all
    four overlaps.  With the defaults this is exactly the authors' scheme (damping 0.8, tol 1e-4, 300
    iterations, V untested).  Smaller ``tol`` and a ``tol_V`` converge the same equations tightly.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    x = {k: float(init[k]) for k in KEYS}
    hats, res, resV, converged, hist = None, math.inf, math.inf, False, []
    it = 0
    for it in range(1, max_iter + 1):
        hats = hat_update(x, alpha, params, prox=prox)
        Fx = prior_update(hats, params)
        res = max(abs(Fx[k] - x[k]) for k in ("q", "m", "theta"))
        resV = abs(Fx["V"] - x["V"])
        hist.append([x[k] for k in KEYS] + [res, resV])
        if res < tol and (tol_V is None or resV < tol_V):
            converged = True
            break
        x = {k: (1 - damping) * Fx[k] + damping * x[k] for k in KEYS}
        if not (x["q"] > 0 and x["V"] > 0 and x["theta"] ** 2 < x["q"] * params.rho):
            break
    fp = FixedPoint(**x, **hats, iterations=it, converged=converged, residual=res, residual_V=resV,
                    wall_time=time.perf_counter() - t0, scheme=f"{prox}, damping {damping}, tol {tol:g}"
                    + (f", tol_V {tol_V:g}" if tol_V else " (V untested)"), history=hist,
                    cpu_time=time.process_time() - c0)
    log(f"  {label} alpha={alpha:.6g}: q={fp.q:.6f} m={fp.m:.6f} theta={fp.theta:.6f} V={fp.V:.4f} "
        f"it={it} conv={converged} res={res:.1e} resV={resV:.1e} ({fp.wall_time:.1f} s)")
    return fp


# ==================================================================================================
# Phi (training loss), test error, linear baseline -- the notebook's formulas
# ==================================================================================================

def free_entropy(fp: FixedPoint, alpha: float, params: ModelParams, prox: str = "bfgs0") -> dict:
    r"""Notebook In[53] on the 784-node rule, ``eps_t = -Phi``:

    .. math::
        \Phi = \tfrac12(\hat V q - \hat q V) - m\hat m - \theta\hat\theta
               + \frac{\hat q\sigma^2 + \hat m^2 + \hat\theta^2\rho\sigma^2}{2(\lambda + \hat V\sigma^2)}
               - \alpha E[\mathcal M]

    (the notebook integrates its ``Moreau(full=True) = 2 M`` and divides by 2).  Also returns the
    identity check ``eps_t_direct = alpha E[loss(prox)] + lambda q / (2 sigma^2)`` (model page §4),
    equal to ``-Phi`` at an exact fixed point.
    """
    s2, rho, lam = params.sigma ** 2, params.rho, params.lam
    x = fp.x
    w, t = node_map(x, PHI_RULE, params)
    h = prox_bfgs_from_zero(w, t, fp.V, params)
    if prox == "global":
        h, _ = prox_global(w, t, fp.V, params, extra=h)
    M = moreau_value(h, w, t, fp.V, params)
    EM = float(np.dot(PHI_RULE.weights, M))
    loss = M - np.sum((h - w) ** 2, axis=1) / (2 * fp.V)
    qh, mh, th, Vh = fp.q_hat, fp.m_hat, fp.theta_hat, fp.V_hat
    phi = (0.5 * (Vh * fp.q - qh * fp.V) - fp.m * mh - fp.theta * th
           + 0.5 * (qh * s2 + mh ** 2 + th ** 2 * rho * s2) / (lam + Vh * s2) - alpha * EM)
    return {"eps_t": -phi, "eps_t_direct": alpha * float(np.dot(PHI_RULE.weights, loss)) + lam * fp.q / (2 * s2)}


def _sq_frob_diag(d11, d22):
    """``||X||_F^2`` of a row-stochastic 2x2 matrix with diagonal (d11, d22)."""
    return d11 ** 2 + (1 - d11) ** 2 + d22 ** 2 + (1 - d22) ** 2


#: The rule of the test error's cross term (notebook In[52]): ``mse`` binds a *local* degree-11 ``scheme`` for
#: the outer integral over ``u``, but ``integW`` (the inner integral over ``v``) reads the *global* ``scheme``
#: of In[2], the degree-7 rule: 28 x 12 = 336 nodes, not 784.
EPS_G_RULE = ProductRule.nest(RULE11, RULE7)


def test_error(x: dict, params: ModelParams) -> float:
    r"""Notebook In[52]: ``mse = sigma^2 E||T||^2 + sigma^2 E||S||^2 - 2 sigma^2 E tr(T S^T)``, the first two on
    the 28-point rule (``h* ~ N(0, rho I)``; ``h = s m + sqrt(q) u``), the cross term on
    :data:`EPS_G_RULE` (outer ``u`` on the 28-point rule, inner ``v`` on the 12-point rule,
    ``h*_l = (theta/sqrt q) u_l + sqrt(rho - theta^2/q) v_l``).  Returns ``eps_g = mse / 2`` (the model page's units;
    the notebook plots ``mse/2``, In[59]).  At the (q, m, theta) stored in the authors' CSV files this
    reproduces their ``mse/2`` to 3.7e-4 relative on both branches (with a 784-node cross term: 5.5e-3).
    """
    s2 = params.sigma ** 2
    q, m, theta = x["q"], x["m"], x["theta"]
    p, wt = RULE11.points, RULE11.weights
    T1 = teacher_diag(math.sqrt(params.rho) * p, params)
    term1 = s2 * np.dot(wt, _sq_frob_diag(T1[:, 0], T1[:, 1]))
    h = SIGNS * m + math.sqrt(q) * p
    S2 = np.stack([expit(h[:, 0] ** 2 - h[:, 0] * h[:, 1]), expit(h[:, 1] ** 2 - h[:, 0] * h[:, 1])], -1)
    term2 = s2 * np.dot(wt, _sq_frob_diag(S2[:, 0], S2[:, 1]))
    u, v, W = EPS_G_RULE.xi, EPS_G_RULE.eta, EPS_G_RULE.weights
    hu = SIGNS * m + math.sqrt(q) * u
    S = np.stack([expit(hu[:, 0] ** 2 - hu[:, 0] * hu[:, 1]), expit(hu[:, 1] ** 2 - hu[:, 0] * hu[:, 1])], -1)
    T = teacher_diag((theta / math.sqrt(q)) * u + math.sqrt(params.rho - theta ** 2 / q) * v, params)
    cross = S[:, 0] * T[:, 0] + (1 - S[:, 0]) * (1 - T[:, 0]) + S[:, 1] * T[:, 1] + (1 - S[:, 1]) * (1 - T[:, 1])
    term3 = -2 * s2 * np.dot(W, cross)
    return float(term1 + term2 + term3) / 2


def linear_baseline_error(params: ModelParams) -> float:
    r"""Notebook In[28] ``mse_lin``: ``W = omega A + (1 - omega) E_7[S(h*)]`` on the **degree-7** rule, then
    ``tr(W rho_xx W) + E_11 tr(T rho_xx T^T) - 2 E_11 tr(W rho_xx T^T)`` on the 28-point rule
    (``h* ~ N(0, rho I)``).  Returns ``eps_lin = mse_lin / 2``.  (The exact value is
    ``(sigma^2/2) E||T - E[T]||^2``; the notebook's ``W`` is only the degree-7 estimate of ``E[T]``.)"""
    s2 = params.sigma ** 2
    d = RULE7.weights @ teacher_diag(math.sqrt(params.rho) * RULE7.points, params)   # E_7[diag T]
    W = np.array([[d[0], 1 - d[0]], [1 - d[1], d[1]]])        # rows of T sum to one
    T = teacher_diag(math.sqrt(params.rho) * RULE11.points, params)
    term1 = s2 * np.dot(RULE11.weights, _sq_frob_diag(T[:, 0], T[:, 1]))
    cross = W[0, 0] * T[:, 0] + W[0, 1] * (1 - T[:, 0]) + W[1, 0] * (1 - T[:, 1]) + W[1, 1] * T[:, 1]
    term2 = s2 * np.dot(RULE11.weights, cross)
    term3 = s2 * np.trace(W @ W)
    return float(term3 + term1 - 2 * term2) / 2


# ==================================================================================================
# symattn, through its command line only
# ==================================================================================================

def run_symattn(args: list[str]) -> dict:
    """Run ``.venv/bin/symattn <args> --json``; return its JSON plus ``wall_time_subprocess`` and
    ``cpu_time_subprocess`` (user + system time of the child, all its threads), in seconds."""
    cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))  # noqa: E731
    t0, c0 = time.perf_counter(), cpu()
    out = subprocess.run([str(SYMATTN), *args, "--json"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    d["wall_time_subprocess"] = time.perf_counter() - t0
    d["cpu_time_subprocess"] = cpu() - c0
    return d


# ==================================================================================================
# Results file (atomic writes, resumable)
# ==================================================================================================

class Results:
    """The JSON results file; every :meth:`put` rewrites it atomically
    (:func:`symattn.runs.atomic_write_text`)."""

    def __init__(self, path: Path, drop: tuple = ()):
        """``drop``: key prefixes to forget (``--force`` on the selected pieces)."""
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {}
        self.data = {k: v for k, v in self.data.items() if not k.startswith(tuple(drop))}

    def get(self, key):
        return self.data.get(key)

    def put(self, key, value):
        self.data[key] = value
        atomic_write_text(self.path, json.dumps(self.data, indent=1, default=_json_default))


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def fp_record(fp: FixedPoint, alpha, params, prox="bfgs0", with_eps_g=True, keep_history=False) -> dict:
    """A fixed point, its eps_t (784 nodes) and eps_g, as a JSON-ready dict."""
    t0, c0 = time.perf_counter(), time.process_time()
    d = asdict(fp)
    if not keep_history:
        d.pop("history")
    d.update(free_entropy(fp, alpha, params, prox=prox))
    if with_eps_g:
        d["eps_g"] = test_error(fp.x, params)
    d["alpha"] = alpha
    d["wall_time_observables"] = time.perf_counter() - t0
    d["cpu_time_observables"] = time.process_time() - c0
    return d


def rel(a, b):
    """Relative difference ``(a - b) / |b|``."""
    return (a - b) / abs(b) if b != 0 else float("nan")


# ==================================================================================================
# Study pieces
# ==================================================================================================

def piece0_faithfulness(R: Results, params: ModelParams):
    """The notebook's own printed numbers: first step and converged point of the semantic run at alpha = 2
    (In[56]) and the linear baseline (In[31])."""
    if R.get("0_faithfulness"):
        return
    log("piece 0: reproduce the notebook's printed semantic run at alpha = 2 and mse_lin")
    hats = hat_update(SEMANTIC_INIT, 2.0, params)
    Fx = prior_update(hats, params)
    step = {k: (1 - DAMPING) * Fx[k] + DAMPING * SEMANTIC_INIT[k] for k in KEYS}
    fp = authors_iterate(2.0, params, SEMANTIC_INIT, label="semantic (notebook check)")
    nb = NOTEBOOK_ALPHA2
    R.put("0_faithfulness", {
        "first_hats": hats, "first_hats_notebook": nb["first_hats"],
        "first_hats_rel_diff": {k: rel(hats[k], nb["first_hats"][k]) for k in ("q_hat", "V_hat", "theta_hat")},
        "first_step": step, "first_step_notebook": nb["first_step"],
        "converged": {**fp.x, "iterations": fp.iterations, "residual": fp.residual, "residual_V": fp.residual_V},
        "converged_notebook": nb["converged"],
        "converged_rel_diff": {k: rel(getattr(fp, k), nb["converged"][k]) for k in ("q", "theta", "V")},
        "csv_alpha2": dict(zip(("q", "m", "V", "theta"), _csv("semantic")[0, 1:5])),
        "eps_lin": linear_baseline_error(params), "eps_lin_notebook": AUTHORS_MSE_LIN / 2,
        "wall_time": fp.wall_time,
    })


def piece1_fixed_points(R: Results, params: ModelParams, alpha=1.25):
    """Both branches at alpha = 1.25 by the authors' scheme; eps_t (784 nodes) and eps_g (notebook rule)."""
    for br in ("positional", "semantic"):
        key = f"1_authors_{br}"
        if R.get(key):
            continue
        log(f"piece 1: authors' scheme, {br} branch, alpha = {alpha}")
        fp = authors_iterate(alpha, params, INITS[br], label=br)
        R.put(key, fp_record(fp, alpha, params, keep_history=True))


def piece2_symattn(R: Results, params: ModelParams, alpha=1.25):
    """symattn's fixed points through its CLI; relative differences to the authors' (V, theta, q, m, eps_t)."""
    for br in ("positional", "semantic"):
        key = f"2_symattn_{br}"
        if not R.get(key):
            log(f"piece 2: symattn fixed-point --branch {br} --alpha {alpha}")
            R.put(key, run_symattn(["fixed-point", "--branch", br, "--alpha", str(alpha)]))
    comp = {}
    for br in ("positional", "semantic"):
        a, s = R.get(f"1_authors_{br}"), R.get(f"2_symattn_{br}")
        if a and s:
            comp[br] = {k: {"authors": a[k], "symattn": s[k], "symattn_err": s.get(f"{k}_err"),
                            "abs_diff": a[k] - s[k], "rel_diff": rel(a[k], s[k])}
                        for k in BRANCH_KEYS[br] + ("eps_g",)}
    R.put("2_comparison", comp)


def piece3a_prox_check(R: Results, params: ModelParams):
    """At the authors' alpha = 1.25 fixed points: how often does BFGS from 0 miss the global minimiser?"""
    if R.get("3a_prox_check"):
        return
    out = {}
    for br in ("positional", "semantic"):
        a = R.get(f"1_authors_{br}")
        x = {k: a[k] for k in KEYS}
        for rule in (HAT_RULE, PHI_RULE):
            log(f"piece 3a: {br}, {len(rule)} nodes: BFGS from 0 against a 56-start global minimiser")
            w, t = node_map(x, rule, params)
            h0 = prox_bfgs_from_zero(w, t, x["V"], params)
            M0 = moreau_value(h0, w, t, x["V"], params)
            hg, Mg = prox_global(w, t, x["V"], params, extra=h0)
            gap = M0 - Mg
            n_min = count_local_minima(w, t, x["V"], params)
            miss = gap > 1e-8
            far = np.linalg.norm(h0 - hg, axis=1) > 1e-3
            out[f"{br}_{len(rule)}"] = {
                "nodes": len(rule), "missed_nodes": int(miss.sum()), "missed_fraction": float(miss.mean()),
                "missed_weight": float(rule.weights[miss].sum()), "max_gap": float(gap.max()),
                "nodes_prox_moved_gt_1e-3": int(far.sum()),
                "max_prox_distance": float(np.linalg.norm(h0 - hg, axis=1).max()),
                "nodes_with_several_local_minima": int((n_min > 1).sum()),
                "weight_with_several_local_minima": float(rule.weights[n_min > 1].sum()),
                "max_local_minima_at_a_node": int(n_min.max()),
            }
            log(f"    missed {miss.sum()}/{len(rule)} (weight {rule.weights[miss].sum():.2e}), "
                f"max gap {gap.max():.2e}; nodes with >1 local minimum: {(n_min > 1).sum()}")
    # cross-check of the multi-start itself: scipy BFGS (analytic gradient, gtol 1e-10) from all 56 starts
    a = R.get("1_authors_semantic")
    x = {k: a[k] for k in KEYS}
    w, t = node_map(x, PHI_RULE, params)
    sub = np.random.default_rng(0).choice(len(w), 60, replace=False)
    _, Mg = prox_global(w[sub], t[sub], x["V"], params)
    s2, V = params.sigma ** 2, x["V"]
    worst = 0.0
    for j, i in enumerate(sub):
        best = math.inf
        for h0 in multistart_starts(w[i:i + 1], V)[0]:
            def fg(h, i=i):
                M, g1, g2 = moreau_parts(h[0], h[1], w[i, 0], w[i, 1], t[i, 0], t[i, 1], V, s2, order=1)
                return M, np.array([g1, g2])
            best = min(best, minimize(fg, h0, jac=True, options={"gtol": 1e-10}).fun)
        worst = max(worst, Mg[j] - best)
    out["multistart_crosscheck"] = {"nodes": len(sub), "max_newton_minus_scipy_bfgs": worst,
                                    "note": "60 random nodes of the 784 at the authors' semantic point"}
    log(f"    multi-start cross-check against scipy BFGS from the same 56 starts: max excess {worst:.1e}")
    R.put("3a_prox_check", out)


#: The quantities that carry information on each branch (theta = 0 exactly on the positional branch,
#: m = 0 up to BFGS noise ~1e-8 on the semantic one).
BRANCH_KEYS = {"positional": ("V", "q", "m", "eps_t"), "semantic": ("V", "q", "theta", "eps_t")}
#: Tight convergence of the 144-node equations (piece 3b): below the BFGS-from-0 noise floor
#: (~1e-8 in q, m, theta and ~1e-6 in V, measured) the iteration only wanders.
TIGHT = {"tol": 1e-7, "tol_V": 1e-5, "max_iter": 300}


def jacobian_eigenvalues(x, alpha, params, branch, prox="global", rel_step=1e-5):
    """Eigenvalues of the Jacobian of the undamped map ``F`` at ``x`` on the branch's three free overlaps,
    by central differences (``prox="global"``: Newton polished, smooth between switching surfaces).

    The damped map ``(1 - beta) x + beta F(x)`` (``beta = 1 - damping``) contracts iff every eigenvalue
    ``mu`` has ``|1 - beta + beta mu| < 1``."""
    ks = ("q", "m", "V") if branch == "positional" else ("q", "theta", "V")
    J = np.zeros((3, 3))
    for j, k in enumerate(ks):
        e = rel_step * max(abs(x[k]), 1e-2)
        Fp = prior_update(hat_update({**x, k: x[k] + e}, alpha, params, prox=prox), params)
        Fm = prior_update(hat_update({**x, k: x[k] - e}, alpha, params, prox=prox), params)
        J[:, j] = [(Fp[i] - Fm[i]) / (2 * e) for i in ks]
    mu = np.linalg.eigvals(J)
    return {"variables": ks, "eigenvalues_re": mu.real.tolist(), "eigenvalues_im": mu.imag.tolist(),
            "damped_factor_0.8": float(np.abs(0.8 + 0.2 * mu).max()),
            "damped_factor_0.5": float(np.abs(0.5 + 0.5 * mu).max()),
            "undamped_factor": float(np.abs(mu).max())}


def piece3b_attribution(R: Results, params: ModelParams, alpha=1.25):
    """Split authors - symattn into stopping rule, prox and cubature.

    The 144-node equations are converged tightly (:data:`TIGHT`, V included, the authors' damping 0.8,
    which the positional branch needs: see the Jacobian eigenvalues), from the authors' point, first with
    the authors' prox (BFGS from 0), then with the global multi-start prox; eps_t with the same prox on 784
    nodes.  Then: stopping rule = authors - tight(bfgs0), prox = tight(bfgs0) - tight(global),
    cubature = tight(global) - symattn."""
    for br in ("positional", "semantic"):
        a = R.get(f"1_authors_{br}")
        start = {k: a[k] for k in KEYS}
        for prox in ("bfgs0", "global"):
            key = f"3b_tight_{prox}_{br}"
            if R.get(key):
                continue
            log(f"piece 3b: 144-node equations converged tightly, prox {prox}, {br}")
            fp = authors_iterate(alpha, params, start, prox=prox, label=f"{br} tight {prox}", **TIGHT)
            rec = fp_record(fp, alpha, params, prox=prox, keep_history=True)
            if prox == "global":
                log(f"piece 3b: Jacobian of F at the tight fixed point, {br}")
                rec["jacobian"] = jacobian_eigenvalues(fp.x, alpha, params, br)
            R.put(key, rec)
    for br in ("positional", "semantic"):
        key = f"3b_phi784_at_symattn_{br}"
        s = R.get(f"2_symattn_{br}")
        if s and not R.get(key):
            log(f"piece 3b: eps_t by the authors' 784-node Phi at symattn's {br} fixed point")
            fp = FixedPoint(**{k: s[k] for k in KEYS + HAT_KEYS}, iterations=0, converged=True, residual=0.0,
                            residual_V=0.0, wall_time=0.0, scheme="symattn")
            e = free_entropy(fp, alpha, params, prox="global")
            R.put(key, {**e, "symattn_eps_t": s["eps_t"], "symattn_eps_t_err": s["eps_t_err"],
                        "rel_diff": rel(e["eps_t"], s["eps_t"]),
                        "note": "isolates the 784-node rule's error in E[M] (the point is symattn's)"})
    table = {}
    for br in ("positional", "semantic"):
        a, s = R.get(f"1_authors_{br}"), R.get(f"2_symattn_{br}")
        b0, bg = R.get(f"3b_tight_bfgs0_{br}"), R.get(f"3b_tight_global_{br}")
        if not (a and s and b0 and bg):
            continue
        table[br] = {k: {"stopping_rule": rel(a[k], b0[k]), "prox": rel(b0[k], bg[k]),
                         "cubature": rel(bg[k], s[k]), "total": rel(a[k], s[k])} for k in BRANCH_KEYS[br]}
    R.put("3b_attribution", {"relative differences: stopping_rule = authors/tight_bfgs0 - 1, "
                             "prox = tight_bfgs0/tight_global - 1, cubature = tight_global/symattn - 1, "
                             "total = authors/symattn - 1": table})


def _branch_at(R: Results, params, alpha, br, warm=None, tag="scan"):
    """Authors' fixed point and observables at one alpha, cached under ``4_<tag>``."""
    store = R.get(f"4_{tag}") or {}
    key = f"{br}@{alpha:.10g}"
    if key not in store:
        fp = authors_iterate(alpha, params, warm or INITS[br], label=br)
        store[key] = fp_record(fp, alpha, params, with_eps_g=(br == "semantic"))
        R.put(f"4_{tag}", store)
    return store[key]


def piece4_thresholds(R: Results, params: ModelParams, c_grid, l_grid, warm=False):
    """The authors' alpha_c (eps_t crossing) and alpha_l (semantic eps_g = eps_lin) from their scheme.

    Every alpha starts from the notebook's initial conditions (In[55]; ``warm=True`` starts from the
    previous alpha's point instead).  A scan brackets the sign change, then ``brentq`` (xtol 1e-4) on the
    scheme's own output -- a piecewise smooth function, because the stopping rule is discrete."""
    tag = "warm" if warm else "scan"
    t0 = time.perf_counter()
    eps_lin = linear_baseline_error(params)

    def diff_c(a):
        return (_branch_at(R, params, a, "semantic", tag=tag)["eps_t"]
                - _branch_at(R, params, a, "positional", tag=tag)["eps_t"])

    def diff_l(a):
        return _branch_at(R, params, a, "semantic", tag=tag)["eps_g"] - eps_lin

    if warm:   # warm starts: run the grids in order, each alpha from the previous fixed point
        for br, grid in (("positional", c_grid), ("semantic", c_grid), ("semantic", l_grid)):
            prev = None
            for a in grid:
                r = _branch_at(R, params, a, br, warm=prev, tag=tag)
                prev = {k: r[k] for k in KEYS}
    log(f"piece 4 ({tag}): alpha_c scan over {c_grid[0]:.4g}..{c_grid[-1]:.4g}")
    dc = [diff_c(a) for a in c_grid]
    log(f"piece 4 ({tag}): alpha_l scan over {l_grid[0]:.4g}..{l_grid[-1]:.4g}")
    dl = [diff_l(a) for a in l_grid]
    out = {"eps_lin": eps_lin, "c_grid": list(c_grid), "eps_t_sem_minus_pos": dc,
           "l_grid": list(l_grid), "eps_g_sem_minus_eps_lin": dl, "start": "warm" if warm else "notebook init"}
    for name, grid, d, fn in (("alpha_c", c_grid, dc, diff_c), ("alpha_l", l_grid, dl, diff_l)):
        sign = [i for i in range(len(d) - 1) if np.sign(d[i]) != np.sign(d[i + 1])]
        out[f"{name}_sign_changes"] = len(sign)
        if sign and not warm:
            i = sign[0]
            out[name] = brentq(fn, grid[i], grid[i + 1], xtol=1e-4)
        elif sign:   # warm starts depend on the path: interpolate linearly within the bracket
            i = sign[0]
            out[name] = grid[i] - d[i] * (grid[i + 1] - grid[i]) / (d[i + 1] - d[i])
        log(f"    {name} = {out.get(name)}")
    store = R.get(f"4_{tag}") or {}
    on_grid = {f"{br}@{a:.10g}" for a in c_grid for br in ("positional", "semantic")} | \
              {f"semantic@{a:.10g}" for a in l_grid}
    cost = lambda keys, c: sum(store[k][f"{c}_time"] + store[k][f"{c}_time_observables"] for k in keys)  # noqa: E731
    for c in ("wall", "cpu"):
        out[f"{c}_time_scan_s"] = cost([k for k in store if k in on_grid], c)
        out[f"{c}_time_root_finding_s"] = cost([k for k in store if k not in on_grid], c)
    out["fixed_points_scan"] = sum(k in on_grid for k in store)
    out["fixed_points_root_finding"] = sum(k not in on_grid for k in store)
    out["wall_time_this_run"] = time.perf_counter() - t0
    R.put(f"4_thresholds_{tag}", out)


def piece4_alpha_l_attribution(R: Results, params: ModelParams, tag="scan"):
    """alpha_l has two ingredients: the semantic eps_g curve and the baseline eps_lin.  Swap each for
    symattn's: (i) the authors' eps_g against symattn's eps_lin (root by brentq on the authors' scheme),
    (ii) symattn's eps_g at the authors' alpha_l (one ``symattn fixed-point`` call)."""
    th, sy = R.get(f"4_thresholds_{tag}"), R.get("4_symattn_thresholds")
    if not (th and sy and th.get("alpha_l")) or R.get(f"4_alpha_l_attribution_{tag}"):
        return
    log("piece 4: alpha_l attribution (eps_lin swapped; symattn's eps_g at the authors' alpha_l)")
    lin = sy["eps_lin"]
    g, d = th["l_grid"], [v + th["eps_lin"] - lin for v in th["eps_g_sem_minus_eps_lin"]]
    i = [k for k in range(len(d) - 1) if np.sign(d[k]) != np.sign(d[k + 1])]
    out = {"eps_lin_authors": th["eps_lin"], "eps_lin_symattn": lin}
    if i:
        out["alpha_l_authors_eps_g_symattn_eps_lin"] = brentq(
            lambda a: _branch_at(R, params, a, "semantic", tag=tag)["eps_g"] - lin, g[i[0]], g[i[0] + 1], xtol=1e-4)
    a_l = th["alpha_l"]
    s = run_symattn(["fixed-point", "--branch", "semantic", "--alpha", repr(a_l)])
    mine = _branch_at(R, params, a_l, "semantic", tag=tag)
    out["at_authors_alpha_l"] = {
        "alpha": a_l, "eps_g_authors": mine["eps_g"], "eps_g_symattn": s["eps_g"], "eps_g_symattn_err": s["eps_g_err"],
        "rel_diff": rel(mine["eps_g"], s["eps_g"]),
        "eps_g_authors_formula_at_symattn_point": test_error({k: s[k] for k in KEYS}, params),
        **{f"{k}_{who}": src[k] for k in ("q", "theta", "V") for who, src in (("authors", mine), ("symattn", s))}}
    R.put(f"4_alpha_l_attribution_{tag}", out)


def alpha_c_attribution(R: Results, alpha=1.25) -> dict | None:
    r"""Split ``alpha_c(authors) - alpha_c(symattn)`` at ``alpha = 1.25``, linearised through the slope of
    ``Delta = eps_t(sem) - eps_t(pos)`` of the authors' scan: each step changes ``Delta`` by ``d``, which moves
    the crossing by ``-d / (dDelta/dalpha)``.  Steps, from the authors' answer to symattn's:
    stopping rule (authors -> tight 144-node, BFGS prox), prox (-> tight, global prox), hat cubature
    (-> the authors' 784-node Phi at symattn's fixed point), Phi cubature (-> symattn's eps_t)."""
    th = R.get("4_thresholds_scan")
    need = [f"{p}_{br}" for br in ("positional", "semantic") for p in
            ("1_authors", "3b_tight_bfgs0", "3b_tight_global", "3b_phi784_at_symattn", "2_symattn")]
    if not th or not all(R.get(k) for k in need):
        return None
    g, d = th["c_grid"], th["eps_t_sem_minus_pos"]
    i = g.index(alpha)
    slope = (d[i + 1] - d[i]) / (g[i + 1] - g[i])
    chain = ["1_authors", "3b_tight_bfgs0", "3b_tight_global", "3b_phi784_at_symattn", "2_symattn"]
    names = ["stopping_rule", "prox", "hat_cubature_144", "phi_cubature_784"]
    delta = [R.get(f"{c}_semantic")["eps_t"] - R.get(f"{c}_positional")["eps_t"] for c in chain]
    out = {"slope_dDelta_dalpha": slope, "Delta_along_chain": dict(zip(chain, delta))}
    out["alpha_shift"] = {n: -(delta[k] - delta[k + 1]) / slope for k, n in enumerate(names)}
    out["alpha_shift_total_linearised"] = sum(out["alpha_shift"].values())
    sy = R.get("4_symattn_thresholds")
    if sy:
        out["alpha_c_authors_minus_symattn"] = th["alpha_c"] - sy["alpha_c"]
    return out


def notebook_moreau(X, q, m, V, th, xi1, xi2, y1, y2, params):
    """The notebook's ``Moreau(..., full=False)`` (In[49]) verbatim in numpy, for timing only."""
    s2, rho, om, A = params.sigma ** 2, params.rho, params.omega, np.array(params.A)
    rxx = s2 * np.eye(2)

    def sigm(z):
        z = z - np.max(z, axis=1).reshape(-1, 1)
        P = np.exp(z)
        return (P.T / np.sum(P, 1)).T
    x, y = X
    termx = (x - np.sqrt(q) * xi1 - m) ** 2 / V
    termy = (y - np.sqrt(q) * xi2 + m) ** 2 / V
    xy = np.array((x, y)).reshape(2, 1)
    xy = sigm(xy @ xy.T)
    Vs = (rho - th ** 2 / q) ** .5
    Y = np.array([Vs * y1 + th / q ** .5 * xi1, Vs * y2 + th / q ** .5 * xi2]).reshape(2, 1)
    Y = sigm(Y @ Y.T) * (1 - om) + om * A
    return termx + termy + np.trace(xy @ rxx @ xy.T) - 2 * np.trace(Y @ rxx.T @ xy.T)


def piece5_timing(R: Results, params: ModelParams):
    """Cost of the notebook as written: one pass of 144 BFGS runs with its numpy objective and scipy's own
    finite differences, at the authors' semantic point; the notebook does four such passes per iteration
    (one per hat).  Checks on the way that the fast objective gives the same prox."""
    if R.get("5_timing"):
        return
    a = R.get("1_authors_semantic")
    x = {k: a[k] for k in KEYS}
    log("piece 5: one pass of the notebook's literal prox at 144 nodes (for timing)")
    t0, c0 = time.perf_counter(), time.process_time()
    h_nb = np.array([minimize(lambda X, i=i: notebook_moreau(X, x["q"], x["m"], x["V"], x["theta"],
                                                             *HAT_RULE.xi[i], *HAT_RULE.eta[i], params),
                              [0, 0]).x for i in range(len(HAT_RULE))])
    t_nb, c_nb = time.perf_counter() - t0, time.process_time() - c0
    w, t = node_map(x, HAT_RULE, params)
    t0, c0 = time.perf_counter(), time.process_time()
    h = prox_bfgs_from_zero(w, t, x["V"], params)
    t_fast, c_fast = time.perf_counter() - t0, time.process_time() - c0
    R.put("5_timing", {
        "notebook_pass_144_bfgs_s": t_nb, "this_module_pass_144_bfgs_s": t_fast,
        "notebook_pass_144_bfgs_cpu_s": c_nb, "this_module_pass_144_bfgs_cpu_s": c_fast,
        "notebook_passes_per_iteration": 4, "max_prox_difference_notebook_vs_fast": float(np.abs(h - h_nb).max()),
        "estimated_notebook_wall_per_fixed_point_s": {
            br: 4 * c_nb * R.get(f"1_authors_{br}")["iterations"] for br in ("positional", "semantic")},
        "note": "estimate = 4 passes per iteration x iterations x cpu time of one pass",
    })


def _csv(br):
    return np.array([[float(v) for v in line.split(",")] for line in AUTHORS_CSV[br].strip().splitlines()])


def piece4_csv(R: Results):
    """Where the authors' stored curves cross: linear interpolation between neighbouring grid points, and a
    cubic spline through all of them (alpha <= 2)."""
    sem, pos = _csv("semantic"), _csv("positional")
    assert np.array_equal(sem[:, 0], pos[:, 0])
    al = sem[::-1, 0]
    d_c = (-sem[::-1, 6]) - (-pos[::-1, 6])           # eps_t(sem) - eps_t(pos) = Phi_pos - Phi_sem
    d_l = sem[::-1, 5] / 2 - AUTHORS_MSE_LIN / 2        # eps_g(sem) - eps_lin
    out = {}
    # the curves also meet near alpha = 0 (both branches tend to the trivial point): look near the thresholds
    for name, d, window in (("alpha_c", d_c, (1.0, 1.6)), ("alpha_l", d_l, (1.2, 1.8))):
        i = [k for k in range(len(d) - 1) if np.sign(d[k]) != np.sign(d[k + 1])
             and window[0] <= al[k] and al[k + 1] <= window[1]][0]
        lin = al[i] - d[i] * (al[i + 1] - al[i]) / (d[i + 1] - d[i])
        cs = CubicSpline(al, d)
        spl = brentq(cs, al[i], al[i + 1])
        out[name] = {"linear": lin, "spline": spl, "bracket": [al[i], al[i + 1]], "values": [d[i], d[i + 1]]}
    i124, i125 = list(al).index(1.24), list(al).index(1.25)
    out["alpha_c_from_1.24_and_1.25_only"] = al[i125] - d_c[i125] * (al[i125] - al[i124]) / (d_c[i125] - d_c[i124])
    cols = ("q", "m", "V", "theta", "mse", "Phi")
    out["at_1.25"] = {br: dict(zip(cols, c[list(c[:, 0]).index(1.25), 1:]))
                      for br, c in (("positional", pos), ("semantic", sem))}
    R.put("4_csv", out)


def piece4_symattn(R: Results):
    if not R.get("4_symattn_thresholds"):
        log("piece 4: symattn thresholds --json (the main job)")
        R.put("4_symattn_thresholds", run_symattn(["thresholds"]))


# ==================================================================================================
# Summary and command line
# ==================================================================================================

def summary(R: Results) -> str:
    """A plain-text table of the headline numbers."""
    L = []
    f0 = R.get("0_faithfulness")
    if f0:
        L.append("0. faithfulness (notebook In[56], alpha = 2, semantic):  rel. diff. to the printed converged point "
                 + ", ".join(f"{k} {v:+.1e}" for k, v in f0["converged_rel_diff"].items())
                 + f"; iterations {f0['converged']['iterations']} (notebook 51)"
                 + f"; eps_lin {f0['eps_lin']:.10f} (notebook {f0['eps_lin_notebook']:.10f})")
    c = R.get("2_comparison") or {}
    for br, d in c.items():
        a = R.get(f"1_authors_{br}")
        L.append(f"1/2. {br:10s} authors: q={a['q']:.5f} m={a['m']:.5f} theta={a['theta']:.5f} V={a['V']:.4f} "
                 f"eps_t={a['eps_t']:.7f} eps_g={a['eps_g']:.7f} it={a['iterations']} conv={a['converged']} "
                 f"res={a['residual']:.1e} resV={a['residual_V']:.1e} ({a['wall_time']:.0f} s wall, "
                 f"{a['cpu_time']:.0f} s cpu)")
        s = R.get(f"2_symattn_{br}")
        L.append(f"     {'':10s} symattn: q={s['q']:.5f} m={s['m']:.5f} theta={s['theta']:.5f} V={s['V']:.4f} "
                 f"eps_t={s['eps_t']:.7f} eps_g={s['eps_g']:.7f} ({s['wall_time_subprocess']:.0f} s wall, "
                 f"{s['cpu_time_subprocess']:.0f} s cpu)")
        L.append(f"     {'':10s} authors/symattn - 1: " + ", ".join(f"{k} {v['rel_diff']:+.2%}" for k, v in d.items()))
    p = R.get("3a_prox_check") or {}
    for k, v in p.items():
        if "missed_nodes" in v:
            L.append(f"3a. {k}: BFGS-from-0 misses the global minimum at {v['missed_nodes']}/{v['nodes']} nodes "
                     f"(weight {v['missed_weight']:.1e}, max gap {v['max_gap']:.1e})")
    t = next(iter((R.get("3b_attribution") or {"": {}}).values()))
    for br, d in t.items():
        for k, row in d.items():
            L.append(f"3b. {br:10s} {k:6s} " + "  ".join(f"{n} {v:+.2%}" for n, v in row.items()))
        ph = R.get(f"3b_phi784_at_symattn_{br}")
        if ph:
            L.append(f"3b. {br:10s} authors' 784-node Phi at symattn's point: eps_t = {ph['eps_t']:.7f} "
                     f"(symattn {ph['symattn_eps_t']:.7f} +- {ph['symattn_eps_t_err']:.1e}, {ph['rel_diff']:+.2%})")
        jac = (R.get(f"3b_tight_global_{br}") or {}).get("jacobian")
        if jac:
            L.append(f"3b. {br:10s} Jacobian eigenvalues of F: "
                     + ", ".join(f"{r:+.3f}{i:+.3f}i" for r, i in zip(jac["eigenvalues_re"], jac["eigenvalues_im"]))
                     + f"; contraction factor damped 0.8: {jac['damped_factor_0.8']:.3f}, 0.5: "
                     f"{jac['damped_factor_0.5']:.3f}")
    for tag in ("scan", "warm"):
        th = R.get(f"4_thresholds_{tag}")
        if th:
            L.append(f"4. authors' scheme ({th['start']}): alpha_c = {th.get('alpha_c', math.nan):.4f}, alpha_l = "
                     f"{th.get('alpha_l', math.nan):.4f}, eps_lin = {th['eps_lin']:.10f}; wall time: scan "
                     f"{th['wall_time_scan_s']:.0f} s ({th['fixed_points_scan']} fixed points), root finding "
                     f"{th['wall_time_root_finding_s']:.0f} s ({th['fixed_points_root_finding']}); cpu "
                     f"{th['cpu_time_scan_s']:.0f} + {th['cpu_time_root_finding_s']:.0f} s")
    cs = R.get("4_csv")
    if cs:
        L.append(f"4. authors' CSV: alpha_c linear {cs['alpha_c']['linear']:.4f} spline {cs['alpha_c']['spline']:.4f}; "
                 f"alpha_l linear {cs['alpha_l']['linear']:.4f} spline {cs['alpha_l']['spline']:.4f}")
    ac = R.get("4_alpha_c_attribution")
    if ac:
        L.append("4. alpha_c(authors) - alpha_c(symattn) = "
                 f"{ac.get('alpha_c_authors_minus_symattn', float('nan')):+.4f}; linearised at 1.25: "
                 + ", ".join(f"{k} {v:+.4f}" for k, v in ac["alpha_shift"].items()))
    al = R.get("4_alpha_l_attribution_scan")
    if al:
        at = al["at_authors_alpha_l"]
        L.append(f"4. alpha_l with the authors' eps_g but symattn's eps_lin ({al['eps_lin_symattn']:.10f}): "
                 f"{al.get('alpha_l_authors_eps_g_symattn_eps_lin', float('nan')):.4f}; at alpha = {at['alpha']:.4f} "
                 f"the authors' eps_g is {at['rel_diff']:+.2%} off symattn's (V {at['V_authors']:.3f} vs "
                 f"{at['V_symattn']:.3f}, theta {at['theta_authors']:.4f} vs {at['theta_symattn']:.4f}; their eps_g "
                 f"formula at symattn's point {at['eps_g_authors_formula_at_symattn_point']:.7f} vs "
                 f"{at['eps_g_symattn']:.7f})")
    sy = R.get("4_symattn_thresholds")
    if sy:
        L.append(f"4. symattn: alpha_c = {sy['alpha_c']:.5f} +- {sy['alpha_c_err']:.1e}, alpha_l = {sy['alpha_l']:.5f} "
                 f"+- {sy['alpha_l_err']:.1e}, eps_lin = {sy['eps_lin']:.10f} ({sy['wall_time']:.0f} s wall by its "
                 f"JSON, {sy['cpu_time_subprocess']:.0f} s cpu)")
    tm = R.get("5_timing")
    if tm:
        L.append(f"5. one pass of 144 BFGS (cpu): notebook as written {tm['notebook_pass_144_bfgs_cpu_s']:.2f} s "
                 f"(x4 per iteration), this module {tm['this_module_pass_144_bfgs_cpu_s']:.2f} s; "
                 "notebook-as-written estimate "
                 + ", ".join(f"{k} {v:.0f} s" for k, v in tm["estimated_notebook_wall_per_fixed_point_s"].items()))
    return "\n".join(L)


def _grid(spec: str) -> list:
    """``"start,stop,step"`` -> [start, start + step, ..., stop]."""
    a, b, h = (float(v) for v in spec.split(","))
    return [round(a + h * i, 10) for i in range(int(round((b - a) / h)) + 1)]


#: Result keys (prefixes) written by each piece, dropped by ``--force``.
PIECE_KEYS = {"0": ("0_",), "1": ("1_",), "2": ("2_",), "3a": ("3a_",), "3b": ("3b_",),
              "4": ("4_scan", "4_csv", "4_thresholds_scan", "4_symattn", "4_alpha_l_attribution_scan",
                    "4_alpha_c_attribution"),
              "4w": ("4_warm", "4_thresholds_warm"), "5": ("5_",)}
PIECES = ("0", "1", "2", "3a", "3b", "4", "4w", "5")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(p for p in PIECES if p != "4w"),
                    help="comma-separated pieces out of " + ",".join(PIECES)
                    + " (default all but 4w; 4w = the threshold scan with warm starts, about 3 more minutes)")
    ap.add_argument("--alpha", type=float, default=1.25, help="alpha of pieces 1-3 (default 1.25)")
    ap.add_argument("--c-grid", default="1.15,1.35,0.025", help="alpha_c scan: start,stop,step")
    ap.add_argument("--l-grid", default="1.35,1.6,0.025", help="alpha_l scan: start,stop,step")
    ap.add_argument("--out", type=Path, default=RESULTS_FILE, help="results file (default %(default)s)")
    ap.add_argument("--force", action="store_true", help="recompute the selected pieces")
    ap.add_argument("--summary", action="store_true", help="print the summary of saved results and exit")
    args = ap.parse_args(argv)
    params = ModelParams()   # the paper's defaults, model page §2
    only = set(args.only.split(","))
    drop = tuple(k for p in only for k in PIECE_KEYS.get(p, ()))
    R = Results(args.out, drop=drop if args.force else ())
    if args.summary:
        print(summary(R))
        return
    c_grid, l_grid = _grid(args.c_grid), _grid(args.l_grid)
    R.put("meta", {"params": params.as_dict(), "machine": "2 cores, shared; this study runs on one core",
                   "numpy": np.__version__, "scipy": __import__("scipy").__version__,
                   "hat_rule": HAT_RULE.name, "phi_rule": PHI_RULE.name})
    if "0" in only:
        piece0_faithfulness(R, params)
    if only & {"1", "2", "3a", "3b"}:
        piece1_fixed_points(R, params, args.alpha)
    if only & {"2", "3b"}:
        piece2_symattn(R, params, args.alpha)
    if "3a" in only:
        piece3a_prox_check(R, params)
    if "3b" in only:
        piece3b_attribution(R, params, args.alpha)
    if "4" in only:
        piece4_csv(R)
        piece4_thresholds(R, params, c_grid, l_grid)
        piece4_symattn(R)
        piece4_alpha_l_attribution(R, params)
        att = alpha_c_attribution(R, args.alpha)
        if att:
            R.put("4_alpha_c_attribution", att)
    if "4w" in only:
        piece4_thresholds(R, params, c_grid, l_grid, warm=True)
    if "5" in only:
        piece5_timing(R, params)
    log("done")
    print(summary(R))


if __name__ == "__main__":
    main()
