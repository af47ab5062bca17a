"""Composing a package's state from its sources, and recording which source said what.

Precedence, per field: what the caller passed, else what the project files say, else
what the agent's session shows. The package's `provenance` maps each field to where
its value came from (`caller`, `session`, `feature_list`, `progress:<file>`, `git`,
`recovered:<id>`, `store`, or `none`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from passdown._handoff_package import HandoffPackage, PackageState
from passdown._workspace import WorkspaceSnapshot
from passdown.coordinator._project_files import FEATURE_LIST, FeatureList, ProgressNotes
from passdown.handoff import Handoff, PlanEntry, Source, State, Task


class Overrides(msgspec.Struct):
    """Caller-supplied values; None means "derive it"."""

    summary: str | None = None
    current_feature: str | None = None
    completed_features: list[str] | None = None
    blockers: list[str] | None = None
    next_steps: list[str] | None = None
    recent_files: list[str] | None = None
    request: str | None = None


class Composed(msgspec.Struct):
    state: PackageState
    recent_files: list[str]
    summary: str
    provenance: dict[str, str]


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i.strip() for i in items if i and i.strip()))


def _pick(name: str, caller: Any, options: list[tuple[str, Any]], prov: dict[str, str]) -> Any:
    """The caller's value, else the first non-empty derived one; notes the source."""
    if caller is not None:
        prov[name] = "caller"
        return caller
    for source, value in options:
        if value:
            prov[name] = source
            return value
    prov[name] = "none"
    return None


def base_state(h: Handoff) -> tuple[PackageState, list[str]]:
    """What a session's handoff says about the seed's state fields."""
    plan = h.state.plan
    state = PackageState(
        current_feature=next((p.subject for p in plan if p.status == "in_progress"), None),
        completed_features=[p.subject for p in plan if p.status == "completed"],
        blockers=list(h.state.blockers),
        next_steps=list(h.state.next_steps),
    )
    return state, [f.path for f in h.state.files_touched]


class Base(msgspec.Struct):
    """What a package is built on: a session's or a stored package's state.
    `source` names it in the provenance ("session", "recovered:<id>")."""

    source: str
    state: PackageState
    recent_files: list[str]
    summary: str | None


def compose(
    base: Base | None,
    features: FeatureList | None,
    progress: ProgressNotes | None,
    o: Overrides,
    *,
    git_files: list[str] | None = None,
) -> Composed:
    """The package's state, recent files and summary from the caller's values, the
    project files and `base` (None: built from the project files alone)."""
    prov: dict[str, str] = {}
    fl = features if features is not None and features.error is None else None
    base = base or Base("none", PackageState(), [], None)
    src, st, files, summary = base.source, base.state, base.recent_files, base.summary
    current = fl.current if fl else None
    progress_tag = f"progress:{progress.path.name}" if progress else "progress"
    state = PackageState(
        current_feature=_pick(
            "state.current_feature",
            o.current_feature,
            [("feature_list", current.id if current else None), (src, st.current_feature)],
            prov,
        ),
        completed_features=_pick(
            "state.completed_features",
            o.completed_features,
            [("feature_list", fl.completed if fl else None), (src, st.completed_features)],
            prov,
        )
        or [],
        blockers=_merge(
            "state.blockers",
            o.blockers,
            [(progress_tag, progress.blockers if progress else []), (src, st.blockers)],
            prov,
        ),
        next_steps=_merge(
            "state.next_steps",
            o.next_steps,
            [
                (progress_tag, progress.next_steps if progress else []),
                (src, st.next_steps),
                ("feature_list", [_feature_step(current)] if current else []),
            ],
            prov,
            last_is_fallback=True,
        ),
    )
    recent = _pick(
        "context.recent_files", o.recent_files, [(src, files), ("git", git_files or [])], prov
    )
    text = _pick(
        "summary",
        o.summary,
        [(src, summary), ("feature_list", _feature_summary(fl) if fl else None)],
        prov,
    )
    return Composed(
        state=state, recent_files=list(recent or []), summary=str(text or ""), provenance=prov
    )


def _merge(
    name: str,
    caller: list[str] | None,
    options: list[tuple[str, list[str]]],
    prov: dict[str, str],
    *,
    last_is_fallback: bool = False,
) -> list[str]:
    """The caller's list, else the union of the derived ones (in the order given). With
    `last_is_fallback`, the last option is only used when all others are empty."""
    if caller is not None:
        prov[name] = "caller"
        return _dedupe(caller)
    if last_is_fallback and any(v for _, v in options[:-1]):
        options = options[:-1]
    used = [(source, values) for source, values in options if values]
    prov[name] = "+".join(source for source, _ in used) or "none"
    return _dedupe([v for _, values in used for v in values])


def _feature_step(feature: object) -> str:
    fid = getattr(feature, "id", "")
    desc = getattr(feature, "description", "")
    return f"Make {fid} pass" + (f": {desc}" if desc and desc != fid else "")


def _feature_summary(fl: FeatureList) -> str:
    current = fl.current
    text = f"{len(fl.completed)} of {len(fl.features)} features passing"
    return text + (f"; current: {current.id}" if current else "; all passing")


# -- a handoff without a session -----------------------------------------------------------


def synthetic_handoff(
    *,
    id: str,
    created_at: str,
    source_agent: str,
    session_label: str,
    workspace: Path,
    snapshot: WorkspaceSnapshot,
    features: FeatureList | None,
    request: str | None,
) -> Handoff:
    """The handoff for a source with no readable session: the feature list as the plan,
    the workspace snapshot, and (filled in later) the composed state."""
    plan = _plan_from(features)
    current = features.current if features and not features.error else None
    goal = request or (current.description or current.id if current else None)
    return Handoff(
        id=id,
        created_at=created_at,
        source=Source(
            agent=source_agent, session_id=session_label, transcript_path="", cwd=str(workspace)
        ),
        task=Task(original_request=goal),
        state=State(plan=plan, plan_source=FEATURE_LIST if plan else None),
        workspace=snapshot,
        warnings=[
            f"no readable {source_agent} session: built from the caller's values and the project files"
        ],
    )


def _plan_from(features: FeatureList | None) -> list[PlanEntry]:
    if not features or features.error:
        return []
    current = features.current
    return [
        PlanEntry(
            id=f.id,
            subject=f.description or f.id,
            status="completed" if f.passes else "in_progress" if f is current else "pending",
        )
        for f in features.features
    ]


def apply_to_handoff(
    h: Handoff,
    c: Composed,
    *,
    features: FeatureList | None,
    summary_from_caller: bool,
    target: str | None,
) -> Handoff:
    """The composed state written back into the handoff, so HANDOFF.md, handoff.json
    and the launch prompt say what the package says."""
    h = h.model_copy(deep=True)
    h.state.next_steps = list(c.state.next_steps)
    h.state.blockers = list(c.state.blockers)
    if summary_from_caller or not h.task.latest_progress:
        h.task.latest_progress = c.summary or None
    if not h.state.plan and (plan := _plan_from(features)):
        h.state.plan, h.state.plan_source = plan, FEATURE_LIST
    h.target_agent = target
    return h


def redact_package(package: HandoffPackage) -> HandoffPackage:
    """The package with every string redacted, in one pass: the session's text, the
    caller's values, the project files' and git's. The handoff's findings are what it
    was stored with (a recovery's) plus what this pass found; a text the package holds
    twice (a caller's blocker in `state` and in the handoff) is scanned and counted once."""
    from passdown._redact import Redactor

    redactor = Redactor()
    data = redactor.redact_data(
        package.model_dump(mode="json", exclude={"fingerprint", "integrity"})
    )
    if package.handoff is not None:
        findings = dict(package.handoff.redaction.findings)
        for kind, n in redactor.findings.items():
            findings[kind] = findings.get(kind, 0) + n
        data["handoff"]["redaction"] = {"applied": True, "findings": dict(sorted(findings.items()))}
    return HandoffPackage.model_validate(data)
