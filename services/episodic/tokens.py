"""The registry of managed client tokens (the ``tokens`` table): create, list, revoke with the tokens minted
under it, the changes an edge's cache reads, and batched notes of last use.

Creations and revocations take a transaction-scoped advisory lock, so each takes the next version only after
the one before has committed: an edge that reads the changes after version V never misses one that commits
later with a smaller version. Each is audited in its own transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from hindsight.episodic.paging import PageKey, decode_page_token, encode_page_token
from hindsight.episodic.quarantine import AuditEntry, Connect, QuarantineStore
from hindsight.runtime.errors import AlreadyExists, FailedPrecondition, NotFound, PermissionDenied
from hindsight.runtime.permissions import BankGrant, Operation, operations_text, wider_than
from hindsight.runtime.token_records import ManagedToken

PAGE_KIND = "tokens"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_COLUMNS = sql.SQL(
    "name, digest, grants, admin, expires_at, created_at, last_used_at, revoked_at, parent, created_by, "
    "version"
)
CREATE_ACTION, REVOKE_ACTION = "token_create", "token_revoke"


@dataclass(frozen=True)
class TokenRecord:
    """A stored token with what only the edge's cache reads: its digest and the version of its last change."""

    token: ManagedToken
    digest: str
    version: int


def _grants_json(grants: Sequence[BankGrant]) -> Jsonb:
    return Jsonb([{"bank": g.bank, "operations": operations_text(g.operations).split("+")} for g in grants])


def _row(row: DictRow) -> TokenRecord:
    grants = tuple(
        BankGrant(item["bank"], frozenset(Operation(op) for op in item["operations"]))
        for item in row["grants"]
    )
    token = ManagedToken(
        name=row["name"],
        grants=grants,
        admin=row["admin"],
        expires_at=row["expires_at"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        revoked_at=row["revoked_at"],
        parent=row["parent"] or "",
        created_by=row["created_by"],
    )
    return TokenRecord(token, row["digest"], row["version"])


class TokenStore:
    """The ``tokens`` table of the layer's schema (audit entries through the quarantine store's log)."""

    def __init__(self, schema: str, connection: Connect, audit: QuarantineStore) -> None:
        self._connection = connection
        self._audit = audit
        self._table = sql.Identifier(schema, "tokens")
        self._versions = sql.Literal(f"{schema}.token_versions")
        self._lock_key = sql.Literal(f"{schema}.tokens")

    async def _lock(self, conn: AsyncConnection[DictRow]) -> None:
        await conn.execute(
            sql.SQL("SELECT pg_advisory_xact_lock(hashtext({key}))").format(key=self._lock_key)
        )

    async def _get(self, conn: AsyncConnection[DictRow], name: str, lock: bool = False) -> TokenRecord | None:
        statement = sql.SQL("SELECT {columns} FROM {table} WHERE name = %s{lock}").format(
            columns=_COLUMNS, table=self._table, lock=sql.SQL(" FOR UPDATE" if lock else "")
        )
        row = await (await conn.execute(statement, (name,))).fetchone()
        return _row(row) if row is not None else None

    async def create(self, token: ManagedToken, digest: str) -> ManagedToken:
        """Store ``token``; ALREADY_EXISTS for a name or secret in use; a child (``token.parent``) only while
        its parent is live and at least as wide (FAILED_PRECONDITION / PERMISSION_DENIED otherwise)."""
        async with self._connection() as conn, conn.transaction():
            await self._lock(conn)
            if token.parent:
                await self._check_parent(conn, token)
            insert = sql.SQL(
                "INSERT INTO {table} (name, digest, grants, admin, expires_at, parent, created_by, version) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, nextval({versions}::regclass)) "
                "ON CONFLICT DO NOTHING RETURNING {columns}"
            ).format(table=self._table, versions=self._versions, columns=_COLUMNS)
            values = (
                token.name,
                digest,
                _grants_json(token.grants),
                token.admin,
                token.expires_at,
                token.parent or None,
                token.created_by,
            )
            row = await (await conn.execute(insert, values)).fetchone()
            if row is None:
                taken = await self._get(conn, token.name)
                if taken is not None:
                    raise AlreadyExists("name", f"a token named {token.name!r} exists already")
                raise AlreadyExists("digest", "a token with this secret exists already")
            stored = _row(row).token
            await self._audit.write_audit(conn, [_audited(CREATE_ACTION, stored, token.created_by)])
        return stored

    async def _check_parent(self, conn: AsyncConnection[DictRow], token: ManagedToken) -> None:
        parent = await self._get(conn, token.parent, lock=True)  # a revocation of it waits for this one
        if parent is None:
            raise FailedPrecondition(f"parent: no managed token named {token.parent!r}")
        if parent.token.revoked_at is not None:
            raise FailedPrecondition(f"parent: token {token.parent!r} was revoked")
        expires = parent.token.expires_at
        if expires is not None and expires <= datetime.now(UTC):
            raise FailedPrecondition(f"parent: token {token.parent!r} expired at {expires.isoformat()}")
        if reason := wider_than(token.scope, parent.token.scope, token.parent):
            raise PermissionDenied(f"a child token may not be wider than its parent: {reason}")

    async def page(
        self, within: Sequence[str], include_revoked: bool, page_size: int, page_token: str
    ) -> tuple[list[ManagedToken], str]:
        """Tokens by name (only those :meth:`ManagedToken.within` ``within``, when given); with the next
        page's token. Filtered after reading, so a page may hold fewer than ``page_size``."""
        after = decode_page_token(PAGE_KIND, page_token)
        statement = sql.SQL(
            "SELECT {columns} FROM {table} WHERE name > %s AND (%s OR revoked_at IS NULL) "
            "ORDER BY name LIMIT %s"
        ).format(columns=_COLUMNS, table=self._table)
        async with self._connection() as conn:
            rows = await (
                await conn.execute(statement, (after.id if after else "", include_revoked, page_size + 1))
            ).fetchall()
        records = [_row(row).token for row in rows]
        following = ""
        if len(records) > page_size:
            records = records[:page_size]
            following = encode_page_token(PAGE_KIND, PageKey(_EPOCH, records[-1].name))
        return [t for t in records if not within or t.within(within)], following

    async def revoke(self, name: str, within: Sequence[str], actor: str) -> list[str]:
        """Revoke ``name`` and every token minted under it (NOT_FOUND when no such token; PERMISSION_DENIED
        unless it lies :meth:`ManagedToken.within` ``within``, when given); returns the names revoked now."""
        async with self._connection() as conn, conn.transaction():
            await self._lock(conn)
            target = await self._get(conn, name, lock=True)
            if target is None:
                raise NotFound(f"name: no managed token named {name!r}")
            if within and not target.token.within(within):
                raise PermissionDenied(
                    f"token {name!r} grants more than the banks this credential administers"
                )
            statement = sql.SQL(
                "WITH RECURSIVE tree (name) AS (SELECT %s::text UNION "
                "SELECT t.name FROM {table} t JOIN tree ON t.parent = tree.name) "
                "UPDATE {table} SET revoked_at = now(), version = nextval({versions}::regclass) "
                "WHERE name IN (SELECT name FROM tree) AND revoked_at IS NULL RETURNING {columns}"
            ).format(table=self._table, versions=self._versions, columns=_COLUMNS)
            rows = await (await conn.execute(statement, (name,))).fetchall()
            revoked = sorted((_row(row).token for row in rows), key=lambda t: t.name)
            entries = [
                _audited(REVOKE_ACTION, t, actor, under=name if t.name != name else "") for t in revoked
            ]
            await self._audit.write_audit(conn, entries)
        return [t.name for t in revoked]

    async def changes(self, after_version: int, limit: int) -> list[TokenRecord]:
        """Tokens changed after ``after_version``, oldest change first."""
        statement = sql.SQL(
            "SELECT {columns} FROM {table} WHERE version > %s ORDER BY version LIMIT %s"
        ).format(columns=_COLUMNS, table=self._table)
        async with self._connection() as conn:
            rows = await (await conn.execute(statement, (after_version, limit))).fetchall()
        return [_row(row) for row in rows]

    async def touch(self, uses: Sequence[tuple[str, datetime]]) -> int:
        """Move each named token's last use forward to the time given (never back); returns how many moved."""
        if not uses:
            return 0
        statement = sql.SQL(
            "UPDATE {table} t SET last_used_at = u.at "
            "FROM unnest(%s::text[], %s::timestamptz[]) AS u(name, at) "
            "WHERE t.name = u.name AND (t.last_used_at IS NULL OR t.last_used_at < u.at)"
        ).format(table=self._table)
        async with self._connection() as conn:
            cursor = await conn.execute(statement, ([n for n, _ in uses], [at for _, at in uses]))
        return cursor.rowcount


def _audited(action: str, token: ManagedToken, actor: str, **extra: Any) -> AuditEntry:
    details: dict[str, Any] = {
        "grants": [str(grant) for grant in token.grants],
        "admin": token.admin,
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
        "parent": token.parent,
    }
    details |= {key: value for key, value in extra.items() if value}
    banks = sorted({grant.bank for grant in token.grants})
    verb = "minted" if action == CREATE_ACTION else "revoked"
    under = f" with {extra['under']!r}" if extra.get("under") else ""
    return AuditEntry(
        action=action,
        actor=actor,
        bank_id=banks[0] if len(banks) == 1 else "",
        target=token.name,
        reason=f"token {token.name!r} {verb}{under}",
        details=details,
    ).filled()
