"""Every derivation script runs and its asserted identities hold (exit status 0).

The scripts in ``derivations/`` print one step of the derivation of model page §3-§4 each and
assert every identity with SymPy, so a failing identity is a non-zero exit status here.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((REPO / "derivations").glob("[0-9]*.py"))
EXPECTED = {"01_loss_reduction.py", "02_regulariser_channel.py", "03_moreau_envelope.py",
            "04_stein_lemma.py", "05_saddle_point.py", "06_phi_equals_minus_eps_t.py",
            "07_finite_temperature.py", "08_replicon.py"}
#: assertions must be live (PYTHONOPTIMIZE would strip them; the scripts refuse to run then)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONOPTIMIZE"}


def run(script: Path) -> subprocess.CompletedProcess:
    # each script takes a few seconds; the timeout only guards against a hang
    return subprocess.run([sys.executable, str(script)], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=300)


def test_the_eight_steps_are_present():
    assert {p.name for p in SCRIPTS} == EXPECTED


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_derivation_script_runs(script):
    r = run(script)
    assert r.returncode == 0, f"{script.name} failed:\n{r.stderr}\n--- stdout ---\n{r.stdout[-2000:]}"
    assert "all identities hold" in r.stdout


def test_a_wrong_formula_makes_the_script_fail(tmp_path):
    """Mutation: the model page's V_hat typed without its theta theta_hat / q term must be rejected."""
    source = (REPO / "derivations" / "05_saddle_point.py").read_text()
    right = "V_hat: -alpha * E(F1 * xi1 + F2 * xi2) / sp.sqrt(q) + theta * th_hat_md / q}"
    assert source.count(right) == 1
    (tmp_path / "_steps.py").write_text((REPO / "derivations" / "_steps.py").read_text())
    mutant = tmp_path / "05_mutant.py"
    mutant.write_text(source.replace(right, "V_hat: -alpha * E(F1 * xi1 + F2 * xi2) / sp.sqrt(q)}"))
    r = run(mutant)
    assert r.returncode != 0
    assert "AssertionError" in r.stderr and "derived != model page" in r.stderr
