"""Assertions shared by the e2e tests: what a handoff written by `passdown export` must hold.

Field names follow passdown's handoff model (`source`, `task`, `state`, ...); path fields may
be absolute or relative to the workspace, so they are compared relative to it.
"""

from __future__ import annotations

import json
import re
import subprocess
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
