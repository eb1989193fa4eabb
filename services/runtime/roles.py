"""Who may call which method: one role per gRPC method, declared here, one entry per service.

Client tokens belong to the edge: the layers' own ports serve the mesh (the layers and the edge calling each
other) and the operator, never an agent, whatever banks its token grants, because a layer trusts its caller
to have screened, rate-limited and audited what it sends. The roles:

- ``public``: any caller, no credential (health and reflection, which only list method names);
- ``mesh``: the mesh credential or the admin token (every RPC of every layer but a few of the operator's);
- ``client``: any credential the service knows, the request's bank checked against it (the edge's API);
- ``admin``: the admin token only (the edge's review queue, audit log and debug listing; the outbox's
  dead letters).

A method no table declares is refused (PERMISSION_DENIED), so a method added to a contract stays closed
until someone says who may call it. The layers' tables are walked from the generated descriptors (every
method of a layer is ``mesh``); the edge's is written out method by method.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from google.protobuf.descriptor import ServiceDescriptor

from hindsight.contracts.episodic.v1 import episodic_pb2
from hindsight.contracts.inference.v1 import inference_pb2
from hindsight.contracts.memory.v1 import memory_pb2
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.contracts.semantic.v1 import semantic_pb2
from hindsight.contracts.working.v1 import working_pb2
from hindsight.runtime.auth import Caller
from hindsight.runtime.errors import PermissionDenied


class Role(enum.StrEnum):
    """Which credentials a method serves (see the module docstring)."""

    PUBLIC = "public"
    MESH = "mesh"
    CLIENT = "client"
    ADMIN = "admin"


PUBLIC_PREFIXES = ("/grpc.health.", "/grpc.reflection.")
"""Methods any caller may use: health (probes and orchestrators) and reflection (which lists method names)."""

RoleTable = Mapping[str, Role]
"""Roles by full method name, ``/package.Service/Method``."""


def method_path(service: ServiceDescriptor, name: str) -> str:
    """The full name gRPC routes a call by: ``/hindsight.episodic.v1.EpisodicService/RecordTurns``."""
    return f"/{service.full_name}/{name}"


def every_method(service: ServiceDescriptor, role: Role) -> dict[str, Role]:
    """``role`` for every method ``service`` declares (a layer: every method serves the mesh)."""
    return {method_path(service, method.name): role for method in service.methods}


def declared(service: ServiceDescriptor, roles: Mapping[str, Role]) -> dict[str, Role]:
    """The roles of ``service``'s methods, by method name; a name the service lacks is a mistake (raised
    at import), a method left out is refused when called."""
    known = {method.name for method in service.methods}
    unknown = sorted(set(roles) - known)
    if unknown:
        raise ValueError(f"{service.full_name} has no methods {unknown}")
    return {method_path(service, name): role for name, role in roles.items()}


def _service(module: object, name: str) -> ServiceDescriptor:
    descriptor: ServiceDescriptor = module.DESCRIPTOR.services_by_name[name]  # type: ignore[attr-defined]
    return descriptor


LAYER_SERVICES: tuple[ServiceDescriptor, ...] = (
    _service(working_pb2, "WorkingMemoryService"),
    _service(episodic_pb2, "EpisodicService"),
    _service(semantic_pb2, "SemanticService"),
    _service(reflect_pb2, "ReflectService"),
    _service(inference_pb2, "InferenceService"),
)
"""The layers' services: their ports serve only the mesh and the operator."""

MEMORY_SERVICE = _service(memory_pb2, "MemoryService")

LAYER_ADMIN_METHODS: dict[ServiceDescriptor, tuple[str, ...]] = {
    _service(episodic_pb2, "EpisodicService"): ("ListDeadLetters", "RetryDeadLetters", "DropDeadLetters"),
}
"""Layer methods for the operator alone (`hindsight outbox`), not the mesh; the rest of a layer is `mesh`."""

EDGE_ROLES = declared(
    MEMORY_SERVICE,
    {
        "Retain": Role.CLIENT,
        "Recall": Role.CLIENT,
        "WriteEpisode": Role.CLIENT,
        "Reflect": Role.CLIENT,
        "Forget": Role.CLIENT,
        "Compress": Role.CLIENT,
        "CloseSession": Role.CLIENT,
        "ListRecent": Role.CLIENT,
        "Update": Role.CLIENT,
        "Purge": Role.CLIENT,
        "ListEntities": Role.CLIENT,
        "GetEntityPage": Role.CLIENT,
        "Invalidate": Role.CLIENT,
        "DebugList": Role.ADMIN,
        "ListQuarantine": Role.ADMIN,
        "ReviewQuarantine": Role.ADMIN,
        "ListAudit": Role.ADMIN,
        # Managed tokens: an operator, or a token with `admin` on every bank concerned (the handler checks).
        "CreateToken": Role.CLIENT,
        "ListTokens": Role.CLIENT,
        "RevokeToken": Role.CLIENT,
        "Share": Role.CLIENT,
    },
)
"""The edge's API: client methods for agents; review queue, audit log and debug listing: the operator's."""


def _layer_roles(services: Iterable[ServiceDescriptor]) -> dict[str, Role]:
    roles: dict[str, Role] = {}
    for service in services:
        roles |= every_method(service, Role.MESH)
        roles |= declared(service, dict.fromkeys(LAYER_ADMIN_METHODS.get(service, ()), Role.ADMIN))
    return roles


ROLES: RoleTable = _layer_roles(LAYER_SERVICES) | EDGE_ROLES
"""Every method of every service of the project, and who may call it."""


def role_of(method: str, roles: RoleTable) -> Role | None:
    """The role of ``method`` (its full name); None when no table declares it (refused)."""
    if method.startswith(PUBLIC_PREFIXES):
        return Role.PUBLIC
    return roles.get(method)


def authorize(caller: Caller, role: Role | None, method: str) -> None:
    """Raise PERMISSION_DENIED unless ``caller`` may call a method of ``role``."""
    if role is None:
        raise PermissionDenied(f"{method} declares no role: not served")
    if role is Role.MESH and not (caller.mesh or caller.admin):
        raise PermissionDenied(
            f"{method} serves the mesh and the operator only: client tokens are for the edge's API"
        )
    if role is Role.ADMIN and not caller.admin:
        raise PermissionDenied(f"{method} needs the admin token")
