"""Who calls the console API, and whether a request may change anything.

The console keeps no cookie: the page sends the bearer token in a header, so another site cannot make a
browser call the API as its user. State-changing calls must also be JSON (a plain HTML form cannot send
that) and come from an origin the endpoint is known by; every call must name an allowed Host (DNS
rebinding), as MCP HTTP requires.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from hindsight.mcp_edge.endpoint import HttpEndpoint
from hindsight.mcp_edge.mcp_auth import CallerToken, EdgeTokenVerifier
from hindsight.runtime.auth import OPEN_CALLER, Caller, bearer
from hindsight.runtime.operations import CONSOLE_OPERATIONS
from hindsight.runtime.permissions import Operation


class Refused(Exception):
    """A request the console does not serve; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _allowed(value: str, allowed: tuple[str, ...]) -> bool:
    """``value`` is one of ``allowed``, or matches a ``name:*`` entry."""
    if value in allowed:
        return True
    return any(item.endswith(":*") and value.startswith(item[:-1]) for item in allowed)


@dataclass(frozen=True)
class ConsoleGuard:
    """Host, Origin, content type and bearer checks of the console API."""

    endpoint: HttpEndpoint
    verifier: EdgeTokenVerifier | None
    """None when authentication is off (loopback development): every caller is the open caller."""

    def check_host(self, request: Request) -> None:
        if not _allowed(request.headers.get("host", "").lower(), self.endpoint.allowed_hosts):
            raise Refused(421, "Host is not one this endpoint is known by")

    def check_write(self, request: Request) -> None:
        """A state-changing request: JSON, and from an allowed origin when a browser says which."""
        content_type = request.headers.get("content-type", "").lower()
        if not content_type.startswith("application/json"):
            raise Refused(415, "state-changing requests must be application/json")
        origin = request.headers.get("origin")
        if origin is not None and not _allowed(origin.lower().rstrip("/"), self.endpoint.allowed_origins):
            raise Refused(403, f"origin {origin!r} may not change memory here")
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise Refused(403, "cross-site requests may not change memory")

    async def caller(self, request: Request) -> Caller:
        """The caller the request's bearer token names; 401 when there is none."""
        if self.verifier is None:
            return OPEN_CALLER
        token = bearer(request.headers.get("authorization"))
        if token is None:
            raise Refused(401, "missing bearer token")
        verified = await self.verifier.verify_token(token)
        if not isinstance(verified, CallerToken):
            raise Refused(401, "unknown bearer token")
        return verified.caller

    @staticmethod
    def bank(caller: Caller, bank_id: str, action: str = "read") -> str:
        """``bank_id`` after checking that ``caller`` may do ``action`` there (its operation in
        :data:`~hindsight.runtime.operations.CONSOLE_OPERATIONS`); 403 otherwise."""
        if not bank_id:
            raise Refused(400, "bank: is required")
        operation = CONSOLE_OPERATIONS.get(action, Operation.ADMIN)
        if not caller.may(bank_id, operation):
            raise Refused(
                403,
                f"credential {caller.name!r} does not grant operation {operation.value!r} "
                f"on bank {bank_id!r}",
            )
        return bank_id
