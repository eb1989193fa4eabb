"""Every RPC of every layer, read from the contracts, a way to call one with raw bytes, and the check that a
call is refused as invalid naming the field.

Security tests walk this list instead of naming methods, so a method added later is probed too.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message

from hindsight.cli.layers import LAYERS


@dataclass(frozen=True)
class Rpc:
    """One method of one layer's service."""

    layer: str
    service: str
    method: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.method.name}"

    @property
    def streaming(self) -> tuple[bool, bool]:
        return self.method.client_streaming, self.method.server_streaming

    def request(self, bank_id: str = "", **fields: Any) -> Message:
        """An instance of the request message, with ``bank_id`` set where the message has one."""
        message = message_factory.GetMessageClass(self.method.input_type)()
        if bank_id and "bank_id" in message.DESCRIPTOR.fields_by_name:
            message.bank_id = bank_id
        for name, value in fields.items():
            if name in message.DESCRIPTOR.fields_by_name:
                setattr(message, name, value)
        return message

    @property
    def names_a_bank(self) -> bool:
        return "bank_id" in self.method.input_type.fields_by_name


def every_rpc() -> Iterator[Rpc]:
    """Every method of every layer's service, as the generated contracts declare them."""
    for layer in LAYERS:
        package, _, service_name = layer.service.rpartition(".")
        area = package.split(".")[1]
        module = importlib.import_module(f"hindsight.contracts.{area}.v1.{area}_pb2")
        service = module.DESCRIPTOR.services_by_name[service_name]
        for method in service.methods:
            yield Rpc(layer.name, layer.service, method)


async def call_raw(
    channel: grpc.aio.Channel, rpc: Rpc, request: Message, token: str | None, timeout: float = 10.0
) -> tuple[grpc.StatusCode, list[bytes]]:
    """Call ``rpc`` with ``request`` (and ``token`` when given); the status and the raw replies."""
    answer = await call_answered(channel, rpc, request, token, timeout)
    return answer.code, answer.replies


@dataclass(frozen=True)
class Answer:
    """Everything a call got back: its status, the status's details and the raw replies."""

    code: grpc.StatusCode
    details: str
    replies: list[bytes]

    def messages(self, rpc: Rpc) -> list[Message]:
        """The replies parsed as the method's response type."""
        reply_class = message_factory.GetMessageClass(rpc.method.output_type)
        return [reply_class.FromString(raw) for raw in self.replies]


async def call_answered(
    channel: grpc.aio.Channel, rpc: Rpc, request: Message, token: str | None, timeout: float = 10.0
) -> Answer:
    """Call ``rpc`` with ``request`` (and ``token`` when given); what came back, error details included."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    payload = request.SerializeToString()
    replies: list[bytes] = []
    try:
        match rpc.streaming:
            case (False, False):
                call = channel.unary_unary(rpc.path)
                replies.append(await call(payload, timeout=timeout, metadata=metadata))
            case (True, True):
                stream = channel.stream_stream(rpc.path)
                async for reply in stream(iter([payload]), timeout=timeout, metadata=metadata):
                    replies.append(reply)
            case (False, True):
                server_stream = channel.unary_stream(rpc.path)
                async for reply in server_stream(payload, timeout=timeout, metadata=metadata):
                    replies.append(reply)
            case _:
                client_stream = channel.stream_unary(rpc.path)
                replies.append(await client_stream(iter([payload]), timeout=timeout, metadata=metadata))
    except grpc.aio.AioRpcError as exc:
        return Answer(exc.code(), exc.details() or "", replies)
    return Answer(grpc.StatusCode.OK, "", replies)


def strings_of(message: Message) -> Iterator[tuple[str, str]]:
    """(field name, value) of every string in ``message`` and the messages inside it, maps included."""
    for field, value in message.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entries = value.items()
            for key, item in entries:
                if isinstance(key, str):
                    yield field.name, key
                if isinstance(item, Message):
                    yield from strings_of(item)
                elif isinstance(item, str):
                    yield field.name, item
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            if isinstance(item, Message):
                yield from strings_of(item)
            elif isinstance(item, str):
                yield field.name, item


async def assert_rejected_naming(call: Awaitable[Any], field: str) -> None:
    """``call`` fails with INVALID_ARGUMENT, the details starting with ``field``: every layer names the
    offending field of a bad request first."""
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT, field
    assert (error.value.details() or "").startswith(f"{field}:"), error.value.details()
