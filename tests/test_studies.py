"""studies/ is a place a newcomer can read: an index that names every study, every study
importable from the repository root as ``studies.NAME`` without running, no bare imports of
one study by another, and one output folder (studies/README.md says how they are run)."""

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "studies"
README = STUDIES / "README.md"
NAMES = sorted(p.stem for p in STUDIES.glob("*.py") if p.name != "__init__.py")
#: ``studies/NAME.py`` as the docs, the code and the index write it
NAMED = re.compile(r"studies/([a-z][a-z0-9_]*)\.py")    # NAME, upper case, is a placeholder


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _removed() -> set:
    """The bare names listed under the index's 'Removed studies' heading."""
    text = _readme()
    assert "## Removed studies" in text
    return set(re.findall(r"^- `(\w+)`:", text.split("## Removed studies", 1)[1], re.M))


def test_there_are_studies_and_a_package():
    assert len(NAMES) >= 10
    assert (STUDIES / "__init__.py").is_file()


def test_the_index_names_every_study():
    named = set(NAMED.findall(_readme()))
    missing = [n for n in NAMES if n not in named]
    assert not missing, f"studies/README.md does not name: {missing}"


def test_the_index_names_only_studies_that_exist():
    stale = sorted(set(NAMED.findall(_readme())) - set(NAMES))
    assert not stale, f"studies/README.md names scripts that do not exist: {stale}"


def test_removed_studies_are_gone_and_every_cited_study_exists_or_is_listed_as_removed():
    removed = _removed()
    assert removed, "the 'Removed studies' section lists no names"
    assert not removed & set(NAMES), f"listed as removed but present: {removed & set(NAMES)}"
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.rst"),
             *STUDIES.rglob("*.md"), *STUDIES.glob("*.py"), *(ROOT / "tests").glob("*.py"),
             *(ROOT / "symattn").rglob("*.py")]
    unknown = {}
    for f in files:
        if "_generated" in f.parts:
            continue
        for name in NAMED.findall(f.read_text(encoding="utf-8")):
            if name not in NAMES and name not in removed:
                unknown.setdefault(name, []).append(str(f.relative_to(ROOT)))
    assert not unknown, f"cited studies that neither exist nor are listed as removed: {unknown}"


def test_one_output_folder():
    folders = {p.name for p in STUDIES.iterdir() if p.is_dir()} - {"__pycache__"}
    assert folders == {"data"}, folders
    for name in NAMES:
        src = (STUDIES / f"{name}.py").read_text(encoding="utf-8")
        assert "studies/results" not in src and '"results" /' not in src, name


def _tree(name):
    return ast.parse((STUDIES / f"{name}.py").read_text(encoding="utf-8"), filename=f"{name}.py")


def _is_guard(node) -> bool:
    """``if __name__ == "__main__":`` or the file-mode path guard ``if __package__ in ...:``."""
    if not isinstance(node, ast.If):
        return False
    names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
    return names in ({"__name__"}, {"__package__"})


@pytest.mark.parametrize("name", NAMES)
def test_a_study_has_a_main_guard_and_nothing_runs_at_top_level(name):
    body = _tree(name).body
    assert any(_is_guard(n) and "__main__" in ast.unparse(n.test) for n in body), \
        f"{name}: no `if __name__ == \"__main__\":`"
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
               ast.Assign, ast.AnnAssign)
    for i, node in enumerate(body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        assert docstring or isinstance(node, allowed) or _is_guard(node), \
            f"{name}, line {node.lineno}: top-level statement runs at import: {ast.unparse(node)[:80]}"


@pytest.mark.parametrize("name", NAMES)
def test_a_study_imports_no_other_study_bare(name):
    bare = []
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
        else:
            continue
        bare += [m for m in mods if m.split(".")[0] in NAMES]
    assert not bare, f"{name} imports {bare}: write `from studies.NAME import ...`"


def test_every_study_imports_from_the_repository_root_without_running(monkeypatch, capfd):
    monkeypatch.syspath_prepend(str(ROOT))
    before = list(sys.argv)
    for name in NAMES:
        mod = importlib.import_module(f"studies.{name}")
        assert Path(mod.__file__).resolve() == STUDIES / f"{name}.py"
        assert mod.__name__ == f"studies.{name}"
    out, _ = capfd.readouterr()
    assert out == "", f"importing the studies printed: {out[:500]}"
    assert sys.argv == before
