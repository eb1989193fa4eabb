"""The LLM client every layer that can use one shares: OpenAI-compatible chat completions, JSON out.

One call, :meth:`LLMClient.complete_json`, asks for an answer constrained by a JSON schema
(``response_format`` of type ``json_schema``). Before it is sent, the schema gets caps on every string
length and list size it leaves open, so a small model cannot ramble into ``max_tokens``. The answer is
parsed and checked against the schema; a failed attempt (timeout, connection error, HTTP 429 or 5xx,
``finish_reason == "length"``, malformed JSON, an answer that breaks the schema) is retried with
exponential back-off, a cut-off answer with a larger token allowance. Every call logs its token usage.

The API key is sent only in the ``Authorization`` header and is scrubbed from every error message and
log line this module writes.

With no ``LLM_API_BASE`` configured, :func:`llm_from_settings` returns None and callers use their
deterministic method: the product works offline without any LLM.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2
import jsonschema

from hindsight.runtime.settings import SettingsError, env

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 1 << 20
"""Largest response body read from the server; anything larger is a failed attempt."""
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class LLMError(Exception):
    """The LLM gave no usable answer. The message never contains the API key."""


class LLMRejected(LLMError):
    """The server refused the request (4xx other than 408/409/429): retrying would not help."""


class LLMUnavailable(LLMError):
    """Every attempt failed (timeouts, overload, malformed or cut-off answers)."""


@dataclass(frozen=True)
class LLMSettings:
    """Which OpenAI-compatible endpoint to use, and how patiently."""

    api_base: str = env(
        "LLM_API_BASE", "", "Base URL of an OpenAI-compatible API (e.g. https://host/v1). Empty: no LLM."
    )
    api_key: str = env("LLM_API_KEY", "", "Bearer key for that API; never logged. Empty: none sent.")
    model: str = env("LLM_MODEL", "", "Model name for every operation without an override.")
    model_overrides: tuple[str, ...] = env(
        "LLM_MODEL_OVERRIDES", (), "Per-operation models, 'operation=model' comma-separated (e.g. reflect=x)."
    )
    timeout_seconds: float = env("LLM_TIMEOUT_SECONDS", 60.0, "Seconds one HTTP attempt may take.")
    max_retries: int = env("LLM_MAX_RETRIES", 3, "Attempts after the first one fails.")
    backoff_seconds: float = env(
        "LLM_BACKOFF_SECONDS", 0.5, "First back-off between attempts; doubles each time (with jitter)."
    )
    max_backoff_seconds: float = env("LLM_MAX_BACKOFF_SECONDS", 20.0, "Longest back-off between attempts.")
    max_tokens_cap: int = env("LLM_MAX_TOKENS_CAP", 4096, "Most completion tokens any retry may ask for.")
    max_string_chars: int = env(
        "LLM_MAX_STRING_CHARS", 600, "maxLength given to schema strings that set none."
    )
    max_list_items: int = env("LLM_MAX_LIST_ITEMS", 12, "maxItems given to schema lists that set none.")
    temperature: float = env("LLM_TEMPERATURE", 0.0, "Sampling temperature.")

    def __post_init__(self) -> None:
        if self.api_base and not self.api_base.startswith(("http://", "https://")):
            raise SettingsError("LLM_API_BASE must be an http:// or https:// URL")
        if self.api_base and not self.model:
            raise SettingsError("LLM_MODEL must be set when LLM_API_BASE is")
        for entry in self.model_overrides:
            operation, sep, model = entry.partition("=")
            if not sep or not operation.strip() or not model.strip():
                raise SettingsError("LLM_MODEL_OVERRIDES entries must look like 'operation=model'")
        if self.timeout_seconds <= 0 or self.max_retries < 0 or self.backoff_seconds < 0:
            raise SettingsError("LLM_TIMEOUT_SECONDS must be positive; retries and back-off not negative")
        if self.max_tokens_cap < 16 or self.max_string_chars < 1 or self.max_list_items < 1:
            raise SettingsError("LLM_MAX_TOKENS_CAP (>= 16) and the schema caps (>= 1) are too small")

    def model_for(self, operation: str) -> str:
        """The override for ``operation``, else the default model."""
        for entry in self.model_overrides:
            name, _, model = entry.partition("=")
            if name.strip() == operation:
                return model.strip()
        return self.model

    def __repr__(self) -> str:  # the key never reaches a log through a repr of the settings
        key = f"<{len(self.api_key)} chars>"
        return f"LLMSettings(api_base={self.api_base!r}, model={self.model!r}, api_key={key})"


def cap_schema(schema: Mapping[str, Any], max_string_chars: int, max_list_items: int) -> dict[str, Any]:
    """A copy of ``schema`` where every string has a ``maxLength`` and every array a ``maxItems``.

    Caps already present are kept (only lowered to the configured ones). Objects get
    ``additionalProperties: false`` unless they say otherwise, as strict structured output expects.
    """
    capped = copy.deepcopy(dict(schema))

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
            return
        if not isinstance(node, dict):
            return
        kinds = node.get("type")
        kinds = set(kinds) if isinstance(kinds, list) else {kinds}
        if "string" in kinds and "enum" not in node:
            node["maxLength"] = min(int(node.get("maxLength", max_string_chars)), max_string_chars)
        if "array" in kinds:
            node["maxItems"] = min(int(node.get("maxItems", max_list_items)), max_list_items)
        if "object" in kinds:
            node.setdefault("additionalProperties", False)
        for key in ("properties", "$defs", "definitions"):
            if isinstance(node.get(key), dict):
                for child in node[key].values():
                    visit(child)
        for key in ("items", "anyOf", "oneOf", "allOf"):
            if key in node:
                visit(node[key])

    visit(capped)
    return capped


@dataclass
class Usage:
    """Tokens spent, per operation, since the client was made."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Attempt(Exception):
    """One attempt failed in a way worth retrying; ``more_tokens`` when the answer was cut off."""

    def __init__(self, reason: str, more_tokens: bool = False, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.more_tokens = more_tokens
        self.retry_after = retry_after


@dataclass
class LLMClient:
    """Schema-constrained JSON answers from an OpenAI-compatible chat-completions endpoint."""

    settings: LLMSettings
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """How back-off waits; tests pass one that records instead of waiting."""
    usage: dict[str, Usage] = field(default_factory=dict)
    _http: httpx2.AsyncClient | None = None

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if self.settings.api_key:
                headers["Authorization"] = f"Bearer {self.settings.api_key}"
            self._http = httpx2.AsyncClient(
                headers=headers, timeout=self.settings.timeout_seconds, follow_redirects=False
            )
        return self._http

    def _scrub(self, text: str) -> str:
        key = self.settings.api_key
        return text.replace(key, "***") if key else text

    @property
    def url(self) -> str:
        """The chat-completions URL."""
        return self.settings.api_base.rstrip("/") + "/chat/completions"

    async def complete_json(
        self, operation: str, system: str, user: str, schema: Mapping[str, Any], max_tokens: int
    ) -> dict[str, Any]:
        """The model's answer to (``system``, ``user``) as a JSON object valid under ``schema``.

        ``operation`` names the task (it picks the model override and labels the logs). Raises
        :class:`LLMRejected` when the server refuses the request, :class:`LLMUnavailable` when every
        attempt failed.
        """
        capped = cap_schema(schema, self.settings.max_string_chars, self.settings.max_list_items)
        validator = jsonschema.Draft202012Validator(capped)
        model = self.settings.model_for(operation)
        tokens = max(16, min(max_tokens, self.settings.max_tokens_cap))
        started = time.monotonic()
        reasons: list[str] = []
        retry_after: float | None = None
        for attempt in range(self.settings.max_retries + 1):
            if attempt:
                await self.sleep(self._backoff(attempt, retry_after))
            retry_after = None
            body = {
                "model": model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": tokens,
                "temperature": self.settings.temperature,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(operation), "strict": True, "schema": capped},
                },
            }
            try:
                answer = await self._attempt(operation, model, body, validator)
            except _Attempt as failure:
                reasons.append(failure.reason)
                retry_after = failure.retry_after
                log.warning(
                    "llm attempt failed",
                    extra={
                        "operation": operation,
                        "model": model,
                        "attempt": attempt + 1,
                        "reason": failure.reason,
                    },
                )
                if failure.more_tokens:
                    tokens = min(self.settings.max_tokens_cap, tokens * 2)
                continue
            log.info(
                "llm call",
                extra={
                    "operation": operation,
                    "model": model,
                    "attempts": attempt + 1,
                    "seconds": round(time.monotonic() - started, 3),
                    "usage": vars(self.usage[operation]),
                },
            )
            return answer
        raise LLMUnavailable(
            self._scrub(f"{operation}: no valid answer after {len(reasons)} attempts: {'; '.join(reasons)}")
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        base = self.settings.backoff_seconds * (2 ** (attempt - 1))
        wait = base * (0.5 + random.random() / 2)  # jitter: replicas do not retry in step
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.settings.max_backoff_seconds)

    async def _attempt(
        self, operation: str, model: str, body: dict[str, Any], validator: jsonschema.Draft202012Validator
    ) -> dict[str, Any]:
        try:
            async with self._client().stream("POST", self.url, json=body) as response:
                raw = bytearray()
                async for chunk in response.aiter_bytes():
                    raw.extend(chunk)
                    if len(raw) > MAX_RESPONSE_BYTES:
                        raise _Attempt(f"response larger than {MAX_RESPONSE_BYTES} bytes")
        except httpx2.TimeoutException:
            raise _Attempt(f"timed out after {self.settings.timeout_seconds}s") from None
        except httpx2.HTTPError as exc:
            raise _Attempt(self._scrub(f"HTTP error: {type(exc).__name__}")) from None
        status = response.status_code
        if status in RETRYABLE_STATUS or status >= 500:
            raise _Attempt(f"HTTP {status}", retry_after=_retry_after(response.headers.get("retry-after")))
        if status >= 400:
            detail = self._scrub(bytes(raw[:300]).decode("utf-8", "replace"))
            raise LLMRejected(f"{operation}: HTTP {status} from the LLM endpoint: {detail}")
        try:
            reply = json.loads(raw)
            choice = reply["choices"][0]
            content = choice["message"]["content"]
            finish = choice.get("finish_reason")
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Attempt("not a chat-completions response") from None
        self._account(operation, reply.get("usage"))
        if finish == "length":
            raise _Attempt(f"answer cut off at max_tokens={body['max_tokens']}", more_tokens=True)
        if not isinstance(content, str):
            raise _Attempt("answer has no text content")
        try:
            answer = json.loads(_strip_fences(content))
        except ValueError:
            raise _Attempt("answer is not valid JSON") from None
        if not isinstance(answer, dict):
            raise _Attempt("answer is not a JSON object")
        error = jsonschema.exceptions.best_match(validator.iter_errors(answer))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "(root)"
            raise _Attempt(f"answer breaks the schema at {where}: {error.validator}")
        return answer

    def _account(self, operation: str, usage: Any) -> None:
        totals = self.usage.setdefault(operation, Usage())
        totals.calls += 1
        if isinstance(usage, dict):
            totals.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            totals.completion_tokens += int(usage.get("completion_tokens") or 0)

    async def close(self) -> None:
        """Close the HTTP connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _schema_name(operation: str) -> str:
    """A name OpenAI accepts for the schema: letters, digits, '_' and '-', at most 64."""
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in operation)[:64]
    return name or "answer"


def _strip_fences(text: str) -> str:
    """Some models wrap JSON in a Markdown code fence even when asked not to."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.removesuffix("```").strip()
    return stripped


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def llm_from_settings(settings: LLMSettings) -> LLMClient | None:
    """A client for the configured endpoint, or None when no LLM is configured."""
    if not settings.api_base:
        return None
    return LLMClient(settings)
