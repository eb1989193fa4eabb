"""The InferenceService servicer: checks requests, converts protobuf to and from the engine's types."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.inference.engine import InferenceEngine, Purpose
from hindsight.runtime.errors import FailedPrecondition, HindsightError, InvalidArgument
from hindsight.runtime.interceptors import stream_bank_check
from hindsight.runtime.logs import bank_var, request_id_var
from hindsight.runtime.offload import off_loop
from hindsight.runtime.replies import reply_from
from hindsight.runtime.vectors import PACKED_DTYPES, pack_vectors

log = logging.getLogger(__name__)

STREAM_IN_FLIGHT = 256
"""Requests of one EmbedStream answered at once; the stream is not read further until one is answered."""

STREAM_ANSWERS_PER_MESSAGE = 64
"""Most answers sent in one stream message (each carries a vector of a few KB)."""

UNPACKED_OFF_LOOP_VECTORS = 128
"""Vectors from which a reply of repeated floats (~15 us a 512-d vector) is built on a worker thread;
packed replies are one copy and always built here."""

_PURPOSES = {
    inference_pb2.EMBED_PURPOSE_UNSPECIFIED: Purpose.NONE,
    inference_pb2.EMBED_PURPOSE_QUERY: Purpose.QUERY,
    inference_pb2.EMBED_PURPOSE_PASSAGE: Purpose.PASSAGE,
}


class InferenceServicer(inference_pb2_grpc.InferenceServiceServicer):
    """Thin edge over :class:`InferenceEngine`."""

    def __init__(
        self,
        engine: InferenceEngine,
        max_texts: int,
        max_documents: int = 256,
        stream_in_flight: int = STREAM_IN_FLIGHT,
    ) -> None:
        self.engine = engine
        self.max_texts = max_texts
        self.max_documents = max_documents
        self.stream_in_flight = stream_in_flight

    async def Embed(
        self, request: inference_pb2.EmbedRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.EmbedResponse:
        """Vectors for the texts in order; any text (empty, blank, emoji, very long) gets a vector."""
        return await self._embed(request)

    async def EmbedStream(
        self, requests: AsyncIterator[inference_pb2.EmbedStreamRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[inference_pb2.EmbedStreamResponse]:
        """Answers each request of the stream as soon as its vectors are ready; a refused one in-band.

        Answers that are ready together (a model run finishes many requests at once) leave in one message.
        """
        check_bank = stream_bank_check.get()
        if check_bank is None:  # fail closed: a server without the guard would check no bank
            raise FailedPrecondition("EmbedStream needs the service interceptor, which checks each bank")
        answers: asyncio.Queue[inference_pb2.EmbedStreamAnswer | None] = asyncio.Queue()
        slots = asyncio.Semaphore(self.stream_in_flight)
        answering: set[asyncio.Task[None]] = set()

        async def answer(item: inference_pb2.EmbedStreamItem) -> None:
            bank_var.set(item.request.bank_id)
            if item.request_id:
                request_id_var.set(item.request_id)
            try:
                check_bank(item.request.bank_id)
                reply = await self._embed(item.request)
                answers.put_nowait(inference_pb2.EmbedStreamAnswer(id=item.id, reply=reply))
            except HindsightError as exc:
                answers.put_nowait(_refusal(item.id, exc.code, str(exc)))
            except Exception:
                log.exception("embedding a stream request failed", extra={"stream_item": item.id})
                answers.put_nowait(_refusal(item.id, grpc.StatusCode.INTERNAL, "internal error"))
            finally:
                slots.release()

        async def read() -> None:
            try:
                async for message in requests:
                    for item in message.items:
                        await slots.acquire()
                        task = asyncio.create_task(answer(item))  # a copy of this context: its own bank
                        answering.add(task)
                        task.add_done_callback(answering.discard)
                if answering:
                    await asyncio.gather(*list(answering))
            finally:
                answers.put_nowait(None)  # the caller closed its side (or the read failed): no more answers

        reader = asyncio.create_task(read())
        try:
            ended = False
            while not ended:
                first = await answers.get()
                if first is None:
                    break
                ready = [first]
                while not answers.empty() and len(ready) < STREAM_ANSWERS_PER_MESSAGE:
                    more = answers.get_nowait()
                    if more is None:
                        ended = True
                        break
                    ready.append(more)
                yield inference_pb2.EmbedStreamResponse(answers=ready)
            await reader  # a failed read ends the stream with its status
        finally:
            reader.cancel()
            for task in list(answering):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _embed(self, request: inference_pb2.EmbedRequest) -> inference_pb2.EmbedResponse:
        texts = list(request.texts)
        if len(texts) > self.max_texts:
            raise InvalidArgument("texts", f"at most {self.max_texts} texts per request, got {len(texts)}")
        if request.purpose not in _PURPOSES:
            raise InvalidArgument("purpose", f"unknown purpose {request.purpose}")
        packed = request.encoding != inference_pb2.VECTOR_ENCODING_UNSPECIFIED
        if packed and request.encoding not in PACKED_DTYPES:
            raise InvalidArgument("encoding", f"unknown vector encoding {request.encoding}")
        result = await self.engine.embed(texts, request.model, _PURPOSES[request.purpose])
        reply = inference_pb2.EmbedResponse(
            model=result.model, dimension=result.dimension, truncated_indices=result.truncated
        )
        if packed:
            reply.vectors = pack_vectors(result.vectors, request.encoding)
            reply.encoding = request.encoding
        else:

            def fill() -> None:
                for row in result.vectors:
                    reply.embeddings.add(values=row.tolist())

            await off_loop(fill, size=len(texts), threshold=UNPACKED_OFF_LOOP_VECTORS)
        return reply

    async def ModelInfo(
        self, request: inference_pb2.ModelInfoRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.ModelInfoResponse:
        """Name, dimension, token limit and file hash of the named (or default) model."""
        return reply_from(inference_pb2.ModelInfoResponse, self.engine.describe(request.model))

    async def Rerank(
        self, request: inference_pb2.RerankRequest, context: grpc.aio.ServicerContext
    ) -> inference_pb2.RerankResponse:
        """One score per document, in the documents' order."""
        documents = list(request.documents)
        if len(documents) > self.max_documents:
            raise InvalidArgument(
                "documents", f"at most {self.max_documents} documents per request, got {len(documents)}"
            )
        result = await self.engine.rerank(request.query, documents, request.model)
        return inference_pb2.RerankResponse(
            scores=result.scores.tolist(), model=result.model, truncated_indices=result.truncated
        )


def _refusal(item_id: int, code: grpc.StatusCode, message: str) -> inference_pb2.EmbedStreamAnswer:
    """A stream answer that carries the status a unary Embed would have ended with."""
    error = inference_pb2.EmbedStreamError(code=code.value[0], message=message)
    return inference_pb2.EmbedStreamAnswer(id=item_id, error=error)
