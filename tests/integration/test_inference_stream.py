"""EmbedStream: the service's bidirectional stream and the shared client every layer embeds through.

Real gRPC servers on loopback with the real packaged model; the "older release" without the method is a
real server that registers only the real servicer's unary Embed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import numpy as np
import pytest

from hindsight.contracts.inference.v1 import inference_pb2, inference_pb2_grpc
from hindsight.inference.engine import open_engine
from hindsight.inference.service import SERVICE_NAME, open_service
from hindsight.inference.servicer import InferenceServicer
from hindsight.inference.settings import InferenceSettings
from hindsight.runtime.channels import LayerClient
from hindsight.runtime.embed_stream import SHARED_STREAM, EmbedStreamClient, shared_embed_stream
from hindsight.runtime.embedded import free_ports
from hindsight.runtime.errors import InvalidArgument, PermissionDenied, Unavailable
from hindsight.runtime.testing import serving
from hindsight.runtime.vectors import embed_texts, reply_vectors

BANK = "bank-stream"
SETTINGS = InferenceSettings(max_texts=8, packaged_models=("use-multilingual-v3",))
TEXTS = [f"Memory {i}: the deploy on day {i} went {'well' if i % 2 else 'badly'}." for i in range(20)]


@pytest.fixture(scope="module")
async def server() -> AsyncIterator[int]:
    """One inference server (one model load) for the tests that need no tokens; yields its port."""
    async with serving(lambda: open_service(SETTINGS)) as running:
        yield running.port


def _item(item_id: int, *texts: str, bank: str = BANK, model: str = "") -> inference_pb2.EmbedStreamItem:
    request = inference_pb2.EmbedRequest(
        bank_id=bank, texts=texts, model=model, encoding=inference_pb2.VECTOR_ENCODING_FLOAT32
    )
    return inference_pb2.EmbedStreamItem(id=item_id, request=request, request_id=f"req-{item_id}")


async def _answers(call: grpc.aio.StreamStreamCall, count: int) -> dict[int, inference_pb2.EmbedStreamAnswer]:
    answers: dict[int, inference_pb2.EmbedStreamAnswer] = {}
    async with asyncio.timeout(30):
        while len(answers) < count:
            message = await call.read()
            assert message is not grpc.aio.EOF, f"the stream ended after {len(answers)} of {count} answers"
            for answer in message.answers:
                assert answer.id not in answers
                answers[answer.id] = answer
    return answers


async def _unary(port: int, texts: list[str]) -> np.ndarray:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = inference_pb2_grpc.InferenceServiceStub(channel)
        parts = []
        for start in range(0, len(texts), SETTINGS.max_texts):
            chunk = texts[start : start + SETTINGS.max_texts]
            request = inference_pb2.EmbedRequest(
                bank_id=BANK, texts=chunk, encoding=inference_pb2.VECTOR_ENCODING_FLOAT32
            )
            parts.append(reply_vectors(await stub.Embed(request, timeout=30), len(chunk)))
        return np.vstack(parts)


def _same_direction(actual: np.ndarray, expected: np.ndarray) -> None:
    """Padding inside a batch moves the int8 model's vectors slightly, so compare directions."""
    assert actual.shape == expected.shape
    assert np.all(np.sum(actual * expected, axis=1) > 0.99)


async def test_requests_on_one_stream_are_answered_by_id_with_the_vectors_a_unary_call_gives(
    server: int,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server}") as channel:
        call = inference_pb2_grpc.InferenceServiceStub(channel).EmbedStream()
        await call.write(inference_pb2.EmbedStreamRequest(items=[_item(i, TEXTS[i]) for i in range(12)]))
        await call.write(inference_pb2.EmbedStreamRequest(items=[_item(12, *TEXTS[12:20])]))
        answers = await _answers(call, 13)
        await call.done_writing()
        assert await call.read() is grpc.aio.EOF  # the service ends its side once the caller has
    assert sorted(answers) == list(range(13))
    singles = np.vstack([reply_vectors(answers[i].reply, 1) for i in range(12)])
    _same_direction(singles, await _unary(server, TEXTS[:12]))
    _same_direction(reply_vectors(answers[12].reply, 8), await _unary(server, TEXTS[12:20]))
    assert answers[0].reply.model == "use-multilingual-v3"


async def test_a_refused_request_is_answered_in_band_naming_the_field_and_the_stream_goes_on(
    server: int,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server}") as channel:
        call = inference_pb2_grpc.InferenceServiceStub(channel).EmbedStream()
        await call.write(
            inference_pb2.EmbedStreamRequest(
                items=[
                    _item(1, *TEXTS[:9]),  # over the limit of 8
                    _item(2, "fine", model="gpt-9"),
                    _item(3, "fine", bank=""),
                    _item(4, "The cat sleeps on the sofa."),
                ]
            )
        )
        answers = await _answers(call, 4)
        await call.write(inference_pb2.EmbedStreamRequest(items=[_item(5, "Still open after refusals.")]))
        later = await _answers(call, 1)
        call.cancel()
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    for item_id, field in ((1, "texts:"), (2, "model:"), (3, "bank_id")):
        assert answers[item_id].WhichOneof("result") == "error"
        assert answers[item_id].error.code == invalid
        assert field in answers[item_id].error.message
    assert "at most 8" in answers[1].error.message
    assert reply_vectors(answers[4].reply, 1).shape == (1, 512)
    assert reply_vectors(later[5].reply, 1).shape == (1, 512)


async def test_a_stream_serves_the_mesh_not_a_client_token_and_still_checks_each_messages_bank() -> None:
    """A layer's port is the mesh's: a client token (here one of bank-a) is refused when the stream opens,
    as a call without a token is; the mesh's stream still checks each message's bank id in-band."""
    served = serving(lambda: open_service(SETTINGS), tokens="tok-a=bank-a", internal_token="mesh")
    async with served as running:
        target = f"127.0.0.1:{running.port}"
        async with grpc.aio.insecure_channel(target) as channel:
            stub = inference_pb2_grpc.InferenceServiceStub(channel)
            codes = {}
            for name, metadata in (("agent", (("authorization", "Bearer tok-a"),)), ("anonymous", ())):
                call = stub.EmbedStream(metadata=metadata)
                await call.write(inference_pb2.EmbedStreamRequest(items=[_item(1, "mine", bank="bank-a")]))
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call.read()
                codes[name] = refused.value.code()
            call = stub.EmbedStream(metadata=(("authorization", "Bearer mesh"),))
            await call.write(
                inference_pb2.EmbedStreamRequest(
                    items=[_item(1, "mine", bank="bank-a"), _item(2, "no bank", bank="")]
                )
            )
            answers = await _answers(call, 2)
            call.cancel()
        assert codes == {
            "agent": grpc.StatusCode.PERMISSION_DENIED,
            "anonymous": grpc.StatusCode.UNAUTHENTICATED,
        }
        assert answers[1].WhichOneof("result") == "reply"
        assert answers[2].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert "bank_id" in answers[2].error.message

        agent = LayerClient(target, inference_pb2_grpc.InferenceServiceStub, token="tok-a")
        mesh = LayerClient(target, inference_pb2_grpc.InferenceServiceStub, token="mesh")
        try:
            with pytest.raises(PermissionDenied, match="client tokens are for the edge"):
                await shared_embed_stream(agent).embed(_item(0, "mine", bank="bank-a").request)
            assert (await embed_texts(mesh, "bank-b", ["any bank"])).vectors.shape == (1, 512)
        finally:
            await agent.close()
            await mesh.close()


async def test_concurrent_callers_share_one_client_stream_and_each_gets_its_own_vectors(server: int) -> None:
    client = LayerClient(f"127.0.0.1:{server}", inference_pb2_grpc.InferenceServiceStub)
    try:
        results = await asyncio.gather(*(embed_texts(client, BANK, [text]) for text in TEXTS))
        stream = shared_embed_stream(client)
        assert not stream.unsupported
        with pytest.raises(InvalidArgument) as refused:
            await stream.embed(_item(0, *TEXTS[:9]).request)
        assert refused.value.field == "texts"
    finally:
        await client.close()
    _same_direction(np.vstack([r.vectors for r in results]), await _unary(server, TEXTS))


async def test_after_the_service_restarts_the_next_request_goes_out_on_a_new_stream() -> None:
    (port,) = free_ports(1)
    client = LayerClient(
        f"127.0.0.1:{port}",
        inference_pb2_grpc.InferenceServiceStub,
        options=(("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 200)),
    )
    try:
        async with serving(lambda: open_service(SETTINGS), port=port):
            first = await embed_texts(client, BANK, ["before the restart"])
        async with serving(lambda: open_service(SETTINGS), port=port):
            second = await embed_texts(client, BANK, ["before the restart"])
    finally:
        await client.close()
    _same_direction(second.vectors, first.vectors)


async def test_the_client_falls_back_to_unary_calls_when_the_service_has_no_stream() -> None:
    async with _older_release() as port:
        client = LayerClient(f"127.0.0.1:{port}", inference_pb2_grpc.InferenceServiceStub)
        try:
            vectors = await asyncio.gather(*(embed_texts(client, BANK, [text]) for text in TEXTS[:4]))
            assert shared_embed_stream(client).unsupported
            again = await embed_texts(client, BANK, [TEXTS[0]])
        finally:
            await client.close()
    assert all(v.vectors.shape == (1, 512) for v in vectors)
    _same_direction(again.vectors, vectors[0].vectors)


async def test_a_stream_served_without_the_bank_checking_interceptor_refuses_to_serve() -> None:
    async with (
        _older_release(with_stream=True) as port,
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        call = inference_pb2_grpc.InferenceServiceStub(channel).EmbedStream()
        # the server may end the call before the write is through: the refusal surfaces at either step
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call.write(inference_pb2.EmbedStreamRequest(items=[_item(1, "anything")]))
            await call.read()
    assert refused.value.code() == grpc.StatusCode.UNKNOWN  # grpcio's status for an uncaught error
    assert "needs the service interceptor" in (refused.value.details() or "")


async def test_a_closed_client_stream_fails_nobody_later_and_reopens_on_use(server: int) -> None:
    client = LayerClient(f"127.0.0.1:{server}", inference_pb2_grpc.InferenceServiceStub)
    try:
        stream = shared_embed_stream(client)
        await stream.embed(_item(0, "opens the stream").request)
        await stream.close()
        reply = await stream.embed(_item(0, "reopens it").request)
        assert reply_vectors(reply, 1).shape == (1, 512)
        with pytest.raises(Unavailable):  # nothing answers within a millisecond-old deadline
            await stream.embed(_item(0, *TEXTS[:8]).request, timeout=0.000001)
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def _older_release(with_stream: bool = False) -> AsyncIterator[int]:
    """A server with the real servicer's unary Embed only (a release before EmbedStream), no interceptor.

    With ``with_stream`` it also registers EmbedStream, still without the interceptor that checks banks.
    """
    async with open_engine(SETTINGS) as engine:
        servicer = InferenceServicer(engine, SETTINGS.max_texts)
        methods = {
            "Embed": grpc.unary_unary_rpc_method_handler(
                servicer.Embed,
                request_deserializer=inference_pb2.EmbedRequest.FromString,
                response_serializer=inference_pb2.EmbedResponse.SerializeToString,
            )
        }
        if with_stream:
            methods["EmbedStream"] = grpc.stream_stream_rpc_method_handler(
                servicer.EmbedStream,
                request_deserializer=inference_pb2.EmbedStreamRequest.FromString,
                response_serializer=inference_pb2.EmbedStreamResponse.SerializeToString,
            )
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, methods),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            yield port
        finally:
            await server.stop(0)


async def test_an_old_stream_is_retired_after_its_age_and_answers_what_it_carried(server: int) -> None:
    client = LayerClient(f"127.0.0.1:{server}", inference_pb2_grpc.InferenceServiceStub)
    try:
        stream = client.companion(SHARED_STREAM, lambda c: EmbedStreamClient(c, max_age=0.0))
        # With no age allowed, every request retires the stream before it: all of them are in flight on
        # streams that are closing, and each is still answered.
        replies = await asyncio.gather(*(stream.embed(_item(0, text).request) for text in TEXTS[:6]))
        first = stream._stream
        assert first is not None
        again = await stream.embed(_item(0, TEXTS[0]).request)
        assert stream._stream is not first
        async with asyncio.timeout(10):
            assert await first.call.code() == grpc.StatusCode.OK  # closed cleanly, not cancelled
    finally:
        await client.close()
    assert all(reply_vectors(reply, 1).shape == (1, 512) for reply in replies)
    _same_direction(reply_vectors(again, 1), reply_vectors(replies[0], 1))
