"""Grants by bank and operation: their text syntax (today's tokens files unchanged), expiry, the rule that a
minted token is never wider than its minter, and the one table that says which operation each edge call
needs (walked over every MemoryService method and every MCP tool, resource and prompt)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client

from hindsight.mcp_edge.engine import open_engine
from hindsight.mcp_edge.mcp_server import build_mcp_server
from hindsight.mcp_edge.settings import EdgeSettings
from hindsight.runtime.auth import Caller, Grants, parse_entries, token_digest
from hindsight.runtime.errors import InvalidArgument, PermissionDenied, Unauthenticated
from hindsight.runtime.operations import MCP_OPERATIONS, MEMORY_OPERATIONS, mcp_operation, method_operation
from hindsight.runtime.permissions import (
    ALL_OPERATIONS,
    DEFAULT_OPERATIONS,
    BankGrant,
    Operation,
    Scope,
    parse_expiry,
    wider_than,
)
from hindsight.runtime.roles import EDGE_ROLES, MEMORY_SERVICE
from hindsight.runtime.settings import SettingsError

R, W, F, A = Operation.READ, Operation.WRITE, Operation.FORGET, Operation.ADMIN
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_todays_tokens_file_syntax_keeps_its_meaning_and_a_grant_without_operations_reads_and_writes() -> (
    None
):
    grants = Grants(parse_entries(f"alpha=bank-a,bank-b;admin:root=*;sha256:{token_digest('hashed')}=bank-c"))
    alpha = grants.authenticate("alpha")
    assert alpha.banks == {"bank-a", "bank-b"} and not alpha.admin
    assert alpha.operations("bank-a") == DEFAULT_OPERATIONS and not alpha.may_use("bank-z")
    root = grants.authenticate("root")
    assert root.admin and root.operations("anything") == ALL_OPERATIONS
    assert grants.authenticate("hashed").operations("bank-c") == {R, W}


def test_operations_and_expiry_extend_an_entry() -> None:
    callers = parse_entries(
        "lead=team:read+write+forget+admin,*:read expires=2030-01-01T00:00:00Z\nbot=team:read  # a comment"
    )
    lead = callers[token_digest("lead")]
    assert lead.operations("team") == ALL_OPERATIONS and lead.operations("elsewhere") == {R}
    assert lead.expires_at == datetime(2030, 1, 1, tzinfo=UTC)
    bot = callers[token_digest("bot")]
    assert bot.operations("team") == {R} and bot.expires_at is None


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("t=bank-a:reed", "unknown operation 'reed'"),
        ("t=bank-a:read+delete", "unknown operation 'delete'"),
        ("t=bank-a expires=tomorrow", "ISO 8601"),
        ("admin:t=bank-a", "every bank"),
    ],
)
def test_a_bad_entry_is_refused_naming_what_is_wrong(spec: str, words: str) -> None:
    with pytest.raises(SettingsError, match=words):
        parse_entries(spec)


def test_a_bank_id_with_colons_keeps_them_and_takes_operations_after_the_last_one() -> None:
    assert BankGrant.parse("user:42") == BankGrant("user:42", DEFAULT_OPERATIONS)
    assert BankGrant.parse("team:alpha:read") == BankGrant("team:alpha", frozenset({R}))
    assert str(BankGrant.parse("b:forget+read")) == "b:read+forget"
    with pytest.raises(InvalidArgument, match="grant"):
        BankGrant.parse("bad bank")


def test_an_expired_static_token_is_refused_and_a_refusal_names_the_bank_and_the_operation() -> None:
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    grants = Grants(parse_entries(f"old=bank-a expires={past};live=bank-a:read"))
    with pytest.raises(Unauthenticated, match="expired"):
        grants.authenticate("old")
    with pytest.raises(PermissionDenied, match="'write' on bank 'bank-a'"):
        grants.check("live", "bank-a", W)


def test_expiry_is_a_duration_or_a_future_time() -> None:
    assert parse_expiry("7d", NOW) == NOW + timedelta(days=7)
    assert parse_expiry("12h", NOW) == NOW + timedelta(hours=12)
    assert parse_expiry("2030-01-01T00:00:00", NOW) == datetime(2030, 1, 1, tzinfo=UTC)
    for bad in ("0d", "soon", "2020-01-01T00:00:00Z"):
        with pytest.raises(InvalidArgument, match="expires"):
            parse_expiry(bad, NOW)


def test_a_minted_token_is_never_wider_than_its_minter() -> None:
    later = NOW + timedelta(days=1)
    lead = Scope((BankGrant("team", frozenset({R, W, A})),), expires_at=later)
    assert not wider_than(Scope((BankGrant("team", frozenset({R})),), expires_at=later), lead, "lead")
    assert "'forget'" in wider_than(
        Scope((BankGrant("team", frozenset({F})),), expires_at=later), lead, "lead"
    )
    assert "'admin'" in wider_than(
        Scope((BankGrant("other", frozenset({R})),), expires_at=later), lead, "lead"
    )
    assert "'admin'" in wider_than(Scope((BankGrant("*", frozenset({R})),), expires_at=later), lead, "lead")
    assert "expires" in wider_than(Scope((BankGrant("team", frozenset({R})),)), lead, "lead")
    assert "operator" in wider_than(Scope((), admin=True, expires_at=later), lead, "lead")
    operator = Caller(name="ops", admin=True).scope
    assert not wider_than(Scope((), admin=True), operator, "ops")


def test_every_memory_service_method_has_an_operation_and_a_role() -> None:
    methods = {method.name for method in MEMORY_SERVICE.methods}
    assert methods == set(MEMORY_OPERATIONS), "a MemoryService method is missing from the operations table"
    assert {path.rsplit("/", 1)[1] for path in EDGE_ROLES} == methods
    assert method_operation("/hindsight.memory.v1.MemoryService/Purge") is F
    assert method_operation("/hindsight.test.v1.Unknown/Call") is A  # none declared: the strictest


async def test_every_mcp_tool_resource_and_prompt_has_an_operation() -> None:
    async with open_engine(EdgeSettings()) as engine:  # nothing is called: channels connect on first use
        server = build_mcp_server(engine, Grants.off(), "bank-a")
        async with Client(server) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {"recall", "purge", "token_create"} <= tools and "recall_context" in prompts and templates
    named = tools | prompts | templates
    assert named <= set(MCP_OPERATIONS), f"no operation for {sorted(named - set(MCP_OPERATIONS))}"
    assert mcp_operation("resources/read", "hindsight://banks/bank-a/recent") is R
    assert mcp_operation("tools/call", "purge") is F and mcp_operation("tools/call", "made-up") is A
