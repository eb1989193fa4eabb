"""The inference service process: load and warm the models, then serve InferenceService."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import grpc
from google.protobuf.internal import api_implementation

from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.inference.engine import open_engine
from hindsight.inference.servicer import InferenceServicer
from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.main import run_service
from hindsight.runtime.server import ServiceSpec

SERVICE_NAME = "hindsight.inference.v1.InferenceService"

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def open_service(settings: InferenceSettings) -> AsyncIterator[ServiceSpec]:
    """Models are loaded, hashed and warmed up before the server starts, so readiness means warm."""
    if api_implementation.Type() == "python":
        log.warning(
            "protobuf runs in pure Python: every Embed reply of repeated floats costs ~20x more to encode; "
            "unset PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
            extra={"protobuf": api_implementation.Type()},
        )
    async with open_engine(settings) as engine:
        servicer = InferenceServicer(engine, settings.max_texts, settings.max_documents)

        def register(server: grpc.aio.Server) -> None:
            inference_pb2_grpc.add_InferenceServiceServicer_to_server(servicer, server)

        async def ready() -> bool:
            return engine.ready()

        yield ServiceSpec(SERVICE_NAME, register, ready)


def main() -> None:
    """Entry point of the inference service process."""
    run_service("inference", InferenceSettings, open_service)


if __name__ == "__main__":
    main()
