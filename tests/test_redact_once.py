"""Issue 20, "redact once": an export scans each text with the redactor's rules once,
whichever door it goes through (CLI export / inspect / switch, a hook, MCP, the
coordinator API), and still no secret leaves: not from the session's text, its file
paths, its title, nor from the values a caller passes to the coordinator.

The redactor is counted from inside the process that exports (a wrapper around
`python -m passdown` for the CLI doors): each distinct text it scanned, and how often.
"""

from __future__ import annotations

import collections
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passdown import _redact
from passdown.coordinator import HandoffCoordinator
from test_claude_messy import Session
from test_coordinator_fixtures import commit_all, git, launches
from test_coordinator_fixtures import fake_agents as fake_agents  # a fixture

pytestmark = pytest.mark.timeout(300)

SID = "eeeeeeee-0000-4000-8000-000000000020"
# the tail of each secret is what must never be found again, in any case, in any file
IN_PROMPT = "ghp_" + "Rd1ceOncePromptSecret0123456789abcdef"
IN_COMMAND = "sk_live_" + "Rd1ceOnceCommandSecret01234"
IN_PATH = "AKIA" + "RD1CEONCEPATH0AB"
IN_TITLE = "xoxb-" + "1234567890-Rd1ceOnceTitleSecret"
IN_CALLER = "sk-ant-" + "api03-Rd1ceOnceCallerSecret0123456789"
CALLER_PASSWORD = "Rd1ceOnceCallerPassw0rd"
SESSION_SECRETS = (IN_PROMPT, IN_COMMAND, IN_PATH, IN_TITLE)

COUNTING_WRAPPER = """
import atexit, collections, json, os, runpy, sys
from passdown import _redact
scanned = collections.Counter()
# the method that runs the rules over one text (before redact-once: every redact call)
name = "_scan" if hasattr(_redact.Redactor, "_scan") else "redact"
original = getattr(_redact.Redactor, name)
def counted(self, text):
    if text:
        scanned[text] += 1
    return original(self, text)
setattr(_redact.Redactor, name, counted)
me = os.getpid()
def report():
    if os.getpid() == me:  # not a forked reader
        with open(os.environ["SCANS_OUT"], "w") as out:
            json.dump(dict(scanned), out)
atexit.register(report)
sys.argv = ["passdown", *sys.argv[1:]]
runpy.run_module("passdown", run_name="__main__")
"""


def tail(secret: str) -> str:
    return secret[-16:].lower()


def secret_session(ws: Path) -> Path:
    """A Claude Code session with a secret in a prompt, a command, a file path and its
    title; the same plan replayed three times (a forked session reusing task ids) so
    that the handoff holds the same texts many times."""
    s = Session(session_id=SID, cwd=str(ws))
    s.user(f"Deploy the service; the CI token is {IN_PROMPT}")
    for round_ in range(3):
        for number, subject in ((1, "Reproduce the bug"), (2, "Fix parse()"), (3, "Run tests")):
            s.task_create(number, subject)
        s.task_update(1, "in_progress")
        s.tool("Bash", {"command": f"STRIPE_KEY={IN_COMMAND} python -m pytest -q"}, "2 passed")
        s.tool(
            "Write",
            {"file_path": str(ws / "config" / f"{IN_PATH}.json"), "content": "{}\n"},
            f"File created successfully at: {ws}/config/{IN_PATH}.json",
        )
        s.assistant(f"Round {round_}: deployed.\n\nNext steps:\n- run the full suite")
    s.records.append(
        {"type": "custom-title", "customTitle": f"Deploy {IN_TITLE}", "sessionId": SID}
    )
    (ws / "config").mkdir(exist_ok=True)
    (ws / "config" / f"{IN_PATH}.json").write_text("{}\n")
    return s.write(Path(os.environ["CLAUDE_CONFIG_DIR"]))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = tmp_path / "ws"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# project\n")
    commit_all(repo, "initial")
    return repo


def scanned_in(args: list[str], ws: Path, tmp_path: Path, stdin: str | None = None) -> Any:
    """Run `passdown ARGS` with the redactor counted; (process, {text: scans})."""
    wrapper, out = tmp_path / "count_scans.py", tmp_path / "scans.json"
    wrapper.write_text(COUNTING_WRAPPER)
    out.unlink(missing_ok=True)
    env = {**os.environ, "SCANS_OUT": str(out)}
    env.pop("PASSDOWN_AGENTS", None)  # as an agent runs a hook: limited to its own agent
    proc = subprocess.run(
        [sys.executable, str(wrapper), *args],
        cwd=ws,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(out.read_text())


def assert_each_text_scanned_once(scans: dict[str, int]) -> None:
    again = collections.Counter({text[:80]: n for text, n in scans.items() if n > 1})
    assert not again, f"texts scanned more than once: {again.most_common(8)}"
    scanned = "\n".join(scans)
    for secret in SESSION_SECRETS:
        assert secret in scanned, f"{secret} never reached the redactor"


def stored_text() -> str:
    """Every value of every table of the store, as one lowercase text."""
    db = Path(os.environ["PASSDOWN_DATA_DIR"]) / "store.db"
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        rows = [row for t in tables for row in conn.execute(f'select * from "{t}"')]
    return "\n".join(str(value) for row in rows for value in row).lower()


def assert_nothing_leaves(
    ws: Path, *texts: str, secrets: tuple[str, ...] = SESSION_SECRETS
) -> None:
    folder = ws / ".agent-handoff"
    outputs = {
        "HANDOFF.md": (folder / "HANDOFF.md").read_text(),
        "handoff.json": (folder / "handoff.json").read_text(),
        "the store": stored_text(),
        **{f"output {i}": text for i, text in enumerate(texts)},
    }
    for where, text in outputs.items():
        for secret in secrets:
            assert tail(secret) not in text.lower(), f"{secret} leaked into {where}"
    handoff = json.loads(outputs["handoff.json"])
    assert handoff["redaction"]["applied"] is True
    assert "[REDACTED:" in outputs["HANDOFF.md"] and "[redacted:" in outputs["the store"]


@pytest.mark.parametrize("door", ["export", "inspect", "hook"])
def test_cli_doors_scan_each_text_once(door: str, ws: Path, tmp_path: Path) -> None:
    session = secret_session(ws)
    stdin = None
    if door == "export":
        args = ["export", "--from", "claude", "--session", str(session), "--json"]
    elif door == "inspect":
        args = ["inspect", "--from", "claude", "--session", str(session), "--json"]
    else:
        args = ["hook", "claude"]
        stdin = json.dumps(
            {
                "hook_event_name": "SessionEnd",
                "session_id": SID,
                "transcript_path": str(session),
                "cwd": str(ws),
                "reason": "exit",
            }
        )
    proc, scans = scanned_in(args, ws, tmp_path, stdin)
    assert proc.returncode == 0, proc.stderr
    assert_each_text_scanned_once(scans)
    if door == "inspect":
        handoff = json.loads(proc.stdout)
        assert handoff["redaction"]["findings"], "inspect shows what was redacted"
        for secret in SESSION_SECRETS:
            assert tail(secret) not in proc.stdout.lower() + proc.stderr.lower()
        return
    log = Path(os.environ["PASSDOWN_DATA_DIR"]) / "logs" / "hooks.log"
    assert_nothing_leaves(ws, proc.stdout, proc.stderr, log.read_text() if door == "hook" else "")


def test_switch_scans_each_text_once_and_the_prompt_is_clean(
    ws: Path, tmp_path: Path, fake_agents: Path
) -> None:
    session = secret_session(ws)
    proc, scans = scanned_in(
        ["switch", "--from", "claude", "--session", str(session), "--to", "codex",
         "--non-interactive"],
        ws,
        tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_each_text_scanned_once(scans)
    (started,) = launches(fake_agents)
    prompt = " ".join(str(a) for a in started["argv"])  # type: ignore[union-attr]
    assert "HANDOFF.md" in prompt
    assert_nothing_leaves(ws, proc.stdout, proc.stderr, prompt)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """The texts this process's redactor scans from now on, with a count each."""
    counter: collections.Counter[str] = collections.Counter()
    if hasattr(_redact, "_Memo"):  # nothing remembered from earlier tests
        monkeypatch.setattr(_redact, "_MEMO", _redact._Memo(1 << 24, 1 << 20))
    name = "_scan" if hasattr(_redact.Redactor, "_scan") else "redact"
    original = getattr(_redact.Redactor, name)

    def counted(self: _redact.Redactor, text: str) -> Any:
        if text:
            counter[text] += 1
        return original(self, text)

    monkeypatch.setattr(_redact.Redactor, name, counted)
    return counter


def test_coordinator_api_scans_each_text_once_and_redacts_the_callers_values(
    ws: Path, fake_agents: Path, scans: collections.Counter[str]
) -> None:
    session = secret_session(ws)
    coordinator = HandoffCoordinator(ws)
    package = coordinator.prepare_handoff_sync(
        "claude",
        f"Deployed with {IN_CALLER}",
        session=str(session),
        require_session=True,
        blockers=[f"the key {IN_CALLER} was revoked"],
        next_steps=[f"export DB_PASSWORD={CALLER_PASSWORD} and rerun"],
        current_feature=f"rotate {IN_CALLER}",
        recent_files=[f"config/{IN_PATH}.json"],
    )
    result = coordinator.execute_handoff_sync(package, "codex")
    assert result.launched and result.stored
    assert_each_text_scanned_once(dict(scans))
    assert any(IN_CALLER in text for text in scans), "the caller's values were scanned"
    (started,) = launches(fake_agents)
    prompt = " ".join(str(a) for a in started["argv"])  # type: ignore[union-attr]
    everything = (*SESSION_SECRETS, IN_CALLER, CALLER_PASSWORD)
    assert_nothing_leaves(ws, prompt, package.to_json(), secrets=everything)
    assert package.handoff is not None
    findings = package.handoff.redaction.findings
    # each secret text counted once although the package repeats the caller's values
    # (its state and its handoff) and the plan repeats the session's
    assert findings.get("anthropic_key") == 3, findings  # summary, blocker, feature
    assert findings.get("github_token") == 1, findings
    handoff_md = (ws / ".agent-handoff" / "HANDOFF.md").read_text()
    assert "the key [REDACTED:anthropic_key] was revoked" in handoff_md
    assert "export DB_PASSWORD=[REDACTED:secret_assignment] and rerun" in handoff_md


def test_mcp_prepare_handoff_scans_each_text_once(
    ws: Path, scans: collections.Counter[str]
) -> None:
    from passdown.mcp._tools import ScopedTools
    from passdown.records import Scope, default_project
    from passdown.store import open_store

    session = secret_session(ws)
    with open_store() as store:
        tools = ScopedTools(store, Scope(project=default_project(ws)), ws)
        answer = tools.prepare_handoff("claude", session=str(session))
    assert_each_text_scanned_once(dict(scans))
    assert_nothing_leaves(ws, json.dumps(answer))


def test_the_store_edge_stays_idempotent(ws: Path) -> None:
    """A record passdown redacted goes through the store's own redaction unchanged, and
    a record stored from outside is still redacted there."""
    from passdown.records import Scope, default_project
    from passdown.store import open_store

    session = secret_session(ws)
    HandoffCoordinator(ws).export_sync(
        HandoffCoordinator(ws).prepare_handoff_sync("claude", session=str(session))
    )
    scope = Scope(project=default_project(ws))
    with open_store() as store:
        (record,) = store.query(scope, type="handoff").records
        again = _redact.Redactor()
        assert again.redact_data(record.model_dump(mode="json")) == record.model_dump(mode="json")
        assert again.findings == {}
        outside = {
            "id": "from-outside",
            "type": "task",
            "title": f"token {IN_PROMPT}",
            "scope": {"project": scope.project},
            "content": f"key {IN_CALLER}",
            "created_at": "2026-11-30T10:00:00Z",
            "provenance": {"agent": "someone", "session": "s1", "tool": "curl"},
        }
        store.store(outside)
        kept = store.retrieve(scope, "from-outside")
    assert kept.title == "token [REDACTED:github_token]"
    assert kept.content == "key [REDACTED:anthropic_key]"


def test_what_the_redactor_remembers_holds_no_secret(
    ws: Path, scans: collections.Counter[str]
) -> None:
    session = secret_session(ws)
    HandoffCoordinator(ws).prepare_handoff_sync(
        "claude", session=str(session), blockers=[f"the key {IN_CALLER} was revoked"]
    )
    remembered = [key for key in _redact._MEMO._results if isinstance(key, str)]
    assert remembered, "the export's texts are remembered"
    for secret in (*SESSION_SECRETS, IN_CALLER):
        assert not [text for text in remembered if tail(secret) in text.lower()], secret
    # and a text with a secret, met again, is still found and counted
    again = _redact.Redactor()
    assert again.redact(f"the key {IN_CALLER} was revoked") == (
        "the key [REDACTED:anthropic_key] was revoked"
    )
    assert again.findings == {"anthropic_key": 1}
    assert scans[f"the key {IN_CALLER} was revoked"] == 1, "found again, not scanned again"
