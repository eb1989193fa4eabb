"""``main()`` for one service process: settings, logging, then serve until signalled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from hindsight.runtime.auth import server_grants
from hindsight.runtime.logs import configure_logging
from hindsight.runtime.metrics import MetricsSettings
from hindsight.runtime.server import ServiceSpec, serve_forever
from hindsight.runtime.settings import ServerSettings, SettingsError, load
from hindsight.runtime.tracing import TracingSettings

SettingsT = TypeVar("SettingsT")


def run_service(
    name: str,
    settings_class: type[SettingsT],
    open_service: Callable[[SettingsT], AbstractAsyncContextManager[ServiceSpec]],
    **overrides: Any,
) -> None:
    """Load settings for ``name`` from the environment and serve until SIGTERM/SIGINT."""
    server_settings = load(ServerSettings)
    configure_logging(name, server_settings.log_level)
    refuse_without_credentials(name, server_settings)
    refuse_bad_telemetry(name)
    settings = load(settings_class, **overrides)
    asyncio.run(serve_forever(lambda: open_service(settings), server_settings))


def refuse_without_credentials(name: str, settings: ServerSettings) -> None:
    """Exit with one clear line (no stack trace) when the credentials would leave ``name`` open or broken."""
    try:
        server_grants(settings)
    except SettingsError as exc:
        raise SystemExit(f"hindsight {name}: {exc}") from None


def refuse_bad_telemetry(name: str) -> None:
    """Exit with one clear line when the metrics or tracing settings are malformed (before stores open)."""
    try:
        load(MetricsSettings)
        load(TracingSettings)
    except SettingsError as exc:
        raise SystemExit(f"hindsight {name}: {exc}") from None
