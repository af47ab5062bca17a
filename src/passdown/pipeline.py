"""The one pipeline: agent files -> adapter -> transcript -> extraction -> redaction ->
handoff -> render / write / launch. The CLI, the coordinator and the MCP server are
thin doors into these functions."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from passdown.agents import Agent, LaunchSpec, get_agent, load_agents
from passdown.errors import AmbiguousSession, SessionNotFound, UsageError
from passdown.extract import DEFAULT_MAX_CHARS, DEFAULT_MAX_MESSAGES, extract
from passdown.handoff import FileTouched, Handoff, Redaction, Source
from passdown.transcript import SessionRef

HANDOFF_DIR = ".agent-handoff"


@dataclass(slots=True)
class ExportOptions:
    max_messages: int = DEFAULT_MAX_MESSAGES
    max_chars: int = DEFAULT_MAX_CHARS
    target_agent: str | None = None

    def validate(self) -> None:
        if self.max_messages < 2:
            raise UsageError("--max-messages must be at least 2 (the request and the latest reply)")
        if self.max_chars < 1000:
            raise UsageError("--max-chars must be at least 1000")


@dataclass(slots=True)
class Selection:
    agent: Agent
    ref: SessionRef
    workspace: Path


@dataclass(slots=True)
class WrittenHandoff:
    handoff: Handoff
    folder: Path
    markdown_path: Path
    json_path: Path
    record_id: str | None = None
    warnings: list[str] = field(default_factory=list)


def workspace_for(cwd: Path | None = None) -> Path:
    from passdown.workspace import workspace_root

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
    for agent in agents:
        ref = agent.newest(workspace)
        if ref and (newest is None or ref.updated_at > newest[1].updated_at):
            newest = (agent, ref)
    if newest is None:
        one = len(agents) == 1
        what = f"no {agents[0].display_name} session" if one else "no session"
        raise SessionNotFound(
            f"{what} found for {workspace}" + ("" if one else f" (searched: {searched(agents)})"),
            hint="run this in the folder where the agent worked, or pass --session ID|PATH",
        )
    return Selection(agent=newest[0], ref=newest[1], workspace=workspace)


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
    if len(errors) == 1:
        raise errors[0]
    raise SessionNotFound(f"no session matches {spec!r}")


def build_handoff(selection: Selection, options: ExportOptions | None = None) -> Handoff:
    """Read, extract, snapshot and redact: the complete handoff, nothing written yet."""
    from passdown.workspace import files_changed_since, snapshot

    options = options or ExportOptions()
    options.validate()
    transcript = selection.agent.read(selection.ref)
    extracted = extract(
        transcript.events(),
        workspace=_paths_relative_to(selection),
        max_messages=options.max_messages,
        max_chars=options.max_chars,
    )
    info = transcript.info
    workspace = snapshot(selection.workspace)
    warnings = transcript.diagnostics.summary() + [f"git: {e}" for e in workspace.errors]
    changed = files_changed_since(selection.workspace, info.started_at)
    _add_git_changes(extracted.state.files_touched, changed, warnings)
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
    return redact_handoff(handoff)


def _paths_relative_to(selection: Selection) -> str:
    """Where the agent worked: the workspace, or the session's own cwd when the session
    was picked by path from elsewhere (so its file paths still read as relative)."""
    from passdown.agents.base import cwd_in_workspace

    cwd = selection.ref.cwd
    if cwd and not cwd_in_workspace(cwd, selection.workspace):
        return cwd
    return str(selection.workspace)


MAX_GIT_FILES = 500


def _add_git_changes(files: list[FileTouched], changed: list[str], warnings: list[str]) -> None:
    """Edits made through shell commands leave no tool record; git still shows them."""
    by_path = {f.path: f for f in files}
    added = 0
    for path in changed:
        if path.startswith(HANDOFF_DIR + "/") or path == HANDOFF_DIR:
            continue
        entry = by_path.get(path)
        if entry is None:
            if added == MAX_GIT_FILES:
                warnings.append(f"git shows more than {MAX_GIT_FILES} changed files; the list is cut")
                continue
            added += 1
            files.append(FileTouched(path=path, actions=["changed"], source="git"))
        elif entry.source == "tool":
            entry.source = "tool+git"


def redact_handoff(handoff: Handoff) -> Handoff:
    """Every string of the handoff goes through the redactor before anything leaves."""
    from passdown.redact import Redactor

    redactor = Redactor()
    data = redactor.redact_data(handoff.model_dump(by_alias=True))
    data["redaction"] = Redaction(applied=True, findings=dict(sorted(redactor.findings.items()))).model_dump()
    return Handoff.model_validate(data)


def new_handoff_id() -> str:
    """Sortable by time and unique under parallel use."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"handoff-{stamp}-{uuid.uuid4().hex[:12]}"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def write_handoff(handoff: Handoff, out_dir: Path, workspace: Path) -> WrittenHandoff:
    """HANDOFF.md and handoff.json, 0600 in a 0700 folder, atomically; the previous
    handoff is kept in history/ rather than overwritten."""
    from passdown.fsio import add_git_exclude, backup_existing, ensure_private_dir, write_private
    from passdown.render import render_markdown

    folder = ensure_private_dir(out_dir)
    md_path, json_path = folder / "HANDOFF.md", folder / "handoff.json"
    for path in (md_path, json_path):
        backup_existing(path)
    write_private(json_path, handoff.to_json() + "\n")
    write_private(md_path, render_markdown(handoff))
    if folder.resolve().is_relative_to(workspace.resolve()):
        add_git_exclude(workspace, f"/{HANDOFF_DIR}/")
    return WrittenHandoff(handoff=handoff, folder=folder, markdown_path=md_path, json_path=json_path)


def launch_spec_for(target: Agent, written: WrittenHandoff, *, interactive: bool) -> LaunchSpec:
    """The target's argv with the takeover prompt. The prompt stays short: the handoff
    travels as the file it points to, never as a huge argument."""
    from passdown.redact import redact
    from passdown.render import takeover_prompt

    prompt = redact(takeover_prompt(written.handoff, str(written.markdown_path)))
    workspace = Path(written.handoff.workspace.path)
    return target.launch_spec(prompt, workspace=workspace, interactive=interactive)


def store_handoff(written: WrittenHandoff, workspace: Path) -> str | None:
    """Save the handoff as a record in the project's scope. A store failure does not
    lose the handoff (the files are written): it becomes a warning."""
    from passdown.errors import StoreError
    from passdown.handoff_record import handoff_to_record
    from passdown.records import default_project
    from passdown.store import open_store

    record = handoff_to_record(written.handoff, project=default_project(workspace))
    try:
        with open_store() as store:
            written.record_id = store.store(record)
    except StoreError as exc:
        written.warnings.append(f"the handoff was written but not stored: {exc.message}")
    return written.record_id
