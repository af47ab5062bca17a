"""`_fsio.FileBatch` (issue 21): an export's files are written where nobody sees them and
appear only at `commit`; a failure, a discard or a killed process leaves the disk as it
was, missing folders included. And a publish that fails half-way is taken back."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from passdown import _filebatch, _handoff_files
from passdown import _fsio as fsio
from passdown._filebatch import FileBatch
from passdown.errors import OutputError


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(params=["anonymous", "named"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of staging: O_TMPFILE, and the hidden temp name used without it."""
    if request.param == "named":
        monkeypatch.setattr(_filebatch, "_O_TMPFILE", 0)
    elif not _filebatch._O_TMPFILE:
        pytest.skip("no O_TMPFILE on this platform")
    return str(request.param)


def test_staged_files_appear_only_at_commit(tmp_path: Path, kind: str) -> None:
    (tmp_path / "old.md").write_text("previous\n")
    with FileBatch() as batch:
        batch.stage(tmp_path / "old.md", "new\n")
        batch.stage(tmp_path / ".agent-handoff" / "history" / "copy.md", "copy\n")
        assert (tmp_path / "old.md").read_text() == "previous\n"
        assert not (tmp_path / ".agent-handoff").exists(), "a folder was created before commit"
        if kind == "anonymous":
            assert listing(tmp_path) == ["old.md"], "something is visible before commit"
        batch.commit()
    assert (tmp_path / "old.md").read_text() == "new\n"
    copy = tmp_path / ".agent-handoff" / "history" / "copy.md"
    assert copy.read_text() == "copy\n"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    for folder in (copy.parent, copy.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert listing(tmp_path) == [
        ".agent-handoff",
        ".agent-handoff/history",
        *[".agent-handoff/history/copy.md"],
        "old.md",
    ]


def test_a_discarded_batch_leaves_the_disk_as_it_was(tmp_path: Path, kind: str) -> None:
    (tmp_path / "keep.md").write_text("previous\n")
    before = listing(tmp_path)
    with FileBatch() as batch:
        batch.stage(tmp_path / "keep.md", "new\n")
        batch.stage(tmp_path / "sub" / "new.json", "{}")
        batch.remove(tmp_path / "keep.md")
    assert listing(tmp_path) == before
    assert (tmp_path / "keep.md").read_text() == "previous\n"


def test_a_full_disk_while_staging_is_output_error_and_changes_nothing(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "HANDOFF.md").write_text("previous\n")
    real = fsio._write_all
    calls = []

    def full_on_second(fd: int, data: bytes) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(fsio, "_write_all", full_on_second)
    batch = FileBatch()
    batch.stage(tmp_path / "handoff.json", "{}")
    with pytest.raises(OutputError) as caught:
        batch.stage(tmp_path / "HANDOFF.md", "new\n")
    batch.discard()
    assert caught.value.exit_code == 8 and "disk is full" in (caught.value.hint or "")
    assert listing(tmp_path) == ["HANDOFF.md"]
    assert (tmp_path / "HANDOFF.md").read_text() == "previous\n"


def test_a_process_killed_while_staging_leaves_nothing(tmp_path: Path) -> None:
    if not _filebatch._O_TMPFILE:
        pytest.skip("without O_TMPFILE a killed writer's temp file waits for the sweep")
    (tmp_path / "HANDOFF.md").write_text("previous\n")
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from passdown._filebatch import FileBatch\n"
        "b = FileBatch()\n"
        "b.stage(Path(sys.argv[1]) / 'HANDOFF.md', 'x' * 100000)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], timeout=60)
    assert proc.returncode == -9
    assert listing(tmp_path) == ["HANDOFF.md"]
    assert (tmp_path / "HANDOFF.md").read_text() == "previous\n"


def test_the_git_exclude_folder_keeps_its_mode(tmp_path: Path) -> None:
    """`.git/info` is git's: staging the exclude line must not tighten it to 0700."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    info = tmp_path / ".git" / "info"
    info.mkdir(exist_ok=True)
    info.chmod(0o755)
    with FileBatch() as batch:
        assert _handoff_files.stage_git_exclude(batch, tmp_path, "/.agent-handoff/")
        assert (
            "/.agent-handoff/" not in (info / "exclude").read_text()
            if (info / "exclude").exists()
            else True
        )
        batch.commit()
    assert "/.agent-handoff/\n" in (info / "exclude").read_text()
    assert stat.S_IMODE(info.stat().st_mode) == 0o755


def test_a_redacted_folder_is_refused_before_anything_is_staged(tmp_path: Path) -> None:
    with FileBatch() as batch, pytest.raises(OutputError, match="redacted"):
        batch.stage(tmp_path / "[REDACTED:github_token]" / "HANDOFF.md", "x")
    assert listing(tmp_path) == []


def test_a_symlinked_handoff_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".agent-handoff").symlink_to(elsewhere)
    with FileBatch() as batch, pytest.raises(OutputError, match="symlink"):
        batch.stage(tmp_path / ".agent-handoff" / "HANDOFF.md", "x")
    assert listing(elsewhere) == []


# -- a publish that fails half-way --------------------------------------------------------


def test_a_store_failure_in_the_middle_of_publishing_takes_the_publish_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record and `prepared` are stored and the active pointer swapped, then the
    store fails: the export fails (exit 9), the active pointer names the previous
    handoff again, the new record and its statuses are gone, and no file changed."""
    from passdown.coordinator import HandoffCoordinator
    from passdown.coordinator._lifecycle import Lifecycle
    from passdown.errors import StoreError
    from test_doors import repo, simple_session

    ws = repo(tmp_path / "ws")
    simple_session("d0d0d0d0-0000-4000-8000-0000000000d0", ws)
    with HandoffCoordinator(ws) as coordinator:
        first = coordinator.prepare_handoff_sync("claude", require_session=True)
        coordinator.export_sync(first)
        files = {p.name: p.read_bytes() for p in (ws / ".agent-handoff").iterdir() if p.is_file()}
        ids = lambda: sorted(p.id for p in coordinator.history(None))  # noqa: E731
        before_ids = ids()
        prev_status = coordinator.status(first.id)

        second = coordinator.prepare_handoff_sync("claude", require_session=True)
        real = Lifecycle.transition

        def fails_at_published(self: Lifecycle, package_id: str, to: str, **kw: object) -> bool:
            if to == "published":
                raise StoreError("disk I/O error")
            return real(self, package_id, to, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(Lifecycle, "transition", fails_at_published)
        with pytest.raises(StoreError) as caught:
            coordinator.export_sync(second)
        monkeypatch.undo()
        assert caught.value.exit_code == 9

        lc = coordinator.lifecycle()
        assert lc.active() == first.id
        assert coordinator.status(second.id) is None
        assert lc.events(second.id) == []
        assert ids() == before_ids
        assert coordinator.status(first.id) == prev_status
        now = {p.name: p.read_bytes() for p in (ws / ".agent-handoff").iterdir() if p.is_file()}
        assert now == files


def test_a_commit_that_fails_half_way_puts_back_what_it_replaced(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "handoff.json").write_text("old json\n")
    (tmp_path / "HANDOFF.md").write_text("old md\n")
    batch = FileBatch()
    batch.stage(tmp_path / "history" / "copy.md", "old md\n")
    batch.stage(tmp_path / "handoff.json", "new json\n")
    batch.stage(tmp_path / "HANDOFF.md", "new md\n")
    real = os.replace

    def fails_for_the_markdown(src: object, dst: object) -> None:
        if str(dst).endswith("HANDOFF.md"):
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(fsio.os, "replace", fails_for_the_markdown)
    with pytest.raises(OutputError, match="Input/output error"):
        batch.commit()
    monkeypatch.undo()
    batch.discard()
    assert (tmp_path / "handoff.json").read_text() == "old json\n"
    assert (tmp_path / "HANDOFF.md").read_text() == "old md\n"
    assert not (tmp_path / "history" / "copy.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "HANDOFF.md",
        "handoff.json",
    ]


def test_two_exports_at_once_leave_the_files_of_the_active_handoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publishes, then is slow to rename its files in; B prepares on top of A and
    exports meanwhile. B must wait for A's files, or A's files would end up on disk
    while B is the active handoff."""
    import json
    import threading
    import time

    from passdown._pipeline import StagedHandoff
    from passdown.coordinator import HandoffCoordinator
    from test_doors import active_handoff, repo, simple_session

    ws = repo(tmp_path / "ws")
    simple_session("e0e0e0e0-0000-4000-8000-0000000000e0", ws)
    real_commit = StagedHandoff.commit
    a_published = threading.Event()

    def slow_for_a(self: StagedHandoff) -> object:
        if threading.current_thread().name == "A":
            a_published.set()
            time.sleep(1.5)
        return real_commit(self)

    monkeypatch.setattr(StagedHandoff, "commit", slow_for_a)
    errors: list[BaseException] = []
    exported: dict[str, str] = {}

    def export(name: str) -> None:
        try:
            if name == "B":
                assert a_published.wait(60)
            with HandoffCoordinator(ws) as coordinator:
                package = coordinator.prepare_handoff_sync("claude", require_session=True)
                coordinator.export_sync(package)
                exported[name] = package.id
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=export, args=(n,), name=n) for n in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert active_handoff(ws) == exported["B"]
    on_disk = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())["id"]
    assert on_disk == exported["B"], "the files on disk are not the active handoff's"
