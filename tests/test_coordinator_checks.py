"""Validation as structured results: stale, tampered, regressed, unredacted packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from passdown import HandoffCoordinator
from passdown.coordinator import HandoffBlocked, HandoffPackage
from passdown.coordinator._project_files import parse_progress
from passdown.handoff import Redaction
from test_coordinator_fixtures import FEATURES, commit_all, write_features

pytest_plugins = ["test_coordinator_fixtures"]


def _failed(results: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {r.name: r.message for r in results if not r.ok}


def test_a_fresh_package_passes_every_check(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    checks = coordinator.validate(coordinator.prepare_handoff_sync("coding-agent", "x"))
    assert [c.name for c in checks] == [
        "schema",
        "integrity",
        "git_snapshot",
        "uncommitted_changes",
        "feature_list",
        "redaction",
        "fresh",
    ]
    assert all(c.ok for c in checks), checks
    assert {c.severity for c in checks} <= {"error", "warning"}


def test_files_changed_since_prepare_make_it_stale(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    (project / "README.md").write_text("# changed after prepare\n")
    with pytest.raises(HandoffBlocked) as err:
        coordinator.execute_handoff_sync(package, "coding-agent")
    failed = _failed(err.value.checks)
    assert "README.md: changed since the handoff was prepared" in failed["fresh"]
    assert "1 uncommitted change(s): README.md" in failed["uncommitted_changes"]
    assert not any(c.blocking for c in err.value.checks if c.name == "uncommitted_changes")
    forced = coordinator.execute_handoff_sync(package, "coding-agent", force=True)
    assert forced.status == "published"


def test_head_moved_since_prepare(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    (project / "new.txt").write_text("x\n")
    new_head = commit_all(project, "more work")
    report = coordinator.verify_sync(package)
    assert not report.ok
    failed = _failed(report.checks)
    assert new_head[:12] in failed["git_snapshot"]
    assert any(d.startswith("HEAD moved from") for d in report.differences)


def test_tampered_packages_are_caught(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    edited = package.model_copy(update={"summary": "all features done, ship it"})
    failed = _failed(coordinator.validate(edited))
    assert "integrity" in failed and "modified after it was prepared" in failed["integrity"]
    with pytest.raises(HandoffBlocked):
        coordinator.execute_handoff_sync(edited, "coding-agent")

    broken = package.model_dump(mode="json")
    broken["context"]["session_number"] = "five"
    report = coordinator.verify_sync(broken)
    assert not report.ok and [c.name for c in report.checks] == ["schema"]

    swapped = package.model_dump(mode="json")
    swapped["context"]["git_hash"] = "0" * 40
    failed = _failed(coordinator.validate(swapped))
    assert "differs from the handoff's snapshot" in failed["git_snapshot"]


def test_unredacted_secret_blocks_execute(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    leaked = package.model_copy(
        update={"summary": "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}
    ).sealed()
    failed = _failed(coordinator.validate(leaked))
    assert "unredacted secrets" in failed["redaction"]
    assert package.handoff is not None
    unredacted = package.model_copy(
        update={"handoff": package.handoff.model_copy(update={"redaction": Redaction()})}
    )
    assert "not redacted" in _failed(coordinator.validate(unredacted.sealed()))["redaction"]


def test_feature_that_went_from_passing_to_failing_needs_a_note(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    first = coordinator.prepare_handoff_sync("coding-agent", "auth-001 done")
    coordinator.execute_handoff_sync(first, "coding-agent")

    regressed = [dict(f, passes=False) if f["id"] == "auth-001" else f for f in FEATURES]
    write_features(project, regressed)
    commit_all(project, "auth-001 broke")
    second = coordinator.prepare_handoff_sync("coding-agent", "moving on")
    assert second.previous_id == first.id
    failed = _failed(coordinator.validate(second))
    assert "auth-001" in failed["feature_list"]

    noted = [
        dict(f, passes=False, note="broken by the session refactor") if f["id"] == "auth-001" else f
        for f in FEATURES
    ]
    write_features(project, noted)
    commit_all(project, "note the regression")
    third = coordinator.prepare_handoff_sync("coding-agent", "moving on")
    assert "feature_list" not in _failed(coordinator.validate(third))


def test_malformed_feature_list_is_an_error_result(project: Path) -> None:
    (project / "feature_list.json").write_text('[{"id": "a", "passes": tru')
    commit_all(project, "broken list")
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    assert package.state.completed_features == []
    failed = _failed(coordinator.validate(package))
    assert failed["feature_list"].startswith("feature_list.json:")


def test_verify_reports_feature_changes(project: Path) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("coding-agent", "x")
    write_features(
        project, [dict(f, passes=True) if f["id"] == "auth-002" else f for f in FEATURES]
    )
    report = coordinator.verify_sync(package)
    assert "feature auth-002 now passes" in report.differences
    assert "feature_list.json: modified since the handoff was prepared" in report.differences


def test_seed_json_without_integrity_is_a_warning_not_an_error(project: Path) -> None:
    package = HandoffPackage(id="h-1", source_agent="bot", timestamp="2025-01-15T10:30:00")
    checks = {c.name: c for c in HandoffCoordinator(project).validate(package)}
    assert not checks["integrity"].ok and checks["integrity"].severity == "warning"
    assert not checks["fresh"].ok and checks["fresh"].severity == "warning"


def test_progress_parser_takes_the_latest_sections(tmp_path: Path) -> None:
    text = (
        "Session 1\nNext steps:\n- a\n- b\nBlockers:\n- old blocker\n\n"
        "Session 2\n### Next\n* [ ] c\n* [x] d\n\nBlockers: none\n"
    )
    notes = parse_progress(text, tmp_path / "claude-progress.txt")
    assert notes.next_steps == ["c", "d"]
    assert notes.blockers == []
