"""`passdown demo`: hand off the example session shipped with passdown."""

from __future__ import annotations

from pathlib import Path

import click

from passdown.cli._output import json_option


@click.command("demo")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The scratch folder to use (new or empty; default: a new private temp folder).",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the scratch folder, and the record in your own handoff store (where `find` "
    "and `ui` look) instead of a scratch one.",
)
@json_option("Print where everything went as JSON.")
def demo_command(out: Path | None, keep: bool, as_json: bool) -> None:
    """Hand off an example Claude Code session shipped with passdown, as `export` does
    with yours: HANDOFF.md, handoff.json and a stored record, all in a scratch folder
    (your agents' folders and your handoff store are not touched). Prints the handoff;
    the scratch folder is removed afterwards unless --keep (or --out names it)."""
    from passdown._demo import run_demo
    from passdown._text import shown

    result = run_demo(out, keep=keep)
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(
            {
                "folder": str(result.folder),
                "workspace": str(result.workspace),
                "session_file": str(result.session_file),
                "markdown": str(result.markdown),
                "json": str(result.json_path),
                "record_id": result.record_id,
                "store": result.store,
                "goal": result.goal,
                "next_step": result.next_step,
                "kept": result.kept,
                "handoff": result.markdown_text,
            }
        )
        _say_warning(result.warning)
        return
    click.echo("passdown demo: handed off an example Claude Code session (shipped with passdown)")
    if not result.kept:
        from passdown._text import safe_text

        click.echo("\n" + safe_text(result.markdown_text).rstrip("\n") + "\n")
    else:
        click.echo(f"wrote {shown(result.markdown)}")
        click.echo(f"wrote {shown(result.json_path)}")
        if result.record_id:
            where = "your store" if keep else "a scratch store"
            click.echo(f"stored record {result.record_id} in {where} ({shown(result.store)})")
    click.echo(f"  goal:      {shown(result.goal)}")
    if result.next_step:
        click.echo(f"  next step: {shown(result.next_step)}")
    if result.kept:
        click.echo(f"read it:     cat {shown(result.markdown)}")
    else:
        click.echo("scratch:     removed (passdown demo --keep keeps the files, and the record")
        click.echo("             in your own store)")
    _say_warning(result.warning)
    click.echo("your own:    cd <a project an agent worked in> && passdown export --from auto")
    click.echo(
        "automatic:   passdown install claude   (or codex, gemini, ... all; then `passdown doctor`)"
    )


def _say_warning(warning: str | None) -> None:
    if warning:
        from passdown._text import shown

        click.echo(f"passdown: warning: {shown(warning)}", err=True)
