"""`HandoffCoordinator(limits=...)`: the handoff's budgets through the Python API, as the
CLI's --max-* options and config.toml's [handoff] table set them (issue 20)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from passdown import HandoffCoordinator
from passdown.errors import UsageError
from passdown.handoff import Limits
from test_bounded_handoff import _session_with_reused_ids, claude_dir  # noqa: F401
from test_coordinator_fixtures import make_project

ROUNDS = 40  # tasks 1..3 created again each round, one failing test run each round


def _config(text: str) -> None:
    data_dir = Path(os.environ["PASSDOWN_DATA_DIR"])
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.toml").write_text(text)


def test_limits_mapping_cuts_the_package_and_the_written_files(
    claude_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    session = _session_with_reused_ids(claude_dir, ROUNDS)
    repo = make_project(tmp_path)
    budgets = {"max_plan_items": 2, "max_commands": 3, "max_doc_chars": 20_000}
    coordinator = HandoffCoordinator(repo, store=False, limits=budgets)
    package = coordinator.prepare_handoff_sync("claude", session=str(session))
    handoff = package.handoff
    assert handoff is not None
    state = handoff.state
    # the open items fill the plan's budget first; the completed one is counted
    assert [(p.id, p.status) for p in state.plan] == [("2", "in_progress"), ("3", "pending")]
    assert state.omitted.plan == 1
    assert len(state.commands) == 3 and state.omitted.commands == ROUNDS - 3
    assert handoff.limits is not None and handoff.limits.max_doc_chars == 20_000
    assert handoff.limits.max_files == Limits().max_files  # not given: the default

    result = coordinator.execute_handoff_sync(package, "coding-agent")
    assert result.written is not None
    data = json.loads(result.written.json_path.read_text())
    assert data["limits"]["max_plan_items"] == 2
    assert len(data["state"]["commands"]) == 3
    markdown = (result.written.json_path.parent / "HANDOFF.md").read_text()
    assert len(markdown) <= 20_000
    assert "round 39 task 2" in markdown and "round 39 task 1" not in markdown


def test_a_mapping_goes_over_config_a_limits_object_is_used_whole(
    claude_dir: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    session = _session_with_reused_ids(claude_dir, ROUNDS)
    repo = make_project(tmp_path)
    _config("[handoff]\nmax_plan_items = 2\nmax_commands = 7\n")

    def cut(limits: Limits | dict[str, int] | None) -> tuple[int, int]:
        coordinator = HandoffCoordinator(repo, store=False, limits=limits)
        handoff = coordinator.prepare_handoff_sync("claude", session=str(session)).handoff
        assert handoff is not None
        return len(handoff.state.plan), len(handoff.state.commands)

    assert cut(None) == (2, 7)  # config.toml's
    assert cut({"max_commands": 4}) == (2, 4)  # the given key over the config's
    assert cut(Limits(max_commands=5)) == (3, 5)  # whole: the config is not read


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        ({"max_plans": 2}, "max_plans"),
        ({"max_plan_items": 0}, "max_plan_items"),
        ({"max_doc_chars": 10}, "max_doc_chars"),
        (7, "limits must be"),
    ],
)
def test_bad_limits_are_a_usage_error_at_construction(
    tmp_path: Path, limits: object, says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        HandoffCoordinator(tmp_path, store=False, limits=limits)  # type: ignore[arg-type]
