"""Reads docker-compose.yml the way compose does (YAML merge keys, ${...} interpolation from .env) so tests
can check the file and start each layer with exactly the variables its container would get."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
LAYER_PORT = 50051
STORES = ("postgres", "redis", "qdrant")

_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|\$\$")


class InterpolationError(ValueError):
    """A required variable (``${NAME:?message}``) is missing, as ``docker compose config`` would report."""


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file; comments and blank lines skipped."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, _, value = stripped.partition("=")
        values[key.strip()] = value.strip()
    return values


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``, ``${NAME:?err}`` and ``$$``."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        value = variables.get(name)
        if op == ":-":
            return value if value else arg
        if op == "-":
            return value if value is not None else arg
        if op in (":?", "?"):
            if value is None or (op == ":?" and not value):
                raise InterpolationError(f"{name}: {arg}")
            return value
        return value or ""

    return _VARIABLE.sub(replace, text)


def _interpolate_tree(node: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, list):
        return [_interpolate_tree(item, variables) for item in node]
    if isinstance(node, dict):
        return {key: _interpolate_tree(value, variables) for key, value in node.items()}
    return node


def raw_compose() -> dict[str, Any]:
    """The compose file as written (anchors merged, nothing interpolated)."""
    loaded = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def compose(variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The compose file interpolated with ``variables`` (default: the values of .env.example)."""
    return dict(
        _interpolate_tree(raw_compose(), read_env_file(ENV_EXAMPLE) if variables is None else variables)
    )


def layer_services(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The Hindsight containers: every service that runs the image's ``hindsight`` command."""
    return {name: spec for name, spec in config["services"].items() if name not in STORES}


def container_env(service: Mapping[str, Any]) -> dict[str, str]:
    """The variables compose gives the container (``environment`` as a map or as KEY=VALUE items)."""
    environment = service.get("environment", {})
    if isinstance(environment, list):
        return dict(item.split("=", 1) for item in environment)
    return {key: "" if value is None else str(value) for key, value in environment.items()}
