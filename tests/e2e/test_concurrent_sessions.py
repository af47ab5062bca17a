"""Issue 10: two `claude -p` sessions running at the same time in one workspace.

Each session writes its own file through a real Write tool call (each against its own
scripted server, so the two scripts cannot interleave), while a third file changes in
the workspace with no session's tool call behind it. Git shows all three changed; each
session's handoff must list only its own file as its work, never the other session's,
and the third one apart, as changed in the workspace meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from e2e.agents import CLAUDE_TOOLS, AgentEnv, find_agent, run_passdown
from e2e.checks import ok
from e2e.servers import AnthropicServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SESSIONS = {
    "a.py": "c0c0a000-0000-4000-8000-00000000000a",
    "b.py": "c0c0b000-0000-4000-8000-00000000000b",
}


class _AtOnce(AnthropicServer):
    """Answers a session's first step only once every session has asked for its own:
    each has started (its first records are written) before any writes its file, so the
    sessions overlap however slowly one of them starts on a loaded machine."""

    def __init__(self, steps: list[Step], all_asked: threading.Barrier) -> None:
        super().__init__(steps)
        self.all_asked = all_asked

    def _next_step(self) -> tuple[int | None, Step]:
        index, step = super()._next_step()
        if index == 0:
            self.all_asked.wait()
        return index, step


def start_claude(
    env: dict[str, str], ws: Path, prompt: str, session_id: str
) -> subprocess.Popen[str]:
    argv = [
        str(find_agent("claude")),
        "-p",
        prompt,
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        CLAUDE_TOOLS,
        "--session-id",
        session_id,
    ]
    return subprocess.Popen(
        argv,
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def test_two_concurrent_claude_sessions_keep_their_own_files(
    workspace: Path, agent_env: AgentEnv
) -> None:
    ws = workspace
    all_asked = threading.Barrier(len(SESSIONS), timeout=120)
    servers = {
        name: _AtOnce(
            [
                Step(
                    text=f"Writing {name}.",
                    tool="Write",
                    input={
                        "file_path": str(ws / name),
                        "content": f"# written by the session for {name}\n",
                    },
                ),
                Step(text=f"{name} is written. Next: add a test for {name}."),
            ],
            all_asked,
        ).start()
        for name in SESSIONS
    }
    try:
        procs = {
            name: start_claude(
                agent_env.environ(anthropic_url=servers[name].url),
                ws,
                f"Create {name} with a header comment.",
                sid,
            )
            for name, sid in SESSIONS.items()
        }
        (ws / "meanwhile.txt").write_text("changed by hand while both sessions ran\n")
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, f"claude for {name}: {out[-2000:]}\n{err[-2000:]}"
            assert servers[name].remaining == 0, f"the session for {name} did not run its script"
    finally:
        for srv in servers.values():
            srv.stop()
    assert all((ws / name).is_file() for name in SESSIONS)

    env = agent_env.environ()
    for name, sid in SESSIONS.items():
        other = next(n for n in SESSIONS if n != name)
        ok(
            run_passdown(env, ws, "export", "--from", "claude", "--session", sid, "--no-store"),
            f"passdown export of the session for {name}",
        )
        data = json.loads((ws / ".agent-handoff" / "handoff.json").read_text())
        assert data["source"]["session_id"] == sid
        touched = {f["path"]: f["source"] for f in data["state"]["files_touched"]}
        assert touched == {name: "tool+git"}, f"{sid} claims {touched}"
        meanwhile = [f["path"] for f in data["state"]["workspace_changes"]]
        assert meanwhile == ["meanwhile.txt"], meanwhile
        assert other not in json.dumps(data["state"]), f"the other session's {other} is listed"
        markdown = (ws / ".agent-handoff" / "HANDOFF.md").read_text()
        section = markdown.split("## Changed in the workspace meanwhile", 1)[1].split("\n## ", 1)[0]
        assert "`meanwhile.txt`" in section and other not in section
