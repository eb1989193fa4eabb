"""Settings from the environment, as small frozen dataclasses.

Each service declares its own dataclass; every field names its environment variable with
:func:`env` and carries a one-line docstring in its ``help``. :func:`load` reads them, converting
by the field's type, and rejects a malformed value with a message naming the variable.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class SettingsError(ValueError):
    """A setting is present but malformed."""


def env(name: str, default: Any, help: str) -> Any:
    """Declare a settings field read from environment variable ``name``."""
    if isinstance(default, list | dict | set):
        raise TypeError("use a tuple for sequence defaults")
    return dataclasses.field(default=default, metadata={"env": name, "help": help})


def _convert(raw: str, kind: Any, name: str) -> Any:
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off", ""}:
                return False
            raise ValueError(raw)
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
        if typing.get_origin(kind) is tuple:
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        return raw
    except ValueError as exc:
        raise SettingsError(f"{name}={raw!r} is not a valid {getattr(kind, '__name__', kind)}") from exc


def load(cls: type[T], environ: Mapping[str, str] | None = None, **overrides: Any) -> T:
    """Build ``cls`` from the environment; keyword overrides win over the environment."""
    source = os.environ if environ is None else environ
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = field.metadata.get("env")
        if field.name in overrides:
            values[field.name] = overrides[field.name]
        elif name and name in source:
            values[field.name] = _convert(source[name], hints[field.name], name)
    return cls(**values)


def describe(cls: type) -> list[tuple[str, Any, str]]:
    """(variable, default, help) for every field: used by ``hindsight config``-style help output."""
    return [
        (f.metadata["env"], f.default, f.metadata["help"])
        for f in dataclasses.fields(cls)
        if "env" in f.metadata
    ]


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """How a service listens and who may call it; shared by every layer."""

    host: str = env("HINDSIGHT_HOST", "127.0.0.1", "Address to bind; loopback unless deployed.")
    port: int = env("HINDSIGHT_PORT", 0, "Port to bind; 0 picks a free one.")
    port_file: str = env("HINDSIGHT_PORT_FILE", "", "Write the bound port here once serving.")
    tokens: str = env(
        "HINDSIGHT_TOKENS",
        "",
        "Client tokens and the banks each grants: 'tok1=bank-a,bank-b;admin:tok2=*'; a token may be given as "
        "'sha256:<hex>'.",
    )
    tokens_file: str = env(
        "HINDSIGHT_TOKENS_FILE",
        "",
        "File of more client tokens (entries as in HINDSIGHT_TOKENS, one per line), re-read on change.",
    )
    internal_token: str = env(
        "HINDSIGHT_INTERNAL_TOKEN",
        "",
        "The mesh credential: presented when calling other layers, accepted from them (grants every bank).",
    )
    admin_token: str = env(
        "HINDSIGHT_ADMIN_TOKEN", "", "The operator's token: every bank and the admin-only operations."
    )
    auth: str = env(
        "HINDSIGHT_AUTH",
        "required",
        "required: every call needs a credential, and a service with none configured refuses to start; "
        "off: no checks (refused unless HINDSIGHT_HOST is loopback).",
    )
    grace_seconds: float = env("HINDSIGHT_GRACE_SECONDS", 5.0, "Time in-flight calls get on shutdown.")
    log_level: str = env("HINDSIGHT_LOG_LEVEL", "INFO", "Log level.")
    readiness_interval: float = env(
        "HINDSIGHT_READINESS_INTERVAL", 2.0, "Seconds between readiness checks of the stores."
    )
    max_connection_age: float = env(
        "HINDSIGHT_MAX_CONNECTION_AGE_SECONDS",
        300.0,
        "Clients are asked to reconnect after this long, so they find replicas added since; 0: never.",
    )
