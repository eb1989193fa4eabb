"""The RPCs of ``hindsight export`` and ``hindsight import`` on the episodic layer (mesh and admin only, as
every method of a layer's port): whole rows in, whole rows out (:mod:`.export_rows`)."""

from __future__ import annotations

from typing import Any

import grpc

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.episodic.export_rows import EpisodicExport, ExportedEpisode, ExportedTurn, held_from_pb
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.interceptors import caller_var
from hindsight.runtime.validation import check_count, check_limit

DEFAULT_EXPORT_PAGE = 500
MAX_EXPORT_PAGE = 1000
MAX_IMPORT_RECORDS = 1000


class ExportServicer:
    """Mixed into the episodic servicer, which holds the memory (``_memory``) whose store it reads."""

    _memory: Any
    _whole_rows: EpisodicExport | None = None

    def _export(self, method: str) -> EpisodicExport:
        """Whole-row access to the store; operators only, as it writes statistics and times as given."""
        caller_var.get().require_all_banks(method)
        if self._whole_rows is None:
            from hindsight.episodic.store import PostgresEpisodicStore

            store = self._memory.store
            if not isinstance(store, PostgresEpisodicStore):
                raise FailedPrecondition(f"{method} needs the PostgreSQL store")
            self._whole_rows = EpisodicExport(store)
        return self._whole_rows

    async def ExportTurns(
        self, request: episodic_pb2.ExportTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ExportTurnsResponse:
        size = check_limit(request.page_size, "page_size", DEFAULT_EXPORT_PAGE, MAX_EXPORT_PAGE)
        turns, following = await self._export("ExportTurns").turns(request.bank_id, size, request.page_token)
        return episodic_pb2.ExportTurnsResponse(
            turns=[turn.to_pb() for turn in turns], next_page_token=following
        )

    async def ImportTurns(
        self, request: episodic_pb2.ImportTurnsRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ImportTurnsResponse:
        export = self._export("ImportTurns")
        check_count(request.turns, "turns", MAX_IMPORT_RECORDS, "records")
        turns = [ExportedTurn.from_pb(turn, f"turns[{i}]") for i, turn in enumerate(request.turns)]
        if request.archive_only:
            done = await export.archive_imported(request.bank_id, turns)
        else:
            done = await export.import_turns(request.bank_id, turns)
        return episodic_pb2.ImportTurnsResponse(imported_count=done.imported, duplicate_count=done.duplicates)

    async def ExportEpisodes(
        self, request: episodic_pb2.ExportEpisodesRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ExportEpisodesResponse:
        size = check_limit(request.page_size, "page_size", DEFAULT_EXPORT_PAGE, MAX_EXPORT_PAGE)
        export = self._export("ExportEpisodes")
        episodes, following = await export.episodes(request.bank_id, size, request.page_token)
        return episodic_pb2.ExportEpisodesResponse(
            episodes=[episode.to_pb() for episode in episodes], next_page_token=following
        )

    async def ImportEpisodes(
        self, request: episodic_pb2.ImportEpisodesRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ImportEpisodesResponse:
        export = self._export("ImportEpisodes")
        check_count(request.episodes, "episodes", MAX_IMPORT_RECORDS, "records")
        episodes = [ExportedEpisode.from_pb(e, f"episodes[{i}]") for i, e in enumerate(request.episodes)]
        done = await export.import_episodes(request.bank_id, episodes)
        return episodic_pb2.ImportEpisodesResponse(
            imported_count=done.imported, duplicate_count=done.duplicates
        )

    async def ImportQuarantined(
        self, request: episodic_pb2.ImportQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> episodic_pb2.ImportQuarantinedResponse:
        export = self._export("ImportQuarantined")
        check_count(request.items, "items", MAX_IMPORT_RECORDS, "records")
        items = [held_from_pb(item, f"items[{i}]") for i, item in enumerate(request.items)]
        done = await export.import_held(request.bank_id, items)
        return episodic_pb2.ImportQuarantinedResponse(
            imported_count=done.imported, duplicate_count=done.duplicates
        )
