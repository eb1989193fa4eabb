"""The six services the ``hindsight`` command knows: package, gRPC service name, and address variable."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.runtime.home import EDGE


@dataclass(frozen=True)
class Layer:
    """One service of the mesh."""

    name: str
    """Package under ``hindsight.`` and the argument of ``hindsight serve``."""
    service: str
    """Fully qualified gRPC service name; its health status is the service's readiness."""
    address_env: str
    """Variable through which the other services find this one ("" when none calls it)."""


LAYERS: tuple[Layer, ...] = (
    Layer("inference", "hindsight.inference.v1.InferenceService", "HINDSIGHT_INFERENCE_ADDR"),
    Layer("working", "hindsight.working.v1.WorkingMemoryService", "HINDSIGHT_WORKING_ADDR"),
    Layer("episodic", "hindsight.episodic.v1.EpisodicService", "HINDSIGHT_EPISODIC_ADDR"),
    Layer("semantic", "hindsight.semantic.v1.SemanticService", "HINDSIGHT_SEMANTIC_ADDR"),
    Layer("reflect", "hindsight.reflect.v1.ReflectService", "HINDSIGHT_REFLECT_ADDR"),
    Layer(EDGE, "hindsight.memory.v1.MemoryService", ""),
)
BY_NAME: dict[str, Layer] = {layer.name: layer for layer in LAYERS}
