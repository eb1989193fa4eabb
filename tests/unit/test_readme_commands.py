"""The README lists every `hindsight` command the parser offers, so a new command cannot go unmentioned."""

from __future__ import annotations

import argparse
from pathlib import Path

from hindsight.cli.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_command_table_names_every_command() -> None:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    table = [line for line in README.read_text().splitlines() if line.startswith("| `hindsight ")]
    listed = {cell.split()[1].rstrip("`") for line in table for cell in line.split("|")[1].split(",")}
    assert set(commands.choices) == listed
