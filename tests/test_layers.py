"""The package's rooms and the one direction of its imports (docs/api/index.rst).

A module may import from its own room and from the rooms listed before it, never from a room
listed after it.  The check reads every import statement (module level and inside functions)
with :mod:`ast`, so a lazy import that points "up" is caught too.
"""

import ast
from pathlib import Path

import pytest

import symattn

ROOMS = ["model", "stats", "results", "runs", "symbolic", "compile", "numerics", "simulation", "refine",
         "experiments", "outputs", "api", "cli"]
PACKAGE = Path(symattn.__file__).parent


def _room(module: str) -> str | None:
    """Room of a dotted module name inside symattn (``None`` for the package itself)."""
    parts = module.split(".")
    if parts[0] != "symattn" or len(parts) == 1:
        return None
    return parts[1]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """Absolute dotted names of the symattn modules imported by the file at ``path``."""
    yield from _imports_in(path.read_text(), _module_name(path), path.name == "__init__.py")


def _imports_in(source: str, name: str, is_package: bool):
    package = name if is_package else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("symattn"):
                    yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("symattn"):
                if target == "symattn":          # "from symattn import x": x is the module
                    for a in node.names:
                        yield node.lineno, f"symattn.{a.name}"
                else:
                    yield node.lineno, target


FILES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py"
               and _room(_module_name(p)) is not None)


def test_every_room_is_known():
    rooms = {_room(_module_name(p)) for p in FILES}
    assert rooms <= set(ROOMS), rooms - set(ROOMS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_points_up(path):
    own = ROOMS.index(_room(_module_name(path)))
    up = [(line, target) for line, target in _imports(path)
          if _room(target) in ROOMS and ROOMS.index(_room(target)) > own]
    assert not up, f"{path.name} imports from rooms above its own: {up}"


def _upward(source: str, name: str) -> list:
    own = ROOMS.index(_room(name))
    return [t for _, t in _imports_in(source, name, False)
            if _room(t) in ROOMS and ROOMS.index(_room(t)) > own]


def test_the_check_sees_an_upward_import():
    """The check could fail: relative, absolute and lazy imports that point up are caught,
    and imports within a room or downwards are not."""
    name = "symattn.numerics.prox"
    assert _upward("from ..cli import main\n", name) == ["symattn.cli"]
    assert _upward("def f():\n    from ..refine.precise import x\n", name) == ["symattn.refine.precise"]
    assert _upward("import symattn.outputs.latex\n", name) == ["symattn.outputs.latex"]
    assert _upward("from symattn import api\n", name) == ["symattn.api"]
    assert _upward("from .channel import x\nfrom ..compile.kernels import y\n", name) == []
