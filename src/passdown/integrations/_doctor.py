"""`passdown doctor`: per agent, whether passdown's hooks would fire, and why not.

For each agent with a hook integration it reads the agent's config files as they stand
(not the install manifest: a file edited since, or an install from a virtual
environment that was deleted, is what the agent meets) and checks:

- is passdown installed into the agent (its hooks, MCP server, plugin, in this scope)?
- does every command those entries start exist, is it executable, and does it run
  (`COMMAND hook --check AGENT`, as install checks it)?
- is the agent itself on PATH?

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

OK, BROKEN, NOT_INSTALLED, AGENT_MISSING = "ok", "broken", "not_installed", "agent_missing"


@dataclass(slots=True)
class ProgramCheck:
    program: str
    used_by: list[Registered]
    problem: str | None = None  # None: it runs
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "runs": self.problem is None,
            "problem": self.problem,
            "passdown": self.version,
            "used_by": [{"file": str(r.file), "what": r.what} for r in self.used_by],
        }


@dataclass(slots=True)
class Diagnosis:
    agent: str
    scope: str
    agent_installed: bool
    manifest: bool  # `passdown install` recorded an install in this scope
    programs: list[ProgramCheck] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it cannot fire
    notes: list[str] = field(default_factory=list)  # what may still stop it elsewhere

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
        problems = [f"{p.program}: {p.problem}" for p in self.programs if p.problem]
        missing = [] if self.agent_installed else [f"{self.agent} is not on PATH"]
        unset = [] if self.installed else [f"passdown is not installed into {self.agent}"]
        return [*unset, *self.reasons, *problems, *missing]

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "status": self.status,
            "would_fire": self.would_fire,
            "installed": self.installed,
            "agent_installed": self.agent_installed,
            "programs": [p.to_json() for p in self.programs],
            "why_not": self.why_not(),
            "notes": list(self.notes),
        }


def diagnose_all(names: Sequence[str], scope: str, project_dir: Path) -> list[Diagnosis]:
    from passdown.integrations._install import make_target

    agents = list(dict.fromkeys(names)) or integrated_agents()
    targets = [make_target(a, scope, project_dir) for a in agents]  # every name checked first
    checked: dict[str, ProgramCheck] = {}
    return [diagnose(target, checked) for target in targets]


def diagnose(target: InstallTarget, checked: dict[str, ProgramCheck] | None = None) -> Diagnosis:
    """One agent's diagnosis; `checked` shares each program's check between agents."""
    from passdown.agents._registry import get_agent

    integration = integration_for(target.agent)
    manifest = ManagedEdits(target.key).manifest_path.exists()
    found = integration.commands(target)
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
    by_program: dict[str, list[Registered]] = {}
    for registered in found:
        by_program.setdefault(registered.program, []).append(registered)
    shared = {} if checked is None else checked
    for program, used_by in by_program.items():
        refused = _not_to_run(program, target) if target.scope == "project" else None
        if refused is not None:
            diagnosis.programs.append(ProgramCheck(program, used_by, refused))
            continue
        result = shared.get(program) or _check_program(program, target.agent)
        shared[program] = result
        diagnosis.programs.append(ProgramCheck(program, used_by, result.problem, result.version))
        if result.problem is None and _bare(program):
            diagnosis.notes.append(
                f"runs `{program}` by name: the agent must find it on its own PATH (this one "
                f"does); `passdown install {target.agent}` again writes its absolute path"
            )
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
