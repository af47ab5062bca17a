"""What Codex CLI's tool calls and their outputs say, from their arguments and output
text alone: the command a shell call ran, the files and action of an `apply_patch`
(its own tool, or run through the shell by older builds), an output's text and exit
code, whether a patch failed, and an `update_plan` call's items. The rollout reader
(`passdown.agents.codex`) turns them into events."""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from passdown._lazy_json import LazyDecoder
from passdown._lazy_re import lazy_compile
from passdown.agents._common import DECODE_ERRORS, parse_exit_code
from passdown.transcript import PlanItem

_PATCH_FILE = lazy_compile(r"\*\*\* (?:(Add|Update|Delete) File: (.+)|Move to: (.+))")
_PATCH_ACTION = {"Add": "write", "Update": "edit", "Delete": "delete"}
_PLAN_STATUSES = {"pending", "in_progress", "completed"}
_ANY = LazyDecoder()


def command_text(args: dict[str, object]) -> str:
    cmd = args.get("cmd") or args.get("command")
    if isinstance(cmd, list):
        parts = [str(p) for p in cmd]
        # ["bash", "-lc", "real command"] -> the real command
        if (
            len(parts) == 3
            and parts[1] in ("-lc", "-c")
            and parts[0].endswith(("sh", "bash", "zsh"))
        ):
            return parts[2]
        return " ".join(parts)
    return str(cmd or "")


def patch_from_args(args: dict[str, object]) -> str | None:
    value = args.get("input") or args.get("patch")
    return value if isinstance(value, str) else None


def embedded_patch(args: dict[str, object]) -> str | None:
    """Older builds ran apply_patch through the shell tool: ["apply_patch", "<patch>"]."""
    cmd = args.get("command")
    if (
        isinstance(cmd, list)
        and len(cmd) >= 2
        and cmd[0] == "apply_patch"
        and isinstance(cmd[1], str)
    ):
        return cmd[1]
    return None


def patch_headers(patch: str) -> Iterator[re.Match[str]]:
    """The `*** Add/Update/Delete File:` and `*** Move to:` lines, without scanning
    every body line with a regex (patches can be large)."""
    pos = 0
    while (i := patch.find("*** ", pos)) >= 0:
        end = patch.find("\n", i)
        if i == 0 or patch[i - 1] == "\n":
            match = _PATCH_FILE.match(patch, i, end if end >= 0 else len(patch))
            if match:
                yield match
        if end < 0:
            break
        pos = end + 1


def patch_paths(patch: str) -> list[str]:
    paths = []
    for match in patch_headers(patch):
        path = (match.group(2) or match.group(3) or "").strip()
        if path and path not in paths:
            paths.append(path)
    return paths


def patch_action(patch: str) -> str:
    kinds = {m.group(1) for m in patch_headers(patch) if m.group(1)}
    return _PATCH_ACTION.get(kinds.pop(), "edit") if len(kinds) == 1 else "edit"


def output_text(raw: msgspec.Raw) -> str:
    try:
        value = _ANY.decode(raw)
    except DECODE_ERRORS:
        return ""
    if isinstance(value, str):
        # some builds wrap the output as a JSON string {"output": ..., "metadata": {...}}
        if value.startswith("{") and '"output"' in value[:200]:
            try:
                inner = _ANY.decode(value)
            except DECODE_ERRORS:
                return value
            if isinstance(inner, dict):
                code = (inner.get("metadata") or {}).get("exit_code")
                prefix = f"Process exited with code {code}\n" if isinstance(code, int) else ""
                return prefix + str(inner.get("output") or "")
        return value
    if isinstance(value, dict):
        return str(value.get("content") or value.get("output") or "")
    if isinstance(value, list):
        return "\n".join(str(v.get("text", "")) for v in value if isinstance(v, dict))
    return ""


def output_exit_code(text: str) -> int | None:
    return parse_exit_code(text[:500])


def patch_failed(text: str) -> bool:
    head = text[:500].lower()
    return (
        "verification failed" in head
        or head.startswith(("error", "failed"))
        or "patch rejected" in head
    )


def strip_exec_header(text: str) -> str:
    """Codex prefixes command output with Chunk ID / Wall time / exit lines."""
    marker = text.find("Output:\n")
    return text[marker + len("Output:\n") :] if 0 <= marker < 400 else text


def plan_items(plan: object) -> tuple[PlanItem, ...]:
    if not isinstance(plan, list):
        return ()
    items = []
    for n, step in enumerate(plan, start=1):
        if not isinstance(step, dict):
            continue
        status, subject = step.get("status"), step.get("step") or step.get("content")
        items.append(
            PlanItem(  # fields of another type than text count as absent
                id=str(n),
                subject=subject if isinstance(subject, str) else "",
                status=status
                if isinstance(status, str) and status in _PLAN_STATUSES
                else "pending",  # type: ignore[arg-type]
            )
        )
    return tuple(items)
