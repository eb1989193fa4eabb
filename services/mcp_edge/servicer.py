"""gRPC MemoryService: protobuf in and out, the engine does the work."""

from __future__ import annotations

import hmac
import uuid

import grpc

from hindsight.contracts.common.v1 import common_pb2
from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.memory.v1 import memory_pb2, memory_pb2_grpc
from hindsight.mcp_edge.agents import check_agent, stamped, writing_agent
from hindsight.mcp_edge.banks import check_weights
from hindsight.mcp_edge.domain import ALL_LAYERS, LayerName, RecallQuery, RecallResult
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.mcp_edge.share import check_share, share_memories, share_reply
from hindsight.mcp_edge.tokens import administered, create_token, list_tokens, revoke_token
from hindsight.mcp_edge.validity import invalidate
from hindsight.runtime.banks import requested_banks
from hindsight.runtime.errors import InvalidArgument, PermissionDenied
from hindsight.runtime.interceptors import ADMIN_TOKEN_HEADER, caller_var
from hindsight.runtime.records import TimeRange, Turn, from_timestamp, to_timestamp, utcnow
from hindsight.runtime.replies import reply_from
from hindsight.runtime.timeexpr import checked_time_zone
from hindsight.runtime.token_records import grants_from_pb
from hindsight.runtime.validation import check_limit, check_name, check_tags, check_text

DEFAULT_SESSION = "default"
MAX_TOP_K = 100

LAYER_TO_PB = {
    LayerName.WORKING: memory_pb2.LAYER_WORKING,
    LayerName.EPISODIC: memory_pb2.LAYER_EPISODIC,
    LayerName.SEMANTIC: memory_pb2.LAYER_SEMANTIC,
    LayerName.REFLECT: memory_pb2.LAYER_REFLECT,
}
LAYER_FROM_PB = {v: k for k, v in LAYER_TO_PB.items()}
ORDER_FROM_PB = {
    memory_pb2.CONTEXT_ORDER_UNSPECIFIED: "",
    memory_pb2.CONTEXT_ORDER_SCORE: "score",
    memory_pb2.CONTEXT_ORDER_IMPORTANCE: "importance",
    memory_pb2.CONTEXT_ORDER_TIME_ASC: "time_asc",
    memory_pb2.CONTEXT_ORDER_TIME_DESC: "time_desc",
    memory_pb2.CONTEXT_ORDER_MIX: "mix",
}
MAX_TOKEN_BUDGET = 200_000
MAX_LIST = 500
LAYERS_HEADER = "x-hindsight-layers"
"""Trailing metadata of a recall: each layer's status and time (``working=ok:3.1ms,reflect=failed:9ms``)."""


def layer_timings(result: RecallResult) -> str:
    """Each asked layer's status and time, for the response metadata."""
    return ",".join(
        f"{o.layer.value}={'ok' if o.ok else 'failed'}:{o.elapsed_ms:.1f}ms" for o in result.outcomes
    )


DEFAULT_ENTITIES = 50
DEFAULT_MENTIONS = 20


def check_min_score(value: float) -> float:
    """A minimum score between 0 and 1."""
    if not 0.0 <= value <= 1.0:
        raise InvalidArgument("min_score", "must be between 0 and 1")
    return value


def turns_from_request(turns: list[common_pb2.Turn]) -> list[Turn]:
    """Fill what a caller may leave out (id, session, time), then validate each turn naming its index."""
    result = []
    for index, message in enumerate(turns):
        filled = common_pb2.Turn()
        filled.CopyFrom(message)
        if not filled.id:
            filled.id = uuid.uuid4().hex
        if not filled.session_id:
            filled.session_id = DEFAULT_SESSION
        if not filled.meta.HasField("time"):
            filled.meta.time.CopyFrom(to_timestamp(utcnow()))
        result.append(Turn.from_pb(filled, f"turns[{index}]"))
    return result


def recall_query_from_request(request: memory_pb2.RecallRequest) -> RecallQuery:
    """Validate a RecallRequest."""
    layers = []
    for index, value in enumerate(request.layers):
        if value not in LAYER_FROM_PB:
            raise InvalidArgument(f"layers[{index}]", "is not a known layer")
        layers.append(LAYER_FROM_PB[value])
    banks = requested_banks(request.bank_id, request.bank_ids)
    return RecallQuery(
        bank_id=request.bank_id if not request.bank_ids else "",
        bank_ids=banks if request.bank_ids else (),
        bank_weights=check_weights(dict(request.bank_weights), banks),
        group_by_bank=request.group_by_bank,
        agent=check_agent(request.agent),
        query=check_text(request.query, "query", max_chars=10_000),
        top_k=check_limit(request.top_k, "top_k", default=10, maximum=MAX_TOP_K),
        layers=tuple(dict.fromkeys(layers)) or ALL_LAYERS,
        time_range=TimeRange.from_pb(request.time_range if request.HasField("time_range") else None),
        session_id=request.session_id,
        min_score=check_min_score(request.min_score),
        tags=check_tags(list(request.tags)),
        token_budget=check_limit(request.token_budget, "token_budget", default=0, maximum=MAX_TOKEN_BUDGET),
        order=_order(request.order),
        reference_time=(
            from_timestamp(request.reference_time, "reference_time")
            if request.HasField("reference_time")
            else None
        ),
        time_zone=checked_time_zone(request.time_zone),
        as_of=from_timestamp(request.as_of, "as_of") if request.HasField("as_of") else None,
    )


def _order(value: memory_pb2.ContextOrder) -> str:
    if value not in ORDER_FROM_PB:
        raise InvalidArgument("order", "is not a known context order")
    return ORDER_FROM_PB[value]


def recall_response(result: RecallResult) -> memory_pb2.RecallResponse:
    """Convert a RecallResult."""
    return memory_pb2.RecallResponse(
        memories=[
            memory_pb2.Memory(
                id=m.id,
                layer=LAYER_TO_PB[m.layer],
                text=m.text,
                speaker=m.speaker,
                score=m.score,
                meta=m.meta.to_pb(),
                layers=[LAYER_TO_PB[layer] for layer in m.layers],
                kind=m.kind,
                supersedes=list(m.supersedes),
                superseded_by=m.superseded_by,
                flags=[memory_pb2.SecurityFlag(kind=f.kind, reason=f.reason) for f in m.flags],
                valid_from=to_timestamp(m.valid_from),
                valid_to=to_timestamp(m.valid_to),
                outdated=bool(m.outdated),
                outdated_note=m.outdated,
                bank_id=m.bank_id,
            )
            for m in result.memories
        ],
        warnings=[
            memory_pb2.SecurityWarning(
                id=w.id, kind=w.kind, reason=w.reason, excerpt=w.excerpt, time=to_timestamp(w.time)
            )
            for w in result.warnings
        ],
        partial=result.partial,
        layer_reports=[
            memory_pb2.LayerReport(
                layer=LAYER_TO_PB[o.layer],
                ok=o.ok,
                error=o.error,
                elapsed_ms=o.elapsed_ms,
                candidate_count=len(o.candidates),
            )
            for o in result.outcomes
        ],
        context=result.context.text,
        context_ids=list(result.context.ids),
        context_tokens=result.context.tokens,
        analysis=memory_pb2.QueryAnalysis(
            time_expression=result.analysis.time_expression,
            time_range=result.analysis.time_range.to_pb(),
            time_use=result.analysis.time_use,
            entities=list(result.analysis.entities),
            keywords=list(result.analysis.keywords),
            rewrites=list(result.analysis.rewrites),
        ),
        elapsed_ms=result.elapsed_ms,
    )


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    """The public gRPC API; auth and bank checks are done by the shared interceptor."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    async def Retain(
        self, request: memory_pb2.RetainRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.RetainResponse:
        result = await self.engine.retain(
            request.bank_id,
            stamped(caller_var.get(), turns_from_request(list(request.turns))),
            front="grpc",
            actor=caller_var.get().name,
        )
        return memory_pb2.RetainResponse(
            turn_ids=list(result.turn_ids),
            duplicate_count=result.duplicate_count,
            indexed=result.indexed,
            screened=[
                common_pb2.TurnScreening(
                    turn_id=item.turn_id,
                    screening=common_pb2.Screening(kind=item.kind, reason=item.reason, action=item.action),
                )
                for item in result.screened
            ],
        )

    async def Recall(
        self, request: memory_pb2.RecallRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.RecallResponse:
        result = await self.engine.recall(recall_query_from_request(request))
        context.set_trailing_metadata(((LAYERS_HEADER, layer_timings(result)),))
        return recall_response(result)

    async def WriteEpisode(
        self, request: memory_pb2.WriteEpisodeRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.WriteEpisodeResponse:
        episode = episodic_pb2.Episode()
        episode.CopyFrom(request.episode)
        episode.meta.agent = writing_agent(caller_var.get(), episode.meta.agent, "episode.meta.agent")
        stored = await self.engine.write_episode(request.bank_id, episode)
        return memory_pb2.WriteEpisodeResponse(episode=stored)

    async def Reflect(
        self, request: memory_pb2.ReflectRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ReflectResponse:
        reply = await self.engine.reflect(request.bank_id, request.session_id)
        return memory_pb2.ReflectResponse(lessons=reply.lessons, episodes_read=reply.episodes_read)

    async def Forget(
        self, request: memory_pb2.ForgetRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ForgetResponse:
        result = await self.engine.forget(
            request.bank_id,
            list(request.turn_ids),
            hard=request.hard,
            turn_filter=request.filter if request.HasField("filter") else None,
        )
        return reply_from(memory_pb2.ForgetResponse, result)

    async def Invalidate(
        self, request: memory_pb2.InvalidateRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.InvalidateResponse:
        until = from_timestamp(request.valid_to, "valid_to") if request.HasField("valid_to") else None
        result = await invalidate(self.engine, request.bank_id, list(request.ids), request.reason, until)
        return reply_from(memory_pb2.InvalidateResponse, result)

    async def Compress(
        self, request: memory_pb2.CompressRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.CompressResponse:
        reply = await self.engine.compress(request.bank_id, request.session_id)
        return reply_from(memory_pb2.CompressResponse, reply)

    async def CloseSession(
        self, request: memory_pb2.CloseSessionRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.CloseSessionResponse:
        result = await self.engine.close_session(request.bank_id, request.session_id)
        return reply_from(memory_pb2.CloseSessionResponse, result)

    async def ListRecent(
        self, request: memory_pb2.ListRecentRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListRecentResponse:
        reply = await self.engine.list_recent(
            request.bank_id,
            limit=check_limit(request.limit, "limit", default=20, maximum=MAX_LIST),
            session_id=request.session_id,
            tags=check_tags(list(request.tags)),
            include_archived=request.include_archived,
            page_token=request.page_token,
            agent=check_agent(request.agent),
        )
        return memory_pb2.ListRecentResponse(turns=reply.turns, next_page_token=reply.next_page_token)

    async def Update(
        self, request: memory_pb2.UpdateRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.UpdateResponse:
        if request.text:
            check_text(request.text, "text")
        turn, superseded, indexed = await self.engine.update(
            request.bank_id,
            request.turn_id,
            text=request.text,
            meta=request.meta if request.HasField("meta") else None,
            actor=caller_var.get().name,
            agent=writing_agent(caller_var.get(), request.meta.agent, "meta.agent"),
        )
        return memory_pb2.UpdateResponse(turn=turn, superseded_id=superseded, indexed=indexed)

    async def Purge(
        self, request: memory_pb2.PurgeRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.PurgeResponse:
        result = await self.engine.purge(
            request.bank_id, list(request.ids), request.session_id, request.whole_bank
        )
        return reply_from(memory_pb2.PurgeResponse, result)

    async def Share(
        self, request: memory_pb2.ShareRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ShareResponse:
        """The interceptor checked ``read`` on the source bank; ``write`` on the team bank is checked here."""
        caller = caller_var.get()
        target, ids = check_share(
            caller, request.bank_id, request.target_bank_id, list(request.ids), "target_bank_id"
        )
        result = await share_memories(self.engine, request.bank_id, target, ids, caller.name, caller.name)
        return share_reply(result)

    async def DebugList(
        self, request: memory_pb2.DebugListRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.DebugListResponse:
        token = next(
            (
                item.value if isinstance(item.value, str) else item.value.decode()
                for item in context.invocation_metadata() or ()
                if item.key == ADMIN_TOKEN_HEADER
            ),
            None,
        )
        turns, episodes, next_token = await self.engine.debug_list(
            request.bank_id,
            token,
            limit=check_limit(request.limit, "limit", default=100, maximum=MAX_LIST),
            page_token=request.page_token,
        )
        return memory_pb2.DebugListResponse(turns=turns, episodes=episodes, next_page_token=next_token)

    async def ListEntities(
        self, request: memory_pb2.ListEntitiesRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListEntitiesResponse:
        reply = await self.engine.list_entities(
            request.bank_id,
            entity_type=check_name(request.type, "type"),
            prefix=check_name(request.prefix, "prefix"),
            limit=check_limit(request.limit, "limit", default=DEFAULT_ENTITIES, maximum=MAX_LIST),
            page_token=request.page_token,
        )
        return memory_pb2.ListEntitiesResponse(entities=reply.entities, next_page_token=reply.next_page_token)

    async def GetEntityPage(
        self, request: memory_pb2.GetEntityPageRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.GetEntityPageResponse:
        reply = await self.engine.entity_page(
            request.bank_id,
            check_name(request.entity, "entity"),
            mention_limit=check_limit(
                request.mention_limit, "mention_limit", default=DEFAULT_MENTIONS, maximum=MAX_LIST
            ),
            page_token=request.page_token,
        )
        return memory_pb2.GetEntityPageResponse(
            entity=reply.entity,
            facts=reply.facts,
            mentions=reply.mentions,
            next_page_token=reply.next_page_token,
        )

    def _admin(self, context: grpc.aio.ServicerContext, what: str) -> str:
        """The caller's label when it is an operator (an admin credential, or the admin token header as
        the debug listing takes it); PERMISSION_DENIED otherwise."""
        caller = caller_var.get()
        if caller.admin:
            return caller.name
        token = next(
            (
                item.value if isinstance(item.value, str) else item.value.decode()
                for item in context.invocation_metadata() or ()
                if item.key == ADMIN_TOKEN_HEADER
            ),
            None,
        )
        expected = self.engine.settings.admin_token
        if expected and token and hmac.compare_digest(expected, token):
            return "admin"
        raise PermissionDenied(f"{what} needs an admin credential")

    async def ListQuarantine(
        self, request: memory_pb2.ListQuarantineRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListQuarantineResponse:
        self._admin(context, "ListQuarantine")
        reply = await self.engine.list_quarantine(
            request.bank_id,
            status=request.status,
            limit=check_limit(request.limit, "limit", default=50, maximum=MAX_LIST),
            page_token=request.page_token,
        )
        return memory_pb2.ListQuarantineResponse(
            items=reply.items, next_page_token=reply.next_page_token, pending_count=reply.pending_count
        )

    async def ReviewQuarantine(
        self, request: memory_pb2.ReviewQuarantineRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ReviewQuarantineResponse:
        reviewer = self._admin(context, "ReviewQuarantine")
        reply = await self.engine.review_quarantine(
            request.bank_id, list(request.turn_ids), request.decision, reviewer, request.note
        )
        return memory_pb2.ReviewQuarantineResponse(
            approved_count=reply.approved_count,
            rejected_count=reply.rejected_count,
            not_pending_ids=list(reply.not_pending_ids),
        )

    async def ListAudit(
        self, request: memory_pb2.ListAuditRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListAuditResponse:
        self._admin(context, "ListAudit")
        query = episodic_pb2.ListAuditRequest(
            bank_id=request.bank_id,
            action=request.action,
            limit=check_limit(request.limit, "limit", default=100, maximum=MAX_LIST),
            page_token=request.page_token,
        )
        if request.HasField("since"):
            query.since.CopyFrom(request.since)
        reply = await self.engine.list_audit(query)
        return memory_pb2.ListAuditResponse(entries=reply.entries, next_page_token=reply.next_page_token)

    # ----- managed tokens (the handlers check each bank: see hindsight.mcp_edge.tokens) -------------------
    async def CreateToken(
        self, request: memory_pb2.CreateTokenRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.CreateTokenResponse:
        administered(caller_var.get(), "CreateToken")  # refused before the request is even read
        expires = from_timestamp(request.expires_at, "expires_at") if request.HasField("expires_at") else None
        minted = await create_token(
            self.engine,
            caller_var.get(),
            request.name,
            grants_from_pb(request.grants),
            admin=request.admin,
            expires_at=expires,
        )
        return memory_pb2.CreateTokenResponse(token=minted.token.to_pb(), secret=minted.secret)

    async def ListTokens(
        self, request: memory_pb2.ListTokensRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.ListTokensResponse:
        tokens, following = await list_tokens(
            self.engine, caller_var.get(), request.include_revoked, request.page_size, request.page_token
        )
        return memory_pb2.ListTokensResponse(tokens=[t.to_pb() for t in tokens], next_page_token=following)

    async def RevokeToken(
        self, request: memory_pb2.RevokeTokenRequest, context: grpc.aio.ServicerContext
    ) -> memory_pb2.RevokeTokenResponse:
        revoked = await revoke_token(self.engine, caller_var.get(), request.name)
        return memory_pb2.RevokeTokenResponse(revoked_names=revoked)
