"""`passdown completion SHELL`: click's shell-completion script for bash, zsh or fish.

The script calls `passdown` back with `_PASSDOWN_COMPLETE` set when the user presses
Tab; `cli.main` answers that (click's `shell_complete` machinery) before any command
runs. The program is always called `passdown` there (`passdown.cli.main` passes that
name, also when started as `agent-handoff`), so the variable is always this one.
"""

from __future__ import annotations

import click

PROG_NAME = "passdown"
COMPLETE_VAR = "_PASSDOWN_COMPLETE"
SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS), metavar="SHELL")
def completion_command(shell: str) -> None:
    """Print the shell-completion script for SHELL (bash, zsh or fish).

    \b
    bash:  passdown completion bash > ~/.local/share/bash-completion/completions/passdown
    zsh:   passdown completion zsh > ~/.zfunc/_passdown   (with ~/.zfunc in $fpath,
           before compinit)
    fish:  passdown completion fish > ~/.config/fish/completions/passdown.fish

    Or evaluate it in the shell's start-up file: eval "$(passdown completion bash)".
    """
    from click.shell_completion import get_completion_class

    complete_class = get_completion_class(shell)
    if complete_class is None:  # click registers all three; a Choice keeps SHELL to them
        raise click.UsageError(f"no completion for {shell!r} in this click")
    root = click.get_current_context().find_root().command
    script = complete_class(root, {}, PROG_NAME, COMPLETE_VAR).source()
    click.echo(script)
