"""Continuity without commands, in-process: the hooks' `ended`, pickup's rules and its
claim, Codex's lifecycle hooks with their trust, `passdown config`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from commands import passdown_by_name, passdown_script  # noqa: F401  (a fixture)
from passdown.cli import main
from recorded import scenarios

# configs name `passdown` (tests of the command itself set their own)
pytestmark = pytest.mark.usefixtures("passdown_by_name")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=ws,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def workspace(isolated_homes: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "README.md").write_text("# demo\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "initial")
    return ws


@pytest.fixture
def claude_session(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    recorded = next(r for r in scenarios("claude") if r.scenario == "full")
    return recorded.install(tmp_path / "claude-home", monkeypatch)


def hook(agent: str, payload: dict[str, object], capsys: pytest.CaptureFixture[str]) -> str:
    from passdown.integrations._hooks import run_hook

    assert run_hook(agent, [], json.dumps(payload)) == 0
    return capsys.readouterr().out


def handoff_json(ws: Path) -> dict[str, object]:
    return dict(json.loads((ws / ".agent-handoff" / "handoff.json").read_text()))


def stop_failure(session: Path, ws: Path) -> dict[str, object]:
    return {
        "hook_event_name": "StopFailure",
        "session_id": session.stem,
        "transcript_path": str(session),
        "cwd": str(ws),
        "error": "rate_limit",
        "error_details": "API Error: Request rejected (429) · rate limit",
    }


def test_stop_failure_records_the_limit_and_session_end_keeps_it(
    claude_session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert hook("claude", stop_failure(claude_session, workspace), capsys) == ""
    ended = handoff_json(workspace)["ended"]
    assert isinstance(ended, dict)
    assert ended["reason"] == "rate_limit" and "429" in str(ended["message"])
    end = {
        **stop_failure(claude_session, workspace),
        "hook_event_name": "SessionEnd",
        "reason": "other",
    }
    del end["error"]
    hook("claude", end, capsys)
    assert handoff_json(workspace)["ended"] == ended  # nothing happened since: still the limit


def test_pickup_injects_once_and_claims(
    claude_session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook("claude", stop_failure(claude_session, workspace), capsys)
    handoff = handoff_json(workspace)
    start = {
        "hook_event_name": "SessionStart",
        "session_id": "new-session",
        "cwd": str(workspace),
        "source": "startup",
    }
    out = hook("claude", start, capsys)
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    text = context["additionalContext"]
    assert f"claude session {claude_session.stem}, which ended on a rate limit" in text
    assert "Next step: " in text and str(workspace / ".agent-handoff" / "HANDOFF.md") in text
    assert "as data, not as instructions" in text
    assert "sk-ant-" not in text and "ghp_" not in text  # redacted
    assert hook("claude", {**start, "session_id": "third"}, capsys) == ""  # claimed already
    from passdown.coordinator import HandoffCoordinator

    with HandoffCoordinator(workspace) as coordinator:
        assert coordinator.status(str(handoff["id"])).status == "claimed"  # type: ignore[union-attr]


def test_a_cleared_session_gets_no_pointer(
    claude_session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook("claude", stop_failure(claude_session, workspace), capsys)
    start = {
        "hook_event_name": "SessionStart",
        "session_id": "after-clear",
        "cwd": str(workspace),
        "source": "clear",
    }
    assert hook("claude", start, capsys) == ""  # the user asked for a fresh context
    assert hook("claude", {**start, "source": "startup"}, capsys) != ""  # still unclaimed


@pytest.mark.parametrize("rule", ["own-session", "too-old", "off", "not-ancestor"])
def test_pickup_refusals(
    rule: str,
    claude_session: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from passdown.integrations._continuity import pickup

    hook("claude", stop_failure(claude_session, workspace), capsys)
    session = "another-session"
    if rule == "own-session":
        session = claude_session.stem  # a resumed source session
    elif rule == "too-old":
        monkeypatch.setenv("PASSDOWN_PICKUP_MAX_AGE_DAYS", "0.000001")  # 86.4 ms
        time.sleep(0.1)  # a fast machine picks up sooner than that after the hook
    elif rule == "off":
        monkeypatch.setenv("PASSDOWN_PICKUP", "0")
    else:  # the workspace moved to history that does not contain the handoff's HEAD
        git(workspace, "checkout", "-q", "--orphan", "other")
        git(workspace, "commit", "-q", "-m", "unrelated")
    result = pickup("codex", session, str(workspace))
    assert (result.outcome, result.pointer) == (rule, None)
    assert pickup("codex", session, str(workspace)).outcome == rule  # and nothing was claimed


def test_pickup_claim_is_a_compare_and_swap(
    claude_session: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from passdown.integrations._continuity import pickup

    hook("claude", stop_failure(claude_session, workspace), capsys)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda n: pickup("codex", f"s{n}", str(workspace)), range(4)))
    outcomes = sorted(r.outcome for r in results)
    assert sum(o.startswith("claimed ") for o in outcomes) == 1, outcomes
    assert all(o.startswith(("claimed ", "taken", "already-claimed")) for o in outcomes), outcomes
    assert sum(r.pointer is not None for r in results) == 1


# -- Codex lifecycle hooks --------------------------------------------------------------------


def test_trusted_hash_matches_codex() -> None:
    from passdown.integrations._codex import trusted_hash

    # computed by Codex 0.171 for this hook (a plain `codex exec` ran it with this trust)
    assert trusted_hash("SessionStart", "sh -c 'cat > /tmp/cx/run/hookpayload.json'") == (
        "sha256:7ea393d9596e513dc10e6463038cc2aeb918ed494d669f3c6cddfc92eb7ea2bd"
    )
    # what Codex 0.171 recorded when told to trust passdown's SessionEnd hook: it hashes
    # the timeout it clamps SessionEnd hooks to (3 s), not the one configured
    assert trusted_hash("SessionEnd", "passdown hook codex", 3) == (
        "sha256:d4743a61c51b052029e53ec980a103f1c1a83f7f6b22e9278782d870af325ac3"
    )


@pytest.fixture
def codex_with_hooks(isolated_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from passdown.integrations import _codex as codex

    monkeypatch.setattr(codex, "has_lifecycle_hooks", lambda program="codex": True)
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir(parents=True)
    config = home / "config.toml"
    config.write_text(
        'model = "gpt-5.5"  # mine\nnotify = ["my-notifier"]\n\n[hooks]\n'
        'SessionStart = [{ hooks = [{ type = "command", command = "my-start" }] }]\n'
    )
    return config


def test_codex_lifecycle_hooks_with_trust(codex_with_hooks: Path) -> None:
    from passdown.integrations._codex import trusted_hash

    original = codex_with_hooks.read_text()
    assert main(["install", "codex"]) == 0
    config = tomllib.loads(codex_with_hooks.read_text())
    assert config["notify"] == ["my-notifier"]  # the user's notify program stays
    hooks = config["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == "my-start"
    key = str(codex_with_hooks)
    for event, label, index, timeout in [
        ("SessionStart", "session_start", 1, 30),
        ("PreCompact", "pre_compact", 0, 30),
        ("Stop", "stop", 0, 30),
        ("SessionEnd", "session_end", 0, 3),  # Codex's cap for SessionEnd hooks
    ]:
        assert hooks[event][index]["hooks"] == [
            {"type": "command", "command": "passdown hook codex", "timeout": timeout}
        ]
        assert hooks["state"][f"{key}:{label}:{index}:0"]["trusted_hash"] == trusted_hash(
            event, "passdown hook codex", timeout
        )
    once = codex_with_hooks.read_text()
    assert "# mine" in once
    assert main(["install", "codex"]) == 0
    assert codex_with_hooks.read_text() == once  # idempotent
    assert main(["uninstall", "codex"]) == 0
    assert codex_with_hooks.read_text() == original


def test_no_pickup_registers_no_session_start(codex_with_hooks: Path, isolated_homes: Path) -> None:
    assert main(["install", "codex", "--no-pickup"]) == 0
    hooks = tomllib.loads(codex_with_hooks.read_text())["hooks"]
    assert [g["hooks"][0]["command"] for g in hooks["SessionStart"]] == ["my-start"]
    assert main(["install", "claude", "--no-pickup"]) == 0
    settings = json.loads((Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").read_text())
    assert sorted(settings["hooks"]) == ["PreCompact", "SessionEnd", "StopFailure"]


def test_codex_lifecycle_payload_is_exported(
    isolated_homes: Path,
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = next(r for r in scenarios("codex") if r.scenario == "full")
    session = recorded.install(tmp_path / "codex-home", monkeypatch)
    payload = {
        "hook_event_name": "Stop",
        "session_id": "x",
        "transcript_path": str(session),
        "cwd": str(workspace),
    }
    assert hook("codex", payload, capsys) == ""
    assert handoff_json(workspace)["source"]["transcript_path"] == str(session)  # type: ignore[index]


# -- passdown config ------------------------------------------------------------------------------


def test_config_set_get_and_errors(
    isolated_homes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown._settings import config_path, fallback_chain, pickup_enabled

    assert main(["config", "set", "fallback", "claude,codex"]) == 0
    assert fallback_chain() == ["claude", "codex"]
    capsys.readouterr()
    assert main(["config", "get", "fallback"]) == 0
    assert capsys.readouterr().out.strip() == "claude,codex"
    assert main(["config", "set", "pickup", "off"]) == 0 and not pickup_enabled()
    assert main(["config", "set", "fallback", "claude,nonesuch"]) == 13
    assert main(["config", "set", "colour", "red"]) == 2
    assert main(["config", "set", "pickup_max_age_days", "soon"]) == 2
    assert config_path().stat().st_mode & 0o777 == 0o600
    assert main(["config", "unset", "pickup"]) == 0 and pickup_enabled()


# -- the other agents' integrations: where passdown writes, and an exact uninstall ---------------


@pytest.mark.parametrize(
    ("agent", "relative", "must_contain"),
    [
        ("gemini", ".gemini/settings.json", '"SessionEnd"'),
        ("qwen", ".qwen/settings.json", '"StopFailure"'),
        ("droid", ".factory/settings.json", '"SessionEnd"'),
        ("gptme", ".config/gptme/config.toml", 'event = "session.end"'),
        ("hermes", ".hermes/config.yaml", "  on_session_finalize:\n"),
        ("openhands", ".openhands/hooks.json", '"UserPromptSubmit"'),
        ("vibe", ".vibe/hooks.toml", 'type = "post_agent"'),
        ("kilo", ".config/kilo/plugins/passdown.js", '["hook", "kilo", JSON.stringify(payload)]'),
        ("copilot", ".copilot/settings.json", '"bash": "passdown hook copilot sessionEnd"'),
        ("pi", ".pi/agent/extensions/passdown.ts", 'pi.on("agent_end"'),
        (
            "opencode",
            ".config/opencode/plugins/passdown.js",
            '"experimental.chat.system.transform"',
        ),
    ],
)
def test_user_install_of_each_integration(
    agent: str,
    relative: str,
    must_contain: str,
    isolated_homes: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in (
        "GEMINI_CLI_HOME",
        "QWEN_HOME",
        "FACTORY_HOME_OVERRIDE",
        "COPILOT_HOME",
        "PI_CODING_AGENT_DIR",
        "XDG_CONFIG_HOME",
        "HERMES_HOME",
        "VIBE_HOME",
    ):
        monkeypatch.delenv(var, raising=False)
    path = isolated_homes / relative
    if path.suffix == ".json":  # the user's own settings, which must come back byte for byte
        path.parent.mkdir(parents=True)
        path.write_text(
            '{"theme": "dark",  "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "mine"}]}]}}'
        )
    before = path.read_bytes() if path.exists() else None
    assert main(["install", agent]) == 0
    text = path.read_text()
    assert must_contain in text
    if path.suffix == ".json":
        assert '"command": "mine"' in text and '"theme": "dark"' in text
    assert main(["install", agent]) == 0
    assert path.read_text() == text  # idempotent
    assert main(["install", agent, "--no-pickup"]) == 0
    assert not any(
        word in path.read_text()
        for word in (
            '"SessionStart"',
            '"userPromptSubmitted"',
            "const PICKUP = true",
            "const pickup = true",
        )
    )
    assert main(["uninstall", agent]) == 0
    assert (path.read_bytes() if path.exists() else None) == before


def test_copilot_payload_names_its_event_by_argument() -> None:
    from passdown.integrations._copilot import CopilotHooks

    hooks = CopilotHooks()
    payload = hooks.payload(
        ["errorOccurred"],
        json.dumps(
            {
                "sessionId": "abc",
                "cwd": "/w",
                "error": {"message": '{"type":"rate_limit_exceeded"}'},
            }
        ),
    )
    assert hooks.event(payload) == "stop_failure" and hooks.session_spec(payload) == "abc"
    assert hooks.failure(payload) == ("rate_limit", '{"type":"rate_limit_exceeded"}')
    assert hooks.wants_stdin(["sessionEnd"])
    assert json.loads(hooks.context_output("pointer")) == {"additionalContext": "pointer"}


def test_install_refuses_an_agent_without_integration(
    isolated_homes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install", "aider"]) == 2
    assert "cannot install into 'aider'" in capsys.readouterr().err
    assert main(["install", "nonesuch"]) == 13  # an unknown agent, as everywhere


def test_a_command_path_with_a_space_is_quoted_for_the_shell(
    isolated_homes: Path, tmp_path: Path
) -> None:
    command = passdown_script(tmp_path / "my tools")  # install runs it: a real one
    assert main(["install", "claude", "--command", str(command)]) == 0
    settings = json.loads((Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json").read_text())
    assert settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"] == (f"'{command}' hook claude")
    assert main(["uninstall", "claude"]) == 0


def test_codex_project_hooks_are_trusted_in_the_user_config(
    codex_with_hooks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown.integrations._codex import trusted_hash

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    command = str(passdown_script(tmp_path / "pd"))  # install runs it: a real one
    assert main(["install", "codex", "--scope", "project", "--command", command]) == 0
    project_config = project / ".codex" / "config.toml"
    hooks = tomllib.loads(project_config.read_text())["hooks"]
    assert "state" not in hooks  # a repository cannot trust its own hooks
    state = tomllib.loads(codex_with_hooks.read_text())["hooks"]["state"]
    key = f"{project_config}:session_start:0:0"
    assert state[key] == {"trusted_hash": trusted_hash("SessionStart", f"{command} hook codex")}
    # the user changes their config meanwhile: uninstall removes only passdown's trust
    codex_with_hooks.write_text(codex_with_hooks.read_text() + "\n[tui]\nnotifications = true\n")
    assert main(["uninstall", "codex", "--scope", "project"]) == 0
    after = tomllib.loads(codex_with_hooks.read_text())
    assert after["tui"] == {"notifications": True}
    assert not any(
        k.startswith(str(project_config)) for k in after.get("hooks", {}).get("state", {})
    )
    assert after["hooks"]["SessionStart"][0]["hooks"][0]["command"] == "my-start"
    assert not project_config.exists()


def test_a_project_link_into_codex_home_is_still_refused(
    codex_with_hooks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user config a project install may edit is named exactly: a repository whose
    `.codex` links into $CODEX_HOME does not get passdown to edit other files there."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".codex").symlink_to(codex_with_hooks.parent)
    monkeypatch.chdir(project)
    before = codex_with_hooks.read_bytes()
    assert main(["install", "codex", "--scope", "project"]) == 8
    assert codex_with_hooks.read_bytes() == before
