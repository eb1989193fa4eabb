"""The package keeps its three floors: the runtime imports no layer, no service imports another service or the
command, and the client library imports only the runtime, the contracts and itself.

The import graph is read from the source with :mod:`ast` (every ``import`` and ``from ... import``, also
inside functions, relative ones resolved, and ``importlib.import_module`` of a literal name), so an import
hidden in a function body counts as much as one at the top.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "hindsight"
SOURCE = Path(__file__).resolve().parents[2] / "services"
"""The folder installed as the ``hindsight`` package."""
SERVICES = ("working", "episodic", "semantic", "reflect", "inference", "mcp_edge")
MAY_IMPORT: dict[str, frozenset[str]] = {
    **{service: frozenset({service, "runtime", "contracts"}) for service in SERVICES},
    "client": frozenset({"client", "runtime", "contracts"}),
    "runtime": frozenset({"runtime", "contracts"}),
    "contracts": frozenset({"contracts"}),
    # the lab beside the command: it starts meshes as the command does and measures two layers' engines
    "bench": frozenset({"bench", "cli", "client", "runtime", "contracts", "inference", "working"}),
}
"""What each subpackage may import from ``hindsight``; no exceptions are allowed."""
UNRESTRICTED = frozenset({"cli"})
"""The command on top, which wires everything."""


@dataclass(frozen=True)
class Import:
    """One import of a ``hindsight`` module."""

    path: str
    """The importing file, relative to the package folder."""
    line: int
    target: str
    """The imported module (``hindsight.x.y``)."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


def _module_name(relative: Path) -> tuple[str, bool]:
    """The dotted name of a file under the package folder, and whether it is a package's ``__init__``."""
    parts = [PACKAGE, *relative.with_suffix("").parts]
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in ``tree``; ``from a import b`` also yields ``a.b`` (b may be a
    module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            yield node.lineno, source
            for alias in node.names:
                yield node.lineno, f"{source}.{alias.name}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def package_imports(root: Path) -> Iterator[tuple[str, Import]]:
    """(subpackage, import) for every import of a ``hindsight`` module by a file in a subpackage of
    ``root``."""
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if len(relative.parts) < 2:
            continue  # the package's own __init__
        module, is_package = _module_name(relative)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target in _imported(tree, module, is_package):
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                yield relative.parts[0], Import(str(relative), line, target)


def violations(root: Path) -> list[Import]:
    """Imports that cross a floor the wrong way or reach a sibling service, one per line and floor reached."""
    found: dict[tuple[str, int, str], Import] = {}
    for subpackage, imported in package_imports(root):
        parts = imported.target.split(".")
        reached = parts[1] if len(parts) > 1 else ""
        if subpackage in UNRESTRICTED or not reached:  # the top package holds only the version
            continue
        if reached not in MAY_IMPORT.get(subpackage, frozenset()):
            found.setdefault((imported.path, imported.line, reached), imported)
    return sorted(found.values(), key=lambda i: (i.path, i.line))


def test_no_service_imports_another_service_the_command_or_the_client_and_the_floors_hold() -> None:
    found = violations(SOURCE)
    assert not found, "imports across the package's floors:\n" + "\n".join(map(str, found))


def test_the_walk_reads_every_subpackage_and_sees_the_imports_they_may_make() -> None:
    seen = {subpackage for subpackage, _ in package_imports(SOURCE)}
    assert seen >= {*SERVICES, "client", "runtime", "cli"}, seen


def test_every_subpackage_is_placed_on_a_floor() -> None:
    subpackages = {path.parent.name for path in SOURCE.glob("*/__init__.py")}
    assert subpackages == set(MAY_IMPORT) | UNRESTRICTED, subpackages


def test_the_check_finds_imports_in_functions_relative_ones_and_import_module(tmp_path: Path) -> None:
    files = {
        "working/__init__.py": "",
        "working/engine.py": (
            "from hindsight.runtime.records import Turn\n"
            "from hindsight.working import store\n"
            "from . import store as same\n"
            "from ..episodic.models import Episode\n"
            "def later():\n"
            "    import hindsight.cli.mesh\n"
            "    importlib.import_module('hindsight.semantic.engine')\n"
        ),
        "client/__init__.py": "from hindsight import mcp_edge\nfrom hindsight.contracts import memory\n",
        "cli/__init__.py": "from hindsight.episodic.engine import Engine\n",
        "runtime/__init__.py": "from hindsight.runtime import records\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    assert [str(found) for found in violations(tmp_path)] == [
        "client/__init__.py:1 imports hindsight.mcp_edge",
        "working/engine.py:4 imports hindsight.episodic.models",
        "working/engine.py:6 imports hindsight.cli.mesh",
        "working/engine.py:7 imports hindsight.semantic.engine",
    ]
