"""The command line of the LLM option and of ``hindsight maintain``."""

from __future__ import annotations

import pytest

from hindsight.cli.main import build_parser


def test_up_takes_the_local_llm_option_and_defaults_to_none() -> None:
    parser = build_parser()
    assert parser.parse_args(["up", "--llm", "local"]).llm == "local"
    assert parser.parse_args(["up"]).llm is None
    with pytest.raises(SystemExit):
        parser.parse_args(["up", "--llm", "cloud"])


def test_maintain_takes_banks_and_an_address() -> None:
    args = build_parser().parse_args(["maintain", "--bank", "a", "--bank", "b", "--address", "127.0.0.1:9"])
    assert (args.bank, args.address, args.json) == (["a", "b"], "127.0.0.1:9", False)


def test_maintain_without_a_mesh_or_address_says_so(tmp_path, capsys) -> None:
    args = build_parser().parse_args(["maintain", "--home", str(tmp_path)])
    with pytest.raises(SystemExit, match="no running mesh"):
        args.run(args)
