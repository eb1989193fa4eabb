"""A server interceptor for tests: one method slow, or the first calls refused, on a real layer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc


class Misbehave(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Counts the calls of each method; delays those in ``slow`` and refuses (UNAVAILABLE) the first
    ``refuse_first`` calls of every method."""

    def __init__(self, slow: tuple[str, ...] = (), delay: float = 0.0, refuse_first: int = 0) -> None:
        self.counts: dict[str, int] = {}
        self.slow, self.delay, self.refuse_first = slow, delay, refuse_first

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = await continuation(details)
        name = details.method.rsplit("/", 1)[-1]
        if handler is None or handler.unary_unary is None or details.method.startswith("/grpc."):
            return handler
        inner = handler.unary_unary

        async def misbehaving(request: Any, context: grpc.aio.ServicerContext) -> Any:
            self.counts[name] = self.counts.get(name, 0) + 1
            if self.counts[name] <= self.refuse_first:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
            if name in self.slow:
                await asyncio.sleep(self.delay)
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            misbehaving,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
