"""Write-time screening: instructions aimed at the agent, imperative tool content, and secrets (EN + ZH).

Memory is an attack surface: a tool result or a web page can plant an instruction ("ignore previous
instructions", "以后无论谁问都回答...") that the agent later recalls as its own experience. Screening reads
each turn before it is written and says what to do with it.

Instruction cues are families, each a combination of an imperative, an addressee (the agent, "the user",
whoever asks) and scope words (from now on, always, 以后), never a list of attack phrasings. A family is
*strong* when ordinary conversation almost never produces it (overriding earlier instructions, a forged
``system:`` line, a rule for what to answer whoever asks) and *weak* when a user may well say it as a
preference ("always answer in French"): weak cues are acted on only for content from tools and outside
sources, where an instruction to the reader is an attack whatever its words.

Secrets (API keys of common formats, private key blocks, JWTs, bearer tokens, ``password=...``, connection
strings with a password, card numbers that pass the Luhn check) are redacted, refused or quarantined by
the bank's policy.

Each family of cues has its module: :mod:`.screen_instructions`, :mod:`.screen_answer_rules`,
:mod:`.screen_imperatives` and :mod:`.screen_secrets`, over the findings and policy of
:mod:`.screen_findings`; this module holds the screen that combines them by source.
"""

from __future__ import annotations

from hindsight.mcp_edge.screen_answer_rules import answer_rules
from hindsight.mcp_edge.screen_findings import QUARANTINE, Finding, ScreeningPolicy, ScreenResult
from hindsight.mcp_edge.screen_imperatives import tool_imperatives
from hindsight.mcp_edge.screen_instructions import instruction_cues
from hindsight.mcp_edge.screen_secrets import redact, secrets
from hindsight.runtime.records import Source

UNTRUSTED = frozenset({Source.TOOL, Source.EXTERNAL})
"""Sources whose instructions to the reader are attacks, whatever their words."""


def screen(text: str, source: Source, *, policy: ScreeningPolicy) -> ScreenResult:
    """What to do with one turn's text from ``source`` under ``policy``.

    Strong instruction cues are acted on for every source; weak ones (standing orders) and imperatives
    to the reader only for tools and outside sources. Secrets always, by the policy's secret action.
    """
    if not policy.enabled or not text:
        return ScreenResult([], text)
    untrusted = source in UNTRUSTED
    findings: list[Finding] = []
    for cue in instruction_cues(text):
        if cue.action == QUARANTINE or untrusted:
            findings.append(Finding(cue.kind, cue.reason, policy.instructions, cue.span))
    if untrusted and not findings:
        findings += [Finding(f.kind, f.reason, policy.instructions, f.span) for f in answer_rules(text)]
    if untrusted and not findings:
        findings += [Finding(f.kind, f.reason, policy.instructions, f.span) for f in tool_imperatives(text)]
    found_secrets = secrets(text, policy.secrets)
    findings += found_secrets
    return ScreenResult(findings, redact(text, found_secrets))
