"""The parts of the operator commands that need no mesh: the export format, lesson checks, permissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.cli.doctor import check_permissions
from hindsight.cli.export.fileformat import Header
from hindsight.cli.export.load import Converter, check
from hindsight.cli.export_import import FORMAT, VERSION, ExportError, read_export
from hindsight.cli.status import store_sizes
from hindsight.contracts.reflect.v1 import reflect_pb2
from hindsight.reflect.servicer import lesson_from_pb
from hindsight.runtime.errors import InvalidArgument

HEADER = json.dumps({"format": FORMAT, "version": VERSION, "bank": "b", "exported_at": "now"})
END = json.dumps({"kind": "end", "counts": {"turn": 1}})


def _read(lines: list[str]) -> tuple[Header, list[dict[str, object]]]:
    header, records = read_export(lines)
    return header, [numbered.record for numbered in records]


def test_read_export_returns_the_header_and_records_and_skips_blank_lines() -> None:
    turn = json.dumps({"kind": "turn", "id": "t1", "text": "hello"})
    header, records = _read([HEADER, turn, "", "  ", END])
    assert header.bank == "b"
    assert records == [{"kind": "turn", "id": "t1", "text": "hello"}]


def test_a_version_1_file_reads_without_an_end_line() -> None:
    first = json.dumps({"format": FORMAT, "version": 1, "bank": "b"})
    _, records = _read([first, json.dumps({"kind": "lesson", "id": "l1"})])
    assert [record["id"] for record in records] == ["l1"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "the file is empty"),
        (["not json"], "line 1 is not JSON"),
        ([json.dumps({"format": "other"})], "line 1 is not a hindsight-export header"),
        ([json.dumps({"format": FORMAT, "version": 99, "bank": "b"})], "version 99 is not supported"),
        ([json.dumps({"format": FORMAT, "version": VERSION})], "the header has no bank"),
        ([HEADER, json.dumps({"kind": "song"})], "line 2: kind must be one of turn, episode, quarantined"),
        ([HEADER, "{broken"], "line 2 is not JSON"),
        ([HEADER, json.dumps({"kind": "turn", "id": "t1"})], "ends before its end line: it is incomplete"),
        ([HEADER, END], "the end line counts"),
        ([HEADER, json.dumps({"kind": "turn", "id": "t1"}), END, END], "line 4: a record after the end line"),
    ],
)
def test_read_export_names_what_is_wrong(lines: list[str], message: str) -> None:
    with pytest.raises(ExportError, match=message):
        _read(lines)


def test_the_check_before_an_import_names_the_line_a_layer_could_not_read() -> None:
    lines = [
        HEADER,
        json.dumps({"kind": "turn", "id": "t1", "text": "hello"}),
        json.dumps({"kind": "turn", "id": "t2", "meta": {"importance": "high"}}),
        json.dumps({"kind": "end", "counts": {"turn": 2}}),
    ]
    header, records = read_export(lines)
    with pytest.raises(ExportError, match=r"line 3 \(turn\).*importance"):
        check(header, records, "b")


def test_an_audit_entry_imported_into_another_bank_gets_its_own_stable_id() -> None:
    header, records = read_export(
        [HEADER, json.dumps({"kind": "audit", "id": "a1", "action": "reject"}), END.replace("turn", "audit")]
    )
    [numbered] = list(records)
    same = Converter(header, "b").item(numbered)
    other = Converter(header, "copy").item(numbered)
    assert (same.id, same.bank_id) == ("a1", "b")
    assert other.bank_id == "copy" and other.id not in ("", "a1")
    assert Converter(header, "copy").item(numbered).id == other.id


def _lesson(**fields: object) -> reflect_pb2.Lesson:
    base: dict[str, object] = {
        "id": "l1",
        "lesson": "Run the migration first.",
        "confidence": 0.7,
        "weight": 0.9,
        "hit_count": 3,
        "method": reflect_pb2.REFLECTION_METHOD_RULES,
        "stance": 1,
        "topic": "deploy",
    }
    return reflect_pb2.Lesson(**(base | fields))  # type: ignore[arg-type]


def test_an_imported_lesson_keeps_its_statistics_and_stance() -> None:
    lesson = lesson_from_pb(_lesson(), "lessons[0]")
    assert (lesson.id, lesson.hit_count, lesson.weight, lesson.stance, lesson.topic) == (
        "l1",
        3,
        0.9,
        1,
        "deploy",
    )
    assert lesson.created_at is None and lesson.archived_at is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"id": " "}, "lessons[0].id"),
        ({"lesson": ""}, "lessons[0].lesson"),
        ({"confidence": 1.5}, "lessons[0].confidence"),
        ({"weight": -0.1}, "lessons[0].weight"),
        ({"stance": 2}, "lessons[0].stance"),
        ({"method": reflect_pb2.REFLECTION_METHOD_UNSPECIFIED}, "lessons[0].method"),
    ],
)
def test_an_imported_lesson_with_a_bad_field_is_refused_naming_it(
    fields: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        lesson_from_pb(_lesson(**fields), "lessons[0]")
    assert field in str(caught.value)


def test_doctor_names_a_readable_credentials_file_and_an_open_home_with_their_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    credentials = home / "credentials.json"
    credentials.write_text("{}")
    credentials.chmod(0o600)
    assert check_permissions(home).ok
    credentials.chmod(0o644)
    home.chmod(0o755)
    check = check_permissions(home)
    assert not check.ok
    assert f"chmod 600 {credentials}" in check.fix and f"chmod 700 {home}" in check.fix


def test_store_sizes_count_the_files_of_each_embedded_store(tmp_path: Path) -> None:
    (tmp_path / "qdrant" / "collection").mkdir(parents=True)
    (tmp_path / "qdrant" / "collection" / "segment").write_bytes(b"x" * 1000)
    (tmp_path / "valkey").mkdir()
    sizes = store_sizes(tmp_path)
    assert sizes["postgres"] == 0 and sizes["valkey"] == 0
    assert sizes["qdrant"] >= 1000  # what the file occupies: whole blocks
