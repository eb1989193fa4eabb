"""Credentials and grants: parsing, hashed tokens, the mesh credential, a tokens file reloaded on change,
and the refusals that keep a service from running open by accident."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight.runtime import auth
from hindsight.runtime.auth import Grants, grants_for, is_loopback, parse_entries, token_digest
from hindsight.runtime.errors import InvalidArgument, PermissionDenied, Unauthenticated
from hindsight.runtime.settings import SettingsError
from hindsight.runtime.validation import check_bank_id


def test_a_token_grants_its_banks_and_an_admin_token_every_bank() -> None:
    grants = Grants(parse_entries("alpha=bank-a,bank-b;admin:root=*"))
    alpha = grants.check("alpha", "bank-b")
    assert not alpha.admin and alpha.may_use("bank-a") and not alpha.may_use("bank-c")
    with pytest.raises(PermissionDenied, match="bank-c"):
        grants.check("alpha", "bank-c")
    root = grants.authenticate("root")
    assert root.admin and root.may_use("anything")
    with pytest.raises(Unauthenticated):
        grants.authenticate(None)
    with pytest.raises(Unauthenticated):
        grants.authenticate("alpha ")


def test_a_token_given_as_its_sha256_is_accepted_and_the_caller_never_carries_the_secret() -> None:
    secret = "s3cret-token-value"
    grants = Grants(parse_entries(f"sha256:{token_digest(secret)}=bank-a"))
    caller = grants.check(secret, "bank-a")
    assert secret not in caller.name and caller.name.startswith("agent:")
    with pytest.raises(Unauthenticated):
        grants.authenticate(token_digest(secret))  # the digest itself is not a credential


@pytest.mark.parametrize(
    "spec",
    ["no-equals-sign", "tok=", "=bank-a", "admin:tok=bank-a", "tok=bank-a;broken"],
)
def test_a_malformed_entry_is_refused_naming_the_setting(spec: str) -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_TOKENS"):
        parse_entries(spec)


def test_the_mesh_credential_is_accepted_whatever_the_client_tokens_say() -> None:
    grants = grants_for(tokens="alpha=bank-a", internal_token="mesh-secret")
    mesh = grants.check("mesh-secret", "bank-z")
    assert mesh.name == auth.INTERNAL and mesh.all_banks and not mesh.admin
    grants_for(tokens="", internal_token="mesh-secret").check("mesh-secret", "bank-a")


def test_a_service_with_no_credential_refuses_to_start_and_auth_off_is_loopback_only() -> None:
    with pytest.raises(SettingsError, match="HINDSIGHT_INTERNAL_TOKEN"):
        grants_for()
    assert grants_for(auth="off", host="127.0.0.1").open
    assert grants_for(auth="off", host="::1").open
    for host in ("0.0.0.0", "10.1.2.3", "hindsight.example"):
        with pytest.raises(SettingsError, match="loopback"):
            grants_for(auth="off", host=host)
    with pytest.raises(SettingsError, match="HINDSIGHT_AUTH"):
        grants_for(tokens="a=b", auth="maybe")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _touch_later(path: Path, text: str) -> None:
    """Rewrite ``path`` with a modification time that surely differs from the last one seen."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def test_a_tokens_file_is_reloaded_when_it_changes_and_a_broken_edit_keeps_the_old_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "_RELOAD_CHECK_SECONDS", 0.0)
    path = tmp_path / "tokens"
    path.write_text("# agents\nfirst=bank-a\n")
    grants = grants_for(tokens_file=str(path))
    assert grants.check("first", "bank-a")
    _touch_later(path, "first=bank-a\nsecond=bank-b\n")
    assert grants.check("second", "bank-b")
    _touch_later(path, "first=bank-a\n")  # revoked
    with pytest.raises(Unauthenticated):
        grants.authenticate("second")
    _touch_later(path, "this line is broken\n")
    assert grants.check("first", "bank-a")  # kept: a typo never locks everyone out
    with pytest.raises(SettingsError, match="HINDSIGHT_TOKENS_FILE"):
        grants_for(tokens_file=str(tmp_path / "missing"))


def test_a_tokens_file_is_looked_at_no_more_than_once_an_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "_RELOAD_CHECK_SECONDS", 3600.0)
    path = tmp_path / "tokens"
    path.write_text("first=bank-a\n")
    grants = grants_for(tokens_file=str(path))
    _touch_later(path, "second=bank-a\n")
    with pytest.raises(Unauthenticated):  # within the interval since the first read: not looked at
        grants.authenticate("second")
    monkeypatch.setattr(auth, "_RELOAD_CHECK_SECONDS", 0.0)
    assert grants.check("second", "bank-a")


@pytest.mark.parametrize("bank_id", ["bank-b\n", "bank-b ", " bank-b", "bank b", "-bank", "x" * 129, ""])
def test_a_bank_id_is_the_whole_string_or_refused(bank_id: str) -> None:
    with pytest.raises(InvalidArgument, match="bank_id"):
        check_bank_id(bank_id)
    assert check_bank_id("bank-b") == "bank-b"
