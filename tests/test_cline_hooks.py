"""Cline CLI's hook integration: the hook scripts (never over a user's own file), the
payload (`hookName`, `sessionContext.rootSessionId`, `workspaceInfo.rootPath`), the
failure it reports, and the wait for the session's last write."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from passdown.errors import UsageError
from passdown.integrations._base import InstallTarget
from passdown.integrations._cline import FILES, MARK, ClineHooks, cline_hooks_dir


def _target(tmp_path: Path, scope: str = "user") -> InstallTarget:
    return InstallTarget("cline", scope, tmp_path / "proj", "/opt/my bin/passdown")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("CLINE_HOOKS_DIR", "CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_the_scripts_and_where_they_go(home: Path, tmp_path: Path) -> None:
    plan = ClineHooks().plan(_target(tmp_path))
    assert [p.name for p, _, _ in plan] == list(FILES)
    assert {p.parent for p, _, _ in plan} == {home / ".cline" / "hooks"}
    script = plan[0][1](None)
    assert script == f"#!/bin/sh\n{MARK}\nexec '/opt/my bin/passdown' hook cline\n"
    assert plan[0][1](script) == script  # idempotent
    assert plan[0][2](script) is None  # uninstall removes passdown's own
    project = ClineHooks().plan(_target(tmp_path, "project"))
    assert project[0][0] == tmp_path / "proj" / ".clinerules" / "hooks" / "TaskComplete"


def test_a_users_own_hook_is_never_replaced_or_removed(home: Path, tmp_path: Path) -> None:
    [(_path, install, uninstall), *_] = ClineHooks().plan(_target(tmp_path))
    mine = "#!/bin/sh\nnotify-send done\n"
    with pytest.raises(UsageError, match="of your own"):
        install(mine)
    assert uninstall(mine) == mine


def test_env_overrides_of_the_hooks_folder(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINE_DIR", str(home / "c"))
    assert cline_hooks_dir() == home / "c" / "hooks"
    monkeypatch.setenv("CLINE_HOOKS_DIR", str(home / "h"))
    assert cline_hooks_dir() == home / "h"


def test_commands_lists_the_installed_scripts(home: Path, tmp_path: Path) -> None:
    hooks = ClineHooks()
    for path, install, _ in hooks.plan(_target(tmp_path)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(install(None) or "")
    (home / ".cline" / "hooks" / "TaskStart").write_text("#!/bin/sh\n")
    found = hooks.commands(_target(tmp_path))
    assert [r.what for r in found] == [f"hook {name}" for name in FILES]
    assert {r.program for r in found} == {"/opt/my bin/passdown"}


def _payload(hook: str, **extra: object) -> str:
    return json.dumps(
        {
            "hookName": hook,
            "timestamp": "2020-01-01T00:00:00.000Z",
            "sessionContext": {"rootSessionId": "1_abc"},
            "workspaceRoots": ["/w/other"],
            "workspaceInfo": {"rootPath": "/w/repo"},
            **extra,
        }
    )


def test_the_payload_names_the_session_event_and_failure(home: Path) -> None:
    hooks = ClineHooks()
    end = hooks.payload([], _payload("agent_end"))
    assert hooks.event(end) == "turn_complete"
    assert hooks.session_spec(end) == "1_abc" and hooks.cwd(end) == "/w/repo"
    assert hooks.failure(end) is None
    error = hooks.payload([], _payload("agent_error", error={"message": "Rate limit reached"}))
    assert hooks.event(error) == "stop_failure"
    assert hooks.failure(error) == ("rate_limit", "Rate limit reached")
    assert hooks.event(hooks.payload([], _payload("pre_compact"))) == "pre_compact"
    assert hooks.cwd({"workspaceRoots": ["/w/only"]}) == "/w/only"


def test_the_hook_waits_for_the_sessions_last_write(home: Path) -> None:
    folder = home / ".cline" / "data" / "sessions" / "1_abc"
    folder.mkdir(parents=True)
    messages = folder / "1_abc.messages.json"
    messages.write_text("{}")
    past = time.time() - 60
    os.utime(messages, (past, past))
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    started = time.monotonic()
    ClineHooks().payload([], json.dumps({**json.loads(_payload("agent_end")), "timestamp": now}))
    assert time.monotonic() - started >= 2.5  # it waited for a write that never came
    started = time.monotonic()
    ClineHooks().payload([], _payload("agent_end"))  # written after the hook's time: no wait
    assert time.monotonic() - started < 1
