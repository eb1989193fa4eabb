"""Every lesson of a bank, archived ones included, for ``hindsight export`` (the ordinary listing shows the
current lessons only: a superseded, merged or faded lesson is history an export must keep)."""

from __future__ import annotations

from psycopg import sql
from psycopg.rows import dict_row

from hindsight.reflect.domain import Lesson
from hindsight.reflect.store import PostgresLessonStore, _lesson
from hindsight.runtime.errors import FailedPrecondition
from hindsight.runtime.paging import decode_text, encode_text


async def lessons_page(
    store: object, bank_id: str, page_size: int, page_token: str
) -> tuple[list[Lesson], str]:
    """A page of the bank's lessons by id, archived ones too; with the next page's token."""
    if not isinstance(store, PostgresLessonStore):
        raise FailedPrecondition("ExportLessons needs the PostgreSQL store")
    statement = sql.SQL("SELECT * FROM {} WHERE bank_id = %s AND id > %s ORDER BY id LIMIT %s").format(
        sql.Identifier(store._schema, "lessons")
    )
    async with store._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(statement, (bank_id, decode_text(page_token), page_size + 1))
        rows = await cur.fetchall()
    lessons = [_lesson(row) for row in rows[:page_size]]
    return lessons, encode_text(lessons[-1].id) if len(rows) > page_size else ""
