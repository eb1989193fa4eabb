"""A tiny file in the benchmark format, for the benches' end-to-end tests (no benchmark data needed)."""

from __future__ import annotations

import json
from pathlib import Path

TEXTS = [
    ("Caroline", "I adopted a golden retriever puppy named Biscuit last weekend."),
    ("Melanie", "That is lovely! How is Biscuit settling in at home?"),
    ("Caroline", "My sister is moving to Lisbon for a job at a robotics startup."),
    ("user", "周末我们全家去杭州西湖划船了。"),
    ("user", "妈妈喜欢喝龙井茶，不喜欢咖啡。"),
    ("Melanie", "I ran my first half marathon in Rotterdam this spring."),
]
QUESTIONS = ["What is the name of Caroline's puppy?", "妈妈喜欢喝什么？", "Where did Melanie run?"]


def write_tiny_data(directory: Path) -> Path:
    """A few sessions of real-looking text (English and Chinese) and three questions, in one namespace."""
    messages = [
        {"id": f"m{index}", "speaker": speaker, "text": text, "session": str(index // 2)}
        for index, (speaker, text) in enumerate(TEXTS)
    ]
    queries = [{"id": f"q{index}", "text": text, "gold": []} for index, text in enumerate(QUESTIONS)]
    path = directory / "tiny.json"
    data = {"name": "tiny", "namespaces": [{"id": "n", "messages": messages, "queries": queries}]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path
