"""The tool logic shared by `passdown mcp`, `passdown serve` and its JSON API.

A `ScopedTools` is bound to one scope when it is made (the stdio server's project, or
the project of the HTTP caller's token); no argument of any method names a scope, so
nothing a caller passes can reach another project. A record of another project asked
for by id fails exactly like a missing one (the store's own RecordNotFound, whose
message names only the caller's project).

Methods return plain JSON data and raise PassdownError; each transport converts errors
in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passdown.errors import RecordInvalid, UsageError
from passdown.mcp import lifecycle
from passdown.records import Record, Scope
from passdown.store import Store

MAX_FIND_LIMIT = 100  # agents read results in their context window: keep pages small


@dataclass(slots=True)
class ScopedTools:
    store: Store
    scope: Scope
    workspace: Path | None = None  # where prepare_handoff reads sessions; None: not offered
    actor: str = "passdown-mcp"  # `by` in lifecycle transitions: one per server process or token

    # -- records ---------------------------------------------------------------------
    def store_record(self, record: dict[str, Any], new_version: bool = False) -> dict[str, Any]:
        rec = self._in_scope(record)
        record_id = self.store.store(rec, new_version=new_version)
        return {"id": record_id, "project": self.scope.project}

    def retrieve_record(self, id: str, version: int | None = None) -> dict[str, Any]:
        from passdown.records import record_to_dict

        return record_to_dict(self.store.retrieve(self.scope, id, version=version))

    def find_records(
        self,
        text: str | None = None,
        type: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        from passdown.records import record_to_dict

        if not 1 <= limit <= MAX_FIND_LIMIT:
            raise UsageError(f"limit must be between 1 and {MAX_FIND_LIMIT}, got {limit}")
        page = self.store.query(
            self.scope, type=type, kind=kind, since=since, until=until,
            text=text or None, limit=limit, cursor=cursor,
        )
        return {
            "project": self.scope.project,
            "records": [record_to_dict(r) for r in page.records],
            "next_cursor": page.next_cursor,
        }

    def _in_scope(self, data: dict[str, Any]) -> Record:
        """The record with this server's scope: an absent scope is filled in; a scope naming
        another project is refused (never silently moved, never stored there)."""
        from passdown.records import is_package, parse_record

        if not isinstance(data, dict):
            raise RecordInvalid("invalid record: expected a JSON object")
        if is_package(data):
            return parse_record(data, project=self.scope.project)
        given = data.get("scope")
        if given is None:
            data = {**data, "scope": self.scope.model_dump(exclude_none=True)}
        elif not isinstance(given, dict) or given.get("project") != self.scope.project:
            raise RecordInvalid(
                f"invalid record: scope.project must be {self.scope.project!r}, the project "
                "this server is bound to (omit scope to use it)"
            )
        else:
            fixed = self.scope.model_dump(exclude_none=True)
            data = {**data, "scope": {**given, **fixed}}
        return parse_record(data)

    # -- handoffs --------------------------------------------------------------------
    def prepare_handoff(
        self, source: str = "auto", target_agent: str | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """The pipeline on the workspace's newest session: write the files, store the record."""
        from passdown import pipeline
        from passdown.agents.base import cwd_in_workspace

        workspace = self._workspace()
        if target_agent is not None:
            pipeline.source_agents(target_agent)  # unknown target: fail before reading
        selection = pipeline.select_session(source, session, workspace)
        if not cwd_in_workspace(selection.ref.cwd, workspace):
            raise UsageError(f"session {session!r} did not run in this server's workspace")
        options = pipeline.ExportOptions(target_agent=target_agent)
        handoff = pipeline.build_handoff(selection, options)
        written = pipeline.write_handoff(handoff, workspace / pipeline.HANDOFF_DIR, workspace)
        record_id = self.store.store(self._handoff_record(handoff))
        lifecycle.publish_handoff(self.store, self.scope, record_id, by=self.actor)
        return {
            "id": record_id,
            "project": self.scope.project,
            "markdown_path": str(written.markdown_path),
            "json_path": str(written.json_path),
            "source": {"agent": handoff.source.agent, "session_id": handoff.source.session_id},
            "next_steps": list(handoff.state.next_steps),
            "warnings": list(handoff.warnings),
        }

    def _workspace(self) -> Path:
        from passdown.records import default_project

        if self.workspace is None:
            raise UsageError("prepare_handoff is not available on this server")
        if default_project(self.workspace) != self.scope.project:
            # A team server's own checkout must not be handed off into a caller's project.
            raise UsageError(
                "prepare_handoff reads the agent sessions of this server's workspace, which "
                "is not in your project; run `passdown export` where the agent worked"
            )
        return self.workspace

    def _handoff_record(self, handoff: Any) -> Record:
        from passdown.handoff_record import handoff_to_record
        from passdown.records import record_to_dict, validate_record

        data = record_to_dict(handoff_to_record(handoff, project=self.scope.project))
        data["scope"] = self.scope.model_dump(exclude_none=True)
        return validate_record(data)

    def load_handoff(self, id: str | None = None) -> dict[str, Any]:
        loaded = lifecycle.load_handoff(self.store, self.scope, id)
        rec = loaded.record
        return {
            "id": rec.id,
            "project": self.scope.project,
            "title": rec.title,
            "created_at": rec.created_at,
            "source": {"agent": rec.provenance.agent, "session": rec.provenance.session},
            "status": loaded.status,
            "active": loaded.active_id == rec.id,
            "sections": {a.kind: a.value for a in rec.annotations},
            "markdown": rec.content,
        }

    def mark_handoff(self, id: str, status: str, note: str = "") -> dict[str, Any]:
        now = lifecycle.mark_handoff(self.store, self.scope, id, status, by=self.actor, note=note)
        return {"id": id, "status": now, "by": self.actor}
