"""A session file discovery cannot open is reported, never silently skipped: the only
session unreadable is exit 5 naming it (was exit 3, "no session found"), and a newer
unreadable file beside a readable one gives a warning naming it and why, while the
newest readable session is handed off (was: handed off silently).

The tests run as root, for whom `chmod 000` changes nothing, so the file is made
unreadable where passdown opens it (`os.open` of that path fails with EACCES), as a
normal user meets a mode-000 file. Each agent's recorded session is moved into the
test's workspace (its cwd rewritten, its project folder renamed as the agent names it),
so discovery by workspace finds it as it finds a real one.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from passdown.agents import get_agent
from passdown.agents.claude import encode_cwd as claude_folder
from passdown.agents.pi import encode_cwd as pi_folder
from passdown.cli import main
from recorded import scenarios
from test_cli_unreadable import make_unreadable, store_files

AGENTS = ["claude", "codex", "qwen", "pi"]


def relocate(agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The agent's recorded session installed and moved into a fresh workspace (the
    current folder). Returns (session file, workspace)."""
    rec = next(r for r in scenarios(agent) if r.scenario == "full")
    store = tmp_path / "store"
    session = rec.install(store, monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    old, new = rec.expected["workspace"], str(workspace)
    for path in store.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".json"):
            path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    for folder in sorted((p for p in store.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        for encode in (claude_folder, pi_folder):
            if folder.name == encode(old):
                folder.rename(folder.with_name(encode(new)))
    [moved] = [p for p in store.rglob(session.name) if p.is_file()]
    return moved, workspace


def newer_copy(session: Path) -> Path:
    """A second session file beside `session`, newer than it (mtime one minute on)."""
    stem, dot, suffix = session.name.partition(".")
    twin = session.with_name(f"{stem[:-4]}beef{dot}{suffix}")
    shutil.copyfile(session, twin)
    now = time.time()
    os.utime(session, (now - 60, now - 60))
    os.utime(twin, (now, now))
    return twin


def export(capsys: pytest.CaptureFixture[str], agent: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["export", "--from", agent, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err, err
    return code, (json.loads(out) if code == 0 else {}), err


@pytest.mark.parametrize("agent", AGENTS)
def test_the_only_session_unreadable_is_exit_5_naming_it(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session, workspace = relocate(agent, tmp_path, monkeypatch)
    make_unreadable(session, monkeypatch)
    code, _, err = export(capsys, agent)
    assert code == 5, err  # before: 3, "no session found"
    error = json.loads(err)
    assert error["error"] == f"cannot read {session}: Permission denied"
    assert "newest session file" in error["hint"]
    assert store_files() == [] and not (workspace / ".agent-handoff").exists()


@pytest.mark.parametrize("agent", AGENTS)
def test_a_newer_unreadable_session_is_named_in_a_warning(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session, _ = relocate(agent, tmp_path, monkeypatch)
    twin = newer_copy(session)
    make_unreadable(twin, monkeypatch)
    code, written, err = export(capsys, agent)
    assert code == 0, err
    handoff = json.loads(Path(written["json"]).read_text())
    assert handoff["source"]["transcript_path"] == str(session)  # the newest readable one
    note = f"skipped a newer session file that cannot be read: {twin} (Permission denied)"
    assert any(w.startswith(note) for w in handoff["warnings"]), handoff["warnings"]
    assert note in err  # and the user sees it


@pytest.mark.parametrize("agent", AGENTS)
def test_readable_sessions_give_the_newest_and_no_warning(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: the same set-up with both files readable hands off the newer one."""
    session, _ = relocate(agent, tmp_path, monkeypatch)
    twin = newer_copy(session)
    code, written, err = export(capsys, agent)
    assert code == 0, err
    handoff = json.loads(Path(written["json"]).read_text())
    assert handoff["source"]["transcript_path"] == str(twin)
    assert not any("cannot be read" in w for w in handoff["warnings"])


def test_an_older_unreadable_session_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a file newer than the one handed off is worth a warning."""
    session, _ = relocate("codex", tmp_path, monkeypatch)
    twin = newer_copy(session)
    make_unreadable(session, monkeypatch)  # the older one
    code, written, err = export(capsys, "codex")
    assert code == 0, err
    handoff = json.loads(Path(written["json"]).read_text())
    assert handoff["source"]["transcript_path"] == str(twin)
    assert "cannot be read" not in err


def test_auto_names_the_unreadable_newest_session_of_another_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--from auto`: an older readable Codex session is handed off, with a warning that
    the newer Claude session file could not be read; with no readable session at all,
    exit 5 naming the file."""
    claude, workspace = relocate("claude", tmp_path / "c", monkeypatch)
    codex, _ = relocate("codex", tmp_path / "x", monkeypatch)
    monkeypatch.chdir(workspace)
    codex.write_text(codex.read_text().replace(str(tmp_path / "x" / "ws"), str(workspace)))
    now = time.time()
    os.utime(codex, (now - 60, now - 60))
    os.utime(claude, (now, now))
    make_unreadable(claude, monkeypatch)
    capsys.readouterr()
    assert main(["export", "--from", "auto", "--no-store"]) == 0
    err = capsys.readouterr().err
    assert f"skipped a newer session file that cannot be read: {claude} (Permission denied)" in err
    make_unreadable(codex, monkeypatch)
    assert main(["export", "--from", "auto", "--no-store"]) == 5
    assert f"cannot read {claude}: Permission denied" in capsys.readouterr().err


def test_discover_all_reports_and_sessions_lists_without_the_unreadable_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session, workspace = relocate("pi", tmp_path, monkeypatch)
    twin = newer_copy(session)
    make_unreadable(twin, monkeypatch)
    found = get_agent("pi").discover_all(workspace)
    assert [r.path for r in found.refs] == [session]
    assert [(s.path, s.reason) for s in found.skipped] == [(twin, "Permission denied")]
    capsys.readouterr()
    assert main(["sessions", "--from", "pi"]) == 0
    out, err = capsys.readouterr()
    assert str(workspace) in out
    assert f"cannot read {twin}: Permission denied" in err


def _as_a_user_chmod_binds() -> list[str] | None:
    """The argv prefix that runs a command for whom mode 000 denies reading: nothing
    for a normal user; for root, `setpriv` without the capabilities that bypass file
    permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). None when neither is possible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, "--bounding-set", caps, "--inh-caps", caps]


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_real_mode_000_newest_session(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with a real `chmod 000` and a real process (no patched `os.open`): the
    only session unreadable is exit 5 naming it; beside an older readable one, the
    warning names it."""
    import subprocess
    import sys

    prefix = _as_a_user_chmod_binds()
    if prefix is None:
        pytest.skip("running as root without setpriv: mode 000 binds nobody here")
    session, workspace = relocate(agent, tmp_path, monkeypatch)
    session.chmod(0)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}

    def export() -> subprocess.CompletedProcess[str]:
        argv = [*prefix, sys.executable, "-m", "passdown", "export", "--from", agent]
        return subprocess.run(
            [*argv, "--no-store"], cwd=workspace, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    proc = export()
    assert proc.returncode == 5, proc.stderr
    assert f"passdown: error: cannot read {session}: Permission denied" in proc.stderr
    older = newer_copy(session)  # a readable copy, then made the older one
    older.chmod(0o600)
    now = time.time()
    os.utime(older, (now - 120, now - 120))
    proc = export()
    assert proc.returncode == 0, proc.stderr
    assert f"skipped a newer session file that cannot be read: {session} (Permission denied)" in (
        proc.stderr
    )
