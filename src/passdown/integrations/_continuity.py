"""Continuity without commands: pick a handoff up at the next session's start, and fall
over to the next agent when a session ends on a limit.

- `pickup`: run by an agent's session-start hook. In a repository that opted in to
  sharing (`passdown install git`) it pulls the share remote's handoffs first (bounded,
  `_git_share_run.pull_at_start`), and pushes its claim in the background. When the
  workspace's active handoff is published (not yet claimed), comes from a different session, is younger than
  `pickup_max_age_days` (default 7), its HEAD is an ancestor of the current HEAD and
  its export has committed (the workspace's handoff.json holds it), it is claimed
  through the lifecycle (a compare-and-swap: of two sessions starting at once exactly
  one wins) and a short redacted pointer is returned for injection.
  Off with `PASSDOWN_PICKUP=0`, `passdown config set pickup off` or
  `passdown install --no-pickup`.
- `run` (`passdown.integrations._continuity_run`): `passdown run AGENT [--fallback
  AGENT2 ...]`: runs the agent; when its session ended on a rate or usage limit (the
  handoff's `ended`, never the terminal's text), hands off to the next agent of the chain
  with the takeover prompt `switch` uses.
- The settings live in `<data folder>/config.json` (`passdown config`).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from passdown._settings import max_age, pickup_enabled

HANDOFF_DIR = ".agent-handoff"  # pipeline.HANDOFF_DIR, without importing the pipeline
# the lifecycle's pointers (`coordinator.lifecycle`), named here without importing its models
ACTIVE_POINTER = "active-handoff"


def status_pointer(package_id: str) -> str:
    return f"handoff-status/{package_id}"


READABLE_ENDINGS = {
    "rate_limit": "on a rate limit",
    "usage_limit": "on a usage limit",
    "overloaded": "on an overloaded API",
    "auth": "on an authentication error",
    "context_length": "with a full context window",
    "error": "on an API error",
    "interrupted": "interrupted",
    "normal": "normally",
}

# -- pickup at session start -------------------------------------------------------------------
# A new session waits for this, so it runs on the standard library, `passdown._git` and the
# redactor: the handoff is read as the JSON the store keeps (no package or handoff
# models), from SQLite directly; only a claim, which writes, opens the store and goes
# through the lifecycle.


@dataclass(slots=True)
class Pickup:
    # claimed <id> | none | off | own-session | too-old | not-ancestor | taken | already-<status>
    # | in-flight | files-differ
    outcome: str
    pointer: str | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """The workspace's active handoff, as much of it as pickup decides on and shows: read
    from the stored record (what `handoff_record.package_from_record` reads into a
    package, field for field)."""

    id: str
    status: str  # the lifecycle's current status
    agent: str  # the package's source agent
    timestamp: str  # when it was prepared
    source_session: str | None = None  # the handoff's source session
    ended: str | None = None  # how that session ended (`Ended.reason`)
    next_steps: tuple[str, ...] = ()
    git_hash: str | None = None  # the workspace's HEAD when it was prepared
    workspace: str | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any], status: str) -> Candidate:
        package = _mapping(record.get("package"))
        handoff = _mapping(record.get("passdown_handoff")) or None
        steps = _strings(_dig(handoff, "state", "next_steps")) if handoff else ()
        if not steps:  # as `pointer_text` always did: the handoff's steps, else the package's
            steps = _strings(_dig(package, "state", "next_steps"))
            if not package:  # a record without a package: its `next` annotations
                steps = tuple(
                    line
                    for note in record.get("annotations") or []
                    if isinstance(note, dict) and note.get("kind") == "next"
                    for line in str(note.get("value", "")).splitlines()
                    if line
                )
        return cls(
            id=str(record["id"]),
            status=status,
            agent=str(_dig(record, "provenance", "agent") or "?"),
            timestamp=str(record["created_at"]),
            source_session=_text_or_none(_dig(handoff, "source", "session_id")),
            ended=_text_or_none(_dig(handoff, "ended", "reason")) if handoff else None,
            next_steps=steps,
            git_hash=_text_or_none(_dig(package, "context", "git_hash")),
            workspace=_text_or_none(package.get("workspace")),
        )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dig(data: dict[str, Any] | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, str) and value else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def pickup(agent: str, session_id: str | None, cwd: str | None) -> Pickup:
    """Claim the workspace's unclaimed handoff for this new session, and the pointer."""
    if not pickup_enabled():
        return Pickup("off")
    from passdown._git import workspace_root

    workspace = workspace_root(Path(cwd or os.getcwd()))
    shared = _pull_first(workspace)
    if not (workspace / HANDOFF_DIR / "handoff.json").is_file():
        return Pickup("none")  # the pointer names this file: without it, nothing to pick up
    identity = f"{agent}:{session_id or '?'}"
    with _open_handoffs(workspace) as handoffs:
        candidate = _committed(handoffs, workspace)
        if candidate is None:
            return Pickup("none")
        if isinstance(candidate, str):
            return Pickup(candidate)
        refusal = _refusal(candidate, session_id, workspace)
        if refusal:
            return Pickup(refusal)
        if not handoffs.claim(candidate.id, identity):
            return Pickup("taken")  # another session claimed it first
    if shared:
        from passdown.integrations._git_share_run import push_claim_soon

        push_claim_soon(workspace)  # another clone that pulls then sees it taken
    return Pickup(f"claimed {candidate.id}", pointer_text(candidate))


def _pull_first(workspace: Path) -> bool:
    """In a repository that opted in to sharing (`passdown install git`): pull the share
    remote's handoffs first, bounded (`_git_share_run.pull_at_start`). Whether it did."""
    from passdown.integrations._git_share_run import pull_at_start

    return pull_at_start(workspace) != "not-opted-in"


SETTLE_S = 5.0  # how long pickup waits for an export in flight (hooks get 30 s)
SETTLE_POLL_S = 0.1


def _committed(handoffs: _Handoffs, workspace: Path) -> Candidate | str | None:
    """The active handoff once its export committed: its id is the one the workspace's
    handoff.json holds (placed last, so it proves the commit). While they differ an
    export is in flight, or a killed one is being taken back (which may move the active
    pointer back): claiming that handoff would hand out one that is about to vanish, and
    another session would then claim the one restored (two takers for one task). Waits
    up to SETTLE_S; then `in-flight`, or `files-differ` when no export is running."""
    import time

    from passdown._wal import writing

    deadline = time.monotonic() + SETTLE_S
    while True:
        candidate = handoffs.active()
        if candidate is None or candidate.id == _files_id(workspace):
            return candidate
        running = writing()
        if not running or time.monotonic() >= deadline:
            return "in-flight" if running else "files-differ"
        time.sleep(SETTLE_POLL_S)


def _files_id(workspace: Path) -> str | None:
    """The id in the workspace's handoff.json (None: unreadable, or none there)."""
    try:
        data = json.loads((workspace / HANDOFF_DIR / "handoff.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def _refusal(candidate: Candidate, session_id: str | None, workspace: Path) -> str | None:
    from passdown._git import is_ancestor

    if candidate.status != "published":
        return f"already-{candidate.status}"  # claimed, completed, ...: not ours to take
    source = candidate.source_session
    if session_id and source and session_id == source:
        return "own-session"  # a resumed session: it knows its own history
    if datetime.now(UTC) - _parse_time(candidate.timestamp) > max_age():
        return "too-old"
    # without a HEAD (no commits, or not git any more) nothing is an ancestor of it
    if candidate.git_hash and not is_ancestor(workspace, candidate.git_hash, "HEAD"):
        return "not-ancestor"  # the workspace moved elsewhere (another branch, a reset)
    return None


def _parse_time(stamp: str) -> datetime:
    """ISO 8601 as the store writes it (`records.parse_timestamp`, without its module's
    models): `Z` or an offset, naive = UTC."""
    parsed = datetime.fromisoformat(stamp.strip())
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class _Handoffs:
    """The workspace's handoffs in the store, for pickup: the active one, and the claim
    (the lifecycle's compare-and-swap, in the store however it was read)."""

    def __init__(self, url: str, project: str) -> None:
        self.url, self.project = url, project
        self._store: Any = None

    def store(self) -> Any:
        if self._store is None:
            from passdown.store import open_store

            self._store = open_store(self.url)
        return self._store

    def active(self) -> Candidate | None:
        from passdown.coordinator._lifecycle import Lifecycle
        from passdown.errors import RecordNotFound
        from passdown.records import record_to_dict

        lifecycle = Lifecycle(self.store(), self._scope())
        active = lifecycle.active()
        if active is None:
            return None
        try:
            record = self.store().retrieve(self._scope(), active)
        except RecordNotFound:
            return None  # a pointer to a deleted record: nothing to pick up
        event = lifecycle.current(active)
        return Candidate.from_record(record_to_dict(record), event.status if event else "prepared")

    def claim(self, package_id: str, identity: str) -> bool:
        from passdown.coordinator._lifecycle import Lifecycle

        lifecycle = Lifecycle(self.store(), self._scope())
        return lifecycle.transition(
            package_id, "claimed", by=identity, only_from=frozenset({"published"})
        )

    def _scope(self) -> Any:
        from passdown.records import Scope

        return Scope(project=self.project)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> _Handoffs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _PeekedHandoffs(_Handoffs):
    """A SQLite store, read without opening it (`StorePeek`; None: no store file, so no
    handoff): the models and the migration cost more than a session start may wait. A
    claim opens it; so does a file the peek cannot read (the store says why)."""

    def __init__(self, url: str, project: str, peek: Any) -> None:
        super().__init__(url, project)
        self.peek = peek

    def active(self) -> Candidate | None:
        import sqlite3

        if self.peek is None:
            return None
        try:
            active = self.peek.pointer(self.project, ACTIVE_POINTER)
            body = self.peek.record_body(self.project, active) if active else None
            event = self.peek.pointer(self.project, status_pointer(active)) if body else None
        except sqlite3.Error:
            return super().active()
        if active is None or body is None:
            return None
        status = json.loads(event).get("status") if event else None
        return Candidate.from_record(json.loads(body), str(status or "prepared"))

    def close(self) -> None:
        if self.peek is not None:
            self.peek.close()
        super().close()


def _open_handoffs(workspace: Path) -> _Handoffs:
    """The project's handoffs, as `HandoffCoordinator(workspace)` finds them (the default
    store, the workspace's project)."""
    import sqlite3

    from passdown._git import project_name
    from passdown._wal import pending
    from passdown.errors import PassdownError
    from passdown.store._open import default_store_url
    from passdown.store._sqlite import StorePeek

    url, project = default_store_url(), project_name(workspace)
    if pending():  # a killed export's journal: opening the store takes that export back
        from passdown.store import open_store

        with contextlib.suppress(PassdownError):
            open_store(url).close()
    scheme, sep, rest = url.partition("://")
    if not (sep and scheme == "sqlite" and rest and rest != ":memory:"):
        return _Handoffs(url, project)  # PostgreSQL: the store itself
    try:
        return _PeekedHandoffs(url, project, StorePeek.open(Path(rest).expanduser()))
    except sqlite3.Error:
        return _Handoffs(url, project)  # the store itself says why, or migrates it


def first_time_for_session(agent: str, session_id: str | None) -> bool:
    """True once per session (a marker under the data folder): for agents whose pointer
    rides on a prompt hook, so only a session's first prompt looks for a handoff."""
    import hashlib

    from passdown._fsio import ensure_private_dir
    from passdown._paths import data_dir

    if not session_id:
        return True
    folder = ensure_private_dir(data_dir() / "pickup")
    name = hashlib.sha256(f"{agent}\0{session_id}".encode()).hexdigest()[:32]
    try:
        os.close(os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    return True


def pointer_text(candidate: Candidate) -> str:
    """The injected lines: short, redacted, and flattened to single lines."""
    from passdown._contract import TAKEOVER_CONTRACT
    from passdown._redact import redact

    how = READABLE_ENDINGS.get(candidate.ended, candidate.ended) if candidate.ended else "normally"
    steps = candidate.next_steps
    path = Path(candidate.workspace or ".") / HANDOFF_DIR / "HANDOFF.md"
    lines = [
        f"passdown: an unfinished task was handed over from {candidate.agent} session "
        f"{candidate.source_session or '?'}, which ended {how}.",
        f"Next step: {steps[0] if steps else 'see the handoff'}",
        f"Read the handoff first: {path}",
        f"Rule: {TAKEOVER_CONTRACT[0]} {TAKEOVER_CONTRACT[1]}",
    ]
    return "\n".join(_one_line(redact(line)) for line in lines)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return "".join(ch for ch in flat if ch.isprintable())[:600]
