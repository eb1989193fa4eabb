"""One ``EmbedStream`` per inference client, shared by every concurrent caller in the process.

A unary call costs grpcio about 0.25 ms of CPU in the service and 0.2 ms in the caller, on top of the
model's ~1 ms per text; a message on an open stream costs about a third of that. Layers that embed one
query or one turn at a time (recall, retain) therefore send small requests as items on one stream and
match answers to callers by id. Requests queued while a message is being written leave together in the
next one; each is still checked and answered on its own, and its texts meet every other caller's in the
service's batches.

The stream opens on first use and again after it breaks (the service restarted). It is also renewed every
``STREAM_MAX_AGE`` seconds: the old one answers what it carries and closes, the new one is placed by the
channel's round-robin policy, so with several inference replicas a client's streams rotate over all of
them instead of pinning its traffic to the first. Embedding has no side effects, so a request caught on
a broken stream is sent once more on a new one while its deadline lasts; after that the caller gets
:class:`Unavailable`, as from a failed unary call. A service without the method (an older release during
a rolling update) is remembered, and callers go back to unary calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from dataclasses import dataclass, field

import grpc

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.runtime.channels import LayerClient, remaining_budget
from hindsight.runtime.errors import (
    HindsightError,
    InvalidArgument,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)
from hindsight.runtime.logs import request_id_var

log = logging.getLogger(__name__)

ITEMS_PER_MESSAGE = 64
"""Most requests sent in one stream message."""

SHARED_STREAM = "embed-stream"
"""The companion name of the shared stream on a client."""

STREAM_MAX_AGE = 30.0
"""Seconds a stream takes new requests before a new one replaces it (spreads load over replicas)."""

_REFUSALS: dict[int, type[HindsightError]] = {
    grpc.StatusCode.PERMISSION_DENIED.value[0]: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED.value[0]: Unauthenticated,
}
"""Statuses that refuse the caller (one item, or the whole stream) rather than say the service is away."""

Answer = asyncio.Future[inference_pb2.EmbedStreamAnswer]


@dataclass
class _Stream:
    """One open stream: what waits to be written, who waits for an answer, the tasks that move them."""

    call: grpc.aio.StreamStreamCall
    opened_at: float
    outbox: deque[inference_pb2.EmbedStreamItem] = field(default_factory=deque)
    wake_writer: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: dict[int, Answer] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    ended: bool = False
    retiring: bool = False
    """Takes no new requests: the writer closes its side once the outbox is sent."""


class EmbedStreamClient:
    """Sends ``EmbedRequest``s as items of one long-lived ``EmbedStream`` on ``client``'s channel."""

    def __init__(
        self,
        client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
        max_age: float = STREAM_MAX_AGE,
    ) -> None:
        self._client = client
        self._max_age = max_age
        self._ids = itertools.count(1)
        self._stream: _Stream | None = None
        self._retired: set[asyncio.Task[None]] = set()
        """Tasks of retired streams still answering what they carry (closed with the client)."""
        self.unsupported = False
        """True once the service answered UNIMPLEMENTED: callers use unary ``Embed`` instead."""

    async def embed(
        self, request: inference_pb2.EmbedRequest, timeout: float | None = None
    ) -> inference_pb2.EmbedResponse:
        """The service's answer to ``request``, within ``timeout`` (default: the client's, capped by the
        incoming request's deadline). A refused request raises what a unary call would have."""
        budget = remaining_budget(timeout if timeout is not None else self._client.default_timeout)
        try:
            async with asyncio.timeout(budget):
                for attempt in (1, 2):
                    if self.unsupported:
                        return await self._client.call("Embed", request, budget)
                    try:
                        answer = await self._send(request)
                        break
                    except Unavailable:  # the stream broke under this request: once more on a new one
                        if attempt == 2:
                            raise
        except TimeoutError as exc:
            raise Unavailable(
                f"{self._client.target}: DEADLINE_EXCEEDED: no answer on the embed stream"
            ) from exc
        if answer.HasField("error"):
            raise _refusal(answer.error, self._client.target)
        return answer.reply

    async def close(self) -> None:
        """End the streams and stop their tasks; callers still waiting get :class:`Unavailable`."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.call.cancel()
            for task in stream.tasks:
                task.cancel()
            await asyncio.gather(*stream.tasks, return_exceptions=True)
            _fail(stream, Unavailable("the embed stream was closed"))
        for task in list(self._retired):
            task.cancel()
        await asyncio.gather(*self._retired, return_exceptions=True)

    async def _send(self, request: inference_pb2.EmbedRequest) -> inference_pb2.EmbedStreamAnswer:
        stream = self._open()
        item_id = next(self._ids)
        answer: Answer = asyncio.get_running_loop().create_future()
        stream.waiting[item_id] = answer
        stream.outbox.append(
            inference_pb2.EmbedStreamItem(id=item_id, request=request, request_id=request_id_var.get())
        )
        stream.wake_writer.set()
        try:
            return await answer
        except _Unimplemented:
            self._note_unsupported()
            raise Unavailable("the inference layer has no EmbedStream") from None
        finally:
            stream.waiting.pop(item_id, None)

    def _open(self) -> _Stream:
        current = self._stream
        if current is not None and not current.ended and time.monotonic() - current.opened_at > self._max_age:
            current.retiring = True  # answers what it carries, then ends; new requests take a new stream
            current.wake_writer.set()
            self._retired.update(current.tasks)
            for task in current.tasks:
                task.add_done_callback(self._retired.discard)
        if current is None or current.ended or current.retiring:
            # No deadline on the stream itself (it outlives every request; each has its caller's) and no
            # request id in its metadata (items carry theirs): only the token. While the service is
            # unreachable the stream waits to connect rather than failing at once: the callers' own
            # deadlines bound that wait, and a restarted service is found as soon as it listens.
            call = self._client.stub.EmbedStream(metadata=self._client.stream_metadata(), wait_for_ready=True)
            stream = _Stream(call, opened_at=time.monotonic())
            stream.tasks = [
                asyncio.create_task(self._write(stream), name="embed-stream-writer"),
                asyncio.create_task(self._read(stream), name="embed-stream-reader"),
            ]
            self._stream = stream
            return stream
        return current

    async def _write(self, stream: _Stream) -> None:
        """Send what callers queued; whatever queues during one write leaves in the next message."""
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError):
            while not stream.ended:
                await stream.wake_writer.wait()
                stream.wake_writer.clear()
                while stream.outbox and not stream.ended:
                    count = min(len(stream.outbox), ITEMS_PER_MESSAGE)
                    items = [stream.outbox.popleft() for _ in range(count)]
                    await stream.call.write(inference_pb2.EmbedStreamRequest(items=items))
                if stream.retiring and not stream.outbox:
                    await stream.call.done_writing()  # the service answers the rest, then ends the stream
                    return
        # a failed write means the stream is broken: the reader sees why and answers the callers

    async def _read(self, stream: _Stream) -> None:
        """Hand each answer to its caller; when the stream ends, fail whoever still waits on it."""
        error: Exception = Unavailable(f"{self._client.target}: the embed stream ended")
        try:
            async for message in stream.call:
                for answer in message.answers:
                    waiting = stream.waiting.get(answer.id)
                    if waiting is not None and not waiting.done():
                        waiting.set_result(answer)
        except grpc.aio.AioRpcError as exc:
            error = _stream_error(exc, self._client.target)
        except asyncio.CancelledError:
            error = Unavailable("the embed stream was closed")
            raise
        finally:
            stream.ended = True
            stream.wake_writer.set()  # lets the writer see the end
            _fail(stream, error)

    def _note_unsupported(self) -> None:
        if not self.unsupported:
            log.info(
                "the inference layer has no EmbedStream: using unary Embed",
                extra={"target": self._client.target},
            )
        self.unsupported = True


def shared_embed_stream(
    client: LayerClient[inference_pb2_grpc.InferenceServiceStub],
) -> EmbedStreamClient:
    """The one stream that every caller of ``client`` shares (opened on first use, closed with it)."""
    return client.companion(SHARED_STREAM, EmbedStreamClient)


class _Unimplemented(Exception):
    """The service does not have EmbedStream (given to waiting callers, who fall back to unary)."""


def _fail(stream: _Stream, error: Exception) -> None:
    for waiting in list(stream.waiting.values()):
        if not waiting.done():
            waiting.set_exception(error)


def _stream_error(exc: grpc.aio.AioRpcError, target: str) -> Exception:
    """What the callers waiting on a stream that ended with ``exc`` get."""
    if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
        return _Unimplemented()
    refusal = _REFUSALS.get(exc.code().value[0])
    if refusal is not None:
        return refusal(f"{target}: {exc.details()}")
    return Unavailable(f"{target}: embed stream broke: {exc.code().name}: {exc.details()}")


def _refusal(error: inference_pb2.EmbedStreamError, target: str) -> HindsightError:
    """The error a unary call refused with ``error``'s status would have raised in this layer."""
    if error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]:
        field_name, _, problem = error.message.partition(": ")
        return InvalidArgument(field_name, problem)
    refusal = _REFUSALS.get(error.code)
    if refusal is not None:
        return refusal(error.message)
    return Unavailable(f"{target}: embed failed: {error.message}")
