"""`passdown install cloud`: the repository files cloud agents read before they start.

Cloud agents (Claude Code on the web, Codex cloud, Copilot's coding agent, Cursor's
background agents) clone the repository into a fresh box, run what the repository or
the environment's settings name, then start. docs/cloud-agents.md says what each one
reads; this module writes, in the project folder:

- `.passdown/cloud.sh`: the one script every snippet calls. `setup` installs passdown
  (pinned: `PASSDOWN_SPEC`, by default the version that wrote the script) when the box
  lacks it and pulls the handoff (`passdown pull`, which writes
  `.agent-handoff/HANDOFF.md`); `end` exports the session and pushes it back;
  `claude-start` and `claude-stop` are Claude Code's hooks.
- `.claude/settings.json`: a `SessionStart` and a `Stop` hook, each guarded by
  `CLAUDE_CODE_REMOTE=true`, so that locally, beside `passdown install claude` or
  passdown's plugin, they do nothing and passdown's hooks fire once.
- `.github/workflows/copilot-setup-steps.yml`: the setup job of Copilot's coding agent
  (created when absent; one that exists is left alone and the step to add is noted).
- `.cursor/environment.json`: the script runs first in `install` (only edited when the
  file exists: creating it would replace the user's personal or team environment).
- `AGENTS.md`: a block telling any agent where its handoff is.

Codex cloud's setup script lives in its environment settings, not in the repository:
the notes say the line to put there. Every file goes through `files.ManagedEdits`, so an
install is idempotent, `--dry-run` shows diffs and uninstall restores the bytes.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any, ClassVar

from passdown import __version__
from passdown.errors import UsageError
from passdown.integrations._base import (
    HookIntegration,
    InstallTarget,
    Plan,
    add_marked_block,
    drop_file,
    json_edit,
    remove_marked_block,
    whole_file,
)
from passdown.integrations._files import Transform

TARGET = "cloud"
SCRIPT = Path(".passdown") / "cloud.sh"
WORKFLOW = Path(".github") / "workflows" / "copilot-setup-steps.yml"
CURSOR_ENV = Path(".cursor") / "environment.json"
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
AGENTS_MD = Path("AGENTS.md")
SPEC_ENV = "PASSDOWN_CLOUD_SPEC"  # what the script installs (pip requirement or URL)
MARK = "managed by `passdown install cloud`"
MD_BEGIN = f"<!-- >>> passdown cloud handoff ({MARK}) -->"
MD_END = "<!-- <<< passdown cloud handoff -->"

# Claude Code on the web sets CLAUDE_CODE_REMOTE=true; the test is in the command line
# itself, so a local session does not even start the script.
CLAUDE_GUARD = '[ "$CLAUDE_CODE_REMOTE" != true ] || sh "$CLAUDE_PROJECT_DIR/.passdown/cloud.sh"'
CLAUDE_HOOKS = {"SessionStart": ("claude-start", 180), "Stop": ("claude-stop", 60)}
SETUP_LINE = "sh .passdown/cloud.sh setup"
CURSOR_LINE = f"{SETUP_LINE} cursor || true"


def install_spec() -> str:
    """What the cloud box installs: `PASSDOWN_CLOUD_SPEC` at install time (e.g.
    `git+https://github.com/OWNER/passdown@v0.2.0` until passdown is on PyPI), else
    this version from PyPI."""
    spec = os.environ.get(SPEC_ENV, "").strip() or f"passdown=={__version__}"
    if not re.fullmatch(r"[A-Za-z0-9._+:/@=<>!~,#%-]+", spec):
        raise UsageError(
            f"{SPEC_ENV}={spec!r} is not a package requirement or URL",
            hint="e.g. passdown==0.2.0 or git+https://github.com/OWNER/passdown@v0.2.0",
        )
    return spec


SCRIPT_TEXT = """\
#!/bin/sh
# passdown in a cloud agent's box ({mark}, passdown {version};
# `passdown uninstall cloud` removes it). What calls it: docs/cloud-agents.md.
#
#   sh .passdown/cloud.sh setup [AGENT]  install passdown when missing, pull the handoff
#                                        (.agent-handoff/HANDOFF.md)
#   sh .passdown/cloud.sh end [AGENT]    write this session's handoff and push it back
#   sh .passdown/cloud.sh claude-start   Claude Code on the web: SessionStart hook
#   sh .passdown/cloud.sh claude-stop    Claude Code on the web: Stop hook
#
# A step that did not happen is said on stderr and the exit code is 1; stdout carries
# only what a Claude Code hook hands the session (the pickup pointer).
PASSDOWN_SPEC="${{PASSDOWN_SPEC:-{spec}}}"
PASSDOWN_TIMEOUT="${{PASSDOWN_TIMEOUT:-20}}"

say() {{ printf 'passdown cloud: %s\\n' "$*" >&2; }}

cd "$(dirname "$0")/.." || {{ say "cannot enter the repository"; exit 1; }}

ensure_passdown() {{
    PATH="$HOME/.local/bin:$PATH"
    export PATH
    if [ -n "$CLAUDE_ENV_FILE" ]; then  # later Bash calls of the session find it too
        printf 'export PATH="%s/.local/bin:$PATH"\\n' "$HOME" >>"$CLAUDE_ENV_FILE"
    fi
    command -v passdown >/dev/null 2>&1 && return 0
    if command -v pipx >/dev/null 2>&1; then
        pipx install "$PASSDOWN_SPEC" >&2
    elif command -v uv >/dev/null 2>&1; then
        uv tool install "$PASSDOWN_SPEC" >&2
    else
        python3 -m pip install --user "$PASSDOWN_SPEC" >&2
    fi
    command -v passdown >/dev/null 2>&1 && return 0
    say "could not install $PASSDOWN_SPEC (tried pipx, uv tool, pip --user)"
    return 1
}}

setup() {{
    ensure_passdown || return 1
    passdown pull --timeout "$PASSDOWN_TIMEOUT" >&2 && return 0
    say "passdown pull failed: no handoff from the remote"
    return 1
}}

end() {{
    ensure_passdown || return 1
    passdown export --from "${{1:-auto}}" >&2 || {{ say "passdown export failed"; return 1; }}
    passdown push --timeout "$PASSDOWN_TIMEOUT" >&2 && return 0
    say "passdown push failed: the handoff stays in this box only"
    return 1
}}

# passdown's own Claude Code hooks in the project (`passdown install claude --scope
# project`, or its plugin enabled there) also fire here: they do the pickup
claude_hooked() {{
    [ -f .claude/settings.json ] && grep -Eq ' hook claude|"passdown@' .claude/settings.json
}}

case "$1" in
setup) setup "$2" ;;
end) end "$2" ;;
claude-start | claude-stop)
    [ "$CLAUDE_CODE_REMOTE" = true ] || exit 0  # only on the web
    payload=$(cat)
    if [ "$1" = claude-start ]; then
        setup claude
        status=$?
        if ! claude_hooked && command -v passdown >/dev/null 2>&1; then
            printf '%s' "$payload" | passdown hook claude
        fi
        exit "$status"
    fi
    ensure_passdown || exit 1
    printf '%s' "$payload" | passdown hook claude >/dev/null
    passdown push --timeout "$PASSDOWN_TIMEOUT" >&2 && exit 0
    say "passdown push failed: the handoff stays in this box only"
    exit 1
    ;;
*)
    say "usage: sh .passdown/cloud.sh setup|end [AGENT] | claude-start | claude-stop"
    exit 2
    ;;
esac
"""

WORKFLOW_TEXT = """\
# {mark}: Copilot's coding agent runs the steps of the
# `copilot-setup-steps` job (the name must stay) before it starts. See docs/cloud-agents.md.
name: Copilot Setup Steps

on:
  workflow_dispatch:
  push:
    paths:
      - .github/workflows/copilot-setup-steps.yml
  pull_request:
    paths:
      - .github/workflows/copilot-setup-steps.yml

jobs:
  copilot-setup-steps:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - name: Check out the repository
        uses: actions/checkout@v5
{step}"""

WORKFLOW_STEP = """\
      - name: Pull the passdown handoff (.agent-handoff/HANDOFF.md)
        continue-on-error: true
        run: sh .passdown/cloud.sh setup copilot
"""

AGENTS_TEXT = """\
## The handoff of the previous session

When `.agent-handoff/HANDOFF.md` exists, the previous session on this branch (another
agent, machine or person) left it for you: read it first and continue from it. Run
`passdown pull` first to get the newest one (where passdown is not installed:
`sh .passdown/cloud.sh setup`). Before you finish, hand your work on with
`sh .passdown/cloud.sh end`, and say in your answer when it reports a failure.
"""


def script_text(spec: str) -> str:
    return SCRIPT_TEXT.format(mark=MARK, version=__version__, spec=shlex.quote(spec))


def workflow_text() -> str:
    return WORKFLOW_TEXT.format(mark=MARK, step=WORKFLOW_STEP)


def is_our_command(command: Any) -> bool:
    return isinstance(command, str) and ".passdown/cloud.sh" in command


def add_claude_hooks(data: dict[str, Any]) -> None:
    if not isinstance(data.get("hooks", {}), dict):
        raise UsageError("cannot add hooks: `hooks` in the settings is not an object")
    remove_claude_hooks(data)
    hooks = data.setdefault("hooks", {})
    for event, (mode, timeout) in CLAUDE_HOOKS.items():
        handler = {"type": "command", "command": f"{CLAUDE_GUARD} {mode}", "timeout": timeout}
        existing = hooks.get(event, [])
        if not isinstance(existing, list):
            raise UsageError(f"cannot add hooks: `hooks.{event}` in the settings is not a list")
        hooks[event] = [*existing, {"hooks": [handler]}]


def remove_claude_hooks(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = [group for group in groups if not _our_group(group)]
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event)
    if not hooks:
        data.pop("hooks")


def _our_group(group: Any) -> bool:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and any(
        isinstance(h, dict) and is_our_command(h.get("command")) for h in handlers
    )


def add_workflow(text: str | None) -> str | None:
    """The setup-steps workflow where there is none (or ours); another is the user's."""
    return workflow_text() if text is None or MARK in text else text


def remove_workflow(text: str | None) -> str | None:
    """Ours as written goes; ours with the user's additions keeps them, less our step."""
    if text is None or MARK not in text:
        return text
    return None if text == workflow_text() else text.replace(WORKFLOW_STEP, "")


def add_cursor_install(data: dict[str, Any]) -> None:
    current = data.get("install")
    if current is not None and not isinstance(current, str):
        raise UsageError("cannot add to `install`: it is not a string")
    rest = _without_ours(current or "")
    data["install"] = f"{CURSOR_LINE}; {rest}" if rest else CURSOR_LINE


def remove_cursor_install(data: dict[str, Any]) -> None:
    current = data.get("install")
    if not isinstance(current, str) or CURSOR_LINE not in current:
        return
    rest = _without_ours(current)
    if rest:
        data["install"] = rest
    else:
        data.pop("install")


def _without_ours(command: str) -> str:
    return command.replace(f"{CURSOR_LINE}; ", "").replace(CURSOR_LINE, "").strip()


def add_agents_block(text: str | None) -> str:
    return add_marked_block(text, MD_BEGIN, AGENTS_TEXT, MD_END)


def remove_agents_block(text: str | None) -> str | None:
    return remove_marked_block(text, MD_BEGIN, MD_END)


def _only_existing(edit: Transform) -> Transform:
    """`edit` on a file that exists; an absent one stays absent."""
    return lambda text: None if text is None else edit(text)


class CloudSetup(HookIntegration):
    """Not an agent: the files of every cloud agent, in the project only."""

    agent = TARGET
    scopes: ClassVar[tuple[str, ...]] = ("project",)

    def plan(self, target: InstallTarget) -> Plan:
        root = target.project_dir
        return [
            (root / SCRIPT, whole_file(script_text(install_spec())), drop_file),
            (
                root / CLAUDE_SETTINGS,
                json_edit(add_claude_hooks),
                json_edit(remove_claude_hooks),
            ),
            (root / WORKFLOW, add_workflow, remove_workflow),
            (
                root / CURSOR_ENV,
                _only_existing(json_edit(add_cursor_install)),
                json_edit(remove_cursor_install),
            ),
            (root / AGENTS_MD, add_agents_block, remove_agents_block),
        ]

    def registered_events(self, target: InstallTarget) -> list[str]:
        root = target.project_dir
        where = ["Claude Code web SessionStart, Stop", "AGENTS.md"]
        if MARK in (_read(root / WORKFLOW) or MARK):
            where.append("Copilot setup steps")
        if (root / CURSOR_ENV).exists():
            where.append("Cursor install")
        return where

    def notes(self, target: InstallTarget) -> list[str]:
        root = target.project_dir
        notes = [
            f"Codex cloud: set the environment's setup script to `{SETUP_LINE} codex` "
            "(chatgpt.com/codex, environment settings; not a repository file)",
            "commit these files: the cloud boxes clone the repository; they install "
            f"{install_spec()} (set {SPEC_ENV} before installing to pin another source)",
        ]
        workflow = _read(root / WORKFLOW)
        if workflow is not None and MARK not in workflow:
            notes.append(
                f"{WORKFLOW} exists: left as is; add this step to its copilot-setup-steps "
                f"job: `run: {SETUP_LINE} copilot` (with continue-on-error: true)"
            )
        if not (root / CURSOR_ENV).exists():
            notes.append(
                f"Cursor: no {CURSOR_ENV}, none created (it would replace your personal or "
                f"team environment); add `{CURSOR_LINE}` to that environment's install command"
            )
        return notes


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
