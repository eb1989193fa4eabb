"""The structured-output path end to end against the real local model: Qwen2.5-Coder 0.5B (Q4_K_M),
installed from requirements/llm-qwen05.txt, assembled and sha256-verified, served by llama.cpp's
OpenAI-compatible server on loopback. Outputs vary between runs: the tests check structure, not text."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight.reflect.domain import Episode, Method, Result
from hindsight.reflect.llm_reflect import LLMReflector
from hindsight.runtime.embedded import free_port
from hindsight.runtime.llm import LLMClient, LLMSettings
from hindsight.runtime.llm_local import MODELS, wait_until_healthy
from hindsight.runtime.records import RecordMeta
from hindsight.semantic.llm_extract import LLMExtractor
from hindsight.semantic.records import RecordKind, SemanticRecord

MODEL = "qwen2.5-coder-0.5b"
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
LLM_HOME: list[str] = []
"""The served model's home, for the test that checks what was assembled there."""


@pytest.fixture(scope="module")
async def local_llm(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """``python -m hindsight.runtime.llm_local`` serving the 0.5B model; yields its API base URL."""
    home = tmp_path_factory.mktemp("llm-home")
    LLM_HOME[:] = [str(home)]
    port = free_port()
    log_path = home / "llm.log"
    env = os.environ | {
        "HINDSIGHT_LLM_LOCAL_MODEL": MODEL,
        "HINDSIGHT_LLM_LOCAL_THREADS": "1",  # one thread stays fast when other work shares the CPUs
        "HINDSIGHT_LLM_LOCAL_CONTEXT": "2048",
    }
    with log_path.open("wb") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hindsight.runtime.llm_local", "--port", str(port), "--home", str(home),
            stdout=log_file, stderr=log_file, env=env,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        healthy = await wait_until_healthy(base, 120.0, lambda: process.returncode is None)
        assert healthy, log_path.read_text()[-3000:]
        yield f"{base}/v1"
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:  # still finishing a generation nobody waits for
                process.kill()
                await process.wait()


def _client(base_url: str) -> LLMClient:
    return LLMClient(LLMSettings(api_base=base_url, model=MODEL, timeout_seconds=120, backoff_seconds=0.1))


async def test_the_served_model_file_is_the_published_release(local_llm: str) -> None:
    model = MODELS[MODEL]
    home = Path(LLM_HOME[0])
    assert (home / "models" / model.filename).stat().st_size == model.size
    assert "local model assembled" in (home / "llm.log").read_text()


async def test_the_real_model_answers_with_json_that_fits_the_schema(local_llm: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["success", "failure"]},
            "cause": {"type": "string", "maxLength": 60},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 15}, "maxItems": 2},
        },
        "required": ["verdict", "cause", "confidence", "tags"],
    }
    client = _client(local_llm)
    try:
        answer = await client.complete_json(
            "classify",
            "You classify the outcome of a task. Answer only with JSON.",
            "The deploy failed: pip install timed out fetching packages.",
            schema,
            120,
        )
    finally:
        await client.close()
    assert answer["verdict"] in {"success", "failure"}
    assert isinstance(answer["cause"], str) and len(answer["cause"]) <= 60
    assert 0 <= answer["confidence"] <= 1
    assert len(answer["tags"]) <= 2
    assert client.usage["classify"].completion_tokens > 0


async def test_a_reflection_by_the_real_model_gives_well_formed_lessons_citing_the_episodes(
    local_llm: str,
) -> None:
    episodes = [
        Episode(
            id="ep-fail",
            task_type="deploy",
            situation="deploying the web app",
            action="ran pip install during the deploy",
            outcome="timed out fetching packages",
            result=Result.FAILURE,
            meta=RecordMeta(time=T0),
        ),
        Episode(
            id="ep-fix",
            task_type="deploy",
            situation="deploying the web app",
            action="installed from the local wheel cache",
            outcome="deployed",
            result=Result.SUCCESS,
            meta=RecordMeta(time=T0 + timedelta(minutes=5)),
        ),
    ]
    client = _client(local_llm)
    try:
        lessons = await LLMReflector(
            client, max_episodes=5, max_lessons=1, max_tokens=300, attempts=2
        ).reflect("bank-a", episodes)
    finally:
        await client.close()
    assert lessons, "the model gave no usable lesson in two attempts"
    for lesson in lessons:
        assert lesson.method is Method.LLM
        assert lesson.lesson.strip()
        assert set(lesson.source_episode_ids) <= {"ep-fail", "ep-fix"}
        assert 0.3 <= lesson.confidence <= 0.95
        assert lesson.stance in (1, -1)


async def test_facts_extracted_by_the_real_model_are_well_formed_and_cite_their_turns(local_llm: str) -> None:
    turns = [
        SemanticRecord(
            id="t1", text="My sister Beth just moved to Lisbon.", speaker="Alice", meta=RecordMeta(time=T0)
        ),
        SemanticRecord(
            id="t2",
            text="I work at a bakery and I love sourdough.",
            speaker="Alice",
            meta=RecordMeta(time=T0),
        ),
    ]
    client = _client(local_llm)
    try:
        found = await LLMExtractor(client, timeout_seconds=240).extract("bank-a", turns)
    finally:
        await client.close()
    assert found is not None, "the model gave no answer that fits the schema"
    for fact in found.facts:
        assert fact.meta.source_turn_ids in {("t1",), ("t2",)}
        assert fact.subject and fact.attribute and fact.value and fact.text
        assert fact.kind in {RecordKind.FACT, RecordKind.PREFERENCE, RecordKind.RULE}
        assert fact.id.startswith("fact-") and fact.valid_from == T0
