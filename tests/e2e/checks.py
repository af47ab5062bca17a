"""Assertions shared by the e2e tests: what a handoff written by `passdown export` must hold.

Field names follow passdown's handoff model (`source`, `task`, `state`, ...); path fields may
be absolute or relative to the workspace, so they are compared relative to it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from e2e.servers import LoggedRequest


def ok(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, (
        f"{what} exited {proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\n"
        f"stderr:\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def load_handoff(ws: Path) -> tuple[str, dict[str, Any]]:
    folder = ws / ".agent-handoff"
    md = (folder / "HANDOFF.md").read_text(encoding="utf-8")
    data = json.loads((folder / "handoff.json").read_text(encoding="utf-8"))
    return md, data


def rel(path: str, ws: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return str(p.relative_to(ws))
        except ValueError:
            return str(p.resolve().relative_to(ws.resolve()))
    return str(p)


def assert_no_secrets(secrets: list[str], **texts: str) -> None:
    for name, text in texts.items():
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"planted secret(s) leaked into {name}: {leaked}"
        # A partial leak (e.g. a key with only its prefix masked) is still a leak.
        for s in secrets:
            tail = s[-12:]
            assert tail not in text, f"the tail of a planted secret leaked into {name}: {tail}"


def assert_handoff_matches(ws: Path, expected: dict[str, Any], stdout: str) -> None:
    """The handoff carries the scenario's request, plan, files, failure and progress."""
    md, data = load_handoff(ws)
    everything = md + "\n" + json.dumps(data, ensure_ascii=False) + "\n" + stdout
    assert_no_secrets(
        expected["secrets"],
        handoff_md=md,
        handoff_json=json.dumps(data, ensure_ascii=False),
        stdout=stdout,
    )
    for hidden in expected.get("hidden_reasoning_planted", []):
        assert hidden not in everything, f"hidden reasoning exported: {hidden!r}"

    assert data["source"]["agent"] == expected["agent"]
    assert data["source"]["session_id"] == expected["session_id"]

    # The request: its secret-free opening words survive redaction verbatim.
    opening = expected["original_request"].split(". ")[0]
    assert opening in (data["task"]["original_request"] or ""), data["task"]
    assert opening in md
    assert expected["final_assistant_message"] in (data["task"]["latest_progress"] or "")
    assert expected["final_assistant_message"] in md

    plan = {p["subject"]: p["status"] for p in data["state"]["plan"]}
    want_plan = {p["subject"]: p["status"] for p in expected["plan"]}
    assert plan == want_plan, f"plan {plan} != {want_plan}"
    for subject in want_plan:
        assert subject in md

    touched = {rel(f["path"], ws) for f in data["state"]["files_touched"]}
    assert set(expected["files_touched"]) <= touched, touched
    for failed in expected["failed_edits"]:
        assert failed not in touched, f"{failed}: a failed edit touched nothing"
    for name in expected["files_touched"]:
        assert name in md

    fail = expected["failing_command"]
    if fail:
        last = data["state"]["last_failure"]
        assert last and last.get("command") == fail["command"], last
        assert last.get("exit_code") == fail["exit_code"], last
        assert fail["command"] in md
        cmds = [(c["command"], c.get("exit_code")) for c in data["state"]["commands"]]
        assert (fail["command"], fail["exit_code"]) in cmds, cmds


@dataclass(frozen=True)
class Facts:
    """What the handoff of a scripted real-CLI session must say, fact by fact; a field
    left None is not asserted (a session that has no such fact, or an agent that does
    not record it). Lists compare exactly, in order."""

    agent: str
    request: str  # task.original_request
    session_id: str | None = None
    source: Mapping[str, Any] = field(default_factory=dict)  # cwd, agent_version, models...
    latest_user_message: str | None = None
    latest_progress: str | None = None
    plan: Sequence[tuple[str, ...]] | None = None  # rows of `plan_fields`
    plan_fields: tuple[str, ...] = ("subject", "status")
    plan_source: str | None = None
    # path -> its actions: a list compares as a list, a set as a set, None not at all
    files: Mapping[str, Collection[str] | None] | None = None
    commands: Sequence[tuple[str, int, bool]] | None = None  # (command, exit code, ok)
    failure: tuple[str | None, int] | None = None  # last failure (command or None, exit)
    failure_error: str | None = None  # a part of the last failure's error
    ended: str = "normal"
    ended_message: str | None = None  # a part of ended.message
    in_markdown: Sequence[str] = ()


def assert_facts(md: str, data: dict[str, Any], facts: Facts) -> None:
    """The handoff (HANDOFF.md and handoff.json) says what `facts` says."""
    source, task, state = data["source"], data["task"], data["state"]
    assert source["agent"] == facts.agent, source
    if facts.session_id is not None:
        assert source["session_id"] == facts.session_id, source
    for name, value in facts.source.items():
        assert source[name] == value, (name, source)
    assert task["original_request"] == facts.request, task
    if facts.latest_user_message is not None:
        assert task["latest_user_message"] == facts.latest_user_message, task
    if facts.latest_progress is not None:
        assert task["latest_progress"] == facts.latest_progress, task
    if facts.plan is not None:
        plan = [tuple(p[name] for name in facts.plan_fields) for p in state["plan"]]
        assert plan == list(facts.plan), plan
    if facts.plan_source is not None:
        assert state["plan_source"] == facts.plan_source, state["plan_source"]
    if facts.files is not None:
        _assert_files(state["files_touched"], facts.files)
    if facts.commands is not None:
        commands = [(c["command"], c["exit_code"], c["ok"]) for c in state["commands"]]
        assert commands == list(facts.commands), commands
    if facts.failure is not None:
        _assert_failure(state["last_failure"], facts)
    ended = data["ended"]
    assert ended["reason"] == facts.ended, ended
    if facts.ended_message is not None:
        assert facts.ended_message in (ended["message"] or ""), ended
    for text in facts.in_markdown:
        assert text in md, text


def _assert_files(touched: list[dict[str, Any]], want: Mapping[str, Any]) -> None:
    assert sorted(f["path"] for f in touched) == sorted(want), touched
    for entry in touched:
        actions = want[entry["path"]]
        if isinstance(actions, list):
            assert entry["actions"] == actions, entry
        elif actions is not None:
            assert set(entry["actions"]) == set(actions), entry


def _assert_failure(failure: dict[str, Any] | None, facts: Facts) -> None:
    assert failure is not None and facts.failure is not None
    command, exit_code = facts.failure
    if command is not None:
        assert failure["command"] == command, failure
    assert failure["exit_code"] == exit_code, failure
    if facts.failure_error is not None:
        assert facts.failure_error in (failure["error"] or ""), failure


def export_and_check(
    env: dict[str, str], workspace: Path, facts: Facts, *extra: str
) -> tuple[str, dict[str, Any]]:
    """`passdown export --from AGENT --no-store [extra]` as a user runs it, then the
    handoff it wrote checked against `facts`; returns it for the agent's own checks."""
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", facts.agent, "--no-store", *extra],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    ok(proc, f"passdown export --from {facts.agent}")
    md, data = load_handoff(workspace)
    assert_facts(md, data, facts)
    return md, data


# -- what an agent received from a launch ---------------------------------------------
def anthropic_user_texts(req: LoggedRequest) -> list[str]:
    texts: list[str] = []
    for msg in req.body.get("messages") or []:
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        texts.extend(
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return texts


def openai_user_texts(req: LoggedRequest) -> list[str]:
    texts: list[str] = []
    for item in req.body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.extend(c.get("text", "") for c in content or [] if isinstance(c, dict))
    return texts


def flag_in_help(flag: str, help_text: str) -> bool:
    return re.search(rf"(^|[\s,]){re.escape(flag)}([\s,=<\[]|$)", help_text, re.M) is not None
