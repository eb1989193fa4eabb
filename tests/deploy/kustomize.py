"""A small renderer for the subset of kustomize that k8s/ uses, so CI builds the overlays with Python alone.

No kustomize binary installs from PyPI; ``kubectl kustomize`` gives the same output where kubectl exists,
and the tests compare the two when it does. Any kustomization field outside the subset is an error, so a
manifest change that needs more than this cannot pass unnoticed.

Subset: ``resources`` (files and directories), ``namespace``, ``labels`` (``pairs``, metadata only),
``images``, ``patches`` (inline JSON 6902 operations, target by kind and a regular-expression name), and
``secretGenerator`` (``envs`` files and ``literals``) with ``generatorOptions`` that keep the plain name
(``disableNameSuffixHash: true``) and add labels. A missing ``envs`` file fails the build, as it does for
kustomize.
"""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

KNOWN_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "namespace",
    "labels",
    "images",
    "patches",
    "secretGenerator",
    "generatorOptions",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass"}
_POD_OWNERS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet", "CronJob"}


class UnsupportedKustomization(ValueError):
    """The kustomization uses a field this renderer does not implement."""


class MissingGeneratorInput(FileNotFoundError):
    """A generator names a file that does not exist: kustomize refuses to build, and so does this."""


def _load_yaml_documents(path: Path) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def build(directory: Path) -> list[Manifest]:
    """The manifests of the kustomization in ``directory``, as ``kustomize build`` would emit them."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise UnsupportedKustomization(f"{directory}: unsupported kustomization fields {sorted(unknown)}")
    manifests: list[Manifest] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        manifests.extend(build(path) if path.is_dir() else _load_yaml_documents(path))
    options = kustomization.get("generatorOptions", {})
    for generator in kustomization.get("secretGenerator", []):
        manifests.append(_generate_secret(generator, options, directory))
    for label_set in kustomization.get("labels", []):
        if set(label_set) - {"pairs"}:
            raise UnsupportedKustomization(f"{directory}: labels support only 'pairs'")
        for manifest in manifests:
            manifest.setdefault("metadata", {}).setdefault("labels", {}).update(label_set["pairs"])
    for patch in kustomization.get("patches", []):
        _apply_patch(manifests, patch, directory)
    for image in kustomization.get("images", []):
        _set_image(manifests, image)
    if namespace := kustomization.get("namespace"):
        for manifest in manifests:
            if manifest["kind"] not in CLUSTER_SCOPED:
                manifest["metadata"]["namespace"] = namespace
    return manifests


def _read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, as kustomize reads a generator's ``envs`` file (blank lines and ``#`` comments)."""
    if not path.is_file():
        raise MissingGeneratorInput(f"{path}: the secretGenerator's envs file does not exist")
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, separator, value = stripped.partition("=")
        if not separator:
            raise ValueError(f"{path}: {key!r} is not KEY=VALUE")
        values[key] = value
    return values


def _generate_secret(generator: dict[str, Any], options: dict[str, Any], directory: Path) -> Manifest:
    if set(generator) - {"name", "envs", "literals"}:
        raise UnsupportedKustomization(f"{directory}: secretGenerator supports name, envs and literals")
    if set(options) - {"disableNameSuffixHash", "labels"} or options.get("disableNameSuffixHash") is not True:
        raise UnsupportedKustomization(
            f"{directory}: generatorOptions must set disableNameSuffixHash: true (labels allowed)"
        )
    values: dict[str, str] = {}
    for env_file in generator.get("envs", []):
        values.update(_read_env_file(directory / env_file))
    for literal in generator.get("literals", []):
        key, _, value = literal.partition("=")
        values[key] = value
    metadata: dict[str, Any] = {"name": generator["name"]}
    if labels := options.get("labels"):
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": {key: _encode(value) for key, value in sorted(values.items())},
    }


def _encode(value: str) -> str:
    """Base64 as kustomize writes it: one line up to 70 characters, else 70-character lines, each ended."""
    encoded = base64.b64encode(value.encode()).decode()
    if len(encoded) <= 70:
        return encoded
    return "".join(encoded[i : i + 70] + "\n" for i in range(0, len(encoded), 70))


def secret_values(manifest: Manifest) -> dict[str, str]:
    """A Secret's values, from ``data`` (base64) and ``stringData``."""
    values = {key: base64.b64decode(value).decode() for key, value in manifest.get("data", {}).items()}
    values.update(manifest.get("stringData", {}))
    return values


def _matches(manifest: Manifest, target: dict[str, str]) -> bool:
    if set(target) - {"kind", "name"}:
        raise UnsupportedKustomization(f"patch target supports kind and name only: {target}")
    if "kind" in target and manifest["kind"] != target["kind"]:
        return False
    return "name" not in target or re.fullmatch(target["name"], manifest["metadata"]["name"]) is not None


def _apply_patch(manifests: list[Manifest], patch: dict[str, Any], directory: Path) -> None:
    if set(patch) != {"target", "patch"}:
        raise UnsupportedKustomization(f"{directory}: patches need an inline JSON 6902 patch and a target")
    operations = yaml.safe_load(patch["patch"])
    if not isinstance(operations, list):
        raise UnsupportedKustomization(f"{directory}: only JSON 6902 patches (a list of operations)")
    targets = [m for m in manifests if _matches(m, patch["target"])]
    if not targets:
        raise ValueError(f"{directory}: patch target {patch['target']} matches nothing")
    for manifest in targets:
        for operation in operations:
            _apply_operation(manifest, operation)


def _apply_operation(document: Manifest, operation: dict[str, Any]) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in operation["path"].lstrip("/").split("/")]
    parent: Any = document
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last, op = parts[-1], operation["op"]
    value = copy.deepcopy(operation.get("value"))
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if op == "add":
            parent.insert(index, value)
        elif op == "replace":
            parent[index] = value
        elif op == "remove":
            del parent[index]
        else:
            raise UnsupportedKustomization(f"JSON 6902 op {op!r}")
        return
    if op in ("add", "replace"):
        if op == "replace" and last not in parent:
            raise ValueError(f"replace of missing path {operation['path']}")
        parent[last] = value
    elif op == "remove":
        del parent[last]
    else:
        raise UnsupportedKustomization(f"JSON 6902 op {op!r}")


def _set_image(manifests: list[Manifest], image: dict[str, str]) -> None:
    if set(image) - {"name", "newName", "newTag", "digest"}:
        raise UnsupportedKustomization(f"images entry {image}")
    for manifest in manifests:
        if manifest["kind"] not in _POD_OWNERS:
            continue
        for container in pod_spec(manifest).get("containers", []):
            name, _, tag = container["image"].partition(":")
            if name != image["name"]:
                continue
            name = image.get("newName", name)
            if "digest" in image:
                container["image"] = f"{name}@{image['digest']}"
            else:
                container["image"] = (
                    f"{name}:{image.get('newTag', tag)}" if image.get("newTag", tag) else name
                )


def pod_spec(manifest: Manifest) -> dict[str, Any]:
    """The pod spec of a workload (a CronJob's is inside its job template)."""
    workload = manifest["spec"]["jobTemplate"] if manifest["kind"] == "CronJob" else manifest
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec
