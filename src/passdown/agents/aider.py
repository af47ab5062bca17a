"""Aider: the chat history is Markdown in the repository, `<repo>/.aider.chat.history.md`.

Format (written by aider's InputOutput): each run starts with a header line
`# aider chat started at YYYY-MM-DD HH:MM:SS`; what the user typed is written as
`#### ` lines; tool output (edits applied, commits, command output, token counts) as
`> ` block quotes; everything else is the assistant's reply (code fences included,
where a `> ` line is part of the code, not tool output). One file holds every run in
that repository; passdown treats each run as a session `<repo>#<n>` and reads the last
one by default. Verified against fixtures built from this documented format only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from passdown._jsonl import LineReader
from passdown._lazy_re import lazy_compile
from passdown.agents._common import file_mtime
from passdown.agents.base import Agent, Discovered, LaunchSpec, _looks_like_path
from passdown.errors import SessionNotFound, UsageError
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

HISTORY_FILE = ".aider.chat.history.md"
# Matched against lines with trailing whitespace already stripped: a lazy `(.+?)\s*$`
# is quadratic on a long run of spaces.
_HEADER = lazy_compile(r"^# aider chat started at (.+)$")
_HEADER_BYTES = b"# aider chat started at "
_APPLIED = lazy_compile(r"^> Applied edit to (.+)$")
_RUN = lazy_compile(r"^#### /(?:run|test|!) ?(.*)$")
_EXIT = lazy_compile(r"exit(?:ed)? (?:with )?(?:code|status) (-?\d+)", re.IGNORECASE)
_FAILED_FILE = lazy_compile(r"^> ## SearchReplaceNoExactMatch: .*? in (.+)$")
# the whole rest of the line: a workspace path may hold spaces ("My Projects")
_HANDOFF_PATH = lazy_compile(r"Read the full handoff first: (.+?)[ \t]*$", re.MULTILINE)
# the run's own header lines (aider 0.86 writes them as `> ` output after the start line)
_VERSION = lazy_compile(r"^> Aider v(\S+)$")
_MODEL = lazy_compile(r"^> (?:Main )?[Mm]odel: (\S+)")


class Aider(Agent):
    name = "aider"
    display_name = "Aider"
    program = "aider"
    # aider's own bookkeeping in the repository: its history, input history and tags cache
    own_files = (".aider*",)

    def store_roots(self) -> list[Path]:
        # The history lives in each repository: the store is the workspace itself.
        return [Path.cwd()]

    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        if workspace is None:
            return  # histories are scattered across repositories; only the workspace's is known
        path = workspace / HISTORY_FILE
        # An unreadable history raises PermissionError here: the Agent base class
        # reports it as "cannot be read" (exit 5).
        if not path.is_file():
            return
        runs = _run_starts(path)
        stat = file_mtime(path)
        for index, started in enumerate(runs, start=1):
            yield self._run_ref(workspace, index, started, stat, newer=len(runs) - index)

    def ref_for_path(self, path: Path) -> SessionRef:
        ref = self._last_run(path.parent)
        if ref is None:
            raise SessionNotFound(f"no aider chat history in {path}")
        return ref

    def discover_latest(self, workspace: Path | None) -> Discovered:
        """Only the last run: a history of thousands of runs is not listed to hand off
        one (`passdown sessions` still lists them all)."""
        ref = self._last_run(workspace) if workspace is not None else None
        return Discovered(refs=[ref] if ref else [], skipped=[])

    def _last_run(self, workspace: Path) -> SessionRef | None:
        path = workspace / HISTORY_FILE
        if not path.is_file():
            return None
        count, started = 0, None
        for started, count in _runs(path):  # noqa: B007  (the last one is wanted)
            pass
        if not count:
            return None
        return self._run_ref(workspace, count, started, file_mtime(path), newer=0)

    def _run_ref(
        self,
        workspace: Path,
        index: int,
        started: str | None,
        stat: tuple[float, int],
        *,
        newer: int,
    ) -> SessionRef:
        """Run `index` of the history (`stat`: its mtime and size), `newer` runs after it."""
        mtime, size = stat
        return SessionRef(
            agent=self.name,
            session_id=_session_id(workspace, index),
            path=workspace / HISTORY_FILE,
            cwd=str(workspace),
            started_at=started,
            # later runs are newer; the last one carries the file's mtime
            updated_at=mtime - newer * 1e-3,
            size=size,
        )

    def resolve(self, spec: str, workspace: Path | None) -> SessionRef:
        if _looks_like_path(spec) and Path(spec).name == HISTORY_FILE:
            return self._resolve_path(Path(spec))  # the file itself: its last run
        if workspace is None:
            raise UsageError("aider sessions are per repository; run passdown inside it")
        for ref in self.discover(workspace):
            if ref.session_id == spec or ref.session_id.endswith(f"#{spec}"):
                return ref
        raise SessionNotFound(f"no aider run {spec!r} in {workspace / HISTORY_FILE}")

    def read(self, ref: SessionRef) -> Transcript:
        run = int(ref.session_id.rsplit("#", 1)[-1])

        def produce(info: SessionInfo, diag: Diagnostics) -> Iterator[Event]:
            info.started_at = ref.started_at
            return _RunReader(ref.path, run, diag, info).events()

        return self.stream(ref, produce)

    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        if interactive:
            # aider has no "start with this prompt and stay": give it the handoff as a
            # read-only file, and the prompt's path tells the user where it came from.
            return LaunchSpec(
                argv=[self.program, "--read", _handoff_path(prompt, workspace)], cwd=workspace
            )
        return LaunchSpec(argv=[self.program, "--yes-always", "--message", prompt], cwd=workspace)


def _handoff_path(prompt: str, workspace: Path) -> str:
    """The HANDOFF.md the prompt names (`--out` may have put it elsewhere) when that file
    exists, else the workspace's own when it exists, else (a dry run: nothing written
    yet) the one the prompt names. The prompt shows a path flattened to one line and
    redacted, so a path with a newline or a token in it is only found the second way."""
    match = _HANDOFF_PATH.search(prompt)
    named = match.group(1) if match else None
    own = str(workspace / ".agent-handoff" / "HANDOFF.md")
    for candidate in (named, own):
        if candidate and Path(candidate).is_file():
            return candidate
    return named or own


def _session_id(workspace: Path, index: int) -> str:
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
    return f"aider-{digest}#{index}"


def _run_starts(path: Path) -> list[str | None]:
    """The start time of every run in the history (streamed, not loaded)."""
    return [started for started, _ in _runs(path)]


def _runs(path: Path) -> Iterator[tuple[str | None, int]]:
    """Each run's start time and number, in order (only header lines are decoded)."""
    count = 0
    for _, raw in LineReader(path, Diagnostics()).forward():
        if raw.startswith(_HEADER_BYTES):
            header = _HEADER.match(raw.decode("utf-8", "replace").rstrip())
            if header:
                count += 1
                yield header.group(1), count
                continue
        if not count and raw.strip():
            count = 1
            yield None, count  # text before any header: a first, headerless run


class _RunReader:
    """Events of one run: user turns, assistant replies, edits, commits and commands."""

    def __init__(self, path: Path, run: int, diag: Diagnostics, info: SessionInfo) -> None:
        self.path = path
        self.run = run
        self.diag = diag
        self.info = info
        self.reply: list[str] = []
        self.in_fence = False
        self.calls = 0
        self.pending_command: ToolCall | None = None
        self.command_output: list[str] = []

    def events(self) -> Iterator[Event]:
        current = 0
        for _, raw in LineReader(self.path, self.diag).forward():
            # runs are told apart as `_runs` tells them (earlier runs are not decoded)
            if raw.startswith(_HEADER_BYTES) and _HEADER.match(
                raw.decode("utf-8", "replace").rstrip()
            ):
                current += 1
                continue
            if current == 0:
                if not raw.strip():
                    continue
                current = 1  # text before any header: a first, headerless run (see _runs)
            if current < self.run:
                continue
            if current > self.run:
                break
            # aider ends lines with two spaces (Markdown hard breaks): never part of the text
            yield from self._line(raw.decode("utf-8", "replace").rstrip())
        yield from self._flush()

    def _line(self, line: str) -> Iterator[Event]:
        if line.startswith("```"):
            self.in_fence = not self.in_fence
        if self.in_fence or not (line.startswith("#### ") or line.startswith("> ") or line == ">"):
            if not self.in_fence and self.pending_command and not line.strip():
                return
            self.reply.append(line)
            return
        if line.startswith("#### "):
            yield from self._flush()
            run = _RUN.match(line)
            if run:
                self.calls += 1
                self.pending_command = ToolCall(
                    call_id=f"run{self.calls}", name="run", action="command", command=run.group(1)
                )
                yield self.pending_command
            else:
                yield Message(role="user", text=line[5:])
            return
        yield from self._tool_output(line)

    def _tool_output(self, line: str) -> Iterator[Event]:
        applied = _APPLIED.match(line)
        failed = _FAILED_FILE.match(line)
        if self.pending_command is None and self._header_fact(line):
            return
        if applied or failed:
            self.calls += 1
            path = (applied or failed).group(1)  # type: ignore[union-attr]
            call_id = f"edit{self.calls}"
            yield ToolCall(call_id=call_id, name="edit", action="edit", paths=(path,))
            yield ToolResult(
                call_id=call_id,
                is_error=failed is not None,
                error="SEARCH/REPLACE block failed to match" if failed else None,
            )
        elif self.pending_command is not None:
            self.command_output.append(line[2:])

    def _header_fact(self, line: str) -> bool:
        """The version and model the run's header names (`> Aider v0.86.2`,
        `> Model: openai/x with whole edit format`)."""
        version = _VERSION.match(line)
        if version:
            self.info.agent_version = version.group(1)
            return True
        model = _MODEL.match(line)
        if model:
            self.info.add_model(model.group(1))
            return True
        return False

    def _flush(self) -> Iterator[Event]:
        if self.pending_command is not None:
            output = "\n".join(self.command_output)
            match = _EXIT.search(output)
            code = int(match.group(1)) if match else None
            yield ToolResult(
                call_id=self.pending_command.call_id,
                is_error=bool(code),
                exit_code=code,
                error=output.splitlines()[0] if code and output else None,
            )
            self.pending_command = None
            self.command_output = []
        text = "\n".join(self.reply).strip()
        if text:
            yield Message(role="assistant", text=text)
        self.reply = []
        self.in_fence = False


__all__ = ["HISTORY_FILE", "Aider"]
