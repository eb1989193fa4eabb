"""Property-based fuzzing of a real in-process edge over a real mesh (the generators of ``bench fuzz``).

Every MCP tool's arguments (through the official MCP SDK client over streamable HTTP), every MemoryService
message (built from its descriptor and sent as bytes on a raw channel), random bytes on the gRPC wire and
malformed JSON-RPC bodies: no crash, no hang, no internal error or HTTP 5xx, and a refused request leaves
the bank as it was. ``HINDSIGHT_FUZZ_EXAMPLES`` sets the cases per family (small for CI).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hindsight.bench.fuzz import FAMILIES, Outcome, Tally, Target, run_family
from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.http import serving_mcp_http
from hindsight.mcp_edge.service import memory_service_spec
from hindsight.runtime.auth import Grants
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.server import ServiceSpec
from hindsight.runtime.testing import serving
from tests.integration.mesh import layer_mesh

EXAMPLES = int(os.environ.get("HINDSIGHT_FUZZ_EXAMPLES", "15"))
ADMIN = "fuzz-admin"


@pytest.fixture(scope="module")
def target(database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The edge (gRPC and MCP HTTP) over every layer, served on the fuzzing clients' own event loop."""
    qdrant: Path = tmp_path_factory.mktemp("fuzz-qdrant")

    @contextlib.asynccontextmanager
    async def serve() -> AsyncIterator[tuple[str, str]]:
        async with layer_mesh(database_url, redis_url, qdrant) as layers:
            settings = layers.edge_settings(admin_token=ADMIN, mcp_port=free_ports(1)[0])
            async with (
                open_engine(settings) as engine,
                serving_mcp_http(engine, settings, Grants.off()) as url,
            ):

                @contextlib.asynccontextmanager
                async def spec() -> AsyncIterator[ServiceSpec]:
                    yield memory_service_spec(engine)

                async with serving(spec) as server:
                    yield f"127.0.0.1:{server.port}", url

    with Target("", "", bank="fuzz-bank", admin_token=ADMIN, serve=serve) as fuzzed:
        yield fuzzed


@pytest.mark.parametrize("family", FAMILIES)
def test_hostile_requests_are_refused_cleanly_and_write_nothing(target: Target, family: str) -> None:
    tally = Tally()
    run_family(target, family, EXAMPLES, tally, strict=True)
    assert tally.cases >= 1
    summary = tally.summary()
    print(f"\n{family}", {key: summary[key] for key in ("cases", "refusals_by_code", "refusal_examples")})
    failures = ("crashes", "hangs", "internal_errors", "partial_writes", "unnamed_refusals")
    assert {key: summary[key] for key in failures} == dict.fromkeys(failures, 0)


def test_the_harness_counts_a_refusal_that_wrote_as_a_partial_write(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-partial-write property can fail: a case answered as refused after a real write is caught."""

    async def writes_then_refuses(family: str, payload: object) -> Outcome:
        written = await target._tool("retain", {"text": "planted by the harness test", "bank": target.bank})
        assert written.kind == "ok", written
        return Outcome(family, "refused", "INVALID_ARGUMENT", "text: planted")

    monkeypatch.setattr(target, "_send", writes_then_refuses)
    outcome = target.run(target.case("tools", None))
    assert outcome.kind == "partial" and outcome.failed
