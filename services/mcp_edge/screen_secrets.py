"""Secrets in a text (API keys of common formats, private key blocks, JWTs, bearer tokens, ``password=...``,
connection strings with a password, card numbers that pass the Luhn check), and their redaction.
"""

# ruff: noqa: RUF001  (Chinese cues use full-width punctuation on purpose)
from __future__ import annotations

import re
from collections.abc import Iterable

from hindsight.mcp_edge.screen_findings import REDACT, SECRET, Finding

_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key block",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)"
        ),
    ),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    (
        "AWS secret key",
        re.compile(r"(?i)\baws_?secret_?(?:access_?)?key\b\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b"),
    ),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("API key (sk-...)", re.compile(r"\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_]{20,}\b")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*")),
    (
        "connection string with a password",
        re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,100}:[^\s@/]{1,200}@[^\s/]+", re.IGNORECASE),
    ),
    (
        "password or secret value",
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passcode|pass_?phrase|secret|api[_-]?key|access[_-]?token|"
            r"auth[_-]?token|client[_-]?secret|private[_-]?key)\b\s*(?:[:=]|\bis\b)\s*"
            r"(?P<value>[\"']?[^\s\"',;]{4,}[\"']?)"
        ),
    ),
    (
        "password or secret value",
        re.compile(
            r"(?:密码|口令|密钥|秘钥|令牌|支付密码|登录密码)(?:是|为|：|:|=)\s*"
            r"(?P<value>[A-Za-z0-9!@#$%^&*._+\-=/]{4,})"
        ),
    ),
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9]|2))")
_CARD_LENGTHS = frozenset({13, 15, 16, 19})


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn check (card numbers do; most other numbers do not)."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _needs_digit_or_mark(value: str) -> bool:
    """``password is strong`` names no password; a value with a digit or a mark may be one."""
    return bool(re.search(r"[\d!@#$%^&*_+=/\\.-]", value))


def secrets(text: str, action: str = REDACT) -> list[Finding]:
    """Credentials and card numbers in ``text``, each with the action the bank's policy gives."""
    found: list[Finding] = []
    for name, pattern in _SECRET_PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if "value" in pattern.groupindex:
                value = match.group("value").strip("\"'").rstrip(".,;:!?)")
                said = re.search(r"\bis\s*$", text[match.start() : match.start("value")], re.IGNORECASE)
                if value.lower() in _NOT_SECRETS or (said and not _needs_digit_or_mark(value)):
                    continue
                raw = match.group("value")
                start = match.start("value")
                span = (start, start + len(raw.rstrip(".,;:!?)")))
            found.append(Finding(SECRET, f"{name} (redacted)", action, span))
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        if len(digits) in _CARD_LENGTHS and _CARD_PREFIX.match(digits) and luhn_ok(digits):
            found.append(Finding(SECRET, "card number (passes the Luhn check)", action, match.span()))
    return _merge_spans(found)


_NOT_SECRETS = frozenset({"none", "null", "empty", "unknown", "required", "optional", "hidden", "redacted"})


def _merge_spans(findings: list[Finding]) -> list[Finding]:
    """One finding per overlapping region (the first found names it)."""
    kept: list[Finding] = []
    for item in sorted(findings, key=lambda f: (f.span or (0, 0))[0]):
        if kept and item.span and kept[-1].span and item.span[0] < kept[-1].span[1]:
            last = kept[-1]
            if last.span is not None:
                kept[-1] = Finding(
                    last.kind, last.reason, last.action, (last.span[0], max(last.span[1], item.span[1]))
                )
            continue
        kept.append(item)
    return kept


def redact(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with each redacted finding's span replaced by a marker naming what was there."""
    spans = sorted((f.span, f.reason) for f in findings if f.action == REDACT and f.span is not None)
    out: list[str] = []
    position = 0
    for (start, end), reason in spans:
        if start < position:
            continue
        out.append(text[position:start])
        out.append(f"[redacted {reason.removesuffix(' (redacted)').split(' (')[0]}]")
        position = end
    out.append(text[position:])
    return "".join(out)
