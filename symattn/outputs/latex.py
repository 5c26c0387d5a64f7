r"""The model's equations as LaTeX, printed from the SymPy objects the solvers are compiled from.

:func:`sections` collects, in the order of the model page, the model (teacher, student, risk), the
reduction to the per-sentence loss :math:`\ell(h, h^*)`, the Moreau envelope and prox, the
free-entropy functional, the regulariser-channel and loss-channel saddle-point equations,
:math:`\varepsilon_g`, :math:`\varepsilon_{\rm lin}` and the definitions of
:math:`\alpha_c` and :math:`\alpha_l`.  Every right-hand side that the numerics use is the very
expression :mod:`symattn.compile.kernels` lambdifies (``derive_saddle_point``,
``loss_L2_closed_form``, the node maps, ...).  Where an expression is rearranged for the page
(atoms with a common coefficient gathered under one expectation, :math:`\Phi` split over lines,
:math:`\hat V` written with :math:`\theta\hat\theta/q`), the rearranged form is proved equal
to the original with SymPy before it is printed (:func:`_same`), so what is printed is what runs.

:func:`document` renders numbered, labelled ``align`` environments that a paper can
``\input`` (packages: ``amsmath``, ``amssymb``), or with ``standalone=True`` a complete
document; :func:`sphinx_math_blocks` renders the same equations as reST for the docs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import sympy as sp

from ..compile.kernels import eps_g_nodes
from ..model.symbols import (CONJUGATES, NAMES, V, V_hat, alpha, attention_matrix_symbols, lam, m,
                             node_symbols, omega, q, rho, sigma, theta, theta_hat)
from ..symbolic.attention import (Logistic, loss_closed_form_L2_equals_general, loss_L2_closed_form,
                                  loss_L2_from_targets, row_softmax, student_attention,
                                  teacher_attention, teacher_diagonal_L2)
from ..symbolic.expectation import Expect
from ..symbolic.free_energy import derive_saddle_point
from ..symbolic.moreau import MoreauObjective

__all__ = ["Equation", "Section", "document", "sections", "sphinx_math_blocks"]

#: Prefix of every equation label: ``\label{eq:symattn-<name>}``.
LABEL_PREFIX = "eq:symattn-"


# --------------------------------------------------------------------------------------
# printing-only SymPy objects (operators the model states but the numerics never evaluate)
# --------------------------------------------------------------------------------------
class _Operator(sp.Function):
    """``Op(expr, *vars)`` printed as ``<name>_{vars} expr``."""

    _name = ""

    def _latex(self, printer):
        expr, *vars_ = self.args
        sub = ", ".join(printer._print(v) for v in vars_)
        return r"%s_{%s} \left[ %s \right]" % (self._name, sub, printer._print(expr))


class MinOver(_Operator):
    _name = r"\min"


class ArgminOver(_Operator):
    _name = r"\operatorname{arg\,min}"


class SoftmaxMatrix(sp.MatrixExpr):
    r"""Row softmax of a matrix expression, as a matrix (so it multiplies ``Z``); printed only."""

    def __new__(cls, arg):
        return sp.Basic.__new__(cls, arg)

    @property
    def shape(self):
        return self.args[0].shape

    def doit(self, **hints):
        """The explicit row softmax when the argument is an explicit matrix."""
        arg = self.args[0]
        return row_softmax(arg) if isinstance(arg, sp.MatrixBase) else self

    def _latex(self, printer):
        return r"\mathrm{softmax}\left(%s\right)" % printer._print(self.args[0])


class FrobeniusSq(sp.Function):
    r"""``||M||_F^2`` printed, never evaluated."""

    nargs = 1

    def _latex(self, printer):
        return r"\left\| %s \right\|_F^{2}" % printer._print(self.args[0])


class Var(sp.Function):
    r"""Variance, printed as ``\mathrm{Var}``."""

    nargs = 1

    def _latex(self, printer):
        return r"\mathrm{Var}\left[%s\right]" % printer._print(self.args[0])


class Named(sp.Function):
    r"""A named function of the branch, printed as ``name^{branch}(args)``, e.g. ``\varepsilon_t^{\rm pos}(\alpha)``."""

    def _latex(self, printer):
        name, branch, *args = self.args
        inner = ", ".join(printer._print(a) for a in args)
        return r"%s^{\mathrm{%s}}\left(%s\right)" % (name.name, branch.name, inner)


# --------------------------------------------------------------------------------------
# equations and sections
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Equation:
    """One numbered equation ``lhs = rhs (= also...)``.

    ``rhs`` is a tuple of terms printed one per line and summed (a long right-hand side split
    over lines); ``also`` holds further equal forms, each printed on its own line as
    ``= ...``.  Terms are SymPy expressions, or LaTeX strings for pure notation.
    """

    name: str
    lhs: object
    rhs: tuple
    also: tuple = ()

    @property
    def label(self) -> str:
        return LABEL_PREFIX + self.name

    def latex_lines(self) -> list[str]:
        first, *rest = (_tex(r) for r in self.rhs)
        lines = [r"%s &= %s" % (_tex(self.lhs), first)]
        lines += [r"&\quad %s" % (r if r.startswith("-") else "+ " + r) for r in rest]
        lines += [r"&= %s" % _tex(a) for a in self.also]
        return lines


@dataclass(frozen=True)
class Section:
    """A titled group of equations with a short LaTeX paragraph (inline math in ``$...$``)."""

    key: str
    title: str
    text: str
    equations: tuple


def _tex(x) -> str:
    return x if isinstance(x, str) else sp.latex(x)


def _eq(name, lhs, rhs, *also) -> Equation:
    """``lhs = rhs = also[0] = ...``."""
    return Equation(name=name, lhs=lhs, rhs=(rhs,), also=tuple(also))


def _same(a, b, what: str, nodes=None):
    """Refuse to print a rearranged expression that is not provably the original
    (expectations compared after expanding them linearly when ``nodes`` is given)."""
    if nodes is not None:
        a, b = nodes.collect(a), nodes.collect(b)
    if sp.simplify(sp.expand(a - b)) != 0:
        raise AssertionError(f"LaTeX export: the printed form of {what} differs from the derived one")


def _gather(expr, nodes):
    r"""``sum_k c_k E[a_k]`` -> ``sum_c c E[sum a_k]``: one expectation per distinct coefficient."""
    groups: dict = {}
    for term in sp.Add.make_args(nodes.collect(expr)):
        (E,) = [f for f in sp.Mul.make_args(term) if isinstance(f, Expect)]
        c = sp.simplify(term / E)
        for key in groups:          # same coefficient up to sign: one expectation
            if sp.simplify(key - c) == 0:
                groups[key].append(E.args[0])
                break
            if sp.simplify(key + c) == 0:
                groups[key].append(-E.args[0])
                break
        else:
            groups[c] = [E.args[0]]
    out = sp.Add(*(c * Expect(sp.Add(*args)) for c, args in groups.items()), evaluate=False)
    return out


def _teacher_width(expr):
    r"""Write :math:`\sqrt{q\rho - \theta^2}` as :math:`\sqrt q\,\sqrt{\rho - \theta^2/q}` (the model page's form)."""
    c = sp.sqrt(rho - theta**2 / q)
    return expr.subs(sp.sqrt(q * rho - theta**2), sp.sqrt(q) * c)


# --------------------------------------------------------------------------------------
# the sections
# --------------------------------------------------------------------------------------
def _model_section() -> Section:
    d, n = sp.symbols("d n", positive=True)
    L = 2
    Z = sp.MatrixSymbol("Z", L, d)
    X = sp.MatrixSymbol("X", L, d)
    Qs = sp.MatrixSymbol("Q^*", d, 1)
    Qm = sp.MatrixSymbol("Q", d, 1)
    A = sp.MatrixSymbol("A", L, L)
    Y = sp.Function("Y")(X)
    f = sp.Function("f_Q")(X)
    mu = sp.Symbol(r"\mu", integer=True)
    Ymu, fmu = sp.Function(r"Y")(sp.Indexed("X", mu)), sp.Function("f_Q")(sp.Indexed("X", mu))
    risk = (sp.Sum(FrobeniusSq(Ymu - fmu), (mu, 1, n)) / (2 * d)
            + lam / 2 * FrobeniusSq(Qm))
    return Section(
        key="model", title="Model",
        text=(r"Sentences of $L=2$ tokens $x_l = z_l + p_l/\sqrt{d}$, $z_l \sim N(0, \sigma^2 I_d)$, "
              r"$p_1 = -p_2 = (1,\dots,1)$; teacher $Q^* \in \mathbb{R}^d$ with iid $N(0,1)$ entries, "
              r"student $Q \in \mathbb{R}^d$, $n = \alpha d$ sentences."),
        equations=(
            _eq("teacher", Y, ((1 - omega) * SoftmaxMatrix(Z * Qs * Qs.T * Z.T / d) + omega * A) * Z),
            _eq("student", f, SoftmaxMatrix(X * Qm * Qm.T * X.T / d) * X),
            _eq("risk", sp.Function("R")(Qm), risk),
        ))


def _loss_section() -> Section:
    _, _, _, hs, h = node_symbols(2)
    A = attention_matrix_symbols(2)
    A_row = sp.Matrix([[A[0, 0], 1 - A[0, 0]], [1 - A[1, 1], A[1, 1]]])
    hv, hsv = sp.Matrix(h), sp.Matrix(hs)
    hM, hsM = sp.MatrixSymbol("h", 2, 1), sp.MatrixSymbol("h^*", 2, 1)
    # the printed S, T are the library's, not retyped
    if student_attention(h) != SoftmaxMatrix(sp.ImmutableMatrix(hv * hv.T)).doit():
        raise AssertionError("S(h) is not softmax(h h^T)")
    if teacher_attention(hs, A) != (1 - omega) * SoftmaxMatrix(sp.ImmutableMatrix(hsv * hsv.T)).doit() + omega * A:
        raise AssertionError("T(h*) is not (1 - omega) softmax(h* h*^T) + omega A")
    if not loss_closed_form_L2_equals_general(h, hs, A):
        raise AssertionError("LaTeX export: the L = 2 closed form is not the general softmax loss")
    # the closed form the prox is compiled from, with its four logistic entries named
    S11, S22, T11, T22 = sp.symbols("S_11 S_22 T_11 T_22")
    logit1, logit2 = h[0] ** 2 - h[0] * h[1], h[1] ** 2 - h[0] * h[1]
    t11, t22 = teacher_diagonal_L2(hs, A_row)
    closed = loss_L2_from_targets(h, T11, T22).xreplace({Logistic(logit1): S11, Logistic(logit2): S22})
    _same(closed.xreplace({S11: Logistic(logit1), S22: Logistic(logit2), T11: t11, T22: t22}),
          loss_L2_closed_form(h, hs, A_row), "the L = 2 loss")
    return Section(
        key="loss", title="High-dimensional reduction of the loss",
        text=(r"As $d \to \infty$ with $\alpha = n/d$ fixed, $Z Z^\top/d \to \sigma^2 I$ and the loss of a "
              r"sentence depends on the data only through $h_l = x_l \cdot Q/\sqrt{d}$ and "
              r"$h^*_l = z_l \cdot Q^*/\sqrt{d}$. For $L = 2$ and a row-stochastic $A$ the softmax rows are "
              r"logistic functions; the closed form below is what the prox is compiled from, and it is "
              r"proved equal to $\frac{\sigma^2}{2}\| S - T \|_F^2$ by SymPy."),
        equations=(
            _eq("S", "S(h)", SoftmaxMatrix(hM * hM.T)),
            _eq("T", "T(h^*)", (1 - omega) * SoftmaxMatrix(hsM * hsM.T) + omega * sp.MatrixSymbol("A", 2, 2)),
            _eq("loss", r"\ell(h, h^*)",
                sigma**2 / 2 * FrobeniusSq(sp.MatrixSymbol("S", 2, 2) - sp.MatrixSymbol("T", 2, 2)), closed),
            _eq("S11", S11, Logistic(logit1)),
            _eq("S22", S22, Logistic(logit2)),
            _eq("T11", T11, t11),
            _eq("T22", T22, t22),
        ))


def _moreau_section() -> Section:
    _, _, w, hs, h = node_symbols(2)
    ell = sp.Function(r"\ell")(*h, *hs)
    obj = MoreauObjective(h=h, w=w, loss=ell)
    eq = derive_saddle_point()
    prox = sp.Function(r"\mathrm{prox}")(*w, *hs, V)
    hvec = sp.Symbol("h")
    prox_l = sp.Symbol(r"\mathrm{prox}_l")
    w_l = sp.Symbol("w_l")
    return Section(
        key="moreau", title="Moreau envelope and proximal operator",
        text=(r"The minimiser is the \emph{global} one: the objective is non-convex, and where two "
              r"local minima have equal value the prox jumps. The envelope theorem, derived by SymPy "
              r"from the optimality condition (the gradient of the bracket vanishes at the prox), "
              r"gives the derivatives of $\mathcal{M}$ used below."),
        equations=(
            _eq("moreau", eq.M, MinOver(obj.expr, hvec)),
            _eq("prox", prox, ArgminOver(obj.expr, hvec)),
            _eq("f", sp.Symbol("f_l"), (prox_l - w_l) / V),
            *(_eq(f"envelope-w{l + 1}", sp.Derivative(eq.M, wl), eq.envelope[wl]) for l, wl in enumerate(eq.w)),
            _eq("envelope-V", sp.Derivative(eq.M, V), eq.envelope[V]),
        ))


def _free_energy_section() -> Section:
    eq = derive_saddle_point()
    nodes = eq.nodes
    node_eqs = tuple(_eq(f"node-{s}{l + 1}", s_sym, nodes.node_map[s_sym])
                     for s, syms in (("w", eq.w), ("hs", eq.hs)) for l, s_sym in enumerate(syms))
    terms = sp.Add.make_args(eq.phi)
    expect = [t for t in terms if t.has(Expect)]
    prior = [t for t in terms if not t.has(Expect) and t.has(lam)]
    rest = [t for t in terms if t not in expect and t not in prior]
    lines = (sp.Add(*rest), sp.Add(*prior), sp.Add(*expect))
    _same(sp.Add(*lines), eq.phi, "Phi")
    return Section(
        key="free-energy", title="Free-entropy functional",
        text=(r"$\xi_l, \eta_l \sim N(0,1)$ independent, $s_1 = +1$, $s_2 = -1$, $\rho = \sigma^2$. "
              r"The middle line is the regulariser channel, derived from the scalar ridge problem; at a "
              r"fixed point $\Phi = -\varepsilon_t$."),
        equations=node_eqs + (Equation(name="phi", lhs=sp.Symbol(r"\Phi"), rhs=lines),),
    )


def _saddle_sections() -> tuple[Section, Section]:
    eq = derive_saddle_point()
    prior = tuple(_eq(f"prior-{_slug(k)}", k, eq.prior[k]) for k in (V, m, theta, q))
    out = []
    for k in CONJUGATES:
        expr = eq.output[k]
        if k == V_hat:
            # the model page's form: the eta-atoms of V_hat are theta / q times theta_hat's equation
            rest = sp.simplify(expr - theta / q * eq.output[theta_hat])
            shown = (_teacher_width(_gather(rest, eq.nodes)), theta * theta_hat / q)
            _same(sp.Add(*shown).subs(theta_hat, eq.output[theta_hat]), expr, str(k), eq.nodes)
        else:
            shown = (_teacher_width(_gather(expr, eq.nodes)),)
            _same(shown[0], expr, str(k), eq.nodes)
        out.append(Equation(name=f"output-{_slug(k)}", lhs=k, rhs=(sp.Add(*shown, evaluate=False),)))
    return (
        Section(key="prior", title="Saddle-point equations: regulariser channel",
                text=r"Stationarity of $\Phi$ in the conjugates $\hat q, \hat m, \hat\theta, \hat V$ (closed form).",
                equations=prior),
        Section(key="output", title="Saddle-point equations: loss channel",
                text=(r"Stationarity in $q, m, \theta, V$, after the envelope theorem and Stein's lemma; "
                      r"the expectations are over $\xi, \eta$ through the node map, and each needs the "
                      r"prox at every node."),
                equations=tuple(out)),
    )


def _slug(sym) -> str:
    return NAMES[sym].replace("_", "-")


def _observables_section() -> Section:
    _, _, h, hs = eps_g_nodes()
    _, _, _, hs_sym, h_sym = node_symbols(2)
    ell = sp.Function(r"\ell")
    eps_g, eps_lin, eps_t = sp.symbols(r"\varepsilon_g \varepsilon_{\mathrm{lin}} \varepsilon_t")
    l = sp.Symbol("l", integer=True)
    return Section(
        key="observables", title="Training loss, test error and the linear baseline",
        text=(r"At a fixed point the training loss per dimension is $\varepsilon_t = -\Phi$; the test error "
              r"averages the loss over $u, v \sim N(0, I_2)$ with the nodes below; the linear positional "
              r"baseline's error is independent of $\alpha$, with $h^* \sim N(0, \rho I_2)$ and "
              r"$T_{ll}$ the diagonal of $T(h^*)$."),
        equations=(
            _eq("eps-t", eps_t, -sp.Symbol(r"\Phi"),
                alpha * Expect(ell(sp.Symbol(r"\mathrm{prox}"), sp.Symbol("h^*"))) + lam * q / (2 * sigma**2)),
            _eq("eps-g", eps_g, Expect(ell(*h_sym, *hs_sym))),
            *(_eq(f"gen-h{k + 1}", h_sym[k], h[k]) for k in range(2)),
            *(_eq(f"gen-hs{k + 1}", hs_sym[k], hs[k]) for k in range(2)),
            _eq("eps-lin", eps_lin, r"\frac{\sigma^{2}}{2} \mathbb{E}\left\| T(h^*) - \mathbb{E}\left[T(h^*)\right]"
                                    r" \right\|_F^{2}",
                sigma**2 * sp.Sum(Var(sp.Symbol("T_{ll}")), (l, 1, 2))),
        ))


def _threshold_section() -> Section:
    a_c, a_l = sp.symbols(r"\alpha_c \alpha_l")
    et, eg = sp.Symbol(r"\varepsilon_t"), sp.Symbol(r"\varepsilon_g")
    pos, sem, glob = sp.Symbol("pos"), sp.Symbol("sem"), sp.Symbol("glob")
    return Section(
        key="thresholds", title="Thresholds",
        text=(r"$\alpha_c$: the two branches' training losses are equal (below it the positional minimum is "
              r"global, above it the semantic one). $\alpha_l$: the test error of the global minimum falls "
              r"below the linear baseline's."),
        equations=(
            _eq("alpha-c", Named(et, pos, a_c), Named(et, sem, a_c)),
            _eq("alpha-l", Named(eg, glob, a_l), sp.Symbol(r"\varepsilon_{\mathrm{lin}}")),
        ))


@functools.cache
def sections() -> tuple:
    """All sections, in the order of the model page (built once per process; a few seconds)."""
    return (_model_section(), _loss_section(), _moreau_section(), _free_energy_section(),
            *_saddle_sections(), _observables_section(), _threshold_section())


# --------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------
_PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage[margin=2.2cm]{geometry}
\usepackage{amsmath,amssymb}
\allowdisplaybreaks
\title{The solvable model of dot-product attention: equations}
\author{generated by symattn %s}
\date{}
\begin{document}
\maketitle
\noindent Cui, Behrens, Krzakala, Zdeborov\'a, \emph{A phase transition between positional and semantic
learning in a solvable model of dot-product attention}, NeurIPS 2024 (arXiv:2402.03902).
Every equation below is printed from the SymPy expression the symattn solvers are compiled from.
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("symattn")
    except PackageNotFoundError:
        return "(development)"


def document(standalone: bool = False, general: bool = False) -> str:
    """The equations as LaTeX: ``align`` environments with ``\\label{eq:symattn-...}``.

    Without ``standalone`` the text can be ``\\input`` into a paper that loads ``amsmath`` and
    ``amssymb``; with it, a complete document that compiles with ``pdflatex``.  ``general``:
    the general model's equations (model page §7, :func:`general_sections`) instead of the
    paper's.
    """
    out = [_PREAMBLE % _version()] if standalone else [
        "% Generated by symattn " + _version() + " (symattn latex); needs amsmath, amssymb.\n"]
    for sec in (general_sections() if general else sections()):
        out.append(r"\paragraph{%s} %s" % (sec.title, sec.text))
        rows = []
        for e in sec.equations:
            lines = e.latex_lines()
            lines = [ln + r" \nonumber" for ln in lines[:-1]] + [lines[-1] + r" \label{%s}" % e.label]
            rows.append(" \\\\\n".join(lines))
        out.append("\\begin{align}\n" + " \\\\\n".join(rows) + "\n\\end{align}\n")
    if standalone:
        out.append("\\end{document}\n")
    return "\n".join(out)


def _rst_inline(text: str) -> str:
    text = re.sub(r"\$(.+?)\$", lambda mt: ":math:`%s`" % mt.group(1), text)
    return text.replace(r"\emph{global}", "*global*")


def sphinx_math_blocks() -> str:
    """The same equations as reST (one labelled ``.. math::`` block per equation), for the docs."""
    out = []
    for sec in sections():
        out += [sec.title, "-" * len(sec.title), "", _rst_inline(sec.text), ""]
        for e in sec.equations:
            lines = e.latex_lines()
            body = " \\\\\n   ".join(lines)
            out += [".. math::", "   :label: " + e.label.replace(":", "-"), "",
                    "   " + (r"\begin{aligned}" + body + r"\end{aligned}" if len(lines) > 1
                             else body.replace("&", "")), ""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# the general model (model page §7)
# --------------------------------------------------------------------------------------
def general_matrices():
    """The matrix symbols of the general model, sized by the symbols ``L, r, r_t``."""
    L, r, rt = sp.symbols("L r r_t", positive=True, integer=True)
    m = {name: sp.MatrixSymbol(tex, *shape) for name, tex, shape in (
        ("q", "q", (r, r)), ("V", "V", (r, r)), ("M", "M", (L, r)), ("theta", r"\theta", (rt, r)),
        ("q_hat", r"\hat{q}", (r, r)), ("V_hat", r"\hat{V}", (r, r)), ("M_hat", r"\hat{M}", (L, r)),
        ("theta_hat", r"\hat{\theta}", (rt, r)), ("Pi", r"\Pi", (L, L)))}
    m["I_r"] = sp.Identity(r)
    m["A"] = lam * m["I_r"] + sigma**2 * m["V_hat"]
    m["inner"] = (sigma**2 * m["q_hat"] + m["M_hat"].T * m["Pi"] * m["M_hat"]
                  + sigma**2 * rho * m["theta_hat"].T * m["theta_hat"])
    return m


def general_prior_equations() -> dict:
    """``q, M, theta, V`` of the prior channel as matrix expressions (``rho`` the scalar of
    :math:`\\rho = \\rho I_{r_t}`, ``rho = sigma^2``)."""
    m = general_matrices()
    Ai = m["A"] ** -1
    return {"V": sigma**2 * Ai, "M": m["Pi"] * m["M_hat"] * Ai,
            "theta": sigma**2 * rho * m["theta_hat"] * Ai,
            "q": sigma**2 * Ai * m["inner"] * Ai}


def general_sections() -> tuple:
    """The general model's free entropy and saddle-point equations (model page §7), printed
    from matrix expressions; ``tests/test_latex.py`` checks them against
    :mod:`symattn.symbolic.general` entry by entry."""
    m = general_matrices()
    tr = sp.Trace
    EM = Expect(sp.Symbol(r"\mathcal{M}"))
    phi = (tr(m["V_hat"] * m["q"]) / 2 - tr(m["q_hat"] * m["V"]) / 2
           - tr(m["M_hat"].T * m["M"]) - tr(m["theta_hat"].T * m["theta"])
           + tr(m["A"] ** -1 * m["inner"]) / 2 - alpha * EM)
    prior = general_prior_equations()
    nodes = Section(
        key="general-nodes", title="General model: nodes and Moreau envelope",
        text=(r"$L$ tokens, student rank $r$, teacher rank $r_t$, $\Pi = PP^\top/d$, "
              r"$\rho = \sigma^2 I_{r_t}$; per token $\xi_l\sim N(0, I_r)$, "
              r"$\eta_l\sim N(0, I_{r_t})$, $q = KK^\top$, "
              r"$\rho - \theta q^{-1}\theta^\top = BB^\top$ (Cholesky)."),
        equations=(
            _eq("general-w", sp.Symbol("w_l"), r"M_l + K\xi_l"),
            _eq("general-hs", sp.Symbol("h^*_l"), r"\theta K^{-\top}\xi_l + B\eta_l"),
            _eq("general-moreau", sp.Symbol(r"\mathcal{M}"),
                r"\min_{h\in\mathbb R^{L\times r}} \sum_l \frac{(h_l-w_l)^\top V^{-1}(h_l-w_l)}{2}"
                r" + \ell(h, h^*)"),
            _eq("general-f", sp.Symbol("f_l"), r"V^{-1}\left(\mathrm{prox}_l - w_l\right)"),
        ))
    free = Section(key="general-phi", title="General model: free entropy",
                   text=r"$\mathcal A = \lambda I_r + \sigma^2\hat V$.",
                   equations=(_eq("general-phi", sp.Symbol(r"\Phi"), phi),))
    prior_sec = Section(
        key="general-prior", title="General model: prior channel",
        text="Stationarity in the conjugates.",
        equations=tuple(_eq(f"general-{k}", m[k], prior[k]) for k in ("q", "M", "theta", "V")))
    output = Section(
        key="general-output", title="General model: output channel",
        text=(r"Stationarity in $q, M, \theta, V$ (envelope theorem, Price's theorem, Stein's "
              r"lemma); $F$ has rows $f_l^\top$, $\mathrm{sym}(X) = (X + X^\top)/2$."),
        equations=(
            _eq("general-q_hat", m["q_hat"], r"\alpha \sum_l \mathbb{E}\left[f_l f_l^\top\right]"),
            _eq("general-M_hat", m["M_hat"], r"\alpha\, \mathbb{E}\left[F\right]"),
            _eq("general-theta_hat", m["theta_hat"],
                r"\alpha B^{-\top} \sum_l \mathbb{E}\left[\eta_l f_l^\top\right]"),
            _eq("general-V_hat", m["V_hat"],
                r"\mathrm{sym}\left(-\alpha K^{-\top} \sum_l \mathbb{E}\left[\xi_l f_l^\top\right]"
                r" + q^{-1}\theta^\top\hat{\theta}\right)"),
        ))
    return nodes, free, prior_sec, output
