"""`passdown doctor`: per agent, whether passdown's hooks would fire, and why not.

For each agent with a hook integration it reads the agent's config files as they stand
(not the install manifest: a file edited since, or an install from a virtual
environment that was deleted, is what the agent meets) and checks:

- is passdown installed into the agent (its hooks, MCP server, plugin, in this scope)?
- does every command those entries start exist, is it executable, and does it run
  (`COMMAND hook --check AGENT`, as install checks it)?
- is the agent itself on PATH?

It looks in both scopes, the user's config and the workspace's files (a project
install), unless told one, and says in which it found passdown; installed in both, an
agent that runs the hooks of both configs may run each of them twice, which it warns
about.

passdown installed through the agent's own plugin system (`_plugins`: Claude Code's
plugin, Gemini CLI's and Qwen Code's extensions) counts as an install in the plugin's
scope: doctor lists it, checks the passdown its launcher finds, and warns where
`passdown install`'s hooks fire beside it (each event would write twice).

An integration that is installed but cannot fire is `broken` (the command exits 1);
one whose agent is not on PATH here is `agent_missing` (its hooks are fine, nothing
here runs them).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passdown.errors import UsageError
from passdown.integrations import integrated_agents, integration_for
from passdown.integrations._base import InstallTarget, Registered
from passdown.integrations._command import CheckedCommand, check_command
from passdown.integrations._files import ManagedEdits
from passdown.integrations._plugins import (
    KINDS,
    LAUNCHER_PLACES,
    PluginInstall,
    launcher_program,
    plugin_installs,
)

OK, BROKEN, NOT_INSTALLED, AGENT_MISSING = "ok", "broken", "not_installed", "agent_missing"
BOTH = "both"  # the scope of a diagnosis that looked at the user's config and the project's


@dataclass(slots=True)
class ProgramCheck:
    program: str
    used_by: list[Registered]
    problem: str | None = None  # None: it runs
    version: str | None = None
    scope: str | None = None  # the scope whose config runs it

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "scope": self.scope,
            "runs": self.problem is None,
            "problem": self.problem,
            "passdown": self.version,
            "used_by": [{"file": str(r.file), "what": r.what} for r in self.used_by],
        }


@dataclass(slots=True)
class Diagnosis:
    agent: str
    scope: str  # the scope(s) looked at: user, project or both
    agent_installed: bool
    manifest: bool  # `passdown install` recorded an install in this scope
    programs: list[ProgramCheck] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it cannot fire
    notes: list[str] = field(default_factory=list)  # what may still stop it elsewhere
    warnings: list[str] = field(default_factory=list)  # fires, but not as it should
    installed_in: list[str] = field(default_factory=list)  # the scopes passdown is in
    plugins: list[PluginInstall] = field(default_factory=list)  # the agent's plugin installs

    @property
    def installed(self) -> bool:
        return self.manifest or bool(self.programs)

    @property
    def status(self) -> str:
        if not self.installed:
            return NOT_INSTALLED
        if self.reasons or any(p.problem for p in self.programs):
            return BROKEN
        return OK if self.agent_installed else AGENT_MISSING

    @property
    def would_fire(self) -> bool:
        return self.status == OK

    def why_not(self) -> list[str]:
        tagged = len(self.installed_in) > 1  # each problem names its scope
        problems = [
            f"{p.scope} scope: {p.program}: {p.problem}" if tagged else f"{p.program}: {p.problem}"
            for p in self.programs
            if p.problem
        ]
        missing = [] if self.agent_installed else [f"{self.agent} is not on PATH"]
        where = "user or project" if self.scope == BOTH else self.scope
        unset = [] if self.installed else [f"passdown is not installed into {self.agent}"]
        if unset and self.scope in (BOTH, "project"):
            unset = [f"{unset[0]} ({where} scope)"]
        return [*unset, *self.reasons, *problems, *missing]

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "status": self.status,
            "would_fire": self.would_fire,
            "installed": self.installed,
            "installed_in": list(self.installed_in),
            "agent_installed": self.agent_installed,
            "programs": [p.to_json() for p in self.programs],
            "why_not": self.why_not(),
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "plugins": [p.to_json() for p in self.plugins],
        }


def diagnose_all(names: Sequence[str], scope: str | None, project_dir: Path) -> list[Diagnosis]:
    """Each agent's diagnosis (`names`, else every agent with hooks) in `scope`, or with
    None in both scopes: the user's and the project's at `project_dir`."""
    from passdown.integrations._install import make_target

    agents = list(dict.fromkeys(names)) or integrated_agents()
    for agent in agents:  # every name checked first
        make_target(agent, scope or "user", project_dir)
    checked: dict[str, ProgramCheck] = {}
    return [
        with_plugins(diagnose_scopes(agent, scope, project_dir, checked), project_dir, checked)
        for agent in agents
    ]


def with_plugins(
    diagnosis: Diagnosis, project_dir: Path, checked: dict[str, ProgramCheck]
) -> Diagnosis:
    """`diagnosis` with passdown's plugin installs into the agent that concern
    `project_dir` in the scopes it looked at: each listed (a note), the passdown their
    launcher runs checked, and a warning where `install`'s hooks fire beside them."""
    scopes = {"user": {"user"}, "project": {"project", "local"}}.get(
        diagnosis.scope, {"user", "project", "local"}
    )
    plugins = [p for p in plugin_installs(diagnosis.agent, project_dir) if p.scope in scopes]
    if not plugins:
        return diagnosis
    diagnosis.plugins = plugins
    firing = [p for p in plugins if p.fires_in(project_dir)]
    hooks = [r for p in diagnosis.programs for r in p.used_by if r.what.startswith("hook")]
    for plugin in plugins:
        diagnosis.notes.append(f"installed as {plugin.describe()} from {plugin.path}")
    if firing and (hooks or diagnosis.manifest):
        names = ", ".join(p.name for p in firing)
        uninstall = " or ".join(
            f"`passdown uninstall {diagnosis.agent} --scope {scope}`"
            for scope in diagnosis.installed_in or ["user"]
        )
        diagnosis.warnings.insert(
            0,
            f"passdown's hooks fire twice: from the {KINDS[diagnosis.agent]} {names} and "
            f"from `passdown install`; keep one ({uninstall}, or remove the plugin)",
        )
    for plugin in firing:
        if plugin.scope not in diagnosis.installed_in:
            diagnosis.installed_in.append(plugin.scope)
    if not firing:
        return diagnosis
    used_by = [Registered(p.hooks_file, f"plugin {p.name}", "passdown") for p in firing]
    program = launcher_program()
    if program is None:
        places = ", ".join(f"~/{place}" for place in LAUNCHER_PLACES)
        diagnosis.programs.append(
            ProgramCheck(
                "passdown",
                used_by,
                f"the plugin's launcher finds no passdown (not on PATH, nor {places})",
                scope=firing[0].scope,
            )
        )
        return diagnosis
    result = checked.get(program) or _check_program(program, diagnosis.agent)
    checked[program] = result
    diagnosis.programs.append(
        ProgramCheck(program, used_by, result.problem, result.version, firing[0].scope)
    )
    return diagnosis


def diagnose_scopes(
    agent: str, scope: str | None, project_dir: Path, checked: dict[str, ProgramCheck]
) -> Diagnosis:
    """One agent's diagnosis over the scopes asked for (None: both) that it has."""
    from passdown.integrations._install import make_target

    integration = integration_for(agent)
    asked = [scope] if scope else ["user", "project"]
    scopes = [s for s in asked if s in integration.scopes]
    if not scopes:  # `--scope project` for an agent whose hooks live in the user's config
        from passdown.agents._registry import get_agent

        diagnosis = Diagnosis(agent, asked[0], get_agent(agent).is_installed(), False)
        diagnosis.notes.append(
            f"{agent} has no {asked[0]} scope: its hooks live in the user's config"
        )
        return diagnosis
    targets = [make_target(agent, s, project_dir) for s in scopes]
    found = {t.scope: integration.commands(t) for t in targets}
    if "user" in found and "project" in found:
        user_files = {_real(r.file) for r in found["user"]}
        if found["project"] and all(_real(r.file) in user_files for r in found["project"]):
            # the project is the folder holding the user's config (the home folder)
            targets = [t for t in targets if t.scope == "user"]
    parts = [diagnose(t, checked, found[t.scope]) for t in targets]
    if len(scopes) == 1:
        return parts[0]
    return _combined(agent, BOTH, parts, integration.merges_scopes)


def _combined(agent: str, scope: str, parts: list[Diagnosis], merges: bool) -> Diagnosis:
    """The scopes' diagnoses as one: those where passdown is installed (each reason
    naming its scope when there are two), and a warning where both are installed into
    an agent that runs the hooks of both. An agent that reads the project's config
    instead of the user's is judged by the project's install alone."""
    installed = [d for d in parts if d.installed]
    where = [d.scope for d in installed]
    notes: list[str] = []
    if len(installed) == 2 and not merges:
        installed = [d for d in installed if d.scope == "project"]
        notes.append(
            f"{agent} reads the project's config here, not the user's: passdown's install "
            "in the user's config fires in other projects"
        )
    combined = Diagnosis(
        agent, scope, parts[0].agent_installed, any(d.manifest for d in installed), notes=notes
    )
    combined.installed_in = where
    for d in installed or parts[:1]:
        tag = f"{d.scope} scope: " if len(where) > 1 else ""
        combined.reasons.extend(f"{tag}{r}" for r in d.reasons)
        combined.notes.extend(f"{tag}{n}" for n in d.notes)
        combined.warnings.extend(f"{tag}{w}" for w in d.warnings)
        combined.programs.extend(d.programs)
    if len(installed) > 1:
        combined.warnings.insert(
            0,
            f"installed in both the user and the project scope: {agent} runs the hooks of "
            "both configs, so each event may run passdown's hook twice; keep one "
            f"(`passdown uninstall {agent} --scope project` or `--scope user`)",
        )
    return combined


def _real(path: Path) -> str:
    return os.path.realpath(path)


def diagnose(
    target: InstallTarget,
    checked: dict[str, ProgramCheck] | None = None,
    found: list[Registered] | None = None,
) -> Diagnosis:
    """One agent's diagnosis in one scope; `checked` shares each program's check between
    agents; `found`: what `commands` of the integration returned, if asked already."""
    from passdown.agents._registry import get_agent

    integration = integration_for(target.agent)
    manifest = ManagedEdits(target.key).manifest_path.exists()
    found = integration.commands(target) if found is None else found
    diagnosis = Diagnosis(
        target.agent, target.scope, get_agent(target.agent).is_installed(), manifest
    )
    if manifest and not found:
        diagnosis.reasons.append(
            "installed, but passdown's entries are gone from the agent's config "
            f"(run `passdown install {target.agent}` again)"
        )
    if found and not any(r.what != "MCP server" for r in found):
        diagnosis.reasons.append(
            "no hook runs passdown (only its MCP server is configured): handoffs are "
            "not written when a session ends"
        )
    diagnosis.reasons.extend(integration.problems(target))
    diagnosis.warnings.extend(integration.warnings(target))
    by_program: dict[str, list[Registered]] = {}
    for registered in found:
        by_program.setdefault(registered.program, []).append(registered)
    shared = {} if checked is None else checked
    for program, used_by in by_program.items():
        refused = _not_to_run(program, target) if target.scope == "project" else None
        if refused is not None:
            diagnosis.programs.append(ProgramCheck(program, used_by, refused, scope=target.scope))
            continue
        result = shared.get(program) or _check_program(program, target.agent)
        shared[program] = result
        diagnosis.programs.append(
            ProgramCheck(program, used_by, result.problem, result.version, target.scope)
        )
        if result.problem is None and _bare(program):
            diagnosis.notes.append(
                f"runs `{program}` by name: the agent must find it on its own PATH (this one "
                f"does); `passdown install {target.agent}` again writes its absolute path"
            )
    diagnosis.installed_in = [target.scope] if diagnosis.installed else []
    return diagnosis


def _bare(program: str) -> bool:
    return os.sep not in program and not (os.altsep and os.altsep in program)


def _not_to_run(program: str, target: InstallTarget) -> str | None:
    """Why a program named by a project's files is not run to check it (None: it may
    be). A repository's config is not trusted: doctor runs only a `passdown` (or
    `agent-handoff`) that lives outside the project, never a file the repository brings
    (`/bin/sh` with a `hook` script in the repository would be one)."""
    from passdown.integrations._command import SCRIPT_NAMES

    found = shutil.which(program) if _bare(program) else program
    if found is None or not os.path.isabs(found):
        return "not an absolute path or a name on PATH (not run: a project's config)"
    real = Path(os.path.realpath(found))
    if real.is_relative_to(Path(os.path.realpath(target.project_dir))):
        return "lies inside the project (not run: a project's config)"
    if Path(found).stem.lower() not in SCRIPT_NAMES:
        return "is not a passdown command (not run: a project's config)"
    return None


def _check_program(program: str, agent: str) -> ProgramCheck:
    check = ProgramCheck(program, [])
    bare = _bare(program)
    if not program:
        check.problem = "no command"
    elif bare and shutil.which(program) is None:
        check.problem = "not found on PATH (the agent looks it up by name)"
    elif not bare and not os.path.exists(program):
        check.problem = "does not exist (a removed virtual environment?)"
    elif not bare and not (os.path.isfile(program) and os.access(program, os.X_OK)):
        check.problem = "is not an executable file"
    else:
        try:
            ran: CheckedCommand = check_command(program, agent)
            check.version = ran.version
        except UsageError as exc:
            check.problem = exc.message
    return check


# -- automatic sharing through git (`passdown install git`) -----------------------------------


def shared_repositories(project_dir: Path) -> list[Any]:
    """One `_git_share_run.ShareStatus` per repository that opted in to sharing (those
    installed into from this data folder, and the current one): its hook in place?, its
    queue (pending since, the last error), its last push and failed pull."""
    from passdown.integrations._git_share import share_statuses

    return list(share_statuses(project_dir))
