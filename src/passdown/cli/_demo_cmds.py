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
    help="Keep the record in your own handoff store (where `find` and `ui` look) instead "
    "of a scratch one.",
)
@json_option("Print where everything went as JSON.")
def demo_command(out: Path | None, keep: bool, as_json: bool) -> None:
    """Hand off an example Claude Code session shipped with passdown, as `export` does
    with yours: HANDOFF.md, handoff.json and a stored record, all in a scratch folder
    (your agents' folders and your handoff store are not touched). Prints where."""
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
            }
        )
        return
    click.echo("passdown demo: handed off an example Claude Code session (shipped with passdown)")
    click.echo(f"wrote {shown(result.markdown)}")
    click.echo(f"wrote {shown(result.json_path)}")
    if result.record_id:
        where = "your store" if keep else "a scratch store"
        click.echo(f"stored record {result.record_id} in {where} ({shown(result.store)})")
    click.echo(f"  goal:      {shown(result.goal)}")
    if result.next_step:
        click.echo(f"  next step: {shown(result.next_step)}")
    click.echo(f"read it:     cat {shown(result.markdown)}")
    click.echo("your own:    cd <a project an agent worked in> && passdown export --from auto")
    click.echo(
        "automatic:   passdown install claude   (or codex, gemini, ... all; then `passdown doctor`)"
    )
