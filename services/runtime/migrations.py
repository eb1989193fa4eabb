"""Versioned schema migrations for every layer that owns PostgreSQL tables, applied on start.

A layer keeps numbered SQL files (``0001_name.sql``) in its package's ``migrations/`` folder. Each
runs in its own transaction with ``search_path`` set to the layer's schema (so scripts name tables
unqualified) and is recorded in that schema's ``schema_migrations`` table. A transaction-scoped
advisory lock per schema serialises replicas that start at once, so each migration runs exactly
once and running again is a no-op.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable

from psycopg import AsyncConnection, sql

log = logging.getLogger(__name__)

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
"""What a layer's schema setting may be: a plain lower-case PostgreSQL identifier."""


@dataclass(frozen=True)
class Migration:
    """One numbered SQL script."""

    version: int
    name: str
    script: str


def load_migrations(package: str | Traversable) -> list[Migration]:
    """The migrations in ``<package>/migrations`` (or in a given folder), in version order."""
    folder = resources.files(package) / "migrations" if isinstance(package, str) else package
    found: dict[int, Migration] = {}
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if not match:
            continue
        version = int(match.group(1))
        if version in found:
            raise ValueError(
                f"two migrations numbered {version:04d}: {found[version].name}, {match.group(2)}"
            )
        found[version] = Migration(version, match.group(2), entry.read_text(encoding="utf-8"))
    return [found[version] for version in sorted(found)]


async def _lock(conn: AsyncConnection, schema: str) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"hindsight.migrate.{schema}",))


async def migrate(conn: AsyncConnection, schema: str, migrations: Sequence[Migration]) -> list[int]:
    """Create ``schema`` if needed and apply the migrations it lacks; returns the versions applied now."""
    schema_id = sql.Identifier(schema)
    ledger = sql.Identifier(schema, "schema_migrations")
    async with conn.transaction():
        await _lock(conn, schema)
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema_id))
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(ledger)
        )
    applied: list[int] = []
    for migration in migrations:
        async with conn.transaction():
            await _lock(conn, schema)
            cursor = await conn.execute(
                sql.SQL("SELECT 1 FROM {} WHERE version = %s").format(ledger), (migration.version,)
            )
            if await cursor.fetchone() is not None:
                continue
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(schema_id))
            await conn.execute(migration.script.encode())  # no parameters: several statements may run
            await conn.execute(
                sql.SQL("INSERT INTO {} (version, name) VALUES (%s, %s)").format(ledger),
                (migration.version, migration.name),
            )
        log.info(
            "applied migration",
            extra={"schema": schema, "version": migration.version, "migration": migration.name},
        )
        applied.append(migration.version)
    return applied
