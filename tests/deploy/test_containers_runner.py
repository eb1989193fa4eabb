"""scripts/containers/stack.py turns each compose service into the ``podman run`` that compose would make:
every setting the file gives reaches the container, start order follows depends_on, and a service left out
is accepted only where the dependency says ``required: false``. (scripts/containers_check.py runs these
for real where podman exists; this checks the translation everywhere.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.deploy.compose import ENV_EXAMPLE, compose, read_env_file

ROOT = Path(__file__).resolve().parents[2]
FILLED = read_env_file(ENV_EXAMPLE) | {
    "POSTGRES_PASSWORD": "pw",
    "HINDSIGHT_INTERNAL_TOKEN": "internal",
    "HINDSIGHT_TOKENS": "agent=bank",
    "QDRANT_URL": "",
}


def _load_stack() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stack", ROOT / "scripts" / "containers" / "stack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stack", module)
    spec.loader.exec_module(module)
    return module


stack = _load_stack()


def _stack(left_out: frozenset[str] = frozenset({"qdrant"})) -> Any:
    return stack.Stack("p", compose(FILLED), left_out=left_out)


def _flags(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == flag]


def test_every_setting_of_a_layer_service_reaches_its_podman_run(tmp_path: Path) -> None:
    running = _stack()
    edge = running.services["mcp_edge"]
    args = running.run_args(edge, tmp_path / "edge.env")
    spec = edge.spec
    assert args[args.index("--restart") + 1] == "unless-stopped"
    assert {"--init", "--read-only"} <= set(args)
    assert _flags(args, "--tmpfs") == ["/tmp"] and _flags(args, "--cap-drop") == ["ALL"]
    assert _flags(args, "--security-opt") == ["no-new-privileges"]
    assert _flags(args, "--network") == ["p_hindsight"] and _flags(args, "--network-alias") == ["mcp_edge"]
    assert _flags(args, "--publish") == spec["ports"]
    assert _flags(args, "--memory") == ["512m"] and _flags(args, "--cpus") == ["1"]
    assert _flags(args, "--env-file") == [str(tmp_path / "edge.env")]
    assert not any(FILLED["HINDSIGHT_TOKENS"] in arg for arg in args), "secrets stay out of the arguments"
    assert json.loads(args[args.index("--health-cmd") + 1]) == spec["healthcheck"]["test"][1:]
    assert _flags(args, "--health-interval") == ["10s"] and _flags(args, "--health-start-period") == ["60s"]
    image = args.index(spec["image"])
    assert args[image + 1 :] == spec["command"]
    assert running.environment(edge)["HINDSIGHT_TOKENS"] == FILLED["HINDSIGHT_TOKENS"]


def test_named_volumes_belong_to_the_project_and_shell_health_checks_stay_shell(tmp_path: Path) -> None:
    running = _stack()
    semantic = running.run_args(running.services["semantic"], tmp_path / "s.env")
    assert _flags(semantic, "--volume") == ["p_semantic-data:/var/lib/hindsight"]
    postgres = running.run_args(running.services["postgres"], tmp_path / "p.env")
    assert _flags(postgres, "--health-cmd") == ["pg_isready -U hindsight -d hindsight"]
    assert _flags(postgres, "--volume") == ["p_postgres-data:/var/lib/postgresql"]


def test_services_start_after_what_they_depend_on() -> None:
    running = _stack()
    order = [service.name for service in running.order()]
    assert "qdrant" not in order
    for service in running.services.values():
        for dependency in service.depends_on:
            if dependency in running.services:
                assert order.index(dependency) < order.index(service.name), (dependency, service.name)


def test_leaving_out_a_required_dependency_is_refused() -> None:
    with pytest.raises(stack.StackError, match="postgres"):
        _stack(frozenset({"qdrant", "postgres"})).order()


@pytest.mark.parametrize(
    ("text", "seconds"), [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), (15, 15.0)]
)
def test_compose_durations_are_read_as_compose_reads_them(text: str | int, seconds: float) -> None:
    assert stack._seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("name", ["postgres", "redis"])
def test_the_store_images_lint_clean_and_take_the_base_as_an_argument(name: str) -> None:
    containerfile = ROOT / "scripts" / "containers" / f"{name}.Containerfile"
    hadolint = Path(sys.executable).with_name("hadolint")
    done = subprocess.run([str(hadolint), "--no-color", str(containerfile)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = containerfile.read_text()
    assert "FROM ${BASE_IMAGE}" in text and f"ARG BASE_IMAGE={stack.BASE_IMAGE}" in text
