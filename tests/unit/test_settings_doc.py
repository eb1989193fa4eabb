"""The settings reference stays complete and current."""

from __future__ import annotations

import ast
from pathlib import Path

from hindsight.cli.settings_doc import GROUPS, render_markdown

ROOT = Path(__file__).resolve().parents[2]


def _classes_declaring_env_settings() -> set[tuple[str, str]]:
    """(module, class) for every class in the source with a field declared by ``env(...)``."""
    found = set()
    for path in (ROOT / "services").rglob("*.py"):
        if "contracts" in path.parts:
            continue
        module = "hindsight." + ".".join(path.relative_to(ROOT / "services").with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                value = item.value if isinstance(item, ast.AnnAssign) else None
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "env":
                    found.add((module, node.name))
                    break
    return found


def test_every_settings_class_is_in_the_reference() -> None:
    listed = {(group.module, group.class_name) for group in GROUPS}
    missing = _classes_declaring_env_settings() - listed
    assert not missing, f"add these to GROUPS in hindsight/cli/settings_doc.py: {sorted(missing)}"


def test_the_settings_page_is_current() -> None:
    page = ROOT / "docs" / "settings.md"
    assert page.read_text() == render_markdown(), "run: hindsight settings > docs/settings.md"


def test_the_reference_names_each_variable_with_its_default_and_meaning() -> None:
    text = render_markdown()
    assert "| `HINDSIGHT_PORT` | `0` | Port to bind; 0 picks a free one. |" in text
    assert "## MCP edge" in text
