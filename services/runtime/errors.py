"""Domain errors and the gRPC status each maps to.

Domain code raises these; the server interceptor turns them into statuses, so handlers stay thin
and every service maps errors the same way.
"""

from __future__ import annotations

import grpc


class HindsightError(Exception):
    """Base of every error a caller should see as a status, not as INTERNAL."""

    code = grpc.StatusCode.INTERNAL


class FieldError(HindsightError):
    """Base of the errors about one field of the request: the message starts with the field's name."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


class InvalidArgument(FieldError):
    """The request is malformed; the message names the field."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(HindsightError):
    """The named record or session does not exist in this bank."""

    code = grpc.StatusCode.NOT_FOUND


class PermissionDenied(HindsightError):
    """The caller's token does not grant the bank."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(HindsightError):
    """No token, or an unknown one, where tokens are required."""

    code = grpc.StatusCode.UNAUTHENTICATED


class Unavailable(HindsightError):
    """A store or another layer cannot be reached; retrying later may work."""

    code = grpc.StatusCode.UNAVAILABLE


class FailedPrecondition(HindsightError):
    """The system is not in a state that allows the request (for example a model mismatch)."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class DeadlineExceeded(Unavailable):
    """Another layer did not answer within the call's deadline (a kind of unavailability: partial recall and
    the outbox treat it as one, but callers see DEADLINE_EXCEEDED, not UNAVAILABLE)."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class ResourceExhausted(FieldError):
    """The request is larger than a configured limit; the message names the field, the size and the limit."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class AlreadyExists(FieldError):
    """A record with this name exists already; the message names the field."""

    code = grpc.StatusCode.ALREADY_EXISTS
