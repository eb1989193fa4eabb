"""Versioned schema migrations for every layer that owns PostgreSQL tables, applied on start.

A layer keeps numbered SQL files (``0001_name.sql``) in its package's ``migrations/`` folder. Each
runs in its own transaction with ``search_path`` set to the layer's schema (so scripts name tables
unqualified) and is recorded in that schema's ``schema_migrations`` table. A transaction-scoped
advisory lock per schema serialises replicas that start at once, so each migration runs exactly
once and running again is a no-op. A migration may have a down script (``0001_name.down.sql``) that
undoes it; :func:`migrate_down` runs those, newest first, to roll a schema back to a version.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from importlib.abc import Traversable
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import tuple_row

log = logging.getLogger(__name__)

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_DOWN_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.down\.sql$")
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""What a layer's schema setting may be: a plain lower-case PostgreSQL identifier."""


@dataclass(frozen=True)
class Migration:
    """One numbered SQL script."""

    version: int
    name: str
    script: str
    down: str = ""
    """The script that undoes this one; empty when the migration cannot be rolled back."""


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
    for entry in folder.iterdir():
        match = _DOWN_FILE_NAME.match(entry.name)
        if not match:
            continue
        version = int(match.group(1))
        if version not in found or found[version].name != match.group(2):
            raise ValueError(f"down script {entry.name} has no migration of the same number and name")
        found[version] = replace(found[version], down=entry.read_text(encoding="utf-8"))
    return [found[version] for version in sorted(found)]


async def _lock(conn: AsyncConnection, schema: str) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"hindsight.migrate.{schema}",))


async def migrate(conn: AsyncConnection[Any], schema: str, migrations: Sequence[Migration]) -> list[int]:
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


async def migrate_down(
    conn: AsyncConnection[Any], schema: str, migrations: Sequence[Migration], target: int
) -> list[int]:
    """Undo the applied migrations numbered above ``target``, newest first; returns the versions undone.

    Each runs its down script in its own transaction and leaves the ledger; a migration without one
    stops the roll-back with ValueError before anything of it runs.
    """
    ledger = sql.Identifier(schema, "schema_migrations")
    by_version = {migration.version: migration for migration in migrations}
    undone: list[int] = []
    async with conn.transaction():
        await _lock(conn, schema)
        async with conn.cursor(row_factory=tuple_row) as cursor:
            await cursor.execute(
                sql.SQL("SELECT version FROM {} WHERE version > %s ORDER BY version DESC").format(ledger),
                (target,),
            )
            applied = [int(row[0]) for row in await cursor.fetchall()]
    for version in applied:
        migration = by_version.get(version)
        if migration is None or not migration.down:
            raise ValueError(f"migration {version:04d} of schema {schema!r} has no down script")
        async with conn.transaction():
            await _lock(conn, schema)
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(schema)))
            await conn.execute(migration.down.encode())
            await conn.execute(sql.SQL("DELETE FROM {} WHERE version = %s").format(ledger), (version,))
        log.info(
            "rolled back migration",
            extra={"schema": schema, "version": version, "migration": migration.name},
        )
        undone.append(version)
    return undone
