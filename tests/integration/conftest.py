"""Fixtures shared by integration tests that need another layer running."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from hindsight.episodic.service import open_service as open_episodic
from hindsight.episodic.settings import EpisodicSettings
from hindsight.runtime.testing import serving
from tests.integration.mesh import drop_schemas


@pytest.fixture(scope="module")
async def episodic_addr(database_url: str) -> AsyncIterator[str]:
    """One real episodic service per test module, in a schema of its own; tests use banks of their own."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = EpisodicSettings(database_url=database_url, schema=schema, pool_min_size=1, pool_max_size=4)
    async with serving(lambda: open_episodic(settings)) as server:
        yield f"127.0.0.1:{server.port}"
    await drop_schemas(database_url, schema)
