"""Tests of the LaTeX export (``symattn latex``, :mod:`symattn.outputs.latex`).

Independent references: the equations of model page §4 typed by hand in this file; the
printed objects are compared to them with SymPy, term by term.  The rendered text is checked by
matplotlib's mathtext (every equation line parses) and, where ``pdflatex`` is installed, by
compiling the standalone document.
"""

import re
import shutil
import subprocess

import pytest
import sympy as sp
from matplotlib.mathtext import MathTextParser

from conftest import assert_one_line_error
from symattn.cli import main
from symattn.model.symbols import (V, V_hat, alpha, lam, m, m_hat, q, q_hat, rho, sigma, theta,
                                   theta_hat)
from symattn.outputs import latex
from symattn.symbolic.expectation import Expect
from symattn.symbolic.free_energy import derive_saddle_point


@pytest.fixture(scope="module")
def eqs():
    return {e.name: e for sec in latex.sections() for e in sec.equations}


def _model_md_section4():
    """model page §4, typed by hand: node map, Phi, both blocks of the saddle point."""
    eq = derive_saddle_point()
    xi, eta = eq.nodes.xi, eq.nodes.eta
    f1, f2 = eq.F
    w1, w2 = eq.w
    hs1, hs2 = eq.hs
    c = sp.sqrt(rho - theta**2 / q)
    D = lam + V_hat * sigma**2
    return {
        "node-w1": (w1, sp.sqrt(q) * xi[0] + m), "node-w2": (w2, sp.sqrt(q) * xi[1] - m),
        "node-hs1": (hs1, theta / sp.sqrt(q) * xi[0] + c * eta[0]),
        "node-hs2": (hs2, theta / sp.sqrt(q) * xi[1] + c * eta[1]),
        "phi": (sp.Symbol(r"\Phi"), (V_hat * q - q_hat * V) / 2 - m * m_hat - theta * theta_hat
                + (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * rho * sigma**2) / (2 * D)
                - alpha * Expect(eq.M)),
        "prior-V": (V, sigma**2 / D), "prior-m": (m, m_hat / D),
        "prior-theta": (theta, sigma**2 * rho * theta_hat / D),
        "prior-q": (q, sigma**2 * (q_hat * sigma**2 + m_hat**2 + theta_hat**2 * sigma**2 * rho) / D**2),
        "output-q-hat": (q_hat, alpha * Expect(f1**2 + f2**2)),
        "output-m-hat": (m_hat, alpha * Expect(f1 - f2)),
        "output-theta-hat": (theta_hat, alpha * Expect(f1 * eta[0] + f2 * eta[1]) / c),
        # theta_hat appears as a symbol on the right, exactly as the model page writes it
        "output-V-hat": (V_hat, -alpha * Expect(f1 * xi[0] + f2 * xi[1]) / sp.sqrt(q)
                         + theta * theta_hat / q),
    }


@pytest.mark.parametrize("name", sorted(_model_md_section4()))
def test_printed_equations_match_model_md(eqs, name):
    """Each printed left side is the model page's, and the printed right side (all lines summed) equals
    the model page's right side after expanding expectations linearly."""
    nodes = derive_saddle_point().nodes
    lhs, rhs = _model_md_section4()[name]
    e = eqs[name]
    assert e.lhs == lhs
    printed = sp.Add(*e.rhs)
    assert sp.simplify(nodes.collect(printed) - nodes.collect(rhs)) == 0


def test_printed_forms_are_what_the_solver_runs(eqs):
    """The printed output equations are the derived ones the kernels compile (V_hat after
    substituting theta_hat's equation)."""
    eq = derive_saddle_point()
    for k in eq.output:
        printed = sp.Add(*eqs["output-" + latex._slug(k)].rhs).subs(theta_hat, eq.output[theta_hat])
        assert sp.simplify(eq.nodes.collect(printed) - eq.nodes.collect(eq.output[k])) == 0


def test_rearrangement_guard_rejects_a_wrong_form():
    """The check every rearranged expression passes before printing rejects the model page's V_hat
    with its theta theta_hat / q term dropped (a plausible transcription error)."""
    eq = derive_saddle_point()
    xi = eq.nodes.xi
    wrong = -alpha * Expect(eq.F[0] * xi[0] + eq.F[1] * xi[1]) / sp.sqrt(q)
    with pytest.raises(AssertionError, match="differs"):
        latex._same(wrong, eq.output[V_hat], "V_hat", eq.nodes)


def test_labels_unique_and_every_equation_numbered():
    text = latex.document()
    labels = re.findall(r"\\label\{([^}]*)\}", text)
    n_eq = sum(len(sec.equations) for sec in latex.sections())
    assert len(labels) == len(set(labels)) == n_eq
    assert all(lab.startswith("eq:symattn-") for lab in labels)
    assert text.count(r"\begin{align}") == text.count(r"\end{align}") == len(latex.sections())
    assert r"\documentclass" not in text


def test_every_line_parses_as_mathtext():
    """Where no TeX is installed this is the check that the printed LaTeX is well formed."""
    parser = MathTextParser("path")
    for sec in latex.sections():
        for e in sec.equations:
            for line in e.latex_lines():
                parser.parse("$" + line.replace("&", "") + "$")


def test_sphinx_blocks_carry_every_label():
    rst = latex.sphinx_math_blocks()
    for sec in latex.sections():
        assert sec.title in rst
        for e in sec.equations:
            assert ":label: " + e.label.replace(":", "-") in rst
    assert "$" not in rst  # inline math converted to :math:


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed (.ci/run installs Debian's texlive-latex-base "
                           "when it can); the mathtext test above still parses every equation")
def test_standalone_document_compiles(tmp_path):
    tex = tmp_path / "equations.tex"
    assert main(["latex", "--standalone", "--out", str(tex)]) == 0
    for _ in range(2):  # second pass resolves the labels
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "equations.log").read_text(errors="replace")
    assert "Overfull" not in log and "undefined" not in log.lower()
    assert (tmp_path / "equations.pdf").stat().st_size > 10_000


def test_cli_stdout_fragment_and_errors(capsys, tmp_path):
    assert main(["latex"]) == 0
    out = capsys.readouterr().out
    assert out == latex.document()
    assert main(["latex", "--out", str(tmp_path)]) == 2
    assert_one_line_error(capsys, "out: ")


def test_general_equations_print_what_the_general_derivation_has():
    """The matrix expressions ``symattn latex --general`` prints, made explicit at L = 3, r = 2,
    r_t = 1 with the component symbols, equal the derivation's prior equations entry by entry
    (symattn.symbolic.general), and the document has every equation."""
    import sympy as sp

    from symattn.outputs.latex import document, general_matrices, general_prior_equations
    from symattn.symbolic.general import general_symbols, prior_closed_form
    m = general_matrices()
    L, r, rt = sorted(m["q"].shape[0].free_symbols | m["M"].shape[0].free_symbols
                      | m["theta"].shape[0].free_symbols, key=str)
    sizes = {L: 3, r: 2, rt: 1}
    s = general_symbols(3, 2, 1)
    comp = {"q": s.q, "V": s.V, "M": s.M, "theta": s.theta, "q_hat": s.q_hat, "V_hat": s.V_hat,
            "M_hat": s.M_hat, "theta_hat": s.theta_hat, "Pi": s.Pi}
    explicit = {m[k].subs(sizes): v for k, v in comp.items()}
    closed = prior_closed_form(s)
    for k, expr in general_prior_equations().items():
        got = sp.Matrix(expr.subs(sizes).xreplace(explicit).doit())
        assert all(sp.cancel(e) == 0 for e in (got - closed[k])), k
    text = document(general=True)
    for name in ("phi", "q", "M", "theta", "V", "q_hat", "M_hat", "theta_hat", "V_hat"):
        assert r"\label{eq:symattn-general-%s}" % name in text
