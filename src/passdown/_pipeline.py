"""The one pipeline: agent files -> adapter -> transcript -> extraction -> redaction ->
handoff -> render / write / launch. The CLI, the coordinator and the MCP server are
thin doors into these functions."""

from __future__ import annotations

import fnmatch
import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from passdown import _platform
from passdown._extract import DEFAULT_MAX_CHARS, DEFAULT_MAX_MESSAGES, Extracted, extract
from passdown._seen import SeenEvents
from passdown._workspace import HANDOFF_DIR as HANDOFF_DIR
from passdown.agents import Agent, LaunchSpec, get_agent, load_agents
from passdown.agents.base import SkippedSession, unreadable_sessions
from passdown.errors import AmbiguousSession, SessionNotFound, SessionReadError, UsageError
from passdown.handoff import FileTouched, Handoff, Limits, Redaction, Source, State
from passdown.transcript import SessionRef, Transcript

if TYPE_CHECKING:
    from passdown._checkpoint import Reading
    from passdown._filebatch import FileBatch

# Upper bounds of the transcript budget: far above any use, far below what overflows
# the ring buffer's size (a 23-digit --max-messages was an internal error).
MAX_MESSAGES_LIMIT = 100_000
MAX_CHARS_LIMIT = 100_000_000


class ExportOptions(msgspec.Struct):
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_chars: int = DEFAULT_MAX_CHARS
    target_agent: str | None = None
    limits: Limits | None = None  # the handoff's budgets; None: config.toml's, else defaults

    def validate(self) -> None:
        if not 2 <= self.max_messages <= MAX_MESSAGES_LIMIT:
            raise UsageError(
                f"--max-messages must be from 2 (the request and the latest reply) "
                f"to {MAX_MESSAGES_LIMIT:,}"
            )
        if not 1000 <= self.max_chars <= MAX_CHARS_LIMIT:
            raise UsageError(f"--max-chars must be from 1,000 to {MAX_CHARS_LIMIT:,}")


class Selection(msgspec.Struct):
    agent: Agent
    ref: SessionRef
    workspace: Path
    # how the workspace was chosen, as warnings
    notes: list[str] = msgspec.field(default_factory=list)
    reading: Reading | None = None  # how its file was read, once it was


class WrittenHandoff(msgspec.Struct):
    handoff: Handoff
    folder: Path
    markdown_path: Path
    json_path: Path
    record_id: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    reading: Reading | None = None  # how the session file was read (`--json`, `-v`)
    # the active handoff this export repeats (nothing stored; `coordinator._unchanged`),
    # and whether its files were already in place
    unchanged_since: str | None = None
    files_kept: bool = False


def workspace_for(cwd: Path | None = None) -> Path:
    from passdown._workspace import workspace_root

    return workspace_root(Path(cwd or os.getcwd()))


def source_agents(name: str) -> list[Agent]:
    if name == "auto":
        return list(load_agents().values())
    return [get_agent(name)]


def select_session(source: str, session: str | None, workspace: Path) -> Selection:
    """The session to hand off: `--session` if given, else the newest for the workspace."""
    agents = source_agents(source)
    if session:
        return _select_by_spec(agents, session, workspace)
    newest: tuple[Agent, SessionRef] | None = None
    unreadable: list[SessionReadError] = []
    skipped: list[SkippedSession] = []
    for agent in agents:
        try:
            found = agent.discover_latest(workspace)
        except SessionReadError as exc:
            if len(agents) == 1:
                raise
            unreadable.append(exc)  # one agent's broken store must not hide the others
            continue
        skipped.extend(found.skipped)
        ref = found.newest
        if ref and (newest is None or ref.updated_at > newest[1].updated_at):
            newest = (agent, ref)
    if newest is None and skipped:  # session files are there, only none can be opened
        raise unreadable_sessions(sorted(skipped, key=lambda s: s.updated_at, reverse=True))
    if newest is None and unreadable:
        raise unreadable[0]
    if newest is None:
        one = len(agents) == 1
        what = f"no {agents[0].display_name} session" if one else "no session"
        raise SessionNotFound(
            f"{what} found for {workspace}" + ("" if one else f" (searched: {searched(agents)})"),
            hint="run this in the folder where the agent worked, or pass --session ID|PATH",
        )
    if newest[1].unplaced is not None:
        raise newest[0].unplaced_newest(newest[1], workspace)
    notes = [f"skipped an unreadable session store: {exc}" for exc in unreadable]
    notes += _skipped_newer_notes(skipped, newest[1])
    return Selection(agent=newest[0], ref=newest[1], workspace=workspace, notes=notes)


def _skipped_newer_notes(skipped: list[SkippedSession], chosen: SessionRef) -> list[str]:
    """A warning for each session file newer than the one handed off that could not be
    opened: the user would have expected that one (issue: unreadable newest session)."""
    return [
        f"skipped a newer session file that cannot be read: {s.describe()}; "
        f"handed off {chosen.session_id} instead"
        for s in skipped
        if s.updated_at > chosen.updated_at
    ]


def searched(agents: list[Agent]) -> str:
    """Which agents a search covered, short: `claude, codex, cursor, … (9 agents)`."""
    names = ", ".join(a.name for a in agents[:3]) + (", …" if len(agents) > 3 else "")
    return f"{names} ({len(agents)} agent{'' if len(agents) == 1 else 's'})"


def _select_by_spec(agents: list[Agent], spec: str, workspace: Path) -> Selection:
    found: list[tuple[Agent, SessionRef]] = []
    errors: list[Exception] = []
    for agent in agents:
        try:
            found.append((agent, agent.resolve(spec, workspace)))
        except (SessionNotFound, UsageError) as exc:
            errors.append(exc)
    if len(found) > 1:
        raise AmbiguousSession(f"session {spec!r} matches sessions of several agents; use --from")
    if found:
        agent, ref = found[0]
        return Selection(agent=agent, ref=ref, workspace=workspace)
    if len(errors) == 1 and len(agents) == 1:
        raise errors[0]
    if _is_path(spec):
        # A path inside one agent's store that is no session says so (exit 3); a path
        # outside every store is a bad argument (exit 2), as with one --from agent.
        inside = [e for a, e in zip(agents, errors, strict=True) if _inside_store(a, spec)]
        if not inside:
            roots = ", ".join(str(r) for a in agents for r in a.store_roots())
            names = ", ".join(f"${v}" for a in agents for v in a.store_env)
            elsewhere = f"; to read a store elsewhere, set the agent's own variable ({names})"
            raise UsageError(
                f"{spec} is outside every agent's session store",
                hint=f"session files live under {roots or '(none)'}" + (elsewhere if names else ""),
            )
        errors = inside
    if len(errors) == 1:
        raise errors[0]
    raise SessionNotFound(f"no session matches {spec!r}")


def _is_path(spec: str) -> bool:
    from passdown.agents.base import _looks_like_path

    return _looks_like_path(spec)


def _inside_store(agent: Agent, spec: str) -> bool:
    try:
        real = Path(spec).expanduser().resolve(strict=False)
        return any(real.is_relative_to(root.resolve()) for root in agent.store_roots())
    except (OSError, RuntimeError):
        return False


def hand_off_into(
    selection: Selection, invoked_in: Path, explicit: Path | None = None
) -> list[str]:
    """Point the selection at the workspace the handoff belongs to, and say why.

    `explicit` (`--workspace`) wins. Otherwise a session that ran in another workspace is
    handed off into its own: that workspace's git state is snapshotted and the files are
    written there, never into the folder passdown happened to be run from. A session
    whose workspace no longer exists is refused (exit 2) with a hint."""
    from passdown.agents.base import cwd_in_workspace

    if explicit is not None:
        if not Path(explicit).is_dir():
            raise UsageError(f"--workspace {explicit}: no such folder")
        selection.workspace = workspace_for(explicit)
        return []
    cwd = selection.ref.cwd
    if not cwd or cwd_in_workspace(cwd, invoked_in):
        return []
    if not Path(cwd).is_dir():
        raise UsageError(
            f"session {selection.ref.session_id} ran in {cwd}, which no longer exists",
            hint="pass --workspace DIR to hand it off into another workspace (--workspace . for this one)",
        )
    own = workspace_for(Path(cwd))
    if own == invoked_in:
        return []  # the same folder under another name (a symlinked path)
    selection.workspace = own
    note = (
        f"session {selection.ref.session_id} ran in {selection.workspace}, not in {invoked_in}: "
        "the handoff uses that workspace's git state and is written there"
    )
    selection.notes.append(note)
    return [note]


def build_handoff(selection: Selection, options: ExportOptions | None = None) -> Handoff:
    """Read, extract, snapshot and redact: the complete handoff, nothing written yet.
    Raises SessionReadError when the session file holds no readable record at all."""
    from passdown._budgets import shorten_texts

    # long texts shortened after redaction: a cut could split a secret past the patterns
    return shorten_texts(redact_handoff(read_handoff(selection, options)))


def read_handoff(selection: Selection, options: ExportOptions | None = None) -> Handoff:
    """`build_handoff` without the redaction (its lists already cut to their budgets),
    for the coordinator, which redacts the package it builds on this handoff (the
    caller's values with it) in one pass: what it returns must not leave unredacted."""
    from passdown._budgets import fit_lists, load_limits
    from passdown._workspace import ask_ahead_for_snapshot, files_changed_since, snapshot

    options = options or ExportOptions()
    options.validate()
    limits = options.limits or load_limits()
    # git works while the session is read
    ask_ahead_for_snapshot(selection.workspace, selection.ref.started_at)
    transcript, extracted, seen = _read_and_extract(selection, options)
    _refuse_unreadable(transcript, seen)
    info = transcript.info
    workspace = snapshot(selection.workspace)
    warnings = [
        *selection.notes,
        *transcript.diagnostics.summary(),
        *(f"git: {e}" for e in workspace.errors),
    ]
    changed = files_changed_since(selection.workspace, info.started_at)
    _attribute_git_changes(extracted.state, changed, seen.commands, selection, warnings)
    handoff = Handoff(
        id=new_handoff_id(),
        created_at=now_iso(),
        source=Source(
            agent=info.agent,
            session_id=info.session_id,
            agent_version=info.agent_version,
            models=info.models,
            started_at=info.started_at,
            updated_at=info.updated_at,
            title=info.title,
            cwd=info.cwd,
            transcript_path=str(info.path),
            transcript_sha256=transcript.sha256,
        ),
        target_agent=options.target_agent,
        ended=extracted.ended,
        task=extracted.task,
        state=extracted.state,
        workspace=workspace,
        warnings=warnings,
    )
    # lists cut to their budgets before redaction: the redactor sees only what is kept
    return fit_lists(handoff, limits)


def _read_and_extract(
    selection: Selection, options: ExportOptions
) -> tuple[Transcript, Extracted, SeenEvents]:
    """The session's transcript facts and extracted state: through the session's
    checkpoint when its agent supports one (only the appended bytes are read), else a
    full read. Both give the same result."""
    from passdown._checkpoint import Reading, read_with_checkpoint

    seen = SeenEvents()
    workspace = _paths_relative_to(selection)
    selection.reading = reading = Reading()
    resumed = read_with_checkpoint(
        selection.agent,
        selection.ref,
        seen,
        reading,
        workspace=workspace,
        max_messages=options.max_messages,
        max_chars=options.max_chars,
    )
    if resumed is not None:
        return resumed[0], resumed[1], seen
    reading.read_whole(selection.ref.path)
    transcript = selection.agent.read(selection.ref)
    extracted = extract(
        seen.watch(transcript.events()),
        workspace=workspace,
        max_messages=options.max_messages,
        max_chars=options.max_chars,
    )
    return transcript, extracted, seen


def _refuse_unreadable(transcript: Transcript, seen: SeenEvents) -> None:
    """A file of nothing but unreadable lines is not a session: an empty handoff with
    exit 0 (and a stored record) would claim there was nothing to hand off."""
    diag = transcript.diagnostics
    unreadable = diag.bad_lines + diag.oversized_lines + int(diag.torn_last_line)
    if seen.count == 0 and unreadable > 0:
        raise SessionReadError(
            f"{transcript.info.path} holds no readable {transcript.info.agent} record "
            f"({unreadable} unreadable line(s)); nothing was handed off",
            hint="check that this is the agent's session file and that it is not corrupted",
        )
    if seen.count == 0 and _is_empty(transcript.info.path):
        # an empty handoff would replace (and publish over) a real one with nothing
        raise SessionReadError(
            f"{transcript.info.path} is empty: it holds no {transcript.info.agent} record; "
            "nothing was handed off",
            hint="the agent may not have written this session yet; pass --session with another",
        )


def _is_empty(path: Path) -> bool:
    try:
        return os.stat(path).st_size == 0
    except OSError:
        return False


def _paths_relative_to(selection: Selection) -> str:
    """Where the agent worked: the workspace, or the session's own cwd when the session
    was picked by path from elsewhere (so its file paths still read as relative)."""
    from passdown.agents.base import cwd_in_workspace

    cwd = selection.ref.cwd
    if cwd and not cwd_in_workspace(cwd, selection.workspace):
        return cwd
    return str(selection.workspace)


MAX_GIT_FILES = 500


def _attribute_git_changes(
    state: State, changed: list[str], commands: list[str], selection: Selection, warnings: list[str]
) -> None:
    """Git shows every change in the workspace, whoever made it. A change is this
    session's when its own tool calls touched the file (an edit, or a command naming it:
    edits made through shell commands leave no edit record). A change another session
    of the same workspace made while this one ran is that session's and is left out.
    What no session explains is listed apart, as changed in the workspace meanwhile."""
    by_path = {f.path: f for f in state.files_touched}
    unexplained: list[str] = []
    own = selection.agent.own_files
    for path in changed:
        if path == HANDOFF_DIR or path.startswith(HANDOFF_DIR + "/"):
            continue
        if any(fnmatch.fnmatchcase(path, pattern) for pattern in own):
            continue  # the agent's own bookkeeping (aider's history), not the task's work
        entry = by_path.get(path)
        if entry is None:
            unexplained.append(path)
        elif entry.source == "tool":
            entry.source = "tool+git"
    if not unexplained:
        return
    named = _named_in_commands(commands)
    others = _paths_of_concurrent_sessions(selection)
    ours: list[str] = []
    meanwhile: list[str] = []
    for path in unexplained:
        if path in others:
            continue  # another session's work, not this one's
        (ours if path in named or os.path.basename(path) in named else meanwhile).append(path)
    omitted = state.omitted
    omitted.files_touched += _append_capped(state.files_touched, ours, "changed files", warnings)
    omitted.workspace_changes += _append_capped(
        state.workspace_changes, meanwhile, "files changed meanwhile", warnings
    )


def _append_capped(
    files: list[FileTouched], paths: list[str], what: str, warnings: list[str]
) -> int:
    """Append git's paths, at most MAX_GIT_FILES; returns how many were left out."""
    if len(paths) > MAX_GIT_FILES:
        warnings.append(f"git shows more than {MAX_GIT_FILES} {what}; the list is cut")
    files.extend(
        FileTouched(path=p, actions=["changed"], source="git") for p in paths[:MAX_GIT_FILES]
    )
    return max(len(paths) - MAX_GIT_FILES, 0)


_SHELL_WORD = re.compile(r"""[^\s'"`;|&<>()]+""")


def _named_in_commands(commands: list[str]) -> set[str]:
    """Every word of the session's commands that could be a file name, with and without
    its folders (`sed -i ... src/a.py` names both `src/a.py` and `a.py`)."""
    named: set[str] = set()
    for command in commands:
        for word in _SHELL_WORD.findall(command):
            word = word.removeprefix("./")
            named.add(word)
            if "/" not in word:
                continue
            named.add(os.path.basename(word))
            parts = word.split("/")
            named.update("/".join(parts[i:]) for i in range(1, len(parts)))  # absolute paths too
    return named


def _paths_of_concurrent_sessions(selection: Selection) -> set[str]:
    """Workspace-relative paths that other sessions of this workspace (of any agent)
    touched through tool calls since this session started. Git shows the workspace as it
    is now, so a session that began after this one ended explains changes too; only
    sessions that ended before this one began are not read."""
    from passdown.errors import PassdownError

    start, _ = _session_span(selection)
    end = float("inf")
    me = (selection.agent.name, selection.ref.session_id)
    found: set[str] = set()
    for agent in _agents_with_sessions():
        try:
            refs = list(agent.discover(selection.workspace))
        except (OSError, PassdownError):
            continue
        for ref in refs:
            if (agent.name, ref.session_id) == me or not _overlaps(ref, start, end):
                continue
            try:
                paths = agent.touched_paths(ref)
            except (OSError, PassdownError):
                continue  # an unreadable neighbour explains nothing
            found.update(_relative_to_workspace(p, ref.cwd, selection.workspace) for p in paths)
    return found


def _agents_with_sessions() -> list[Agent]:
    """Every registered agent (also in a hook, which loads only its own agent for the
    export: `registry.every_agent`) that has a session store on this machine; the
    others have no session to look at."""
    from passdown.agents._registry import every_agent

    return [agent for agent in every_agent().values() if _has_a_store(agent)]


def _has_a_store(agent: Agent) -> bool:
    from passdown.errors import PassdownError

    try:
        return any(root.exists() for root in agent.store_roots())
    except (OSError, PassdownError):  # a store root it cannot even name explains nothing
        return False


def _session_span(selection: Selection) -> tuple[float, float]:
    from passdown._workspace import _parse_iso

    started = _parse_iso(selection.ref.started_at) if selection.ref.started_at else None
    start = started.timestamp() if started else float("-inf")
    return start, selection.ref.updated_at or float("inf")


def _overlaps(ref: SessionRef, start: float, end: float) -> bool:
    from passdown._workspace import _parse_iso

    started = _parse_iso(ref.started_at) if ref.started_at else None
    other_start = started.timestamp() if started else float("-inf")
    return ref.updated_at >= start and other_start <= end


def _relative_to_workspace(path: str, cwd: str | None, workspace: Path) -> str:
    full = _platform.join(cwd or str(workspace), path)
    rel = _platform.relative_inside(full, str(workspace))  # as paths, not strings
    return rel or path


def redact_handoff(handoff: Handoff) -> Handoff:
    """Every string of the handoff goes through the redactor before anything leaves."""
    from passdown._redact import Redactor

    redactor = Redactor()
    data = redactor.redact_data(handoff.model_dump(by_alias=True))
    data["redaction"] = Redaction(
        applied=True, findings=dict(sorted(redactor.findings.items()))
    ).model_dump()
    return Handoff.model_validate(data)


def new_handoff_id() -> str:
    """Sortable by time and unique under parallel use."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"handoff-{stamp}-{uuid.uuid4().hex[:12]}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def planned_handoff(handoff: Handoff, out_dir: Path) -> WrittenHandoff:
    """Where `write_handoff` would put the files, writing nothing (for dry runs, and to
    check a launch before anything is written)."""
    folder = Path(out_dir)
    return WrittenHandoff(
        handoff=handoff,
        folder=folder,
        markdown_path=folder / "HANDOFF.md",
        json_path=folder / "handoff.json",
    )


class StagedHandoff(msgspec.Struct):
    """HANDOFF.md, handoff.json, their history copies and the git exclude line, written
    where nobody sees them yet (`_filebatch.FileBatch`): `commit` makes them visible,
    `discard` leaves the disk as it was."""

    written: WrittenHandoff
    batch: FileBatch

    def commit(self) -> WrittenHandoff:
        self.batch.commit()
        return self.written

    def discard(self) -> None:
        self.batch.discard()


def stage_handoff(handoff: Handoff, out_dir: Path, workspace: Path) -> StagedHandoff:
    """Everything `write_handoff` writes, staged; raises `OutputError` (a read-only or
    full disk, a bad folder) before anything is visible."""
    from passdown._filebatch import FileBatch, existing_folder
    from passdown._fsio import open_folder_warnings
    from passdown._handoff_files import stage_backup, stage_git_exclude
    from passdown._render import render_markdown

    folder = Path(out_dir)
    planned = planned_handoff(handoff, folder)
    batch = FileBatch()
    own = folder.name == HANDOFF_DIR  # passdown's 0700 folder; another keeps its mode
    try:
        existing_folder(folder, tighten=own)  # a symlink, another user's: refused first
        for path in (planned.markdown_path, planned.json_path):
            stage_backup(batch, path)
        batch.stage(planned.json_path, handoff.to_json() + "\n", tighten=own)
        batch.stage(planned.markdown_path, render_markdown(handoff), tighten=own)
        planned.warnings += [] if own else open_folder_warnings(folder)
        if folder.resolve().is_relative_to(workspace.resolve()):
            stage_git_exclude(batch, workspace, f"/{HANDOFF_DIR}/")
    except BaseException:
        batch.discard()
        raise
    return StagedHandoff(planned, batch)


def write_handoff(handoff: Handoff, out_dir: Path, workspace: Path) -> WrittenHandoff:
    """HANDOFF.md and handoff.json, 0600 (in a 0700 folder when passdown creates it or
    it is `.agent-handoff`), atomically; the previous handoff is kept in history/ rather
    than overwritten."""
    staged = stage_handoff(handoff, out_dir, workspace)
    try:
        return staged.commit()
    finally:
        staged.discard()


def launch_spec_for(
    target: Agent, written: WrittenHandoff, *, interactive: bool, workspace: Path | None = None
) -> LaunchSpec:
    """The target's argv with the takeover prompt. The prompt stays short: the handoff
    travels as the file it points to, never as a huge argument. `workspace` is the real
    folder to start in (the handoff's own path is the redacted one)."""
    from passdown._redact import redact
    from passdown._render import takeover_prompt

    prompt = redact(takeover_prompt(written.handoff, str(written.markdown_path)))
    where = workspace or Path(written.handoff.workspace.path)
    return target.launch_spec(prompt, workspace=where, interactive=interactive)
