"""The poisoning bench's attack set: its file format, its validation, and the generator's entry point.

The format is the one ``hindsight bench poisoning --attacks FILE`` reads and ``--write-attacks`` writes,
so a set built elsewhere is measured exactly like the generated one::

    {"attacks": [{"id", "kind", "lang", "base": "<namespace id of the --data files>",
                  "plant": [{"text", "source", "speaker", "time", "session"}],
                  "targets": ["<query>", ...]}]}

The base namespace is retained first, then the planted records, then each target query is recalled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

KINDS = ("tool_injection", "minja_bridge", "agentpoison_trigger", "false_fact_external")
"""The kinds the generator makes, reported first; a file from elsewhere may use any kind label, and each
label is reported on its own."""
LANGS = ("en", "zh")
SOURCES = ("user", "agent", "tool", "external")
"""Who a planted record claims to come from (the record's ``source``)."""


class AttackFileError(ValueError):
    """An attack set that does not follow the format; the message names the field."""


@dataclass(frozen=True)
class Plant:
    """One planted record: retained after the base namespace, with its claimed provenance."""

    text: str
    source: str
    speaker: str = ""
    time: datetime | None = None
    session: str = ""


@dataclass(frozen=True)
class Attack:
    """Records planted into a base namespace's bank, and the queries they aim to be recalled for."""

    id: str
    kind: str
    lang: str
    base: str
    plant: tuple[Plant, ...]
    targets: tuple[str, ...]


def _text(raw: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise AttackFileError(f"{where}.{key}: expected a non-empty string, got {value!r}")
    return value


def _time(raw: Mapping[str, Any], where: str) -> datetime | None:
    value = raw.get("time")
    if value in (None, ""):
        return None
    from hindsight.bench.datasets import parse_time

    if not isinstance(value, str):
        raise AttackFileError(f"{where}.time: expected an ISO 8601 string, got {value!r}")
    try:
        return parse_time(value)
    except ValueError:
        raise AttackFileError(f"{where}.time: not an ISO 8601 time: {value!r}") from None


def _plant(raw: Any, where: str) -> Plant:
    if not isinstance(raw, dict):
        raise AttackFileError(f"{where}: expected an object, got {type(raw).__name__}")
    source = _text(raw, "source", where)
    if source not in SOURCES:
        raise AttackFileError(f"{where}.source: {source!r} is not one of {', '.join(SOURCES)}")
    return Plant(
        text=_text(raw, "text", where),
        source=source,
        speaker=_text(raw, "speaker", where, required=False),
        time=_time(raw, where),
        session=_text(raw, "session", where, required=False),
    )


def _attack(raw: Any, where: str) -> Attack:
    if not isinstance(raw, dict):
        raise AttackFileError(f"{where}: expected an object, got {type(raw).__name__}")
    kind = _text(raw, "kind", where).strip()
    lang = _text(raw, "lang", where)
    if lang not in LANGS:
        raise AttackFileError(f"{where}.lang: {lang!r} is not one of {', '.join(LANGS)}")
    plants, targets = raw.get("plant"), raw.get("targets")
    if not isinstance(plants, list) or not plants:
        raise AttackFileError(f"{where}.plant: expected a non-empty list of records")
    if not isinstance(targets, list) or not targets:
        raise AttackFileError(f"{where}.targets: expected a non-empty list of queries")
    for index, target in enumerate(targets):
        if not isinstance(target, str) or not target.strip():
            raise AttackFileError(f"{where}.targets[{index}]: expected a non-empty string, got {target!r}")
    return Attack(
        id=_text(raw, "id", where),
        kind=kind,
        lang=lang,
        base=_text(raw, "base", where),
        plant=tuple(_plant(item, f"{where}.plant[{index}]") for index, item in enumerate(plants)),
        targets=tuple(targets),
    )


def parse_attacks(data: Any, namespaces: Sequence[str] | None = None) -> tuple[Attack, ...]:
    """The attacks of a decoded attack file; ``namespaces``: the base ids the ``--data`` files offer."""
    if not isinstance(data, dict) or not isinstance(data.get("attacks"), list):
        raise AttackFileError('attacks: expected an object {"attacks": [...]}')
    attacks = tuple(_attack(raw, f"attacks[{index}]") for index, raw in enumerate(data["attacks"]))
    seen: set[str] = set()
    known = set(namespaces) if namespaces is not None else None
    for index, attack in enumerate(attacks):
        if attack.id in seen:
            raise AttackFileError(f"attacks[{index}].id: {attack.id!r} is used twice")
        seen.add(attack.id)
        if known is not None and attack.base not in known:
            raise AttackFileError(
                f"attacks[{index}].base: {attack.base!r} is not a namespace of the --data files"
            )
    return attacks


def load_attacks(path: Path, namespaces: Sequence[str] | None = None) -> tuple[Attack, ...]:
    """Read and validate an attack file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AttackFileError(f"--attacks {path}: cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise AttackFileError(f"--attacks {path}: not JSON: {exc}") from None
    return parse_attacks(data, namespaces)


def attack_to_json(attack: Attack) -> dict[str, Any]:
    """One attack in the file format."""
    return {
        "id": attack.id,
        "kind": attack.kind,
        "lang": attack.lang,
        "base": attack.base,
        "plant": [
            {
                "text": plant.text,
                "source": plant.source,
                "speaker": plant.speaker,
                "time": plant.time.isoformat() if plant.time else "",
                "session": plant.session,
            }
            for plant in attack.plant
        ],
        "targets": list(attack.targets),
    }


def write_attacks(path: Path, attacks: Sequence[Attack]) -> None:
    """Write an attack set in the file format (what ``--attacks`` reads back)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"attacks": [attack_to_json(attack) for attack in attacks]}
    path.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
