"""docker-compose.yml is valid against the compose specification and keeps the deployment's promises:
health checks everywhere, start order on health, only the edge published (on loopback), each layer given
only its own store, closed by default (no start without the tokens; one internal token for every layer, the
agents' tokens for the edge alone), nothing secret committed, and memory limits above the measured peaks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from hindsight.cli.layers import LAYERS
from tests.deploy.compose import (
    COMPOSE_FILE,
    ENV_EXAMPLE,
    STORES,
    InterpolationError,
    compose,
    container_env,
    interpolate,
    layer_services,
    raw_compose,
    read_env_file,
)
from tests.deploy.sizing import HEADROOM, MEASURED_PEAK_RSS_MIB, mebibytes
from tests.deploy.topology import addresses_read_by

STORE_VARIABLES = {"DATABASE_URL": "postgres", "REDIS_URL": "redis", "QDRANT_URL": "qdrant"}
OWNS = {"working": "redis", "episodic": "postgres", "reflect": "postgres", "semantic": "qdrant"}
NEEDS = {  # the layers each layer calls (DESIGN.md) and so waits for
    "semantic": {"inference"},
    "reflect": {"episodic", "inference"},
    "mcp_edge": {"working", "episodic", "semantic", "reflect"},
}
FILLED = read_env_file(ENV_EXAMPLE) | {
    "POSTGRES_PASSWORD": "test-password",
    "HINDSIGHT_INTERNAL_TOKEN": "test-internal-token",
    "HINDSIGHT_TOKENS": "test-agent-token=bank-a",
}
"""The example .env as an operator fills it in: a password and both tokens."""
REQUIRED = ("POSTGRES_PASSWORD", "HINDSIGHT_INTERNAL_TOKEN", "HINDSIGHT_TOKENS")
IMAGE_VARIABLES = {"POSTGRES_IMAGE": "postgres", "REDIS_IMAGE": "redis"}
"""Store images a machine without a registry builds (scripts/containers/), by the service each replaces."""
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
CALLS_WITHOUT_WAITING = {  # called through a retrying outbox, so start-up does not wait for them
    "episodic": {"semantic", "working", "reflect", "inference"},
    "reflect": {"semantic"},  # scheduled maintenance (cold tier)
}


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return compose(FILLED)


def test_the_compose_file_is_valid_against_the_compose_specification() -> None:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(raw_compose(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"services": {"x": {"healthcheck": {"tset": []}}}}, schema)


def test_every_service_is_health_checked_and_restarts(config: dict[str, Any]) -> None:
    services = config["services"]
    assert set(layer_services(config)) == {layer.name for layer in LAYERS}
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        assert service["restart"] == "unless-stopped", name
    for layer in LAYERS:
        test = services[layer.name]["healthcheck"]["test"]
        assert test == [
            "CMD",
            "hindsight",
            "healthcheck",
            "--address",
            "127.0.0.1:50051",
            "--service",
            layer.service,
        ]
        assert services[layer.name]["command"] == ["serve", layer.name]


def test_services_start_only_after_what_they_need_is_healthy(config: dict[str, Any]) -> None:
    for name, service in layer_services(config).items():
        depends = service.get("depends_on", {})
        for dependency, rule in depends.items():
            # The Qdrant server may be left out (--scale qdrant=0) for semantic's in-process engine.
            optional = {"required": False} if (name, dependency) == ("semantic", "qdrant") else {}
            assert rule == {"condition": "service_healthy"} | optional, (name, dependency)
        expected = NEEDS.get(name, set()) | ({OWNS[name]} if name in OWNS else set())
        assert set(depends) == expected, name


def test_only_the_edge_is_published_and_only_on_loopback(config: dict[str, Any]) -> None:
    published = {name for name, service in config["services"].items() if service.get("ports")}
    assert published == {"mcp_edge"}
    for port in config["services"]["mcp_edge"]["ports"]:
        assert str(port).startswith("127.0.0.1:"), port


def test_everything_runs_on_one_custom_bridge_network_with_named_volumes_for_the_stores(
    config: dict[str, Any],
) -> None:
    assert config["networks"] == {"hindsight": {"driver": "bridge"}}
    assert all(service["networks"] == ["hindsight"] for service in config["services"].values())
    for store in STORES:
        (volume,) = config["services"][store]["volumes"]
        assert volume.split(":")[0] in config["volumes"]


def test_each_layer_gets_only_its_own_store_and_the_addresses_it_calls(config: dict[str, Any]) -> None:
    for name, service in layer_services(config).items():
        env = container_env(service)
        stores = {STORE_VARIABLES[key] for key in env if key in STORE_VARIABLES}
        assert stores == ({OWNS[name]} if name in OWNS else set()), name
        called = {
            key.removeprefix("HINDSIGHT_").removesuffix("_ADDR").lower() for key in env if "_ADDR" in key
        }
        reranks = {"inference"} if name == "mcp_edge" else set()  # reached through semantic's dependency
        assert called == NEEDS.get(name, set()) | CALLS_WITHOUT_WAITING.get(name, set()) | reranks, name
        assert {a.replace("-", "_") for a in addresses_read_by(name)} <= called, name
        assert "POSTGRES_PASSWORD" not in env, name
    assert "LLM_API_KEY" not in container_env(config["services"]["inference"])


def test_layer_containers_are_hardened_and_their_memory_limits_cover_the_measured_peaks(
    config: dict[str, Any],
) -> None:
    for name, service in layer_services(config).items():
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        limit = mebibytes(service["deploy"]["resources"]["limits"]["memory"])
        assert limit >= HEADROOM * MEASURED_PEAK_RSS_MIB[name], name


def test_images_are_pinned_to_exact_versions(config: dict[str, Any]) -> None:
    for name, service in config["services"].items():
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+(\.\d+)?(-[\w.-]+)?", service["image"]), (
            name,
            service["image"],
        )


def test_nothing_secret_is_committed_and_every_variable_has_a_line_in_the_env_example() -> None:
    text = COMPOSE_FILE.read_text()
    used = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))
    optional = {
        "HINDSIGHT_IMAGE",
        "HINDSIGHT_MCP_PUBLISH_PORT",
        "HINDSIGHT_GRPC_PUBLISH_PORT",
        *IMAGE_VARIABLES,
        "QDRANT_URL",
    }
    assert used - optional <= set(read_env_file(ENV_EXAMPLE))
    assert not re.search(r"(PASSWORD|TOKEN|KEY)\w*:[ \t]*[\"']?\w", re.sub(r"\$\{[^}]*\}", "", text))
    with pytest.raises(InterpolationError, match="POSTGRES_PASSWORD"):
        compose({key: value for key, value in FILLED.items() if key != "POSTGRES_PASSWORD"})
    assert not {key: value for key, value in read_env_file(ENV_EXAMPLE).items() if key in REQUIRED and value}


def test_interpolation_follows_compose_rules() -> None:
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET}-${EMPTY:-d}-${EMPTY-d}-${UNSET-d}-$${SET}", env) == "x-d--d-${SET}"
    with pytest.raises(InterpolationError):
        interpolate("${EMPTY:?needed}", env)


def _docker_compose() -> list[str] | None:
    """``docker compose`` (v2) where it exists: ``config`` renders the file without an engine."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True)
    return [docker, "compose"] if probe.returncode == 0 else None


@pytest.mark.parametrize("missing", REQUIRED)
def test_compose_refuses_to_render_or_start_without_each_secret(missing: str, tmp_path: Path) -> None:
    for value in (None, ""):
        variables = {k: v for k, v in FILLED.items() if k != missing} | (
            {} if value is None else {missing: value}
        )
        with pytest.raises(InterpolationError, match=missing):
            compose(variables)
    with pytest.raises(InterpolationError):
        compose()  # .env.example as copied, not yet filled in
    if docker_compose := _docker_compose():
        env_file = tmp_path / ".env"
        for variables, refused in (
            (FILLED, False),
            ({k: v for k, v in FILLED.items() if k != missing}, True),
        ):
            env_file.write_text("".join(f"{key}={value}\n" for key, value in variables.items()))
            clean = {k: v for k, v in os.environ.items() if k not in FILLED}
            done = subprocess.run(
                [*docker_compose, "-f", str(COMPOSE_FILE), "--env-file", str(env_file), "config", "-q"],
                capture_output=True,
                text=True,
                env=clean,
            )
            assert (done.returncode != 0) is refused, done.stderr
            assert not refused or missing in done.stderr, done.stderr


def test_every_layer_gets_the_internal_token_from_one_required_variable(config: dict[str, Any]) -> None:
    raw = layer_services(raw_compose())
    sources = {container_env(service)["HINDSIGHT_INTERNAL_TOKEN"] for service in raw.values()}
    (source,) = sources
    assert source.startswith("${HINDSIGHT_INTERNAL_TOKEN:?"), source
    for name, service in layer_services(config).items():
        assert container_env(service)["HINDSIGHT_INTERNAL_TOKEN"] == FILLED["HINDSIGHT_INTERNAL_TOKEN"], name


def test_only_the_edge_holds_the_agents_tokens_and_no_layer_turns_authentication_off(
    config: dict[str, Any],
) -> None:
    raw = layer_services(raw_compose())
    holders = {name for name, service in raw.items() if "HINDSIGHT_TOKENS" in container_env(service)}
    assert holders == {"mcp_edge"}
    assert container_env(raw["mcp_edge"])["HINDSIGHT_TOKENS"].startswith("${HINDSIGHT_TOKENS:?")
    assert container_env(config["services"]["mcp_edge"])["HINDSIGHT_TOKENS"] == FILLED["HINDSIGHT_TOKENS"]
    for name, service in layer_services(config).items():
        env = container_env(service)
        assert env.get("HINDSIGHT_AUTH", "required") == "required", name
        listens = {env[key] for key in ("HINDSIGHT_HOST", "HINDSIGHT_MCP_HOST") if key in env}
        if listens - LOOPBACK:  # reachable from the network: must not run without its credentials
            raw_env = container_env(raw[name])
            needed = ["HINDSIGHT_INTERNAL_TOKEN", *(["HINDSIGHT_TOKENS"] if name == "mcp_edge" else [])]
            for key in needed:
                assert raw_env[key].startswith(f"${{{key}:?"), (name, key, raw_env[key])


def test_a_copied_env_file_is_never_committed() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=COMPOSE_FILE.parent)
    assert ignored.returncode == 0


def test_every_layer_serves_metrics_on_the_network_and_the_prometheus_config_scrapes_each(
    config: dict[str, Any],
) -> None:
    scrape = yaml.safe_load((COMPOSE_FILE.parent / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (job,) = scrape["scrape_configs"]
    targets = {target for group in job["static_configs"] for target in group["targets"]}
    ports = set()
    for name, service in layer_services(config).items():
        port = container_env(service)["HINDSIGHT_METRICS_PORT"]
        ports.add(port)
        assert service["labels"]["prometheus.io/scrape"] == "true", name
        assert service["labels"]["prometheus.io/port"] == port, name
        assert f"{name}:{port}" in targets, name
        assert not any(str(p).endswith(f":{port}") for p in service.get("ports", [])), (
            "metrics stay unpublished"
        )
    assert len(ports) == 1
    assert len(targets) == len(layer_services(config))


def test_store_images_can_be_swapped_by_variable_and_default_to_the_registry_tags(
    config: dict[str, Any],
) -> None:
    raw = raw_compose()["services"]
    for variable, store in IMAGE_VARIABLES.items():
        default = config["services"][store]["image"]
        assert raw[store]["image"] == f"${{{variable}:-{default}}}", store
        local = compose(FILLED | {variable: f"localhost/hindsight-{store}:1.0-bookworm"})
        assert local["services"][store]["image"] == f"localhost/hindsight-{store}:1.0-bookworm"


def test_semantic_uses_the_qdrant_server_by_default_and_its_own_engine_on_a_volume_when_the_url_is_empty(
    config: dict[str, Any],
) -> None:
    semantic = config["services"]["semantic"]
    assert container_env(semantic)["QDRANT_URL"] == "http://qdrant:6333"
    embedded = compose(FILLED | {"QDRANT_URL": ""})["services"]["semantic"]
    env = container_env(embedded)
    assert env["QDRANT_URL"] == ""
    (volume,) = embedded["volumes"]
    name, _, mount = volume.partition(":")
    assert name in config["volumes"] and env["HINDSIGHT_QDRANT_PATH"].startswith(mount + "/")
    assert embedded["depends_on"]["qdrant"]["required"] is False
