"""Kimi CLI's hook integration: the `[[hooks]]` edit of ~/.kimi/config.toml (kept
comments, idempotent, uninstall after the user changed the file), the refused project
scope, and what a StopFailure payload says about how the session ended."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from passdown.errors import UsageError
from passdown.integrations._base import InstallTarget
from passdown.integrations._kimi import KimiHooks

ORIGINAL = '# mine\ndefault_model = "x"\n\n[[hooks]]\nevent = "SessionStart"\ncommand = "echo hi"\n'


def _target(tmp_path: Path, scope: str = "user") -> InstallTarget:
    return InstallTarget("kimi", scope, tmp_path, "/opt/bin/passdown")


@pytest.fixture
def share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "k"))
    return tmp_path / "k"


def test_install_keeps_the_users_config_and_is_idempotent(share: Path, tmp_path: Path) -> None:
    hooks = KimiHooks()
    [(path, install, uninstall)] = hooks.plan(_target(tmp_path))
    assert path == share / "config.toml"
    installed = install(ORIGINAL)
    assert installed is not None and installed.startswith(ORIGINAL)
    entries = tomlkit.parse(installed)["hooks"]
    assert [(h["event"], h["command"]) for h in entries] == [
        ("SessionStart", "echo hi"),
        *(
            (e, "/opt/bin/passdown hook kimi")
            for e in ("Stop", "SessionEnd", "PreCompact", "StopFailure")
        ),
    ]
    assert install(installed) == installed  # again: no change
    # the user changed the file since: only passdown's entries go
    edited = installed.replace('default_model = "x"', 'default_model = "y"')
    assert uninstall(edited) == ORIGINAL.replace('"x"', '"y"')
    assert uninstall(ORIGINAL) == ORIGINAL
    assert install(None) is not None and "hook kimi" in (install(None) or "")
    assert uninstall(install(None)) == ""


def test_commands_lists_what_was_registered(share: Path, tmp_path: Path) -> None:
    hooks = KimiHooks()
    [(path, install, _)] = hooks.plan(_target(tmp_path))
    path.parent.mkdir(parents=True)
    path.write_text(install(ORIGINAL) or "")
    found = hooks.commands(_target(tmp_path))
    assert [r.what for r in found] == [
        "hook Stop",
        "hook SessionEnd",
        "hook PreCompact",
        "hook StopFailure",
    ]
    assert {r.program for r in found} == {"/opt/bin/passdown"}


def test_project_scope_is_refused(share: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="user config"):
        KimiHooks().plan(_target(tmp_path, "project"))


def test_a_config_that_is_not_toml_is_refused(share: Path, tmp_path: Path) -> None:
    [(_, install, _)] = KimiHooks().plan(_target(tmp_path))
    with pytest.raises(UsageError, match="not valid TOML"):
        install("[[hooks]\n")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (
            {
                "hook_event_name": "StopFailure",
                "error_type": "APIStatusError",
                "error_message": "Error code: 429 - {'error': {'message': 'Rate limit reached'}}",
            },
            "rate_limit",
        ),
        ({"hook_event_name": "StopFailure", "error_type": "APITimeoutError"}, "error"),
        ({"hook_event_name": "SessionEnd", "reason": "exit"}, None),
    ],
)
def test_failure_from_the_payload(payload: dict[str, str], expected: str | None) -> None:
    hooks = KimiHooks()
    failure = hooks.failure(payload)
    assert (failure[0] if failure else None) == expected
    assert hooks.session_spec({"session_id": "abc", "cwd": "/w"}) == "abc"
    assert hooks.event({"hook_event_name": "PreCompact"}) == "pre_compact"
