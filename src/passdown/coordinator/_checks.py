"""State-consistency checks: structured results, never bare asserts.

Each check has a name, a severity (an `error` blocks execute unless forced, a
`warning` is reported) and a message; `ok` says whether it passed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from passdown._handoff_package import Fingerprint, HandoffPackage
from passdown._workspace import dirty_paths, git_head
from passdown.coordinator._project_files import FEATURE_LIST, PROGRESS_FILES, read_feature_list

MAX_FINGERPRINT_FILES = 2000
MAX_DIGEST_BYTES = 16 * 1024 * 1024


class CheckResult(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built when first used

    name: str
    severity: Literal["error", "warning"]
    ok: bool
    message: str

    @property
    def blocking(self) -> bool:
        return not self.ok and self.severity == "error"


def _result(
    name: str, severity: Literal["error", "warning"], problem: str | None, fine: str
) -> CheckResult:
    from passdown._redact import redact

    # messages name files and branches, which can hold secrets; they are printed and returned
    return CheckResult(
        name=name, severity=severity, ok=problem is None, message=redact(problem or fine)
    )


def blocking(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.blocking]


# -- workspace fingerprint -----------------------------------------------------------------


def _digest(path: Path) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "deleted"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    if not os.path.isfile(path):
        return "not-a-file"
    if st.st_size > MAX_DIGEST_BYTES:
        return f"size:{st.st_size}:mtime:{st.st_mtime_ns}"
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return h.hexdigest()


def fingerprint(workspace: Path, dirty: list[str] | None = None) -> Fingerprint:
    """The workspace's fingerprint in its redacted form: a branch or file name can hold
    a secret (`feat/ghp_...`, an untracked `sk_live_...` file), and the fingerprint is
    stored and sent like the rest of the package. Fingerprints are only ever compared
    with one another, so both sides are redacted the same way."""
    from passdown._redact import Redactor

    head, branch = git_head(workspace)
    dirty = dirty_paths(workspace) if dirty is None else dirty
    files = {p: _digest(workspace / p) for p in dirty[:MAX_FINGERPRINT_FILES]}
    for name in (FEATURE_LIST, *PROGRESS_FILES):  # tracked or not, outside git too
        if (workspace / name).exists():
            files[name] = _digest(workspace / name)
    redact = Redactor().redact
    redacted: dict[str, str] = {}
    for path, digest in sorted(files.items()):
        key = redact(path)
        # two names that redact alike must not hide each other's changes
        redacted[key] = digest if key not in redacted else _combined(redacted[key], digest)
    return Fingerprint(head=head, branch=redact(branch) if branch else None, files=redacted)


def _combined(first: str, second: str) -> str:
    return hashlib.sha256(f"{first}\0{second}".encode()).hexdigest()


def differences(then: Fingerprint, now: Fingerprint) -> list[str]:
    """What changed in the workspace between two fingerprints, one line each."""
    out: list[str] = []
    if then.head != now.head:
        out.append(f"HEAD moved from {_short(then.head)} to {_short(now.head)}")
    if then.branch != now.branch:
        out.append(
            f"branch changed from {then.branch or '(detached)'} to {now.branch or '(detached)'}"
        )
    for path in sorted(set(then.files) | set(now.files)):
        before, after = then.files.get(path), now.files.get(path)
        if before == after:
            continue
        if before is None:
            out.append(f"{path}: changed since the handoff was prepared")
        elif after is None:
            out.append(f"{path}: no longer has uncommitted changes")
        else:
            out.append(f"{path}: modified since the handoff was prepared")
    return out


def _short(head: str | None) -> str:
    return head[:12] if head else "(no commit)"


# -- the checks ---------------------------------------------------------------------------


def coerce_package(
    package: HandoffPackage | Mapping[str, Any],
) -> tuple[HandoffPackage | None, CheckResult]:
    """The package and the schema check: a dict is validated, a model re-validated from
    its JSON (a package built with model_construct or edited in place may not conform)."""
    try:
        data = package.model_dump(mode="json") if isinstance(package, BaseModel) else dict(package)
        model = HandoffPackage.model_validate(data)
    except (ValidationError, TypeError, ValueError) as exc:
        return None, _result("schema", "error", f"the package does not match the schema: {exc}", "")
    return model, _result("schema", "error", None, "the package matches the schema")


def run_checks(
    package: HandoffPackage | Mapping[str, Any],
    workspace: Path,
    *,
    previous: HandoffPackage | None = None,
    now: Fingerprint | None = None,
) -> list[CheckResult]:
    model, schema = coerce_package(package)
    if model is None:
        return [schema]
    dirty = dirty_paths(workspace)
    now = now or fingerprint(workspace, dirty)
    return [
        schema,
        check_integrity(model),
        check_git_snapshot(model, now),
        check_uncommitted(dirty),
        check_feature_list(model, workspace, previous),
        check_redaction(model),
        check_fresh(model, now),
    ]


def check_integrity(p: HandoffPackage) -> CheckResult:
    intact = p.is_intact()
    if intact is None:
        return CheckResult(
            name="integrity",
            severity="warning",
            ok=False,
            message="the package carries no integrity hash (not prepared by passdown)",
        )
    problem = (
        None
        if intact
        else "the package was modified after it was prepared (integrity hash mismatch)"
    )
    return _result("integrity", "error", problem, "the package is as it was prepared")


def check_git_snapshot(p: HandoffPackage, now: Fingerprint) -> CheckResult:
    recorded = p.context.git_hash
    snap_head = p.handoff.workspace.head if p.handoff else recorded
    if recorded != snap_head:
        return _result(
            "git_snapshot",
            "error",
            f"context.git_hash {_short(recorded)} differs from the handoff's snapshot {_short(snap_head)}",
            "",
        )
    if recorded is None and now.head is None:
        return _result("git_snapshot", "warning", None, "no git history to compare")
    problem = (
        None
        if recorded == now.head
        else f"the snapshot is at {_short(recorded)} but HEAD is {_short(now.head)}"
    )
    return _result(
        "git_snapshot", "error", problem, f"the snapshot matches HEAD {_short(now.head)}"
    )


def check_uncommitted(dirty: list[str]) -> CheckResult:
    if not dirty:
        return _result("uncommitted_changes", "warning", None, "no uncommitted changes")
    shown = ", ".join(dirty[:20]) + (f" and {len(dirty) - 20} more" if len(dirty) > 20 else "")
    return _result(
        "uncommitted_changes", "warning", f"{len(dirty)} uncommitted change(s): {shown}", ""
    )


def check_feature_list(
    p: HandoffPackage, workspace: Path, previous: HandoffPackage | None
) -> CheckResult:
    features = read_feature_list(workspace)
    if features is None:
        return _result("feature_list", "warning", None, f"no {FEATURE_LIST}")
    if features.error:
        return _result("feature_list", "error", features.error, "")
    claimed = set(p.state.completed_features) | set(
        previous.state.completed_features if previous else []
    )
    mentioned = " ".join([*p.state.blockers, p.summary])
    regressed = [
        f.id
        for f in features.features
        if f.id in claimed and not f.passes and not f.note and f.id not in mentioned
    ]
    if regressed:
        return _result(
            "feature_list",
            "error",
            f"feature(s) went from passing to failing without a note: {', '.join(regressed)}",
            "",
        )
    return _result(
        "feature_list",
        "error",
        None,
        f"{FEATURE_LIST} parses: {len(features.completed)} of {len(features.features)} passing",
    )


def check_redaction(p: HandoffPackage) -> CheckResult:
    from passdown._redact import Redactor

    if p.handoff is not None and not p.handoff.redaction.applied:
        return _result("redaction", "error", "the handoff was not redacted", "")
    redactor = Redactor()
    redactor.redact_data(p.model_dump(mode="json", exclude={"integrity"}))
    if redactor.findings:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(redactor.findings.items()))
        return _result("redaction", "error", f"unredacted secrets in the package: {kinds}", "")
    return _result("redaction", "error", None, "redaction ran and no secret remains")


def check_fresh(p: HandoffPackage, now: Fingerprint) -> CheckResult:
    if p.fingerprint is None:
        return _result(
            "fresh", "warning", "no workspace fingerprint to compare (not prepared by passdown)", ""
        )
    changed = differences(p.fingerprint, now)
    if changed:
        shown = "; ".join(changed[:10]) + (
            f"; and {len(changed) - 10} more" if len(changed) > 10 else ""
        )
        return _result("fresh", "error", f"stale: {shown}", "")
    return _result("fresh", "error", None, "nothing changed since the handoff was prepared")
