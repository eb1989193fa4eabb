"""``hindsight bench fleet`` end to end on a small fleet and a real private mesh, and the fleet it plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.bench.fleet_data import ORG_BANK, canary_note, plan_fleet
from hindsight.cli.main import build_parser

KEYS = {"agents", "teams", "leaks", "refused", "shared_found", "recall_ms"}


def test_the_fleet_is_the_same_for_a_seed_and_every_bank_has_its_own_private_note() -> None:
    fleet = plan_fleet(agents=6, teams=2, facts=4, shares=2, seed=7)
    assert fleet == plan_fleet(agents=6, teams=2, facts=4, shares=2, seed=7)
    assert fleet != plan_fleet(agents=6, teams=2, facts=4, shares=2, seed=8)
    assert {a.team for a in fleet.agents} == set(fleet.teams) == {"team-1", "team-2"}
    assert all(len(fleet.teammates(a)) == 2 and len(a.shared) == 2 for a in fleet.agents)
    services = [f.service for a in fleet.agents for f in a.facts]
    assert len(set(services)) == len(services), "one service per fact: a question has one answer"
    assert set(fleet.canaries) == {*(a.bank for a in fleet.agents), *fleet.teams}
    assert len(set(fleet.canaries.values())) == len(fleet.canaries)
    for agent in fleet.agents:
        assert agent.grants() == [
            f"{agent.bank}:read+write+forget",
            f"{agent.team}:read+write",
            f"{ORG_BANK}:read",
        ]
        assert all(f.service in f.statement and f.service in f.question for f in agent.facts)
    assert fleet.canaries["team-1"] in canary_note("team-1", fleet.canaries["team-1"])
    with pytest.raises(ValueError, match="two agents"):
        plan_fleet(agents=3, teams=2, facts=4, shares=2, seed=0)


def test_the_bench_refuses_every_attempt_and_writes_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "out" / "fleet.json"
    arguments = ["--agents", "4", "--teams", "2", "--facts", "3", "--shares", "2", "--attempts", "120"]
    arguments += ["--latency-queries", "3", "--expiry-seconds", "3", "--seed", "3", "--json", str(report)]
    args = build_parser().parse_args(["bench", "fleet", *arguments])
    code = args.run(args)
    data = json.loads(report.read_text(encoding="utf-8"))
    details = data["details"]
    assert set(data) == KEYS | {"commit", "settings", "details"}
    assert set(data["recall_ms"]) == {"single", "multi"}
    assert data["agents"] == 4 and data["teams"] == 2 and data["settings"]["seed"] == 3
    assert data["leaks"] == 0, details["isolation"]["examples"]
    assert details["attempts"] == 120 and data["refused"] == 120, details["isolation"]["examples"]
    assert not details["share_error"], details["share_error"]
    assert code == 0
    kinds = set(details["isolation"]["by_kind"])
    assert {"multi_mixed", "expired_token", "revoked_token", "share_from_foreign"} <= kinds
    assert set(details["isolation"]["by_port"]) == {"grpc", "mcp"}
    # every shared memory was looked for by a teammate, both ways, and the share is findable at all
    assert details["shared"] == 4 * 2 and details["shared_checks"] == 2 * details["shared"]
    assert set(details["shared_found_by_mode"]) == {"team", "own+team"}
    assert data["shared_found"] > 0.5
    for mode in ("single", "multi"):
        assert data["recall_ms"][mode]["count"] == 4 * 3 and data["recall_ms"][mode]["p50"] > 0
    dead = details["dead_tokens"]
    assert set(dead["revoked_refused_ms"]) == {"revoked-team-1", "revoked-team-2"}
    assert set(dead["expired_refused_ms"]) == {"expiring-team-1", "expiring-team-2"}
    assert dead["slowest_ms"] is not None, dead  # every dead token was refused on both ports
    assert "isolation" in capsys.readouterr().out
