"""The `passdown` (alias `agent-handoff`) command line: a thin door into the pipeline.

Subcommands load lazily so `passdown --help` answers without importing pydantic,
msgspec or a database driver. Errors become a message and an exit code here, in one
place. `passdown hook AGENT ...`, which agents run while a session waits, goes straight
to `integrations.hooks` without loading click (the click group is in `_group`).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import click

__all__ = ["cli", "main", "run"]


def __getattr__(name: str) -> Any:
    if name in ("cli", "LazyGroup"):  # the click group, loaded when asked for
        return getattr(importlib.import_module("passdown.cli._group"), name)
    raise AttributeError(f"module 'passdown.cli' has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    utf8_stdio()
    hook = _hook_args(args)
    if hook is not None:
        try:
            if hook[0] == "git":  # the pre-push hook of `passdown install git`
                from passdown.integrations._git_share_run import hook_main as git_hook

                return git_hook(hook[1])
            from passdown.integrations._hooks import main as hook_main

            return hook_main(*hook)  # logs its own failures; never raises otherwise
        except KeyboardInterrupt:
            return 130
    import click

    from passdown.cli._group import cli
    from passdown.errors import PassdownError, exit_code_for

    as_json = _wants_json(args)
    try:
        result = cli.main(args=args, prog_name="passdown", standalone_mode=False)
    except PassdownError as exc:
        _print_error(exc.message, exc.hint, exit_code_for(exc), as_json=as_json)
        return exit_code_for(exc)
    except click.exceptions.Abort:
        _print_error("aborted", None, 130, as_json=as_json)
        return 130
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        code = 2 if isinstance(exc, click.UsageError) else exc.exit_code
        _print_error(exc.format_message(), _usage_hint(exc), code, as_json=as_json)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly; the traceback only on request
        if os.environ.get("PASSDOWN_DEBUG"):
            raise
        _print_error(
            f"internal error ({type(exc).__name__}): {exc}",
            "this is a bug in passdown; rerun with PASSDOWN_DEBUG=1 for the traceback",
            1,
            as_json=as_json,
        )
        return 1
    return result if isinstance(result, int) else 0


def _hook_args(args: list[str]) -> tuple[str, list[str]] | None:
    """(agent, its arguments) for `passdown hook AGENT ...`, the form the installed hooks
    run; None for anything else (`passdown hook --help`, `--check` too), which click parses."""
    if len(args) < 2 or args[0] != "hook" or args[1].startswith("-"):
        return None
    if any(arg in ("-h", "--help", "--check") for arg in args[2:]):
        return None  # help, or `hook AGENT --check`: click answers, nothing is exported
    return args[1], args[2:]


def _wants_json(args: list[str]) -> bool:
    """`--json` among the options (not after `--`, where the target agent's args go)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def _usage_hint(exc: click.ClickException) -> str | None:
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return "run 'passdown --help'"
    return f"run '{ctx.command_path} --help'"


def _print_error(message: str, hint: str | None, code: int, *, as_json: bool) -> None:
    """Every error, one format: `passdown: error: ...` and a hint, or with --json one JSON
    object on stderr. Redacted, and flattened to one line each (a message may quote
    session text)."""
    import json

    import click

    from passdown._text import shown

    message = shown(message)
    hint = shown(hint) if hint else None
    if as_json:
        click.echo(json.dumps({"error": message, "code": code, "hint": hint}), err=True)
        return
    click.echo(f"passdown: error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)


def utf8_stdio() -> None:
    """stdin, stdout and stderr in UTF-8 whatever the locale or console code page: a pipe
    on Windows gets the ANSI code page (cp1252), in which `→` in HANDOFF.md would raise,
    and a hook's JSON payload would be misread."""
    import codecs

    for stream in (sys.stdin, sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        reconfigure = getattr(stream, "reconfigure", None)
        try:
            if reconfigure is not None and codecs.lookup(encoding).name != "utf-8":
                reconfigure(encoding="utf-8")
        except (LookupError, ValueError, OSError):  # a stream already read from, or closed
            continue


def run() -> None:
    # A command lives briefly and keeps most of what it makes (modules, models, the
    # session's facts): the young generation is collected far less often (as mypy does).
    gc.set_threshold(200_000, 30, 30)
    code = main()
    # The process ends here: the collector need not walk every object the command made
    # (the models, the session's facts) once more on the way out. Nothing passdown
    # writes waits on a collection: files are closed and synced by then.
    gc.freeze()
    _end(code)


def _end(code: int) -> NoReturn:
    """Exit without tearing the interpreter down (as mypy does): its finalization would
    free every module and object the command made, one by one, while the agent waits.
    Every file passdown writes is closed and synced when the command returns; what was
    registered to run at exit runs (logging's shutdown, a tool's report), then the
    output is flushed. A thread other than a daemon still running gets the normal exit,
    which waits for it."""
    import atexit
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(t.is_alive() and not t.daemon for t in others):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away, or it was closed
            continue
        except OSError:  # what the command printed did not all arrive
            code = code or 1
    os._exit(code)
