"""The console's routes, mounted on the MCP HTTP app: the page, its assets and the JSON API.

Every API call authenticates the bearer token as MCP HTTP does and checks the bank against the caller;
reads are GET, changes are POST (JSON only, see :mod:`.guard`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from hindsight.mcp_edge.console import actions, reads
from hindsight.mcp_edge.console.explain import explain
from hindsight.mcp_edge.console.guard import ConsoleGuard, Refused
from hindsight.mcp_edge.engine import MemoryEngine
from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import HindsightError
from hindsight.runtime.interceptors import acting_as

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
}
PAGE_HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; form-action 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
MAX_BODY = 64 * 1024

Read = Callable[[MemoryEngine, str, dict[str, str]], Awaitable[dict[str, Any]]]
Write = Callable[[MemoryEngine, Caller, str, dict[str, Any]], Awaitable[dict[str, Any]]]

READS: dict[str, Read] = {
    "counts": lambda engine, bank, params: reads.bank_counts(engine, bank),
    "timeline": reads.timeline,
    "episodes": reads.episodes,
    "facts": reads.facts,
    "history": lambda engine, bank, params: reads.history(engine, bank, params.get("record", "")),
    "entities": reads.entities,
    "entity": lambda engine, bank, params: reads.entity(engine, bank, params.get("name", "")),
    "lessons": lambda engine, bank, params: reads.lessons(engine, bank),
    "reviews": lambda engine, bank, params: reads.reviews(engine, bank),
    "explain": lambda engine, bank, params: explain(
        engine, bank, params.get("q", ""), _int(params.get("top_k", "10"), "top_k")
    ),
}
WRITES: dict[str, Write] = {
    "forget": actions.forget,
    "invalidate": actions.invalidate,
    "restore": actions.restore,
    "purge": actions.purge,
    "review": actions.resolve,
    "quarantine": actions.review_quarantine,
}


def _int(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Refused(400, f"{field}: must be a whole number") from None


def _error(exc: BaseException) -> JSONResponse:
    if isinstance(exc, Refused):
        status, message = exc.status, str(exc)
    elif isinstance(exc, HindsightError):
        status, message = STATUS.get(exc.code, 500), str(exc)
    elif isinstance(exc, grpc.aio.AioRpcError):
        status, message = STATUS.get(exc.code(), 502), f"{exc.code().name}: {exc.details()}"
    else:
        log.exception("console request failed")
        status, message = 500, "internal error"
    return JSONResponse({"error": message}, status_code=status, headers={"cache-control": "no-store"})


def console_routes(engine: MemoryEngine, guard: ConsoleGuard) -> list[BaseRoute]:
    """The routes under ``/console``."""

    async def page(request: Request) -> Response:
        try:
            guard.check_host(request)
        except Refused as exc:
            return _error(exc)
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return JSONResponse({"error": "no such asset"}, status_code=404)
        try:
            guard.check_host(request)
        except Refused as exc:
            return _error(exc)
        return FileResponse(STATIC / name, media_type=ASSETS[name], headers={"cache-control": "no-cache"})

    async def banks(request: Request) -> Response:
        try:
            guard.check_host(request)
            caller = await guard.caller(request)
            return JSONResponse(
                {
                    "caller": caller.name,
                    "admin": caller.admin,
                    "banks": await reads.list_banks(engine, caller),
                }
            )
        except Exception as exc:
            return _error(exc)

    async def read(request: Request) -> Response:
        try:
            guard.check_host(request)
            view = READS.get(request.path_params["view"])
            if view is None:
                raise Refused(404, "no such view")
            caller = await guard.caller(request)
            bank = guard.bank(caller, request.path_params["bank"])
            data = await view(engine, bank, dict(request.query_params))
            if request.path_params["view"] == "reviews":  # held-back turns beside the conflicting facts
                data |= await reads.quarantined(engine, bank, caller)
            return JSONResponse(data)
        except Exception as exc:
            return _error(exc)

    async def write(request: Request) -> Response:
        try:
            guard.check_host(request)
            guard.check_write(request)
            action = WRITES.get(request.path_params["action"])
            if action is None:
                raise Refused(404, "no such action")
            caller = await guard.caller(request)
            bank = guard.bank(caller, request.path_params["bank"], request.path_params["action"])
            raw = await request.body()
            if len(raw) > MAX_BODY:
                raise Refused(413, "request body too large")
            try:
                body = await request.json()
            except ValueError:
                raise Refused(400, "body: must be a JSON object") from None
            if not isinstance(body, dict):
                raise Refused(400, "body: must be a JSON object")
            with acting_as(caller.name):  # the layers record who decided (forget, restore, purge, review)
                return JSONResponse(await action(engine, caller, bank, body))
        except Exception as exc:
            return _error(exc)

    return [
        Route("/console", page, methods=["GET"]),
        Route("/console/static/{name}", asset, methods=["GET"]),
        Route("/console/api/banks", banks, methods=["GET"]),
        Route("/console/api/banks/{bank}/{view}", read, methods=["GET"]),
        Route("/console/api/banks/{bank}/{action}", write, methods=["POST"]),
    ]
