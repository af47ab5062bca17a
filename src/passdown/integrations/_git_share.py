"""`passdown install git` / `passdown uninstall git`: a repository opts in to sharing its
handoffs on every `git push` (`passdown.integrations._git_share_run` does the sharing).

The install, in the repository of the current folder:

- finds the hooks folder as git does (`git rev-parse --git-path hooks`, which honours
  `core.hooksPath`: husky's `.husky/_`, a team's `.githooks`, an absolute path);
- when a `pre-push` hook is already there (the user's, husky's generated one,
  pre-commit's), moves it to `pre-push.passdown-chained` beside it and writes passdown's
  `pre-push`, which runs it first with the same arguments and the same input on stdin;
  its exit code decides the push. A `sh` hook is run by `.` in a subshell, so its `$0`
  stays `<hooks>/pre-push` (husky's hooks find the user's script by their own name);
  any other is executed. Only then, and only when it passed, passdown's part runs
  (`passdown hook git pre-push`), whose output and exit code are ignored;
- sets `passdown.share = true` in the repository's own `.git/config` (`opted_in`).

Every file goes through `files.ManagedEdits` (backups, diffs for `--dry-run`), so the
uninstall restores each byte for byte; the config key is removed again, and its
`[passdown]` section when nothing else is in it. A `pre-push` that is a symlink is not
written through (it may lead into the repository's committed files): the install
refuses and says so. The repositories opted in are listed in the data folder for
`passdown doctor` (`share_statuses`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from passdown.errors import UsageError
from passdown.integrations._base import InstallTarget
from passdown.integrations._files import ManagedEdits, planning
from passdown.integrations._git_share_run import (
    CONFIG_KEY,
    ShareStatus,
    git_common_dir,
    opted_in,
    share_status,
)

if TYPE_CHECKING:
    from passdown.integrations._install import Outcome

AGENT = "git"  # the install target's name, beside the agents'
HOOK = "pre-push"
CHAINED = "pre-push.passdown-chained"
MARK = "# passdown: share handoffs on push (managed by `passdown install git`)"
EVENTS = [HOOK]
REGISTRY = "share-repos.json"

_WRAPPER = """#!/bin/sh
{mark}
# `passdown uninstall git` puts back what was here before. The hook that was here
# ({chained}) runs first, with the same arguments and input, and decides the push;
# then passdown hands its handoff refs to a background push, which never fails it.
passdown_input=$(cat; printf x)
passdown_input=${{passdown_input%x}}
passdown_chained="$(dirname -- "$0")/{chained}"
passdown_status=0
if [ -f "$passdown_chained" ] && [ -x "$passdown_chained" ]; then
    case "$(head -n 1 -- "$passdown_chained")" in
        '#!/bin/sh'*|'#!/usr/bin/env sh'*|'#! /bin/sh'*)
            printf '%s' "$passdown_input" | ( . "$passdown_chained" )
            passdown_status=$? ;;
        *)
            printf '%s' "$passdown_input" | "$passdown_chained" "$@"
            passdown_status=$? ;;
    esac
fi
if [ "$passdown_status" -eq 0 ]; then
    printf '%s' "$passdown_input" | {command} hook git pre-push "$@" >/dev/null 2>&1 || :
fi
exit "$passdown_status"
"""


def sh_quote(word: str) -> str:
    """One word for the `sh` git runs hooks with (Git for Windows' too)."""
    return "'" + word.replace("'", "'\\''") + "'"


def wrapper_text(command: str) -> str:
    return _WRAPPER.format(mark=MARK, chained=CHAINED, command=sh_quote(command))


def repository(cwd: Path) -> Path:
    """The worktree root of the repository `cwd` is in; `UsageError` outside one."""
    from passdown._git import run_git

    result = run_git(cwd, "rev-parse", "--show-toplevel")
    text = result.out.decode("utf-8", "replace").strip() if result.ok else ""
    if not text:
        why = result.error or "a bare repository has no worktree"
        raise UsageError(
            f"`passdown install git` works in a git repository: {cwd} is not in one ({why})",
            hint="run it inside the clone whose pushes should carry the handoffs",
        )
    return Path(text)


def hooks_dir(workspace: Path) -> Path:
    """Where git looks for this repository's hooks (`core.hooksPath` honoured)."""
    from passdown._git import run_git

    result = run_git(workspace, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
    text = result.out.decode("utf-8", "replace").strip() if result.ok else ""
    if not text:
        raise UsageError(f"cannot find the hooks folder of {workspace}: {result.error}")
    return Path(text)


def target(workspace: Path, command: str = "passdown") -> InstallTarget:
    return InstallTarget(AGENT, "project", workspace, command)


def _key(workspace: Path) -> str:
    """One manifest per repository: its worktrees share the hooks and `.git/config`."""
    common = git_common_dir(workspace) or workspace
    digest = hashlib.sha256(str(common.resolve()).encode()).hexdigest()[:12]
    return f"{AGENT}-{digest}"


def _text_of(path: Path) -> str | None:
    """The current hook's text (None: absent); refuses a link and a binary hook."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(
            f"{path} is a symlink (to {os.readlink(path)}): passdown does not write through it",
            hint="replace the link by a script that runs its target, then install again",
        )
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a text file: passdown cannot chain it") from None


def install_git(workspace: Path, command: str, *, dry_run: bool = False) -> ManagedEdits:
    """Put passdown's pre-push hook in (chaining what was there) and opt the repository
    in; with `dry_run`, only the diffs."""
    hooks = hooks_dir(workspace)
    hook, chained = hooks / HOOK, hooks / CHAINED
    edits = ManagedEdits(_key(workspace), confine_to=hooks)
    edits.dry_run = dry_run
    existing = _text_of(hook)
    with planning(dry_run):
        if existing is not None and MARK not in existing:
            if _text_of(chained) is not None:
                raise UsageError(
                    f"{chained} is in the way: passdown keeps the hook it chains there",
                    hint="move it away (or `passdown uninstall git` first), then install again",
                )
            edits.apply(chained, lambda _old: existing)
            if not dry_run:
                _copy_mode(hook, chained)
        edits.apply(hook, lambda _old: wrapper_text(command))
    if dry_run:
        if not opted_in(workspace):
            edits.notes.append(f"would set `git config --local {CONFIG_KEY} true`")
        return edits
    _make_executable(hook)
    _set_config(workspace)
    _remember(workspace, True)
    edits.notes.append(
        f"every `git push` from {workspace} now also pushes passdown's handoffs to the share "
        "remote, in the background; opt out: `passdown uninstall git`"
    )
    return edits


def uninstall_git(workspace: Path) -> ManagedEdits:
    hooks = hooks_dir(workspace)
    edits = ManagedEdits(_key(workspace), confine_to=hooks)
    edits.revert({hooks / HOOK: _strip_wrapper, hooks / CHAINED: lambda text: text})
    _unset_config(workspace)
    _remember(workspace, False)
    return edits


def _strip_wrapper(text: str | None) -> str | None:
    """A pre-push changed since install: passdown's wrapper goes only when it is still
    passdown's (another tool rewrote it: left as it is)."""
    return None if text is not None and MARK in text else text


def _copy_mode(source: Path, dest: Path) -> None:
    with contextlib.suppress(OSError):
        os.chmod(dest, stat.S_IMODE(source.stat().st_mode))


def _make_executable(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    os.chmod(path, mode | ((mode & 0o444) >> 2) | stat.S_IXUSR)


def _set_config(workspace: Path) -> None:
    from passdown._git import run_git

    result = run_git(workspace, "config", "--local", CONFIG_KEY, "true")
    if not result.ok:
        raise UsageError(f"cannot opt {workspace} in: {result.error}")


def _unset_config(workspace: Path) -> None:
    """Remove the key, and `[passdown]` when nothing else is in it: `.git/config` is
    then byte for byte what it was before the install."""
    from passdown._git import run_git

    run_git(workspace, "config", "--local", "--unset-all", CONFIG_KEY)
    section = CONFIG_KEY.split(".")[0]
    left = run_git(workspace, "config", "--local", "--get-regexp", f"^{section}\\.")
    if not left.ok or not left.out.strip():
        run_git(workspace, "config", "--local", "--remove-section", section)


# -- the opted-in repositories, for doctor ---------------------------------------------------


def _registry_path() -> Path:
    from passdown._paths import data_dir

    return data_dir() / REGISTRY


def registered() -> list[Path]:
    try:
        data = json.loads(_registry_path().read_bytes())
    except (OSError, ValueError, RecursionError):
        return []
    return [Path(p) for p in data if isinstance(p, str)] if isinstance(data, list) else []


def _remember(workspace: Path, add: bool) -> None:
    from passdown._fsio import ensure_private_dir, write_private

    paths = [str(p) for p in registered() if p != workspace]
    if add:
        paths.append(str(workspace))
    ensure_private_dir(_registry_path().parent)
    write_private(_registry_path(), json.dumps(sorted(set(paths)), indent=2) + "\n")


def hook_problem(workspace: Path) -> str | None:
    """Why the repository's pre-push hook would not share (None: it would): it is gone
    (husky regenerates its hooks, say), or the passdown it runs is."""
    try:
        text = (hooks_dir(workspace) / HOOK).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, UsageError):
        text = ""
    if MARK not in text:
        return "the pre-push hook is not passdown's any more"
    match = re.search(
        r"^    printf '%s' \"\$passdown_input\" \| '((?:[^']|'\\'')*)' hook git", text, re.M
    )
    command = match.group(1).replace("'\\''", "'") if match else ""
    if os.sep in command or (os.altsep and os.altsep in command):
        if not os.access(command, os.X_OK):
            return f"the pre-push hook runs {command}, which is missing"
    elif command and shutil.which(command) is None:
        return f"the pre-push hook runs {command}, which is not on PATH"
    return None


def share_statuses(project_dir: Path | None = None) -> list[ShareStatus]:
    """One status per opted-in repository: those installed into from this data folder,
    and the current one."""
    seen: list[Path] = []
    candidates = registered()
    if project_dir is not None and git_common_dir(project_dir) is not None:
        with contextlib.suppress(UsageError):
            candidates.append(repository(project_dir))
    statuses: list[ShareStatus] = []
    for workspace in candidates:
        if workspace in seen or not workspace.is_dir():
            continue
        seen.append(workspace)
        status = share_status(workspace, hook_problem(workspace))
        if status is not None:
            statuses.append(status)
    return statuses


# -- as `passdown install` reports it ---------------------------------------------------------


def install_outcome(cwd: Path, command: str | None, *, dry_run: bool = False) -> Outcome:
    """`passdown install git`: the command the hook runs is checked first (as the
    agents' is), then the hook goes in."""
    from passdown.integrations._command import resolve_command
    from passdown.integrations._install import AgentOutcome, Outcome

    workspace = repository(cwd)
    checked = resolve_command(command, AGENT)
    edits = install_git(workspace, checked.command, dry_run=dry_run)
    if checked.by_name:
        edits.notes.append(
            f"the hook runs `{checked.command}` by name: git must find it on its PATH"
        )
    outcome = Outcome("install", checked=checked, dry_run=dry_run)
    outcome.agents.append(AgentOutcome(target(workspace, checked.command), edits, list(EVENTS)))
    return outcome


def uninstall_outcome(cwd: Path) -> Outcome:
    from passdown.integrations._install import AgentOutcome, Outcome

    workspace = repository(cwd)
    outcome = Outcome("uninstall")
    outcome.agents.append(AgentOutcome(target(workspace), uninstall_git(workspace)))
    return outcome
