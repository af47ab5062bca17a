"""`passdown push | pull`: handoffs through git refs (`passdown.share`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from passdown.cli._output import json_option

if TYPE_CHECKING:
    from passdown.share import PullReport, PushReport

F = TypeVar("F", bound=Callable[..., Any])


def _workspace_option() -> Callable[[F], F]:
    return click.option(
        "-C",
        "--workspace",
        "workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Work as if run in DIR, like git -C (default: here).",
    )


def _timeout_option() -> Callable[[F], F]:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=30.0,
        show_default=True,
        help="Seconds every git call of this command shares; then it stops (exit 16).",
    )


@click.command("push")
@click.argument("remote", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would leave, file by file; push nothing.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="With --dry-run: also write every file that would leave, byte for byte, into "
    "DIR/<ref>/ (private files), to read exactly what a push would send.",
)
@click.option(
    "--prune",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Keep only the newest N handoffs per branch on the remote (deletes the others' refs).",
)
@_timeout_option()
@json_option("Print the report as JSON (what was pushed, skipped, refused, pruned).")
@_workspace_option()
def push_command(
    remote: str | None,
    dry_run: bool,
    out: Path | None,
    prune: int | None,
    timeout: float,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Push this repository's handoffs to REMOTE under refs/passdown/ (fast-forward
    only), redacted again, with paths relative to the repository. Nothing else pushes
    them but this command and the hooks `passdown install git` adds.

    REMOTE: a remote's name or URL (default: `git config passdown.shareRemote`, else
    `passdown config get share_remote`, else origin)."""
    from passdown.errors import UsageError
    from passdown.share import push_handoffs

    if out is not None and not dry_run:
        raise UsageError("--out goes with --dry-run (a push writes nothing here)")
    report = push_handoffs(
        workspace or Path.cwd(), remote, dry_run=dry_run, prune=prune, timeout=timeout
    )
    if out is not None:
        _write_what_would_leave(report, out)
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(report.to_json())
        return
    _say_push(report)


@click.command("pull")
@click.argument("remote", required=False)
@_timeout_option()
@json_option("Print the report as JSON (what was imported, refused, made active).")
@_workspace_option()
def pull_command(remote: str | None, timeout: float, as_json: bool, workspace: Path | None) -> None:
    """Import this project's handoffs from REMOTE into the local store; the newest
    handoff of the current branch becomes the active one when it is newer than the
    local one, its HANDOFF.md written into .agent-handoff/. A handoff that fails its
    checks is refused, named, and nothing of it imported (exit 17); the others are.

    REMOTE: as for `passdown push`."""
    from passdown.errors import ShareRefused
    from passdown.share import pull_handoffs

    report = pull_handoffs(workspace or Path.cwd(), remote, timeout=timeout)
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(report.to_json())
    else:
        _say_pull(report)
    if report.refused:
        reasons = "; ".join(f"{i.id}: {i.reason}" for i in report.refused[:5])
        raise ShareRefused(
            f"refused {len(report.refused)} handoff(s) from {report.remote!r}: {reasons}",
            hint="nothing of them was imported; the others were",
        )


def _write_what_would_leave(report: PushReport, out: Path) -> None:
    """Each file of a dry run under OUT/<ref>/<path>, as it would leave."""
    from passdown._fsio import ensure_private_dir, write_private
    from passdown.errors import OutputError

    try:
        for item in report.files:
            parts = [*item.ref.split("/"), *item.path.split("/")]
            if any(part in ("", ".", "..") for part in parts):
                raise OutputError(f"not a file name to write under {out}: {item.ref}/{item.path}")
            target = out.joinpath(*parts)
            ensure_private_dir(target.parent)
            write_private(target, item.data)
    except OSError as exc:
        raise OutputError(f"cannot write what would leave into {out}: {exc}") from exc


def _echo(line: str) -> None:
    from passdown._redact import redact
    from passdown._text import shown

    click.echo(shown(redact(line)))


def _say_push(report: PushReport) -> None:
    if report.dry_run:
        if not report.files:
            _echo(f"nothing would leave for {report.remote} ({report.unchanged} up to date)")
        for item in report.pushed:
            _echo(f"{item.reason}: {item.ref}")
            for f in (f for f in report.files if f.ref == item.ref):
                _echo(f"    {f.path}  {f.bytes} bytes  sha256:{f.sha256[:16]}")
    else:
        for item in report.pushed:
            _echo(f"pushed {item.id} ({item.reason})")
        if not report.pushed:
            _echo(f"nothing to push to {report.remote} ({report.unchanged} up to date)")
    for item in report.skipped:
        _echo(f"not shared: {item.id}: {item.reason}")
    for item in report.pruned:
        _echo(f"pruned {item.id}")


def _say_pull(report: PullReport) -> None:
    for item in report.imported:
        _echo(f"pulled {item.id} ({item.reason})")
    for item in report.refused:
        _echo(f"refused {item.id}: {item.reason}")
    if not report.imported and not report.refused:
        _echo(f"nothing new on {report.remote}")
    if report.active:
        _echo(f"active handoff: {report.active} ({report.active_reason})")


@click.command("scope")
@click.argument("name", required=False)
@json_option("Print the scope and where it comes from as JSON.")
@_workspace_option()
def scope_command(name: str | None, as_json: bool, workspace: Path | None) -> None:
    """Print this repository's project scope and where it comes from; with NAME, name
    the project in a `.passdown.toml` at the repository's root (commit it: every clone,
    a fork's too, then shares one scope). Without that file the scope comes from the
    `upstream` remote, else `origin`, else the first remote, else the folder's path."""
    from passdown.share._scope import name_project, scope_source

    if name is not None:
        name_project(workspace or Path.cwd(), name)
    project, source = scope_source(workspace or Path.cwd())
    if as_json:
        from passdown.cli._output import emit_json

        emit_json({"project": project, "from": source})
        return
    _echo(f"{project}    # from {source}")
