"""The interface of a per-agent hook integration, and the config edits they share."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations._command import hook_line, shell_line, tool_shell
from passdown.integrations._command import program_of as program_of  # re-exported
from passdown.integrations._files import Transform

SERVER_NAME = "passdown"
SKILL_NAME = "passdown-takeover"
SKILLS_DIR = Path(__file__).resolve().parent / "skills"
HOOK_TIMEOUT_S = 30
MD_BEGIN = "<!-- >>> passdown takeover (managed by `passdown install`) -->"
MD_END = "<!-- <<< passdown takeover -->"

# What a hook run means to passdown, whatever the agent calls it.
SESSION_START = "session_start"
SESSION_END = "session_end"
PRE_COMPACT = "pre_compact"
STOP_FAILURE = "stop_failure"
TURN_COMPLETE = "turn_complete"

Plan = list[tuple[Path, Transform, Transform]]  # (file, install edit, uninstall edit)


@dataclass(frozen=True, slots=True)
class Registered:
    """One place a config file makes the agent run passdown."""

    file: Path
    what: str  # "hook SessionEnd", "MCP server", "notify", "plugin"
    program: str  # the executable it starts (a path, or a name looked up on PATH)


@dataclass(frozen=True, slots=True)
class InstallTarget:
    agent: str
    scope: str  # user | project
    project_dir: Path
    command: str  # the passdown executable the agent runs
    pickup: bool = True  # register the session-start hook that injects the pointer

    @property
    def key(self) -> str:
        if self.scope == "user":
            return f"{self.agent}-user"
        digest = hashlib.sha256(str(self.project_dir.resolve()).encode()).hexdigest()[:12]
        return f"{self.agent}-project-{digest}"

    @property
    def hook_command(self) -> str:
        """The command line the agent runs, quoted for the shell it runs hooks with
        here (`_command.hook_shell`)."""
        return hook_line(self.command, self.agent)


def read_config(path: Path) -> str | None:
    """A config file's text for `passdown doctor`; None when absent or unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def settings_hook_commands(path: Path, agent: str, key: str = "command") -> list[Registered]:
    """passdown's hooks in a settings.json (`hooks.<Event>: [{hooks: [{command}]}]`,
    or Copilot's `hooks.<event>: [{bash}]`)."""
    try:
        data = json.loads(read_config(path) or "{}")
    except ValueError:
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: list[Registered] = []
    for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks", [group]) if isinstance(group, dict) else []
            for handler in handlers if isinstance(handlers, list) else []:
                line = str(handler.get(key, "")) if isinstance(handler, dict) else ""
                if f" hook {agent}" in f"{line} ":
                    found.append(Registered(path, f"hook {event}", program_of(line)))
    return found


class HookIntegration:
    """One agent's hooks. Subclasses set `agent` and implement `plan`; the payload
    defaults fit the Claude-style protocol (JSON on stdin naming `session_id`,
    `transcript_path`, `cwd`, `hook_event_name`) that several agents share."""

    agent: str = ""
    reads_stdin = True
    # the pointer is injected with a prompt, not at session start: only the first time
    pickup_once_per_session = False
    # the agent's event name -> passdown's meaning (SESSION_START, SESSION_END, ...)
    events: ClassVar[dict[str, str]] = {}
    # where passdown can install into the agent: the user's config, a project's files
    scopes: ClassVar[tuple[str, ...]] = ("user", "project")
    # the agent runs the hooks of the user's config and of a project's together (False:
    # a project's config replaces the user's)
    merges_scopes: ClassVar[bool] = True

    def plan(self, target: InstallTarget) -> Plan:
        raise NotImplementedError

    def notes(self, target: InstallTarget) -> list[str]:
        """Lines `passdown install` prints after editing (what is automatic, what not)."""
        return []

    def registered_events(self, target: InstallTarget) -> list[str]:
        """The agent's events an install registers `passdown hook` on, in the agent's
        own names: all of `events`, less the session-start one without pickup."""
        return [
            name
            for name, meaning in self.events.items()
            if target.pickup or meaning != SESSION_START
        ]

    def commands(self, target: InstallTarget) -> list[Registered]:
        """What passdown registered in the agent's files for `target`, as they stand:
        each command the agent will run (`passdown doctor` checks that each runs)."""
        return []

    def problems(self, target: InstallTarget) -> list[str]:
        """Why hooks that are in the config would still not run (`passdown doctor`)."""
        return []

    def warnings(self, target: InstallTarget) -> list[str]:
        """What keeps hooks that run from doing all they could (`passdown doctor`)."""
        return []

    def user_files(self, target: InstallTarget) -> list[Path]:
        """Files outside the project that a project install also edits (the agent's own
        user config, e.g. where Codex keeps hook trust)."""
        return []

    # -- the hook's payload --------------------------------------------------------------
    def wants_stdin(self, args: list[str]) -> bool:
        """Whether the payload comes on stdin (never read when it does not: an inherited
        stdin that stays open would block the hook forever)."""
        return self.reads_stdin and not args

    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        raw = (stdin_text or "{}") if self.reads_stdin else (args[-1] if args else "{}")
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("hook payload is not a JSON object")
        return data

    def event(self, payload: dict[str, Any]) -> str:
        name = str(payload.get("hook_event_name") or "")
        return self.events.get(name, name or "?")

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        """What `pipeline.select_session` takes: a transcript path or a session id."""
        spec = payload.get("transcript_path") or payload.get("session_id")
        return str(spec) if spec else None

    def session_id(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("session_id")
        return str(value) if value else None

    def cwd(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("cwd")
        return str(value) if value else None

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        """(reason, message) when the hook reports a turn that ended on an API error."""
        return None

    # -- a failure hook that fires on every retry ----------------------------------------
    def retry_log(self, payload: dict[str, Any]) -> Path | None:
        """For an agent whose failure hook fires on each retry of one failing request
        (Copilot's `errorOccurred`): the session file whose growth tells a new turn from
        another retry. None (the default): every failure hook exports."""
        return None

    def only_retry_noise(self, appended: bytes) -> bool:
        """Whether the bytes the session file grew by since the last failure's handoff
        are only what the agent writes between two retries (its hook records)."""
        return False

    def context_output(self, text: str) -> str:
        """What the session-start hook prints so the agent adds `text` to its context."""
        return json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": text,
                }
            },
            ensure_ascii=False,
        )


# -- shared edits ------------------------------------------------------------------------


def skill_text(command: str = "passdown", agent: str = "claude") -> str:
    skill = (SKILLS_DIR / SKILL_NAME / "SKILL.md").read_text(encoding="utf-8")
    return with_command(skill, command, agent)


def agents_snippet(command: str = "passdown", agent: str = "codex") -> str:
    return with_command((SKILLS_DIR / "AGENTS.md").read_text(encoding="utf-8"), command, agent)


def with_command(text: str, command: str, agent: str = "claude") -> str:
    """The skill's command lines (`passdown find ...`, `passdown export ...`) running
    `command`, the one the hooks run: the agent's shell need not find `passdown` either.
    The model runs those lines in its own shell tool (`_command.tool_shell`: on Windows
    Git Bash for Claude Code, PowerShell for Codex), so `command` is quoted for that one;
    the rest of each line is plain words, the same in every shell."""
    if command == "passdown":
        return text
    program = shell_line(tool_shell(agent), command, [])
    return re.sub(r"(?<![\w/.-])passdown (?=find |export )", lambda _m: f"{program} ", text)


def json_edit(change: Callable[[dict[str, Any]], None]) -> Transform:
    def transform(text: str | None) -> str | None:
        data = load_json(text)
        before = json.dumps(data, sort_keys=True)
        change(data)
        if json.dumps(data, sort_keys=True) == before:
            return text  # nothing to do: leave the bytes alone
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    return transform


def load_json(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"cannot change a config file that is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("cannot change a config file whose JSON is not an object")
    return data


def whole_file(content: str) -> Transform:
    return lambda _text: content


def drop_file(text: str | None) -> str | None:
    return None  # a file passdown created (the skill): on uninstall it goes


def add_marked_block(text: str | None, begin: str, inside: str, end: str) -> str:
    """`text` with the block between the lines `begin` and `end` (replaced where it was,
    else appended after a blank line) holding `inside`."""
    body = remove_marked_block(text, begin, end) or ""
    sep = "\n" if body and not body.endswith("\n") else ""
    gap = "\n" if body.strip() else ""
    return f"{body}{sep}{gap}{begin}\n{inside}{end}\n"


def remove_marked_block(text: str | None, begin: str, end: str) -> str | None:
    if text is None:
        return None
    return re.sub(rf"(?ms)\n?^{re.escape(begin)}\n.*?^{re.escape(end)}\n?", "", text)


def add_md_block(text: str | None, command: str = "passdown", agent: str = "codex") -> str:
    return add_marked_block(text, MD_BEGIN, agents_snippet(command, agent), MD_END)


def remove_md_block(text: str | None) -> str | None:
    return remove_marked_block(text, MD_BEGIN, MD_END)


# -- Claude-style `hooks` in a settings.json (Claude Code, Gemini CLI, Qwen Code) -----------


def is_our_hook_group(group: Any, agent: str) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and f" hook {agent}" in str(h.get("command", "")) for h in hooks
    )


def add_settings_hooks(
    data: dict[str, Any],
    agent: str,
    command: str,
    events: list[str],
    timeout: int | None = HOOK_TIMEOUT_S,
) -> None:
    if not isinstance(data.get("hooks", {}), dict):
        raise UsageError("cannot add hooks: `hooks` in the settings is not an object")
    remove_settings_hooks(
        data, agent
    )  # an install with other options drops what it no longer wants
    hooks = data.setdefault("hooks", {})
    handler: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        handler["timeout"] = timeout
    for event in events:
        hooks[event] = [*hooks.get(event, []), {"hooks": [dict(handler)]}]


def remove_settings_hooks(data: dict[str, Any], agent: str) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = [g for g in groups if not is_our_hook_group(g, agent)]
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event)
    if not hooks:
        data.pop("hooks")


class GeneratedPlugin(HookIntegration):
    """An agent whose hooks are a plugin file passdown generates (opencode, pi): the file
    runs `passdown hook AGENT EVENT` with the payload as its last argument (or on stdin)
    and hands what the hook prints to the agent as it is."""

    template: ClassVar[str]  # the plugin's source, with {command_json} and {pickup}
    plugin_file: ClassVar[str]  # where it goes, relative to the folder `folder` names

    def folder(self, target: InstallTarget) -> Path:
        raise NotImplementedError

    def commands(self, target: InstallTarget) -> list[Registered]:
        path = self.folder(target) / self.plugin_file
        text = read_config(path) or ""
        match = re.search(r"^\s*const (?:COMMAND|command) = (\".*\");$", text, re.MULTILINE)
        if match is None:
            return []
        try:
            program = str(json.loads(match.group(1)))
        except ValueError:
            return []
        return [Registered(path, "plugin", program)]

    def plan(self, target: InstallTarget) -> Plan:
        text = self.template.replace("{command_json}", json.dumps(target.command)).replace(
            "{pickup}", "true" if target.pickup else "false"
        )
        return [(self.folder(target) / self.plugin_file, whole_file(text), drop_file)]

    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        data = json.loads(args[-1] if args else (stdin_text or "{}"))
        if not isinstance(data, dict):
            raise ValueError("hook payload is not a JSON object")
        return data

    def context_output(self, text: str) -> str:
        return text  # the plugin itself puts it in front of the model
