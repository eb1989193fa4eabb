"""Which operation on its bank each call of the edge needs: one table for the gRPC MemoryService and the MCP
tools, resources and prompts (:mod:`.permissions` says what the operations are).

A gRPC method or an MCP tool missing from these tables needs ``admin`` on its bank (the interceptor and the
MCP tools fail closed), and a test walks every method and tool so that none is left out by accident. The
token methods check each bank their request names themselves (:data:`HANDLER_CHECKS_BANKS`). The operator's
methods (review queue, audit log, debug listing) also need the operator's role (:mod:`.roles`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.runtime.permissions import Operation

READ, WRITE, FORGET, ADMIN = Operation.READ, Operation.WRITE, Operation.FORGET, Operation.ADMIN

_MEMORY_SERVICE = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]

MEMORY_OPERATIONS: Mapping[str, Operation] = {
    "Recall": READ,
    "ListRecent": READ,
    "ListEntities": READ,
    "GetEntityPage": READ,
    "Retain": WRITE,
    "Update": WRITE,
    "WriteEpisode": WRITE,
    "Reflect": WRITE,
    "Compress": WRITE,
    "CloseSession": WRITE,
    "Invalidate": WRITE,
    "Forget": FORGET,
    "Purge": FORGET,
    "DebugList": ADMIN,
    "ListQuarantine": ADMIN,
    "ReviewQuarantine": ADMIN,
    "ListAudit": ADMIN,
    "CreateToken": ADMIN,
    "ListTokens": ADMIN,
    "RevokeToken": ADMIN,
    "Share": READ,  # on the source bank; the handler checks `write` on the target bank
}
"""The MemoryService's methods by name."""

MCP_OPERATIONS: Mapping[str, Operation] = {
    # tools
    "recall": READ,
    "list_recent": READ,
    "list_entities": READ,
    "entity_page": READ,
    "retain": WRITE,
    "update": WRITE,
    "write_episode": WRITE,
    "reflect": WRITE,
    "compress": WRITE,
    "close_session": WRITE,
    "invalidate": WRITE,
    "forget": FORGET,
    "purge": FORGET,
    "list_quarantine": ADMIN,
    "review_quarantine": ADMIN,
    "audit_log": ADMIN,
    "token_create": ADMIN,
    "token_list": ADMIN,
    "token_revoke": ADMIN,
    "share": READ,  # on the source bank; the tool checks `write` on the target bank
    # prompts
    "recall_context": READ,
    # resources, by URI template
    "hindsight://banks/{bank}/recent": READ,
    "hindsight://banks/{bank}/lessons": READ,
    "hindsight://banks/{bank}/entities": READ,
}
"""MCP tools and prompts by name, resources by URI template."""

CONSOLE_OPERATIONS: Mapping[str, Operation] = {
    "read": READ,  # every view
    "forget": FORGET,
    "purge": FORGET,
    "restore": FORGET,  # undoes a forget
    "invalidate": WRITE,
    "review": WRITE,
    "quarantine": ADMIN,  # and the operator's role
}
"""The web console's actions (its views all read), by name; one missing needs ``admin``."""

HANDLER_CHECKS_BANKS = frozenset(
    {
        "hindsight.memory.v1.CreateTokenRequest",
        "hindsight.memory.v1.ListTokensRequest",
        "hindsight.memory.v1.RevokeTokenRequest",
    }
)
"""Requests that name their banks in their own fields (a token's grants): the handler checks each bank, the
interceptor only authenticates the caller."""


def _method_path(name: str) -> str:
    return f"/{_MEMORY_SERVICE.full_name}/{name}"


_BY_PATH = {_method_path(name): operation for name, operation in MEMORY_OPERATIONS.items()}
_TEMPLATES = [
    (re.compile("^" + re.escape(key).replace(re.escape("{bank}"), "[^/]+") + "$"), operation)
    for key, operation in MCP_OPERATIONS.items()
    if "://" in key
]


def method_operation(method: str) -> Operation:
    """The operation a gRPC method (full name) needs on its bank; ``admin`` for a method of no table (every
    method of a layer serves only the mesh and the operator, who may do everything)."""
    return _BY_PATH.get(method, ADMIN)


def mcp_operation(kind: str, name: str) -> Operation:
    """The operation an MCP call needs on its bank: ``kind`` is ``tools/call``, ``prompts/get`` or
    ``resources/read`` (``name`` then a URI); ``admin`` for a name of no table."""
    if kind == "resources/read":
        return next((operation for pattern, operation in _TEMPLATES if pattern.match(name)), ADMIN)
    return MCP_OPERATIONS.get(name, ADMIN)
