"""A tiny third-party agent for passdown, registered through the `passdown.agents`
entry-point group exactly as a real plugin package would be.

Its sessions are JSON Lines under `$EXAMPLE_AGENT_HOME/sessions/<id>.jsonl`: a first
line `{"session": id, "cwd": ...}`, then `{"role": "user"|"assistant", "text": ...}` and
`{"tool": "write", "path": ...}` records. Its program is `example-agent --prompt TEXT`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from passdown.agents import Agent, LaunchSpec
from passdown.agents.base import cwd_in_workspace
from passdown.transcript import (
    Diagnostics,
    Event,
    Message,
    SessionInfo,
    SessionRef,
    ToolCall,
    ToolResult,
    Transcript,
)


class ExampleAgent(Agent):
    name = "example"
    display_name = "Example Agent"
    program = "example-agent"

    def _home(self) -> Path:
        return Path(os.environ.get("EXAMPLE_AGENT_HOME", str(Path.home() / ".example-agent")))

    def store_roots(self) -> list[Path]:
        return [self._home() / "sessions"]

    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        for path in sorted(self.store_roots()[0].glob("*.jsonl")):
            ref = self.ref_for_path(path)
            if cwd_in_workspace(ref.cwd, workspace):
                yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        with open(path, encoding="utf-8") as handle:
            head = json.loads(handle.readline() or "{}")
        return SessionRef(
            agent=self.name,
            session_id=path.stem,
            path=path,
            cwd=head.get("cwd"),
            updated_at=path.stat().st_mtime,
            size=path.stat().st_size,
        )

    def read(self, ref: SessionRef) -> Transcript:
        info = SessionInfo(agent=self.name, session_id=ref.session_id, path=ref.path, cwd=ref.cwd)
        return Transcript(info=info, diagnostics=Diagnostics(), _events=self._events(ref.path))

    def _events(self, path: Path) -> Iterator[Event]:
        with open(path, encoding="utf-8") as handle:
            for n, line in enumerate(handle):
                record = json.loads(line)
                if "role" in record:
                    yield Message(role=record["role"], text=record["text"])
                elif record.get("tool") == "write":
                    yield ToolCall(
                        call_id=str(n), name="write", action="write", paths=(record["path"],)
                    )
                    yield ToolResult(call_id=str(n))

    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        return LaunchSpec(argv=[self.program, "--prompt", prompt], cwd=workspace)
