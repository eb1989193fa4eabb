"""The kustomize overlays render, every manifest is valid against the Kubernetes schemas, and the rendered
fleet keeps the promises of docs/deployment.md: probes, hardening, credentials, sizing, scaling, disruption
budgets and a network where only the edge is reachable and each layer reaches only its store and the layers
it calls."""

from __future__ import annotations

import functools
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils as kv_utils
import pytest
import yaml

from hindsight.cli.layers import LAYERS
from hindsight.cli.main import build_parser
from hindsight.reflect.settings import ReflectSettings
from hindsight.runtime.settings import load
from tests.deploy.kustomize import (
    CLUSTER_SCOPED,
    Manifest,
    MissingGeneratorInput,
    build,
    pod_spec,
    secret_values,
)
from tests.deploy.sizing import HEADROOM, MEASURED_PEAK_RSS_MIB, mebibytes
from tests.deploy.topology import COMPONENT, addresses_read_by

K8S = Path(__file__).resolve().parents[2] / "k8s"
OVERLAYS = ("dev", "prod", "fleet")
PRODUCTION = ("prod", "fleet")
"""Overlays that run the mesh as prod does (the fleet example is prod plus agents)."""
METRICS_PORT = 9090
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")  # oldest supported (gRPC probes: GA in 1.27) and newest
STORE_OF = {"working": "redis", "episodic": "postgres", "reflect": "postgres", "semantic": "qdrant"}
STORE_PORTS = {"redis": {6379}, "postgres": {5432}, "qdrant": {6333, 6334}}
CALLS = {  # who calls whom over gRPC (DESIGN.md): the only layer-to-layer traffic allowed
    "mcp-edge": {"working", "episodic", "semantic", "reflect", "inference"},
    "semantic": {"inference"},
    "reflect": {"episodic", "inference", "semantic"},  # semantic: maintenance moves cold records
    "episodic": {"semantic", "working", "reflect", "inference"},  # its outbox, and segmentation's embeddings
    "maintain": {"reflect"},  # the maintenance CronJob
}
SECRET_KEYS = {"DATABASE_URL", "REDIS_URL", "QDRANT_URL", "HINDSIGHT_TOKENS", "HINDSIGHT_INTERNAL_TOKEN"}


DEV_TOKENS = {
    "HINDSIGHT_TOKENS": f"{secrets.token_urlsafe(32)}=dev",
    "HINDSIGHT_INTERNAL_TOKEN": secrets.token_urlsafe(32),
}
"""What a developer generates into k8s/overlays/dev/tokens.env (never committed) before applying dev."""

FLEET_TEAMS = {"team-1": ("agent-01", "agent-03"), "team-2": ("agent-02", "agent-04")}
FLEET_TOKENS = {
    f"{team}.env": {agent: f"hst_{secrets.token_urlsafe(32)}" for agent in agents}
    for team, agents in FLEET_TEAMS.items()
}
"""What the operator mints (``hindsight token create --json``) into k8s/overlays/fleet/<team>.env."""


def render(
    overlay: str,
    dev_tokens: dict[str, str] | None = DEV_TOKENS,
    fleet_tokens: dict[str, dict[str, str]] | None = FLEET_TOKENS,
) -> list[Manifest]:
    """The overlay built from a copy of k8s/ with ``dev_tokens`` as the dev tokens file and ``fleet_tokens``
    as the fleet's team files (None: no file); where kubectl exists, the Python renderer's output must
    equal ``kubectl kustomize``."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "k8s"
        shutil.copytree(K8S, tree)
        tokens_file = tree / "overlays" / "dev" / "tokens.env"
        tokens_file.unlink(missing_ok=True)
        if dev_tokens is not None:
            tokens_file.write_text("".join(f"{key}={value}\n" for key, value in dev_tokens.items()))
        for team_file in (tree / "overlays" / "fleet").glob("*.env"):
            team_file.unlink()
        for name, values in (fleet_tokens or {}).items():
            text = "".join(f"{key}={value}\n" for key, value in values.items())
            (tree / "overlays" / "fleet" / name).write_text(text)
        manifests = build(tree / "overlays" / overlay)
        if kubectl := shutil.which("kubectl"):
            out = subprocess.run(
                [kubectl, "kustomize", str(tree / "overlays" / overlay)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            reference = {(m["kind"], m["metadata"]["name"]): m for m in yaml.safe_load_all(out) if m}
            assert {(m["kind"], m["metadata"]["name"]): m for m in manifests} == reference
    return manifests


@functools.cache
def rendered(overlay: str) -> tuple[Manifest, ...]:
    """The overlay as a developer (dev, with generated tokens) or the operator (prod) applies it."""
    return tuple(render(overlay))


def of_kind(overlay: str, kind: str) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in rendered(overlay) if m["kind"] == kind}


def mesh_deployments(overlay: str) -> dict[str, Manifest]:
    """The mesh's own Deployments (not the fleet example's agents)."""
    return {
        name: deployment
        for name, deployment in of_kind(overlay, "Deployment").items()
        if deployment["metadata"]["labels"].get("app.kubernetes.io/part-of") == "hindsight"
    }


def labels_of(peer: dict[str, Any]) -> dict[str, str]:
    selector: dict[str, str] = peer.get("podSelector", {}).get("matchLabels", {})
    return selector


def component_of(peer: dict[str, Any]) -> str:
    return labels_of(peer).get("app.kubernetes.io/component", "")


@pytest.fixture(scope="module", autouse=True)
def schemas_read_once() -> Iterator[None]:
    """kubernetes-validate re-reads its (large) definitions file for every manifest; read each once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kubernetes_validate.utils, "schema_contents", functools.cache(kv_utils.schema_contents))
        yield


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_manifest_is_valid_against_the_kubernetes_schemas(overlay: str, version: str) -> None:
    for manifest in rendered(overlay):
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{manifest['kind']}/{manifest['metadata']['name']}: {exc.message} at {list(exc.path)}"
            )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_layer_has_a_deployment_and_a_service_with_grpc_probes_on_its_service_name(overlay: str) -> None:
    deployments, services = of_kind(overlay, "Deployment"), of_kind(overlay, "Service")
    for layer in LAYERS:
        name = f"hindsight-{COMPONENT[layer.name]}"
        container = pod_spec(deployments[name])["containers"][0]
        assert container["args"] == ["serve", layer.name]
        assert container["readinessProbe"]["grpc"] == {"port": 50051, "service": layer.service}
        assert container["livenessProbe"]["grpc"] == {"port": 50051, "service": ""}
        assert container["startupProbe"]["grpc"]["service"] == ""
        startup = container["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] > 60, "must outlast the store wait"
        assert services[name]["spec"]["ports"][0] == {
            "name": "grpc",
            "port": 50051,
            "targetPort": "grpc",
            "appProtocol": "grpc",
        }
        # Internal layers are headless so callers spread calls over every replica; the edge has one address.
        headless = services[name]["spec"].get("clusterIP") == "None"
        assert headless is (layer.name != "mcp_edge"), name
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+", container["image"]), container["image"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_pod_is_hardened(overlay: str) -> None:
    workloads = [m for m in rendered(overlay) if m["kind"] in ("Deployment", "StatefulSet", "CronJob")]
    assert workloads
    for workload in workloads:
        spec = pod_spec(workload)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] > 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        assert spec["enableServiceLinks"] is False
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["capabilities"] == {"drop": ["ALL"]}
            assert container["resources"]["requests"] and container["resources"]["limits"]
            if workload["kind"] in ("Deployment", "CronJob"):
                assert security["readOnlyRootFilesystem"] is True
    for namespace in of_kind(overlay, "Namespace").values():
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_memory_requests_cover_the_measured_peak_and_limits_leave_headroom(overlay: str) -> None:
    deployments = of_kind(overlay, "Deployment")
    for layer, peak in MEASURED_PEAK_RSS_MIB.items():
        resources = pod_spec(deployments[f"hindsight-{COMPONENT[layer]}"])["containers"][0]["resources"]
        assert mebibytes(resources["requests"]["memory"]) >= peak, layer
        assert mebibytes(resources["limits"]["memory"]) >= HEADROOM * peak, layer


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_edge_and_inference_autoscale_and_every_layer_has_a_disruption_budget(overlay: str) -> None:
    autoscalers = of_kind(overlay, "HorizontalPodAutoscaler")
    scaled = {hpa["spec"]["scaleTargetRef"]["name"] for hpa in autoscalers.values()}
    assert scaled == {"hindsight-mcp-edge", "hindsight-inference"}
    for hpa in autoscalers.values():
        assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"] >= 1
        target = of_kind(overlay, "Deployment")[hpa["spec"]["scaleTargetRef"]["name"]]
        assert "replicas" not in target["spec"], "the autoscaler owns the replica count"
    budgets = of_kind(overlay, "PodDisruptionBudget")
    for layer in LAYERS:
        budget = budgets[f"hindsight-{COMPONENT[layer.name]}"]
        assert (
            budget["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == COMPONENT[layer.name]
        )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_edge_is_reachable_and_each_layer_reaches_only_its_store_and_its_callees(
    overlay: str,
) -> None:
    policies = of_kind(overlay, "NetworkPolicy")
    deny = policies["hindsight-default-deny"]["spec"]
    assert deny["podSelector"] == {} and set(deny["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny and "egress" not in deny
    for name, policy in policies.items():
        spec = policy["spec"]
        for rule in spec.get("egress", []):
            if "to" not in rule:  # open destination: only name resolution
                assert {p["port"] for p in rule["ports"]} == {53}, name
        for rule in spec.get("ingress", []):
            if "from" not in rule:
                assert component_of({"podSelector": spec["podSelector"]}) == "mcp-edge", name
    for layer in LAYERS:
        component = COMPONENT[layer.name]
        spec = policies[f"hindsight-{component}"]["spec"]
        callers = {c for c, callees in CALLS.items() if layer.name in callees or component in callees}
        if component == "mcp-edge":
            assert all("from" not in rule for rule in spec["ingress"])
        else:
            sources = {component_of(peer) for rule in spec["ingress"] for peer in rule["from"]}
            assert sources == callers, component
        reached: set[str] = set()
        for rule in spec.get("egress", []):
            ports = {p["port"] for p in rule["ports"]}
            for peer in rule["to"]:
                if "ipBlock" in peer:  # prod: the managed store's address block, on the store's ports
                    assert overlay in PRODUCTION
                    assert ports == STORE_PORTS[STORE_OF[layer.name]], component
                    reached.add(STORE_OF[layer.name])
                else:
                    target = component_of(peer)
                    assert ports == (STORE_PORTS.get(target) or {50051}), component
                    reached.add(target)
        expected = set(CALLS.get(component, set())) | (
            {STORE_OF[layer.name]} if layer.name in STORE_OF else set()
        )
        assert reached == expected, component


def test_dev_runs_single_replica_stores_that_only_their_layer_can_reach() -> None:
    stateful = of_kind("dev", "StatefulSet")
    assert set(stateful) == {"hindsight-postgres", "hindsight-redis", "hindsight-qdrant"}
    assert all(s["spec"]["replicas"] == 1 and s["spec"]["volumeClaimTemplates"] for s in stateful.values())
    policies = of_kind("dev", "NetworkPolicy")
    for store in ("postgres", "redis", "qdrant"):
        owners = {layer for layer, owned in STORE_OF.items() if owned == store}
        ingress = policies[f"hindsight-{store}"]["spec"]["ingress"]
        assert {component_of(peer) for rule in ingress for peer in rule["from"]} == owners
    secret = secret_values(of_kind("dev", "Secret")["hindsight-secrets"])
    assert set(secret) >= SECRET_KEYS
    assert {key: secret[key] for key in DEV_TOKENS} == DEV_TOKENS, "the tokens come from tokens.env alone"


def test_prod_points_at_external_managed_stores_and_commits_no_secret() -> None:
    assert not of_kind("prod", "StatefulSet")
    assert not of_kind("prod", "Secret"), "the operator creates hindsight-secrets"
    services = of_kind("prod", "Service")
    for store in ("postgres", "redis", "qdrant"):
        assert services[f"hindsight-{store}"]["spec"]["type"] == "ExternalName"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_layer_is_given_only_its_own_store_url(overlay: str) -> None:
    deployments = of_kind(overlay, "Deployment")
    store_keys = {
        "postgres": {"DATABASE_URL"},
        "redis": {"REDIS_URL"},
        "qdrant": {"QDRANT_URL", "QDRANT_API_KEY"},
    }
    all_store_keys = set().union(*store_keys.values())
    for layer in LAYERS:
        container = pod_spec(deployments[f"hindsight-{COMPONENT[layer.name]}"])["containers"][0]
        keys = {e["name"] for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})}
        own = store_keys[STORE_OF[layer.name]] if layer.name in STORE_OF else set()
        assert keys & all_store_keys == own, layer.name
        assert "HINDSIGHT_INTERNAL_TOKEN" in keys, layer.name
        assert ("HINDSIGHT_TOKENS" in keys) is (layer.name == "mcp_edge"), "agent tokens go to the edge alone"
        assert container["envFrom"] == [{"configMapRef": {"name": "hindsight-config"}}]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_shared_config_names_every_layer_address_and_holds_no_secret(overlay: str) -> None:
    data = of_kind(overlay, "ConfigMap")["hindsight-config"]["data"]
    for layer in LAYERS:
        if layer.address_env:
            assert data[layer.address_env] == f"hindsight-{COMPONENT[layer.name]}:50051"
    assert not set(data) & (SECRET_KEYS | {"LLM_API_KEY", "QDRANT_API_KEY", "POSTGRES_PASSWORD"})
    assert all(m["metadata"].get("namespace") for m in rendered(overlay) if m["kind"] not in CLUSTER_SCOPED)


def test_the_allowed_calls_include_every_address_a_layer_reads_from_its_settings() -> None:
    for layer in LAYERS:
        assert addresses_read_by(layer.name) <= CALLS.get(COMPONENT[layer.name], set()), layer.name


def _secret_refs(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_layer_reads_the_internal_token_from_the_same_secret_key_and_cannot_start_without_it(
    overlay: str,
) -> None:
    deployments = of_kind(overlay, "Deployment")
    for layer in LAYERS:
        container = pod_spec(deployments[f"hindsight-{COMPONENT[layer.name]}"])["containers"][0]
        refs = _secret_refs(container)
        required = {"HINDSIGHT_INTERNAL_TOKEN"} | (
            {"HINDSIGHT_TOKENS"} if layer.name == "mcp_edge" else set()
        )
        for variable in required:
            assert refs[variable] == {"name": "hindsight-secrets", "key": variable}, (
                layer.name,
                refs[variable],
            )
        plain = {e["name"]: e.get("value") for e in container["env"] if "value" in e}
        assert "HINDSIGHT_AUTH" not in plain or plain["HINDSIGHT_AUTH"] == "required", layer.name
        assert not {"HINDSIGHT_TOKENS", "HINDSIGHT_INTERNAL_TOKEN"} & set(plain), (
            "tokens only from the Secret"
        )
        assert not {"HINDSIGHT_AUTH", "HINDSIGHT_TOKENS"} & set(
            of_kind(overlay, "ConfigMap")["hindsight-config"]["data"]
        )


def test_the_dev_overlay_does_not_build_without_the_generated_tokens_file_and_commits_no_token() -> None:
    with pytest.raises(MissingGeneratorInput, match=r"tokens\.env"):
        render("dev", dev_tokens=None)
    if kubectl := shutil.which("kubectl"):
        with tempfile.TemporaryDirectory() as scratch:
            shutil.copytree(K8S, Path(scratch) / "k8s")
            (Path(scratch) / "k8s" / "overlays" / "dev" / "tokens.env").unlink(missing_ok=True)
            done = subprocess.run(
                [kubectl, "kustomize", str(Path(scratch) / "k8s" / "overlays" / "dev")],
                capture_output=True,
                text=True,
            )
        assert done.returncode != 0 and "tokens.env" in done.stderr, done.stderr
    ignored = subprocess.run(["git", "check-ignore", "-q", "k8s/overlays/dev/tokens.env"], cwd=K8S.parent)
    assert ignored.returncode == 0, "a generated tokens.env must never be committed"
    kustomization = yaml.safe_load((K8S / "overlays" / "dev" / "kustomization.yaml").read_text())
    (generator,) = kustomization["secretGenerator"]
    assert generator["envs"] == ["tokens.env"]
    assert not {literal.partition("=")[0] for literal in generator["literals"]} & set(DEV_TOKENS)
    assert not [m for m in rendered("dev") if m["kind"] == "Secret" and "stringData" in m], (
        "no committed Secret"
    )
    other = render("dev", dev_tokens={"HINDSIGHT_TOKENS": "a=dev", "HINDSIGHT_INTERNAL_TOKEN": "b"})
    (secret,) = [m for m in other if m["kind"] == "Secret"]
    assert secret_values(secret)["HINDSIGHT_INTERNAL_TOKEN"] == "b"


def _replicas(overlay: str, deployment: Manifest) -> int:
    """What a Deployment runs at least: its replicas, or its autoscaler's minimum."""
    scalers = [
        hpa
        for hpa in of_kind(overlay, "HorizontalPodAutoscaler").values()
        if hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    ]
    return int(scalers[0]["spec"]["minReplicas"]) if scalers else int(deployment["spec"]["replicas"])


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_deployment_has_a_budget_that_lets_a_drain_through_and_prod_keeps_a_replica_serving(
    overlay: str,
) -> None:
    budgets = of_kind(overlay, "PodDisruptionBudget")
    for name, deployment in mesh_deployments(overlay).items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        (budget,) = [b for b in budgets.values() if _selects(b["spec"]["selector"], labels)]
        assert "minAvailable" not in budget["spec"], name
        allowed = budget["spec"]["maxUnavailable"]
        assert allowed >= 1, f"{name}: a budget of 0 blocks every drain"
        replicas = _replicas(overlay, deployment)
        if overlay in PRODUCTION:  # one evicted at a time, another still serving
            assert replicas >= 2 and replicas - allowed >= 1, (name, replicas, allowed)
        else:
            assert replicas == 1, name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_layer_spreads_its_replicas_over_nodes_then_zones(overlay: str) -> None:
    for name, deployment in mesh_deployments(overlay).items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        constraints = {c["topologyKey"]: c for c in pod_spec(deployment)["topologySpreadConstraints"]}
        assert set(constraints) == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}, name
        assert constraints["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule", name
        for constraint in constraints.values():
            assert constraint["maxSkew"] == 1
            assert constraint["labelSelector"]["matchLabels"] == {
                key: labels[key] for key in ("app.kubernetes.io/name", "app.kubernetes.io/component")
            }, name
            assert constraint["matchLabelKeys"] == ["pod-template-hash"], name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_maintenance_is_one_cronjob_running_a_valid_maintain_command_and_reflect_schedules_none(
    overlay: str,
) -> None:
    (cronjob,) = of_kind(overlay, "CronJob").values()
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert len(cronjob["spec"]["schedule"].split()) == 5
    spec = pod_spec(cronjob)
    assert spec["restartPolicy"] in ("Never", "OnFailure")
    (container,) = spec["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "maintain"
    assert args.run.__name__ == "_maintain"
    host, _, port = args.address.partition(":")
    service = of_kind(overlay, "Service")[host]
    assert int(port) in {p["port"] for p in service["spec"]["ports"]}
    assert _secret_refs(container)["HINDSIGHT_INTERNAL_TOKEN"] == {
        "name": "hindsight-secrets",
        "key": "HINDSIGHT_INTERNAL_TOKEN",
    }
    reflect = pod_spec(of_kind(overlay, "Deployment")["hindsight-reflect"])["containers"][0]
    plain = {e["name"]: e["value"] for e in reflect["env"] if "value" in e}
    assert load(ReflectSettings, environ=plain).maintain_interval_seconds == 0
    labels = cronjob["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    policy = of_kind(overlay, "NetworkPolicy")["hindsight-maintain"]["spec"]
    assert _selects(policy["podSelector"], labels)
    reached = {component_of(peer) for rule in policy["egress"] for peer in rule["to"]}
    assert reached == {"reflect"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_layer_serves_metrics_on_a_named_port_its_service_and_annotations_name(overlay: str) -> None:
    assert of_kind(overlay, "ConfigMap")["hindsight-config"]["data"]["HINDSIGHT_METRICS_PORT"] == str(
        METRICS_PORT
    )
    deployments, services = of_kind(overlay, "Deployment"), of_kind(overlay, "Service")
    for layer in LAYERS:
        name = f"hindsight-{COMPONENT[layer.name]}"
        template = deployments[name]["spec"]["template"]
        container = template["spec"]["containers"][0]
        assert {"name": "metrics", "containerPort": METRICS_PORT} in container["ports"], name
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(METRICS_PORT)
        assert annotations["prometheus.io/path"] == "/metrics"
        assert {"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "appProtocol": "http"} in (
            services[name]["spec"]["ports"]
        ), name
    policy = of_kind(overlay, "NetworkPolicy")["hindsight-metrics"]["spec"]
    (rule,) = policy["ingress"]
    assert [p["port"] for p in rule["ports"]] == [METRICS_PORT]
    assert all("namespaceSelector" in peer for peer in rule["from"]), "only the monitoring namespace"


def test_prod_publishes_mcp_through_an_ingress_with_tls_for_the_edges_public_url() -> None:
    (ingress,) = of_kind("prod", "Ingress").values()
    spec = ingress["spec"]
    covered = {host for tls in spec["tls"] for host in tls["hosts"]}
    assert all(tls["secretName"] for tls in spec["tls"])
    edge_service = of_kind("prod", "Service")["hindsight-mcp-edge"]
    port_names = {p["name"] for p in edge_service["spec"]["ports"]}
    for rule in spec["rules"]:
        assert rule["host"] in covered, "every host is served over TLS"
        for path in rule["http"]["paths"]:
            backend = path["backend"]["service"]
            assert backend["name"] == "hindsight-mcp-edge" and backend["port"]["name"] in port_names
    edge = pod_spec(of_kind("prod", "Deployment")["hindsight-mcp-edge"])["containers"][0]
    plain = {e["name"]: e.get("value") for e in edge["env"]}
    (host,) = covered
    assert plain["HINDSIGHT_MCP_PUBLIC_URL"] == f"https://{host}/mcp"
    assert any(p["path"] == "/mcp" for rule in spec["rules"] for p in rule["http"]["paths"])


def test_the_monitoring_overlay_adds_a_service_monitor_that_scrapes_every_layers_metrics_port() -> None:
    manifests = render("monitoring")
    (monitor,) = [m for m in manifests if m["kind"] == "ServiceMonitor"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    selector = monitor["spec"]["selector"]
    (expression,) = selector["matchExpressions"]
    scraped = {
        m["metadata"]["name"]
        for m in manifests
        if m["kind"] == "Service"
        and _selects(selector, m["metadata"]["labels"])
        and m["metadata"]["labels"].get("app.kubernetes.io/component") in expression["values"]
    }
    assert scraped == {f"hindsight-{COMPONENT[layer.name]}" for layer in LAYERS}
    others = [m for m in manifests if m["kind"] != "ServiceMonitor"]
    assert {(m["kind"], m["metadata"]["name"]) for m in others} == {
        (m["kind"], m["metadata"]["name"]) for m in rendered("prod")
    }


def _agents() -> dict[str, Manifest]:
    return {
        name: deployment
        for name, deployment in of_kind("fleet", "Deployment").items()
        if deployment["metadata"]["labels"].get("app.kubernetes.io/name") == "fleet-agent"
    }


def test_the_fleet_overlay_is_prod_unchanged_plus_agents_their_team_secrets_and_their_policy() -> None:
    prod = {(m["kind"], m["metadata"]["name"]): m for m in rendered("prod")}
    fleet = {(m["kind"], m["metadata"]["name"]): m for m in rendered("fleet")}
    assert {key: fleet[key] for key in prod} == prod, "the mesh runs exactly as prod"
    added = set(fleet) - set(prod)
    agents = {f"fleet-{agent}" for members in FLEET_TEAMS.values() for agent in members}
    assert added == (
        {("Deployment", name) for name in agents}
        | {("Secret", f"hindsight-fleet-{team}") for team in FLEET_TEAMS}
        | {("NetworkPolicy", "fleet-agents")}
    )


def test_each_agent_reads_only_its_own_token_from_its_teams_secret_and_is_told_its_banks() -> None:
    secrets_by_name = of_kind("fleet", "Secret")
    agents = _agents()
    assert len(agents) == sum(len(members) for members in FLEET_TEAMS.values())
    for team, members in FLEET_TEAMS.items():
        values = secret_values(secrets_by_name[f"hindsight-fleet-{team}"])
        assert values == FLEET_TOKENS[f"{team}.env"], (
            "a team's Secret holds its agents' tokens, from its file"
        )
        for agent in members:
            deployment = agents[f"fleet-{agent}"]
            assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == team
            (container,) = pod_spec(deployment)["containers"]
            assert _secret_refs(container) == {
                "HINDSIGHT_TOKEN": {"name": f"hindsight-fleet-{team}", "key": agent}
            }, "its own key only: never a teammate's token, the mesh's or the operator's"
            plain = {e["name"]: e["value"] for e in container["env"] if "value" in e}
            assert plain["HINDSIGHT_BANK"] == agent and plain["HINDSIGHT_TEAM_BANK"] == team
            host = plain["HINDSIGHT_ADDRESS"].partition(":")[0]
            assert host == "hindsight-mcp-edge" and plain["HINDSIGHT_MCP_URL"].startswith(
                "http://hindsight-mcp-edge:8765/"
            )
            assert "envFrom" not in container, "no shared config or Secret wholesale"


def test_agents_reach_only_the_edge_and_nothing_reaches_them() -> None:
    policy = of_kind("fleet", "NetworkPolicy")["fleet-agents"]["spec"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"} and policy["ingress"] == []
    (rule,) = policy["egress"]
    assert [component_of(peer) for peer in rule["to"]] == ["mcp-edge"]
    edge = of_kind("fleet", "Service")["hindsight-mcp-edge"]
    edge_ports = {p["port"] for p in edge["spec"]["ports"] if p["name"] in {"grpc", "mcp-http"}}
    assert {p["port"] for p in rule["ports"]} == edge_ports
    for deployment in _agents().values():
        assert _selects(policy["podSelector"], deployment["spec"]["template"]["metadata"]["labels"])


def test_the_fleet_overlay_does_not_build_without_the_team_files_and_they_are_never_committed() -> None:
    with pytest.raises(MissingGeneratorInput, match=r"team-\d\.env"):
        render("fleet", fleet_tokens=None)
    for team in FLEET_TEAMS:
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", f"k8s/overlays/fleet/{team}.env"], cwd=K8S.parent
        )
        assert ignored.returncode == 0, "a team's tokens file must never be committed"
