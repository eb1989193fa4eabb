"""The LLM client against the protocol-faithful test server: retries, caps, accounting, key hygiene."""

from __future__ import annotations

import logging

import pytest

from hindsight.runtime.llm import (
    LLMClient,
    LLMRejected,
    LLMSettings,
    LLMUnavailable,
    cap_schema,
    llm_from_settings,
)
from hindsight.runtime.settings import SettingsError, load
from tests.llm_test_server import Reply, openai_test_server

KEY = "sk-test-secret-key-123"
SCHEMA = {
    "type": "object",
    "properties": {"lesson": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["lesson", "tags"],
}
GOOD = {"lesson": "retry with a smaller batch", "tags": ["batch"]}


def _client(base_url: str, **overrides: object) -> tuple[LLMClient, list[float]]:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    values: dict[str, object] = {
        "api_base": base_url,
        "api_key": KEY,
        "model": "small",
        "timeout_seconds": 2.0,
    }
    values.update(overrides)
    return LLMClient(LLMSettings(**values), sleep=record), waits  # type: ignore[arg-type]


def test_no_llm_is_configured_by_default() -> None:
    assert llm_from_settings(load(LLMSettings, {})) is None


def test_settings_read_the_environment_and_overrides_pick_the_model() -> None:
    settings = load(
        LLMSettings,
        {"LLM_API_BASE": "http://x/v1", "LLM_MODEL": "m", "LLM_MODEL_OVERRIDES": "reflect=big, summary=tiny"},
    )
    assert settings.model_for("reflect") == "big"
    assert settings.model_for("summary") == "tiny"
    assert settings.model_for("extract") == "m"
    assert llm_from_settings(settings) is not None


def test_settings_reject_a_base_without_a_model_and_never_show_the_key() -> None:
    with pytest.raises(SettingsError):
        LLMSettings(api_base="http://x/v1")
    assert KEY not in repr(LLMSettings(api_base="http://x/v1", model="m", api_key=KEY))


def test_schema_caps_every_open_string_and_list() -> None:
    capped = cap_schema(SCHEMA, max_string_chars=100, max_list_items=5)
    assert capped["properties"]["lesson"]["maxLength"] == 100
    assert capped["properties"]["tags"]["maxItems"] == 5
    assert capped["properties"]["tags"]["items"]["maxLength"] == 100
    assert capped["additionalProperties"] is False
    assert "maxLength" not in SCHEMA["properties"]["lesson"]  # type: ignore[index]


async def test_a_valid_answer_is_returned_with_the_schema_and_key_sent() -> None:
    async with openai_test_server() as server:
        server.script(Reply(GOOD))
        client, _ = _client(server.base_url)
        answer = await client.complete_json("reflect", "system text", "user text", SCHEMA, 200)
        await client.close()
    assert answer == GOOD
    sent = server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["response_format"]["type"] == "json_schema"
    assert sent.body["response_format"]["json_schema"]["schema"]["properties"]["lesson"]["maxLength"] == 600
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert client.usage["reflect"].prompt_tokens == 50
    assert client.usage["reflect"].completion_tokens == 20


async def test_malformed_json_and_schema_breaks_are_retried() -> None:
    async with openai_test_server() as server:
        server.script(Reply("{not json"), Reply({"lesson": 3}), Reply(GOOD))
        client, waits = _client(server.base_url)
        answer = await client.complete_json("reflect", "s", "u", SCHEMA, 200)
        await client.close()
    assert answer == GOOD
    assert len(server.requests) == 3
    assert len(waits) == 2 and waits[1] > waits[0] * 0.9 / 2  # back-off grows (with jitter)


async def test_a_malformed_response_body_is_retried() -> None:
    async with openai_test_server() as server:
        server.script(Reply(raw_body=b"<html>gateway</html>"), Reply(GOOD))
        client, _ = _client(server.base_url)
        assert await client.complete_json("reflect", "s", "u", SCHEMA, 200) == GOOD
        await client.close()


async def test_429_and_5xx_are_retried_honouring_retry_after() -> None:
    async with openai_test_server() as server:
        server.script(Reply(status=429, headers=(("Retry-After", "3"),)), Reply(status=503), Reply(GOOD))
        client, waits = _client(server.base_url)
        assert await client.complete_json("reflect", "s", "u", SCHEMA, 200) == GOOD
        await client.close()
    assert waits[0] == 3.0


async def test_a_cut_off_answer_is_retried_with_more_tokens() -> None:
    async with openai_test_server() as server:
        server.script(Reply('{"lesson": "trunc', finish_reason="length"), Reply(GOOD))
        client, _ = _client(server.base_url)
        assert await client.complete_json("reflect", "s", "u", SCHEMA, 100) == GOOD
        await client.close()
    assert [r.body["max_tokens"] for r in server.requests] == [100, 200]


async def test_a_timeout_is_retried_then_reported_without_the_key() -> None:
    async with openai_test_server() as server:
        server.script(Reply(hang=True), Reply(hang=True))
        client, _ = _client(server.base_url, timeout_seconds=0.2, max_retries=1)
        with pytest.raises(LLMUnavailable) as caught:
            await client.complete_json("reflect", "s", "u", SCHEMA, 100)
        await client.close()
    assert "timed out" in str(caught.value)
    assert KEY not in str(caught.value)


async def test_a_refused_request_fails_at_once_and_the_key_never_reaches_errors_or_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with openai_test_server() as server:
        server.script(Reply(status=401, raw_body=f'{{"error": "bad key {KEY}"}}'.encode()))
        client, _ = _client(server.base_url)
        with pytest.raises(LLMRejected) as caught:
            await client.complete_json("reflect", "s", "u", SCHEMA, 100)
        await client.close()
    assert len(server.requests) == 1
    assert KEY not in str(caught.value)
    assert KEY not in caplog.text


async def test_token_usage_is_logged_per_call(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hindsight.runtime.llm")
    async with openai_test_server() as server:
        server.script(Reply(GOOD, prompt_tokens=7, completion_tokens=3))
        client, _ = _client(server.base_url)
        await client.complete_json("summary", "s", "u", SCHEMA, 100)
        await client.close()
    record = next(r for r in caplog.records if r.getMessage() == "llm call")
    assert record.operation == "summary"  # type: ignore[attr-defined]
    assert record.usage == {"calls": 1, "prompt_tokens": 7, "completion_tokens": 3}  # type: ignore[attr-defined]
