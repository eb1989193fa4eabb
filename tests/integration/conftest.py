"""Fixtures shared by integration tests that need another layer running."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.episodic.store import PostgresEpisodicStore
from hindsight.inference.service import open_service as open_inference
from hindsight.inference.settings import InferenceSettings
from hindsight.mcp_edge.engine import MemoryEngine, open_engine
from hindsight.runtime.testing import serving
from tests.integration.mesh import LayerAddresses, MeshCredentials, drop_schemas, layer_mesh
from tests.integration.tiny_bench_data import write_tiny_data


@pytest.fixture(scope="module")
async def episodic_addr(database_url: str) -> AsyncIterator[str]:
    """One real episodic service per test module, in a schema of its own; tests use banks of their own."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = EpisodicSettings(database_url=database_url, schema=schema, pool_min_size=1, pool_max_size=4)
    async with serving(lambda: open_episodic(settings)) as server:
        yield f"127.0.0.1:{server.port}"
    await drop_schemas(database_url, schema)


@pytest.fixture(scope="module")
async def inference_addr() -> AsyncIterator[str]:
    """One real inference service per test module: loading the model is the slow part."""
    async with serving(lambda: open_inference(InferenceSettings())) as server:
        yield f"127.0.0.1:{server.port}"


@pytest.fixture
async def episodic_settings(database_url: str, unique_name: str) -> AsyncIterator[EpisodicSettings]:
    """Episodic settings with a schema of the test's own, dropped afterwards."""
    yield EpisodicSettings(database_url=database_url, schema=unique_name, pool_min_size=1, pool_max_size=4)
    await drop_schemas(database_url, unique_name)


@pytest.fixture
async def episodic_store(episodic_settings: EpisodicSettings) -> AsyncIterator[PostgresEpisodicStore]:
    """An open (migrated) episodic store on the test's schema."""
    store = await PostgresEpisodicStore.open(episodic_settings)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(scope="module")
async def mesh_layers(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LayerAddresses]:
    """Every layer served in-process for one test module (see :func:`tests.integration.mesh.layer_mesh`)."""
    async with layer_mesh(database_url, redis_url, tmp_path_factory.mktemp("qdrant")) as addresses:
        yield addresses


@pytest.fixture(scope="module")
async def closed_mesh(
    request: pytest.FixtureRequest,
    database_url: str,
    redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[LayerAddresses]:
    """Every layer served for one test module and closed as deployed ones are, with the module's
    ``CREDENTIALS`` (a :class:`~tests.integration.mesh.MeshCredentials`)."""
    credentials: MeshCredentials = request.module.CREDENTIALS
    qdrant = tmp_path_factory.mktemp("qdrant")
    async with layer_mesh(database_url, redis_url, qdrant, credentials=credentials) as addresses:
        yield addresses


@pytest.fixture(scope="module")
async def engine(mesh_layers: LayerAddresses) -> AsyncIterator[MemoryEngine]:
    """An edge engine with default settings on the module's mesh (a module that needs other settings
    defines its own ``engine``)."""
    async with open_engine(mesh_layers.edge_settings()) as opened:
        yield opened


@pytest.fixture
def tiny_data_file(tmp_path: Path) -> Path:
    """The tiny benchmark file of :mod:`tests.integration.tiny_bench_data`, in the test's folder."""
    return write_tiny_data(tmp_path)
