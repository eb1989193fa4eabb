"""The memory engine behind both fronts (MCP and gRPC): retain, recall, write_episode, reflect, forget.

Retain writes episodic memory first (the system of record; if it fails, the retain fails and nothing
else is written), whose outbox indexes the turns in the semantic layer, then working memory. Recall asks
the layers in parallel under one deadline (all but those whose list would weigh nothing: see
:meth:`MemoryEngine.unweighed`); a layer that fails or is late makes the answer partial, never an error.

:class:`MemoryEngine` is assembled from one mixin per family of operations (see
:mod:`~hindsight.mcp_edge.engine_base`): writes (:mod:`.engine_writes`), reads (:mod:`.engine_reads`), the
review queue (:mod:`.engine_review`), recall (:mod:`.engine_recall`), forgetting (:mod:`.engine_forget`),
and episodes, reflection and sessions (:mod:`.engine_sessions`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from hindsight.contracts.episodic.v1 import episodic_pb2_grpc
from hindsight.contracts.inference.v1 import inference_pb2_grpc
from hindsight.contracts.reflect.v1 import reflect_pb2_grpc
from hindsight.contracts.semantic.v1 import semantic_pb2_grpc
from hindsight.contracts.working.v1 import working_pb2_grpc
from hindsight.mcp_edge.engine_base import LayerClients
from hindsight.mcp_edge.engine_forget import Forgetting
from hindsight.mcp_edge.engine_recall import Recalling
from hindsight.mcp_edge.engine_review import Review
from hindsight.mcp_edge.engine_sessions import Sessions
from hindsight.mcp_edge.engine_writes import Writes
from hindsight.mcp_edge.meaning import SHARE, MeaningProbe
from hindsight.mcp_edge.rerank import HeadReranker
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.llm import LLMSettings, llm_from_settings
from hindsight.runtime.settings import load


class MemoryEngine(Recalling, Writes, Review, Forgetting, Sessions):
    """Retain, recall, reflect and forget across the layers, scoped to one bank per call."""


@contextlib.asynccontextmanager
async def open_engine(
    settings: EdgeSettings, llm_settings: LLMSettings | None = None
) -> AsyncIterator[MemoryEngine]:
    """Open channels to every layer (and the LLM client, when one is configured); close them on exit."""
    token = settings.internal_token
    clients = LayerClients(
        working=LayerClient(settings.working_addr, working_pb2_grpc.WorkingMemoryServiceStub, token=token),
        episodic=LayerClient(settings.episodic_addr, episodic_pb2_grpc.EpisodicServiceStub, token=token),
        semantic=LayerClient(settings.semantic_addr, semantic_pb2_grpc.SemanticServiceStub, token=token),
        reflect=LayerClient(settings.reflect_addr, reflect_pb2_grpc.ReflectServiceStub, token=token),
    )
    inference = None
    if settings.inference_addr and (settings.rerank_head > 0 or settings.meaning_texts > 0):
        inference = LayerClient(settings.inference_addr, inference_pb2_grpc.InferenceServiceStub, token=token)
    reranker = None
    if inference is not None and settings.rerank_head > 0:
        reranker = HeadReranker(inference, settings.rerank_head, settings.reranker, settings.rerank_blend)
    meaning = None
    if inference is not None and settings.meaning_texts > 0:
        meaning = MeaningProbe(
            inference, settings.meaning_texts, settings.meaning_model, settings.recall_timeout * SHARE
        )
    llm = llm_from_settings(llm_settings or load(LLMSettings)) if settings.llm_rewrite else None
    engine = MemoryEngine(clients, settings, reranker, llm, meaning)
    try:
        yield engine
    finally:
        await engine.tokens.close()
        await engine.drain()
        await clients.close()
        if llm is not None:
            await llm.close()
        if inference is not None:  # the reranker's and the meaning probe's channel
            await inference.close()
