"""The handoff package: the seed's JSON shape plus what passdown adds.

The seed's fields (`id`, `source_agent`, `target_agent`, `timestamp`, `state`,
`context`, `summary`) come first and keep their names; passdown adds the handoff type,
the full pipeline handoff, where each value came from, parallel children, recovery
details, a workspace fingerprint (for staleness) and an integrity hash (for tampering).

`status` is the lifecycle as last read from the store: it is store state, not content,
so it is left out of the stored record and of the integrity hash.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from passdown._model_defaults import empty_list
from passdown._package_status import LifecycleStatus
from passdown.handoff import Handoff

PACKAGE_FORMAT: Final = "passdown.package/1"
HandoffType = Literal["session", "agent", "parallel", "recovery"]
HANDOFF_TYPES: tuple[str, ...] = ("session", "agent", "parallel", "recovery")

# Fields that are store state or the hash itself, never part of the sealed content.
UNSEALED = frozenset({"integrity", "status"})
# What differs between two exports of the same session into the same workspace state:
# ids, times and the place in the project's history (`content_digest` leaves them out).
VOLATILE = frozenset({*UNSEALED, "id", "timestamp", "previous_id"})
VOLATILE_HANDOFF = frozenset({"id", "created_at"})


class _Model(BaseModel):
    # each model's validator is built when first used: a hook builds only those it uses
    model_config = ConfigDict(extra="forbid", defer_build=True)


class PackageState(_Model):
    current_feature: str | None = None
    completed_features: list[str] = Field(default_factory=empty_list)
    blockers: list[str] = Field(default_factory=empty_list)
    next_steps: list[str] = Field(default_factory=empty_list)


class PackageContext(_Model):
    recent_files: list[str] = Field(default_factory=empty_list)
    git_hash: str | None = None
    session_number: int = Field(default=1, ge=1)


class ChildRef(_Model):
    """One parallel child: who owns which next steps, and where it works."""

    id: str
    target_agent: str
    assignment: list[str] = Field(default_factory=empty_list)
    branch: str | None = None
    worktree: str | None = None


class RecoveryInfo(_Model):
    from_id: str
    from_git_hash: str | None = None
    commits_since: list[str] = Field(default_factory=empty_list)  # "<short hash> <subject>"
    files_changed: list[str] = Field(default_factory=empty_list)


class Fingerprint(_Model):
    """What `fresh` compares: HEAD, branch, and a digest of every dirty file and of the
    project's progress files, taken when the package was prepared."""

    head: str | None = None
    branch: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


class Compaction(_Model):
    budget_chars: int
    used_chars: int
    kept: list[str] = Field(default_factory=empty_list)
    summarised: list[str] = Field(default_factory=empty_list)
    dropped: list[str] = Field(default_factory=empty_list)


class HandoffPackage(_Model):
    # -- the seed's package ----------------------------------------------------------
    id: str = Field(min_length=1)
    source_agent: str = Field(min_length=1)
    target_agent: str | None = None
    timestamp: str
    state: PackageState = Field(default_factory=PackageState)
    context: PackageContext = Field(default_factory=PackageContext)
    summary: str = ""
    # -- what passdown adds ----------------------------------------------------------
    format: Literal["passdown.package/1"] = PACKAGE_FORMAT
    handoff_type: HandoffType = "session"
    project: str | None = None
    workspace: str | None = None
    previous_id: str | None = None  # the active handoff when this one was prepared
    parent_id: str | None = None  # parallel children: the parent package
    children: list[ChildRef] = Field(default_factory=empty_list)  # parallel parent
    owners: list[ChildRef] = Field(default_factory=empty_list)  # parallel child: who owns what
    recovery: RecoveryInfo | None = None
    # "state.blockers" -> "caller" | "session" | "feature_list" | "progress:FILE" | ...
    provenance: dict[str, str] = Field(default_factory=dict)
    fingerprint: Fingerprint | None = None
    compaction: Compaction | None = None
    warnings: list[str] = Field(default_factory=empty_list)
    handoff: Handoff | None = None
    integrity: str | None = None
    status: LifecycleStatus = "prepared"

    @field_validator("timestamp")
    @classmethod
    def _timestamp_parses(cls, value: str) -> str:
        from passdown.records import parse_timestamp

        parse_timestamp(value)
        return value

    # -- sealing -------------------------------------------------------------------------
    def content_hash(self) -> str:
        data = self.model_dump(mode="json", exclude=set(UNSEALED))
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def content_digest(self) -> str:
        """A digest of what the package says, without its ids, times and place in the
        history (`VOLATILE`, the session number, the handoff's own id and time): two
        exports of an unchanged session into an unchanged workspace have the same one."""
        data = self.model_dump(mode="json", exclude=set(VOLATILE))
        data["context"].pop("session_number", None)
        if isinstance(data.get("handoff"), dict):
            for name in VOLATILE_HANDOFF:
                data["handoff"].pop(name, None)
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def sealed(self) -> HandoffPackage:
        return self.model_copy(update={"integrity": self.content_hash()})

    def is_intact(self) -> bool | None:
        """True/False when sealed; None for a package that never was (e.g. seed JSON)."""
        return None if self.integrity is None else self.integrity == self.content_hash()

    def seed_dict(self) -> dict[str, Any]:
        """Only the seed's fields, as its example shows them."""
        return self.model_dump(
            mode="json",
            include={
                "id",
                "source_agent",
                "target_agent",
                "timestamp",
                "state",
                "context",
                "summary",
            },
        )

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def package_json_schema() -> dict[str, Any]:
    schema = HandoffPackage.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
