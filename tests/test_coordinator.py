"""HandoffCoordinator: the seed's call shapes, state sources, the record, execute and the
target side. Every test uses its own SQLite store (PASSDOWN_DATA_DIR per test) and fake
agent programs; no real model is ever started."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from passdown import HandoffCoordinator
from passdown.coordinator import (
    HandoffConflict,
    HandoffNotFound,
    HandoffPackage,
    HandoffStateError,
    package_from_record,
    package_to_record,
)
from passdown.records import canonical_json, parse_record, record_to_package
from passdown.store import open_store
from recorded import scenarios
from test_coordinator_fixtures import launches, make_project

SEED_SUMMARY = "Completed auth-001, starting auth-002"
SEED_EXAMPLE = {
    "id": "handoff-20250115-103000",
    "source_agent": "coding-agent",
    "target_agent": "coding-agent",
    "timestamp": "2025-01-15T10:30:00",
    "state": {
        "current_feature": "auth-002",
        "completed_features": ["auth-001"],
        "blockers": [],
        "next_steps": ["Implement logout endpoint"],
    },
    "context": {"recent_files": ["src/auth/login.ts"], "git_hash": "abc1234", "session_number": 5},
    "summary": "Completed auth-001, starting auth-002",
}

pytest_plugins = ["test_coordinator_fixtures"]


def test_seed_call_shapes_with_a_feature_list_and_no_session(project: Path) -> None:
    async def main() -> tuple[HandoffPackage, object]:
        coordinator = HandoffCoordinator(project)
        package = await coordinator.prepare_handoff(
            source_agent="coding-agent", summary=SEED_SUMMARY
        )
        result = await coordinator.execute_handoff(package=package, target_agent="coding-agent")
        return package, result

    package, result = asyncio.run(main())
    seed = package.seed_dict()
    assert set(seed) == set(SEED_EXAMPLE)
    assert seed["state"] == {
        "current_feature": "auth-002",
        "completed_features": ["auth-001"],
        "blockers": [],
        "next_steps": ["Make auth-002 pass: Logout endpoint"],
    }
    assert seed["context"]["session_number"] == 1
    assert (
        seed["context"]["git_hash"]
        == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True
        ).stdout.strip()
    )
    assert seed["summary"] == SEED_SUMMARY
    assert seed["timestamp"].endswith("Z")  # carries its time zone
    assert package.provenance["summary"] == "caller"
    assert package.provenance["state.current_feature"] == "feature_list"
    assert package.provenance["state.next_steps"] == "feature_list"
    # "coding-agent" is no program passdown starts: record only, the harness launches
    assert result.launched is False and result.status == "published"  # type: ignore[attr-defined]
    markdown = (project / ".agent-handoff" / "HANDOFF.md").read_text()
    assert SEED_SUMMARY in markdown and "Logout endpoint" in markdown


def test_first_handoff_with_nothing_completed(tmp_path: Path) -> None:
    repo = make_project(
        tmp_path,
        features=[
            {"id": "f-1", "description": "First", "passes": False},
            {"id": "f-2", "description": "Second", "passes": False},
        ],
    )
    coordinator = HandoffCoordinator(repo)
    package = coordinator.prepare_handoff_sync("coding-agent")
    assert package.state.completed_features == []
    assert package.state.current_feature == "f-1"
    assert package.context.session_number == 1
    assert package.previous_id is None
    result = coordinator.execute_handoff_sync(package, "coding-agent")
    assert result.status == "published"
    assert coordinator.load_handoff().id == package.id


def test_a_bare_project_still_gets_a_handoff(tmp_path: Path) -> None:
    repo = make_project(tmp_path, features=None)
    coordinator = HandoffCoordinator(repo)
    package = coordinator.prepare_handoff_sync("harness-bot", "Nothing done yet")
    assert package.state.model_dump() == {
        "current_feature": None,
        "completed_features": [],
        "blockers": [],
        "next_steps": [],
    }
    assert coordinator.execute_handoff_sync(package, "harness-bot").status == "published"


def test_progress_log_and_caller_overrides_with_provenance(tmp_path: Path) -> None:
    progress = (
        "## Session 3\nNext steps:\n- old step\n\n"
        "## Session 4\nDid the login form.\n\n"
        "Blockers:\n- Waiting for the OAuth client id\n\n"
        "Next steps:\n- Implement logout endpoint\n- Add session expiry tests\n"
    )
    repo = make_project(tmp_path, progress=progress)
    coordinator = HandoffCoordinator(repo)
    derived = coordinator.prepare_handoff_sync("coding-agent")
    assert derived.state.blockers == ["Waiting for the OAuth client id"]
    assert derived.state.next_steps == ["Implement logout endpoint", "Add session expiry tests"]
    assert derived.provenance["state.next_steps"] == "progress:claude-progress.txt"

    given = coordinator.prepare_handoff_sync(
        "coding-agent",
        current_feature="auth-003",
        next_steps=["Write the reset email"],
        blockers=[],
    )
    assert given.state.current_feature == "auth-003"
    assert given.state.next_steps == ["Write the reset email"]
    assert given.state.blockers == []
    assert given.state.completed_features == ["auth-001"]  # still derived
    assert given.provenance["state.current_feature"] == "caller"
    assert given.provenance["state.blockers"] == "caller"
    assert given.provenance["state.completed_features"] == "feature_list"
    assert given.handoff is not None and given.handoff.state.next_steps == ["Write the reset email"]


def test_progress_md_is_read_too(tmp_path: Path) -> None:
    repo = make_project(tmp_path)
    (repo / "PROGRESS.md").write_text(
        "# Progress\n\n**Next steps:**\n1. Ship it\n\nBlocker: flaky CI\n"
    )
    package = HandoffCoordinator(repo).prepare_handoff_sync("coding-agent")
    assert package.state.next_steps == ["Ship it"]
    assert package.state.blockers == ["flaky CI"]


def test_session_number_counts_earlier_handoffs_and_ids_are_unique(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    ids = set()
    for n in range(1, 4):
        package = coordinator.prepare_handoff_sync("coding-agent", f"step {n}")
        assert package.context.session_number == n
        ids.add(package.id)
        coordinator.execute_handoff_sync(package, "coding-agent")
    assert len(ids) == 3
    assert [p.summary for p in coordinator.history()] == ["step 3", "step 2", "step 1"]
    # each publish superseded the one before
    assert [p.status for p in coordinator.history()] == ["published", "superseded", "superseded"]


def test_numbering_a_session_reads_no_stored_handoff(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook numbers its session after every turn: the store counts its handoffs, it
    does not read and validate each one (the work would grow with every handoff kept)."""
    from passdown.records import Record

    coordinator = HandoffCoordinator(project)
    for n in range(1, 4):
        coordinator.execute_handoff_sync(
            coordinator.prepare_handoff_sync("coding-agent", f"step {n}"), "coding-agent"
        )
    read: list[str | bytes] = []
    real = Record.model_validate_json

    def counted(data: str | bytes) -> Record:
        read.append(data)
        return real(data)

    monkeypatch.setattr(Record, "model_validate_json", counted)
    package = coordinator.prepare_handoff_sync("coding-agent", "step 4")
    assert package.context.session_number == 4
    assert len(read) <= 1  # the active handoff, at most: not one per handoff stored


def test_package_round_trips_through_the_record_and_the_store(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", SEED_SUMMARY, "agent", "codex")
    record = package_to_record(package)
    assert record.type == "handoff" and record.id == package.id
    assert package_from_record(record) == package
    assert {a.kind for a in record.annotations} >= {
        "what_i_did",
        "next",
        "blockers",
        "files_touched",
        "current_feature",
    }
    # records.record_to_package (the store issue's converter) reads the same package back
    assert {
        k: v for k, v in record_to_package(record).items() if k in SEED_EXAMPLE
    } == package.seed_dict()
    with open_store() as store:
        store.store(record)
        back = store.retrieve(record.scope, record.id)
    assert canonical_json(back) == canonical_json(record)
    assert package_from_record(back) == package


def test_the_seeds_example_package_executes_and_loads(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = HandoffPackage.model_validate(SEED_EXAMPLE)
    result = coordinator.execute_handoff_sync(package, "coding-agent", force=True)
    assert result.status == "published"
    loaded = coordinator.load_handoff()
    assert loaded.seed_dict() == SEED_EXAMPLE
    # the store issue's parser accepts the same JSON
    assert parse_record(json.dumps(SEED_EXAMPLE), project="webapp").id == SEED_EXAMPLE["id"]


def test_session_handoff_from_a_recorded_session_launches_the_target_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_agents: Path,
) -> None:
    rec = next(r for r in scenarios("claude") if r.scenario == "full")
    session = rec.install(tmp_path / "claude-store", monkeypatch)
    repo = make_project(tmp_path)
    coordinator = HandoffCoordinator(repo)
    package = coordinator.prepare_handoff_sync(
        "claude", session=str(session), handoff_type="agent", target_agent="codex"
    )
    assert package.source_agent == "claude"
    assert (
        package.handoff is not None
        and package.handoff.source.session_id == rec.expected["session_id"]
    )
    assert package.provenance["summary"] == "session"
    assert package.state.completed_features == ["auth-001"]  # the feature list wins over the plan
    for secret in rec.expected["secrets"]:
        assert secret not in package.to_json()

    first = coordinator.execute_handoff_sync(package, "codex")
    again = coordinator.execute_handoff_sync(package, "codex")
    assert first.launched and first.exit_code == 0
    assert not again.launched and again.already_launched
    started = launches(fake_agents)
    assert len(started) == 1
    assert started[0]["program"] == "codex" and started[0]["cwd"] == str(repo)
    assert started[0]["handoff"] == package.id
    assert any("HANDOFF.md" in a for a in started[0]["argv"])  # type: ignore[union-attr]


def test_target_side_load_verify_claim_complete(project: Path) -> None:
    source = HandoffCoordinator(project, identity="session-1")
    package = source.prepare_handoff_sync("coding-agent", SEED_SUMMARY)
    source.execute_handoff_sync(package, "coding-agent", launch=False)

    target = HandoffCoordinator(project, identity="session-2")
    loaded = target.load_handoff()
    assert loaded.id == package.id and loaded.status == "published"
    report = asyncio.run(target.verify(loaded))
    assert report.ok and report.differences == []
    with pytest.raises(HandoffStateError):
        target.complete(loaded)  # published -> completed skips the claim
    assert target.claim(loaded, by="coding-agent#2").status == "claimed"
    assert target.complete(loaded.id).status == "completed"
    events = target.events(package.id)
    assert [(e.status, e.by) for e in events] == [
        ("prepared", "session-1"),
        ("published", "session-1"),
        ("claimed", "coding-agent#2"),
        ("completed", "session-2"),
    ]
    assert all(e.at.endswith("Z") for e in events)


def test_reject_and_missing_handoffs(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    with pytest.raises(HandoffNotFound):
        coordinator.load_handoff()
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    coordinator.execute_handoff_sync(package, "coding-agent")
    assert coordinator.reject(package, reason="wrong branch").status == "rejected"
    assert coordinator.events(package.id)[-1].note == "wrong branch"
    with pytest.raises(HandoffStateError):
        coordinator.execute_handoff_sync(package, "coding-agent")  # a rejected package stays so


def test_same_id_different_content_is_a_conflict(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x", "agent")
    coordinator.execute_handoff_sync(package, "reviewer")
    with pytest.raises(HandoffConflict):
        coordinator.execute_handoff_sync(package, "someone-else")


def test_on_threshold_prepares_and_optionally_executes(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    assert asyncio.run(coordinator.on_threshold("coding-agent", 50_000, limit=200_000)) is None
    prepared = asyncio.run(coordinator.on_threshold("coding-agent", 0.9, summary="context full"))
    assert prepared is not None and prepared.status == "prepared"
    assert prepared.handoff_type == "session" and prepared.target_agent == "coding-agent"
    executed = coordinator.on_threshold_sync(
        "coding-agent", 190_000, limit=200_000, execute=True, launch=False
    )
    assert executed is not None and executed.status == "published"
    assert coordinator.load_handoff().id == executed.id


def test_summaries_are_stored_and_recalled(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    for summary in ("Wired the OAuth callback", "Fixed flaky logout test"):
        coordinator.execute_handoff_sync(
            coordinator.prepare_handoff_sync("coding-agent", summary), "coding-agent"
        )
    found = coordinator.recall("oauth")
    assert [p.summary for p in found] == ["Wired the OAuth callback"]


def test_compaction_shares_the_max_chars_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = next(r for r in scenarios("claude") if r.scenario == "full")
    session = rec.install(tmp_path / "claude-store", monkeypatch)
    repo = make_project(tmp_path)
    roomy = HandoffCoordinator(repo).prepare_handoff_sync("claude", session=str(session))
    tight = HandoffCoordinator(repo, max_chars=1000).prepare_handoff_sync(
        "claude", session=str(session)
    )
    assert roomy.compaction is not None and roomy.compaction.dropped == []
    assert tight.compaction is not None and tight.compaction.budget_chars == 1000
    assert tight.handoff is not None and roomy.handoff is not None
    kept = [e for e in tight.handoff.task.transcript if e.role != "cut"]
    assert len(kept) < len([e for e in roomy.handoff.task.transcript if e.role != "cut"])
    assert kept[0].text.startswith("Create calc.py")  # the request always survives
    tokens = HandoffCoordinator(repo, max_tokens=300).prepare_handoff_sync(
        "claude", session=str(session)
    )
    assert tokens.compaction is not None and tokens.compaction.budget_chars == 1200


def test_caller_secrets_are_redacted(project: Path) -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    package = HandoffCoordinator(project).prepare_handoff_sync(
        "coding-agent", f"deploy with {key}", next_steps=[f"export AWS_ACCESS_KEY_ID={key}"]
    )
    assert key not in package.to_json()
    assert package.handoff is not None and package.handoff.redaction.findings


def test_store_false_works_without_a_store(project: Path) -> None:
    coordinator = HandoffCoordinator(project, store=False)
    package = coordinator.prepare_handoff_sync("coding-agent", "offline")
    result = coordinator.execute_handoff_sync(package, "coding-agent")
    assert result.stored is False and result.written is not None
    assert result.written.json_path.exists()


def test_import_passdown_is_cheap_and_exports_the_coordinator() -> None:
    code = (
        "import sys, passdown\n"
        "assert 'pydantic' not in sys.modules and 'passdown.coordinator' not in sys.modules\n"
        "assert 'HandoffCoordinator' in passdown.__all__\n"
        "from passdown import HandoffCoordinator\n"
        "print(HandoffCoordinator.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "passdown.coordinator._core"
