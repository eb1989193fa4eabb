"""``hindsight mcp --print-config CLIENT``: each client's block in its documented shape, with this
installation's executable and home, and the running mesh's URL and token (or a placeholder and a warning)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from hindsight.cli.client_config import (
    CLIENTS,
    DEFAULT_MCP_URL,
    TOKEN_PLACEHOLDER,
    ClientSetup,
    client_config,
    client_setup,
)
from hindsight.cli.credentials import ensure_credentials
from hindsight.cli.main import build_parser, main
from hindsight.cli.mesh import MESH_FILE, MeshInfo

EXECUTABLE = str(Path(sys.executable).parent / "hindsight")
SETUP = ClientSetup(
    executable="/opt/hs/bin/hindsight",
    home="/home/me/.hindsight",
    mcp_url="http://127.0.0.1:9999/mcp",
    token="tok-123",
    mesh_running=True,
)
STDIO = {
    "command": "/opt/hs/bin/hindsight",
    "args": ["mcp"],
    "env": {"HINDSIGHT_HOME": "/home/me/.hindsight"},
}
BEARER = {"Authorization": "Bearer tok-123"}


def test_each_client_gets_the_block_its_configuration_file_documents() -> None:
    assert client_config("claude-desktop", SETUP) == {"mcpServers": {"hindsight": STDIO}}
    assert client_config("vscode", SETUP) == {"servers": {"hindsight": {"type": "stdio", **STDIO}}}
    assert client_config("vscode", SETUP, "http") == {
        "servers": {"hindsight": {"type": "http", "url": "http://127.0.0.1:9999/mcp", "headers": BEARER}}
    }
    assert client_config("cursor", SETUP) == {"mcpServers": {"hindsight": STDIO}}
    assert client_config("cursor", SETUP, "http") == {
        "mcpServers": {"hindsight": {"url": "http://127.0.0.1:9999/mcp", "headers": BEARER}}
    }
    assert client_config("http", SETUP) == {
        "mcpServers": {"hindsight": {"type": "http", "url": "http://127.0.0.1:9999/mcp", "headers": BEARER}}
    }
    assert client_config("inspector", SETUP) == {"mcpServers": {"hindsight": {"type": "stdio", **STDIO}}}


def test_a_transport_a_client_does_not_take_and_an_unknown_client_are_refused_by_name() -> None:
    for client, transport in (("claude-desktop", "http"), ("http", "stdio"), ("inspector", "http")):
        with pytest.raises(ValueError, match=r"^transport: "):
            client_config(client, SETUP, transport)
    with pytest.raises(ValueError, match=r"^client: must be one of claude-desktop, "):
        client_config("emacs", SETUP)
    with pytest.raises(ValueError, match=r"^transport: must be stdio or http"):
        client_config("vscode", SETUP, "sse")


def test_the_command_line_offers_every_client() -> None:
    parser = build_parser()
    args = parser.parse_args(["mcp", "--print-config", "cursor", "--transport", "http"])
    assert (args.print_config, args.transport) == ("cursor", "http")
    for client in CLIENTS:
        assert parser.parse_args(["mcp", "--print-config", client]).print_config == client
    with pytest.raises(SystemExit):
        parser.parse_args(["mcp", "--print-config", "emacs"])


def test_without_a_mesh_the_default_url_and_a_placeholder_are_printed_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("HINDSIGHT_TOKENS", "HINDSIGHT_ADMIN_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    setup = client_setup(tmp_path, environ={})
    assert setup == ClientSetup(
        EXECUTABLE, str(tmp_path.resolve()), DEFAULT_MCP_URL, TOKEN_PLACEHOLDER, False
    )
    with pytest.raises(SystemExit) as exited:
        main(["mcp", "--home", str(tmp_path), "--print-config", "http"])
    assert exited.value.code == 0
    out, err = capsys.readouterr()
    entry = json.loads(out)["mcpServers"]["hindsight"]
    assert (
        entry["url"] == DEFAULT_MCP_URL and entry["headers"]["Authorization"] == f"Bearer {TOKEN_PLACEHOLDER}"
    )
    assert "No mesh is running" in err and "No token was generated yet" in err


def test_with_a_running_mesh_its_url_and_the_agent_token_are_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("HINDSIGHT_TOKENS", "HINDSIGHT_ADMIN_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    credentials, _ = ensure_credentials(tmp_path, environ={})
    mesh = MeshInfo(
        pid=os.getpid(),  # the mesh's supervisor must be alive: this process stands in for it
        pid_started=psutil.Process().create_time(),
        home=str(tmp_path),
        addresses={},
        mcp_url="http://127.0.0.1:18765/mcp",
        database_url="",
        redis_url="",
        qdrant="",
    )
    (tmp_path / MESH_FILE).write_text(mesh.to_json())
    for extra in (["vscode", "--transport", "http"], ["cursor", "--transport", "http"], ["http"]):
        with pytest.raises(SystemExit):
            main(["mcp", "--home", str(tmp_path), "--print-config", *extra])
        out, err = capsys.readouterr()
        block = json.loads(out)
        entry = (block.get("servers") or block["mcpServers"])["hindsight"]
        assert entry["url"] == "http://127.0.0.1:18765/mcp"
        assert entry["headers"] == {"Authorization": f"Bearer {credentials.agent}"}
        assert "No mesh is running" not in err and "keep the file private" in err
    with pytest.raises(SystemExit):
        main(["mcp", "--home", str(tmp_path), "--print-config", "claude-desktop"])
    out, _ = capsys.readouterr()
    stdio = json.loads(out)["mcpServers"]["hindsight"]
    assert stdio == {
        "command": EXECUTABLE,
        "args": ["mcp"],
        "env": {"HINDSIGHT_HOME": str(tmp_path.resolve())},
    }
    assert credentials.agent not in out  # stdio needs no token
