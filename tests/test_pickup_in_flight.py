"""The session-start pickup never claims a handoff whose export has not committed.

Seen in CI (`e2e/test_continuity.py::test_two_sessions_starting_at_once_claim_once`):
Codex killed a SessionEnd export at its 3 s timeout after the active pointer had moved;
of the two sessions that then started at once, one took the killed export back while
the other read the store half-way through that and claimed the handoff about to vanish,
and the first then claimed the one restored: both were told to take over. Pickup now
claims only the handoff the workspace's handoff.json holds (placed last, so it proves
the commit), and waits a little for an export in flight (or a take-back) to settle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import passdown._wal as wal
from passdown import _platform
from passdown.integrations import _continuity as continuity
from test_crash_recovery import active, journals, killed_export, paused_export
from test_failed_export import World, make_world, snapshot

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    return make_world(tmp_path, tmp_path / "data", monkeypatch)


def files_id(world: World) -> str:
    return str(json.loads((world.ws / ".agent-handoff" / "handoff.json").read_text())["id"])


def status(world: World, handoff_id: str) -> str | None:
    import sqlite3

    with sqlite3.connect(world.data / "store.db") as conn:
        row = conn.execute(
            "SELECT value FROM pointers WHERE name = ?", (f"handoff-status/{handoff_id}",)
        ).fetchone()
    return str(json.loads(row[0])["status"]) if row else None


def test_pickup_leaves_a_handoff_whose_export_is_in_flight(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    committed = files_id(world)
    monkeypatch.setattr(continuity, "SETTLE_S", 0.3)
    with paused_export(world, tmp_path, "between-renames") as (_go, moving):
        assert moving != committed  # the store names a handoff the files do not hold yet
        assert status(world, moving) == "published"  # claimable, as far as the store says
        result = continuity.pickup("codex", "another-session", str(world.ws))
        assert (result.outcome, result.pointer) == ("in-flight", None)
        assert status(world, moving) == "published"
    # committed now: the next session start takes it
    assert files_id(world) == moving
    assert continuity.pickup("codex", "another-session", str(world.ws)).outcome == (
        f"claimed {moving}"
    )
    assert status(world, committed) == "superseded"  # the older one was never claimed


def test_pickup_waits_for_the_export_in_flight_and_claims_what_it_commits(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(continuity, "SETTLE_S", 120.0)
    looked = threading.Event()
    real_files_id = continuity._files_id

    def files_id_seen(workspace: Path) -> str | None:
        looked.set()
        return real_files_id(workspace)

    monkeypatch.setattr(continuity, "_files_id", files_id_seen)
    results: list[continuity.Pickup] = []
    with paused_export(world, tmp_path, "between-renames") as (go, moving):
        waiter = threading.Thread(
            target=lambda: results.append(continuity.pickup("codex", "s2", str(world.ws)))
        )
        waiter.start()
        assert looked.wait(60), "pickup never compared the store with the files"
        time.sleep(0.3)  # it is polling: the export is still held
        assert not results
        go.touch()
        waiter.join(120)
    (result,) = results
    assert result.outcome == f"claimed {moving}" and moving == files_id(world)
    assert result.pointer and "Read the handoff first" in result.pointer


def test_a_handoff_being_taken_back_is_not_claimed(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CI race itself: an export killed after its pointer moved, whose journal another
    (live) session-start has just claimed to take it back; this one must not claim the
    killed export's handoff meanwhile, and claims the restored one once it is back."""
    committed = files_id(world)
    killed_export(world, "between-renames")
    (journal,) = journals(world)
    killed = active(snapshot(world))
    assert killed not in (None, committed) and status(world, str(killed)) == "published"
    recoverer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        start = _platform.process_start(recoverer.pid) or "0"
        owner = wal.Owner(wal.Owner.me().host, recoverer.pid, start)
        taken = journal.with_name(owner.file_name("feedbeef0000"))
        os.rename(journal, taken)  # what `_recover` does first
        monkeypatch.setattr(continuity, "SETTLE_S", 0.3)
        result = continuity.pickup("codex", "s2", str(world.ws))
        assert (result.outcome, result.pointer) == ("in-flight", None)
        assert status(world, str(killed)) == "published"  # not claimed: it is going back
    finally:
        recoverer.kill()
        recoverer.wait()
    # the recoverer died half-way: the next session start takes the export back itself
    result = continuity.pickup("codex", "s3", str(world.ws))
    assert result.outcome == f"claimed {committed}", result
    assert active(snapshot(world)) == committed and journals(world) == []
    assert status(world, str(killed)) is None


def test_files_that_hold_another_handoff_are_not_pointed_at(
    world: World,
) -> None:
    """No export running, and handoff.json names another handoff than the store's active
    one (files written without the store, say): the pointer would send the agent to a
    HANDOFF.md that is not the handoff it describes."""
    path = world.ws / ".agent-handoff" / "handoff.json"
    data = json.loads(path.read_text())
    data["id"] = "handoff-written-elsewhere"
    path.write_text(json.dumps(data))
    result = continuity.pickup("codex", "s2", str(world.ws))
    assert (result.outcome, result.pointer) == ("files-differ", None)
