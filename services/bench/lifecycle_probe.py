"""How ``hindsight bench lifecycle`` reads a mesh: every surface a user or an operator can read.

The gRPC ``MemoryService`` (as the agent, and as the operator for the review queue, the debug listing and
the audit log), the layer ports with the mesh credential (outbox status, semantic review items, lessons,
working memory windows), the console's JSON API, and ``hindsight export``; each bank's surfaces as
lower-case text, so that a check for an invented word is a substring test.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import grpc
import httpx2
from google.protobuf import json_format
from google.protobuf.message import Message

from hindsight.bench.lifecycle_model import BankModel
from hindsight.bench.lifecycle_tally import NOT_QUIESCENT, Tally, Violation
from hindsight.contracts.episodic.v1 import episodic_pb2, episodic_pb2_grpc
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2, reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2, semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2, working_pb2_grpc

if TYPE_CHECKING:
    from hindsight.bench.lifecycle_steps import Example, MeshHandle

CALL_TIMEOUT = 60.0
LAYERS = (
    memory_pb2.LAYER_WORKING,
    memory_pb2.LAYER_EPISODIC,
    memory_pb2.LAYER_SEMANTIC,
    memory_pb2.LAYER_REFLECT,
)
CONSOLE_VIEWS = ("timeline", "episodes", "facts", "entities", "lessons", "reviews")
MEANING_TOP_K = 10
RESTART_TIMEOUT = 120.0


def _text(message: Message) -> str:
    return json_format.MessageToJson(message, preserving_proto_field_name=True).lower()


class Probe:
    """Reads the mesh as users and operators can (the invariants are checked by a subclass)."""

    def __init__(self, mesh: MeshHandle, tally: Tally, settle_timeout: float) -> None:
        self.mesh, self.tally, self.settle_timeout = mesh, tally, settle_timeout
        self.agent_metadata = (("authorization", f"Bearer {mesh.agent}"),)
        self.admin_metadata = (
            ("authorization", f"Bearer {mesh.admin}"),
            ("x-hindsight-admin-token", mesh.admin),
        )
        self.mesh_metadata = (("authorization", f"Bearer {mesh.internal}"),)
        self._channels: list[grpc.aio.Channel] = []
        self.entity_count = 0
        """Entities ``ListEntities`` listed for the bank whose surfaces were read last."""
        self.review_count = 0
        """Open semantic review items of that bank."""

    async def open(self) -> None:
        def channel(layer: str) -> grpc.aio.Channel:
            opened = grpc.aio.insecure_channel(self.mesh.addresses[layer])
            self._channels.append(opened)
            return opened

        self.memory = memory_pb2_grpc.MemoryServiceStub(channel("mcp_edge"))
        self.episodic = episodic_pb2_grpc.EpisodicServiceStub(channel("episodic"))
        self.semantic = semantic_pb2_grpc.SemanticServiceStub(channel("semantic"))
        self.reflect = reflect_pb2_grpc.ReflectServiceStub(channel("reflect"))
        self.working = working_pb2_grpc.WorkingMemoryServiceStub(channel("working"))
        self.http = httpx2.AsyncClient(
            headers={"authorization": f"Bearer {self.mesh.admin}"}, timeout=CALL_TIMEOUT
        )

    async def close(self) -> None:
        await self.http.aclose()
        for channel in self._channels:
            await channel.close()

    # ----- plumbing ---------------------------------------------------------------------------------
    async def layer_call(self, stub: Any, method: str, request: Message) -> Any:
        """A direct call to a layer port with the mesh credential (the admin token where that is refused)."""
        try:
            return await getattr(stub, method)(request, metadata=self.mesh_metadata, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
                raise
        return await getattr(stub, method)(request, metadata=self.admin_metadata, timeout=CALL_TIMEOUT)

    async def console_read(self, bank: str, view: str) -> str:
        reply = await self.http.get(f"{self.mesh.console}/banks/{bank}/{view}")
        return reply.text.lower() if reply.status_code == 200 else ""

    async def console_write(self, bank: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        from hindsight.bench.lifecycle_steps import StepError

        reply = await self.http.post(f"{self.mesh.console}/banks/{bank}/{action}", json=body)
        if reply.status_code != 200:
            raise StepError(f"console {action}: HTTP {reply.status_code} {reply.text[:300]}")
        return dict(reply.json())

    async def cli(self, *arguments: str) -> str:
        """``hindsight`` run in this process (in a thread: it runs its own event loop); its output."""
        from hindsight.bench.lifecycle_steps import StepError
        from hindsight.cli.main import main

        def call() -> tuple[int, str]:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    main([*arguments, "--home", str(self.mesh.home)])
                except SystemExit as done:
                    return int(done.code or 0), out.getvalue()
            return 0, out.getvalue()

        code, output = await asyncio.to_thread(call)
        if code != 0:
            raise StepError(f"hindsight {arguments[0]} exited {code}: {output[-400:]}")
        return output

    async def review_items(self, bank: str) -> list[str]:
        reply = await self.layer_call(
            self.semantic, "ListReviews", semantic_pb2.ListReviewsRequest(bank_id=bank)
        )
        # by the candidate's text (its invented words), not the id, so that a seed picks the same item again
        return [item.id for item in sorted(reply.items, key=lambda item: (item.candidate.text, item.id))]

    async def until_serving(self) -> None:
        """After a restart: until the edge answers for every layer (bounded)."""
        deadline = time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                reply = await self.memory.Recall(
                    memory_pb2.RecallRequest(bank_id="lifecycle-probe", query="probe"),
                    metadata=self.agent_metadata,
                    timeout=10,
                )
                if not reply.partial:
                    await self.layer_call(
                        self.episodic,
                        "OutboxStatus",
                        episodic_pb2.OutboxStatusRequest(bank_id="lifecycle-probe"),
                    )
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(0.2)

    async def settle(self, example: Example) -> bool:
        """Wait (bounded) until the outbox holds nothing; report when it did not drain."""
        deadline = time.monotonic() + self.settle_timeout
        pending: dict[str, int] = {}
        while time.monotonic() < deadline:
            pending = {}
            for bank in example.banks:
                reply = await self.layer_call(
                    self.episodic, "OutboxStatus", episodic_pb2.OutboxStatusRequest(bank_id=bank)
                )
                pending |= {f"{bank}/{target}": count for target, count in reply.pending.items() if count}
            if not pending:
                return True
            await asyncio.sleep(0.1)
        self.report(
            example, NOT_QUIESCENT, "outbox", f"still waiting after {self.settle_timeout:.0f}s: {pending}"
        )
        return False

    def report(self, example: Example, invariant: str, subject: str, detail: str) -> None:
        self.tally.add(Violation(invariant, subject, detail), example.log)

    # ----- surfaces ---------------------------------------------------------------------------------
    async def surfaces(self, bank: BankModel, with_export: bool) -> dict[str, str]:
        """Everything a user or operator can read of one bank, as lower-case text, by surface."""
        found: dict[str, str] = {}
        found["listing"] = await self._debug_list(bank.bank)
        queue = await self.memory.ListQuarantine(
            memory_pb2.ListQuarantineRequest(bank_id=bank.bank, status="all", limit=100),
            metadata=self.admin_metadata,
            timeout=CALL_TIMEOUT,
        )
        found["review_queue"] = _text(queue)
        found["entities"] = await self._entities(bank.bank)
        names = sorted({t.name for t in bank.turns.values() if t.name})
        pages = []
        for name in names:
            with contextlib.suppress(grpc.aio.AioRpcError):
                pages.append(
                    _text(
                        await self.memory.GetEntityPage(
                            memory_pb2.GetEntityPageRequest(bank_id=bank.bank, entity=name, mention_limit=50),
                            metadata=self.agent_metadata,
                            timeout=CALL_TIMEOUT,
                        )
                    )
                )
        found["entity_pages"] = "\n".join(pages)
        reviews = await self.layer_call(
            self.semantic, "ListReviews", semantic_pb2.ListReviewsRequest(bank_id=bank.bank, limit=100)
        )
        self.review_count = len(reviews.items)
        found["semantic_reviews"] = _text(reviews)
        lessons = await self.layer_call(
            self.reflect, "ListLessons", reflect_pb2.ListLessonsRequest(bank_id=bank.bank, page_size=100)
        )
        found["lessons"] = _text(lessons)
        windows = []
        for session in sorted({t.session for t in bank.turns.values()}):
            window = await self.layer_call(
                self.working, "GetWindow", working_pb2.GetWindowRequest(bank_id=bank.bank, session_id=session)
            )
            windows.append(_text(window))
        found["working"] = "\n".join(windows)
        for view in CONSOLE_VIEWS:
            found[f"console_{view}"] = await self.console_read(bank.bank, view)
        if with_export:
            found["export"] = (await self.export_text(bank.bank)).lower()
        return found

    async def _debug_list(self, bank: str) -> str:
        parts, token = [], ""
        while True:
            reply = await self.memory.DebugList(
                memory_pb2.DebugListRequest(bank_id=bank, limit=100, page_token=token),
                metadata=self.admin_metadata,
                timeout=CALL_TIMEOUT,
            )
            parts.append(_text(reply))
            token = reply.next_page_token
            if not token:
                return "\n".join(parts)

    async def _entities(self, bank: str) -> str:
        parts, token = [], ""
        self.entity_count = 0
        while True:
            reply = await self.memory.ListEntities(
                memory_pb2.ListEntitiesRequest(bank_id=bank, limit=100, page_token=token),
                metadata=self.agent_metadata,
                timeout=CALL_TIMEOUT,
            )
            parts.append(_text(reply))
            self.entity_count += len(reply.entities)
            token = reply.next_page_token
            if not token:
                return "\n".join(parts)

    async def export_text(self, bank: str) -> str:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="hindsight-lifecycle-") as tmp:
            path = Path(tmp) / "export.jsonl"
            await self.cli("export", bank, "--out", str(path))
            return path.read_text(encoding="utf-8")

    async def _listed(self, bank: str, archived: bool) -> list[str]:
        ids: list[str] = []
        token = ""
        while True:
            reply = await self.memory.ListRecent(
                memory_pb2.ListRecentRequest(
                    bank_id=bank, limit=100, include_archived=archived, page_token=token
                ),
                metadata=self.agent_metadata,
                timeout=CALL_TIMEOUT,
            )
            ids.extend(turn.id for turn in reply.turns)
            token = reply.next_page_token
            if not token:
                return ids

    async def _recall(
        self, bank: str, query: str, layers: Iterable[memory_pb2.Layer] = ()
    ) -> memory_pb2.RecallResponse:
        return await self.memory.Recall(
            memory_pb2.RecallRequest(bank_id=bank, query=query, top_k=MEANING_TOP_K, layers=list(layers)),
            metadata=self.agent_metadata,
            timeout=CALL_TIMEOUT,
        )

    async def audit_count(self, banks: Iterable[str]) -> int:
        """Audit entries of ``banks`` (every page)."""
        total = 0
        for bank in banks:
            token = ""
            while True:
                reply = await self.memory.ListAudit(
                    memory_pb2.ListAuditRequest(bank_id=bank, limit=100, page_token=token),
                    metadata=self.admin_metadata,
                    timeout=CALL_TIMEOUT,
                )
                total += len(reply.entries)
                token = reply.next_page_token
                if not token:
                    break
        return total
