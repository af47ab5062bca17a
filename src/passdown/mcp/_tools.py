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
from passdown.mcp import _lifecycle as lifecycle
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
            self.scope,
            type=type,
            kind=kind,
            since=since,
            until=until,
            text=text or None,
            limit=limit,
            cursor=cursor,
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
        """`passdown export` on this workspace's session, through the one export path, with
        this server's store and scope: files written, record stored, published and made
        active by compare-and-swap. A session of another workspace is refused."""
        from passdown.coordinator import _doors as doors

        workspace = self._workspace()
        request = doors.HandoffRequest(source=source, session=session, target=target_agent)
        written = doors.export(
            request,
            workspace,
            store=self.store,
            scope=self.scope,
            confine=True,
            identity=self.actor,
        )
        handoff = written.handoff
        return {
            "id": handoff.id,
            "project": self.scope.project,
            "markdown_path": str(written.markdown_path),
            "json_path": str(written.json_path),
            "source": {"agent": handoff.source.agent, "session_id": handoff.source.session_id},
            "next_steps": list(handoff.state.next_steps),
            "warnings": [*handoff.warnings, *written.warnings],
        }

    def _workspace(self) -> Path:
        from passdown.records import default_project

        if self.workspace is None:
            raise UsageError("prepare_handoff is not available on this server")
        if self.scope.project != default_project(self.workspace):
            # A team server's own checkout must not be handed off into a caller's project.
            raise UsageError(
                "prepare_handoff reads the agent sessions of this server's workspace, which "
                "is not in your project; run `passdown export` where the agent worked"
            )
        return self.workspace

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
