"""Failed calls as a small exception hierarchy, each carrying the server's status code and message."""

from __future__ import annotations

import grpc


class HindsightError(Exception):
    """A ``MemoryService`` call failed; ``message`` is what the server said (it names the bad field)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class InvalidArgument(HindsightError):
    """The request was refused as malformed; nothing was written."""


class NotFound(HindsightError):
    """The turn, session or entity named does not exist in the bank."""


class Unauthenticated(HindsightError):
    """No token, or one the mesh does not know."""


class PermissionDenied(HindsightError):
    """The token does not grant this bank (or the call needs the admin token)."""


class FailedPrecondition(HindsightError):
    """The service cannot do this now (for example a layer's model changed and needs a reindex)."""


class ResourceExhausted(HindsightError):
    """A limit was reached (message size, rate); retry later or send less."""


class Unavailable(HindsightError):
    """The edge could not be reached (or a layer it needs is down); idempotent calls were retried."""


class DeadlineExceeded(HindsightError):
    """The call did not finish within its deadline."""


_BY_CODE: dict[grpc.StatusCode, type[HindsightError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
}


def from_rpc_error(error: grpc.aio.AioRpcError) -> HindsightError:
    """The exception for a failed call: the class by status code, the server's own message inside."""
    code = error.code()
    return _BY_CODE.get(code, HindsightError)(code, error.details() or "")
