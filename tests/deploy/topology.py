"""Who calls whom, read from the code: the addresses each layer's settings read. The compose file and the
network policies must allow at least these calls."""

from __future__ import annotations

import dataclasses
import importlib

from hindsight.cli.layers import LAYERS

COMPONENT = {layer.name: layer.name.replace("_", "-") for layer in LAYERS}
"""Layer name to its Kubernetes component label (``mcp_edge`` -> ``mcp-edge``)."""


def addresses_read_by(layer: str) -> set[str]:
    """The layers whose address (``HINDSIGHT_<LAYER>_ADDR``) a layer's settings read: the ones it calls."""
    module = importlib.import_module(f"hindsight.{layer}.settings")
    by_env = {other.address_env: COMPONENT[other.name] for other in LAYERS if other.address_env}
    return {
        by_env[field.metadata["env"]]
        for cls in vars(module).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
        for field in dataclasses.fields(cls)
        if field.metadata.get("env") in by_env
    }
