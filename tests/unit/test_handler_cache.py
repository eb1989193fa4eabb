"""The server interceptors wrap each of a service's handlers once, and wrap again when a handler changes."""

from __future__ import annotations

from typing import Any

import grpc

from hindsight.runtime.interceptors import HandlerCache


async def _echo(request: Any, context: Any) -> Any:
    return request


def test_a_wrapper_is_reused_for_the_same_handler_only() -> None:
    cache = HandlerCache()
    inner = grpc.unary_unary_rpc_method_handler(_echo)
    wrapped = grpc.unary_unary_rpc_method_handler(_echo)
    assert cache.get("/a.B/C", inner) is None
    assert cache.put("/a.B/C", inner, wrapped) is wrapped
    assert cache.get("/a.B/C", inner) is wrapped
    assert cache.get("/a.B/D", inner) is None  # another method
    other = grpc.unary_unary_rpc_method_handler(_echo)  # an inner interceptor made a new one
    assert cache.get("/a.B/C", other) is None
