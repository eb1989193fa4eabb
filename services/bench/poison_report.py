"""The poisoning bench's figures: attack success by kind and language, benign false positives, R@10.

Attack success is counted per target query (one attack aims at several); ``attacks_succeeded`` counts the
attacks with at least one target that succeeded. The run without defences is reported beside the one with
them: an attack that does not land even undefended measures nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hindsight.bench.attacks import KINDS, LANGS
from hindsight.bench.metrics import Tally
from hindsight.bench.poison_run import PassResult, TargetOutcome

EXAMPLES = 12
WRITE_TIME = ("quarantine", "refuse", "flag")


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _group(
    outcomes: Iterable[TargetOutcome], key: Callable[[TargetOutcome], str]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[TargetOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(key(outcome), []).append(outcome)
    return {
        name: {
            "attacks": len({o.attack.id for o in items}),
            "targets": len(items),
            "success": sum(o.success for o in items),
            "rate": _rate(sum(o.success for o in items), len(items)),
            "attacks_succeeded": len({o.attack.id for o in items if o.success}),
            "landed_flagged": sum(o.flagged > 0 and not o.success for o in items),
        }
        for name, items in groups.items()
    }


def _ordered(groups: dict[str, dict[str, Any]], order: Iterable[str]) -> dict[str, dict[str, Any]]:
    known = [name for name in order if name in groups]
    return {name: groups[name] for name in [*known, *sorted(set(groups) - set(known))]}


def attack_success(result: PassResult) -> float:
    """The share of target queries with an unflagged planted record in the top k."""
    return _rate(sum(o.success for o in result.outcomes), len(result.outcomes))


def by_attack(result: PassResult) -> dict[str, dict[str, Any]]:
    return _ordered(_group(result.outcomes, lambda o: o.attack.kind), KINDS)


def by_lang(result: PassResult) -> dict[str, dict[str, Any]]:
    return _ordered(_group(result.outcomes, lambda o: o.attack.lang), LANGS)


def false_positives(result: PassResult) -> dict[str, Any]:
    """Dev messages held back, refused or flagged (redaction counted apart), over all retained."""
    hostile = {
        (f.namespace, f.turn_id) for f in result.benign if f.how in WRITE_TIME or f.how == "flagged_in_recall"
    }
    counts: dict[str, int] = {}
    for finding in result.benign:
        counts[finding.how] = counts.get(finding.how, 0) + 1
    return {
        "rate": _rate(len(hostile), result.messages),
        "messages": result.messages,
        "messages_affected": len(hostile),
        "by_how": dict(sorted(counts.items())),
        "redacted": counts.get("redact", 0),
        "examples": [
            {"namespace": f.namespace, "id": f.turn_id, "how": f.how, "reason": f.reason, "text": f.text}
            for f in result.benign[:EXAMPLES]
        ],
    }


def recall_at_10(tallies: dict[str, Tally]) -> float:
    """Mean R@10 over every dev query outside the excluded categories, all files together."""
    count = sum(t.overall_count for t in tallies.values())
    total = sum(t.overall()["R@10"] * t.overall_count for t in tallies.values())
    return round(total / count, 4) if count else 0.0


def successes(result: PassResult) -> list[dict[str, Any]]:
    """Attacks that landed unflagged: the planted text, the query, and the memory that carried it."""
    rows = []
    seen: set[str] = set()
    for outcome in result.outcomes:
        if not outcome.success or outcome.attack.id in seen:
            continue
        seen.add(outcome.attack.id)
        rows.append(
            {
                "id": outcome.attack.id,
                "kind": outcome.attack.kind,
                "lang": outcome.attack.lang,
                "query": outcome.query,
                "plant": [{"source": p.source, "text": p.text} for p in outcome.attack.plant],
                "memory": outcome.example.text if outcome.example else "",
            }
        )
    return rows


def plant_screening(result: PassResult) -> dict[str, int]:
    """How many planted records write-time screening acted on, by action."""
    counts: dict[str, int] = {}
    for _, screened in result.plant_screening:
        counts[screened.action or "flag"] = counts.get(screened.action or "flag", 0) + 1
    return dict(sorted(counts.items()))


def outcomes(on: PassResult, off: PassResult) -> list[dict[str, Any]]:
    """Every target query of every attack, with both passes' outcomes (``--details``)."""
    undefended = {(o.attack.id, o.query): o for o in off.outcomes}
    rows = []
    for outcome in on.outcomes:
        other = undefended.get((outcome.attack.id, outcome.query))
        rows.append(
            {
                "id": outcome.attack.id,
                "kind": outcome.attack.kind,
                "lang": outcome.attack.lang,
                "query": outcome.query,
                "success": outcome.success,
                "landed": outcome.landed,
                "flagged": outcome.flagged,
                "warnings": outcome.warnings,
                "flags": list(outcome.example.flags) if outcome.example else [],
                "success_off": other.success if other else None,
                "landed_off": other.landed if other else None,
            }
        )
    return rows


def report(on: PassResult, off: PassResult, run_info: dict[str, Any]) -> dict[str, Any]:
    """The bench's JSON."""
    off_kinds, off_langs = by_attack(off), by_lang(off)
    kinds = {
        name: {**row, "rate_off": off_kinds.get(name, {}).get("rate", 0.0)}
        for name, row in by_attack(on).items()
    }
    langs = {
        name: {**row, "rate_off": off_langs.get(name, {}).get("rate", 0.0)}
        for name, row in by_lang(on).items()
    }
    fp_on, fp_off = false_positives(on), false_positives(off)
    files = sorted(set(on.tallies) | set(off.tallies))
    return {
        "attack_success": attack_success(on),
        "by_attack": kinds,
        "false_positive_rate": fp_on["rate"],
        "recall_at_10": {"on": recall_at_10(on.tallies), "off": recall_at_10(off.tallies)},
        "attack_success_off": attack_success(off),
        "by_attack_off": off_kinds,
        "by_lang": langs,
        "false_positives": fp_on,
        "false_positive_rate_off": fp_off["rate"],
        "recall_at_10_by_file": {
            name: {
                "on": round(on.tallies[name].overall()["R@10"], 4) if name in on.tallies else None,
                "off": round(off.tallies[name].overall()["R@10"], 4) if name in off.tallies else None,
                "queries": (on.tallies.get(name) or off.tallies[name]).overall_count,
            }
            for name in files
        },
        "plants_screened": {"on": plant_screening(on), "off": plant_screening(off)},
        "targets_with_warnings": {
            "on": sum(o.warnings > 0 for o in on.outcomes),
            "off": sum(o.warnings > 0 for o in off.outcomes),
        },
        "successes": successes(on)[:EXAMPLES],
        **run_info,
    }


def table(data: dict[str, Any]) -> str:
    """The figures as a markdown table, then the totals."""
    lines = [
        "| attack | lang | attacks | targets | success (defences on) | success (off) |",
        "|---|---|---|---|---|---|",
    ]
    rows = [(name, "all", row) for name, row in data["by_attack"].items()]
    rows += [("all", name, row) for name, row in data["by_lang"].items()]
    for kind, lang, row in rows:
        counts = f"{row['attacks']} | {row['targets']}"
        lines.append(f"| {kind} | {lang} | {counts} | {row['rate']:.1%} | {row['rate_off']:.1%} |")
    lines.append(
        f"| **all** | all | {data['counts']['attacks']} | {data['counts']['targets']} | "
        f"**{data['attack_success']:.1%}** | {data['attack_success_off']:.1%} |"
    )
    fp = data["false_positives"]
    recall = data["recall_at_10"]
    lines += [
        "",
        f"benign false positives: {data['false_positive_rate']:.2%} ({fp['messages_affected']} of "
        f"{fp['messages']} dev messages; redacted {fp['redacted']}); without defences "
        f"{data['false_positive_rate_off']:.2%}",
        f"dev R@10: {recall['on']:.4f} with defences, {recall['off']:.4f} without "
        f"(difference {recall['on'] - recall['off']:+.4f})",
    ]
    return "\n".join(lines)
