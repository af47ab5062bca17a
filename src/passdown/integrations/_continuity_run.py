"""`passdown run AGENT [--fallback AGENT2 ...]`: run the agent; when its session ended on
a rate or usage limit (the handoff's `ended`, never the terminal's text), hand off to the
next agent of the chain with the takeover prompt `switch` uses. The handoff is claimed
for the agent that takes over, and given back when it cannot start. The settings and
the session-start pickup are in `passdown.integrations._continuity`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from passdown.errors import UsageError
from passdown.integrations._continuity import HANDOFF_DIR, READABLE_ENDINGS

if TYPE_CHECKING:
    from passdown.coordinator import HandoffCoordinator, HandoffPackage

# whom `passdown switch` is suggested to when no fallback was given: the first installed
CONTINUE_ORDER = (
    "codex",
    "claude",
    "gemini",
    "qwen",
    "copilot",
    "opencode",
    "pi",
    "cursor",
    "aider",
)
LIMIT_REASONS = frozenset({"rate_limit", "usage_limit"})


def run(agent_name: str, fallbacks: list[str], agent_args: list[str], *, interactive: bool) -> int:
    """Run the chain; the exit code is the last launched agent's."""
    from passdown import _pipeline as pipeline
    from passdown.agents._registry import get_agent
    from passdown.errors import AgentNotInstalled, LaunchError

    chain = [get_agent(name) for name in [agent_name, *fallbacks]]
    workspace = pipeline.workspace_for()
    current, remaining = chain[0], chain[1:]
    if not current.is_installed():
        raise AgentNotInstalled(f"{current.display_name} ({current.program}) is not installed")
    started, code = _launch(_first_spec(current, agent_args, workspace, interactive), interactive)
    while True:
        package = _limit_handoff(current.name, workspace, started)
        if package is None:
            return code  # it ended for another reason: nothing to fall over from
        remaining = _installed(remaining)
        if not remaining:
            _print_continue(current.name, package, fallbacks_given=bool(fallbacks))
            return code
        while True:  # the next agent of the chain that starts takes over
            nxt, remaining = remaining[0], remaining[1:]
            print(
                f"passdown: {current.display_name} stopped {_how(package)}; "
                f"continuing in {nxt.display_name}",
                file=sys.stderr,
            )
            try:
                started, code = _take_over(current.name, nxt, package, workspace, interactive)
                break
            except (AgentNotInstalled, LaunchError) as exc:
                remaining = _installed(remaining)
                if not remaining:
                    raise
                print(f"passdown: {exc.message}", file=sys.stderr)
        current = nxt


def _installed(agents: list[Any]) -> list[Any]:
    """`agents` from the first one installed, each skipped one said on stderr."""
    while agents and not agents[0].is_installed():
        print(f"passdown: {agents[0].display_name} is not installed; skipping it", file=sys.stderr)
        agents = agents[1:]
    return agents


def _run_identity(agent: str) -> str:
    return f"passdown run ({agent})"


def _take_over(
    source: str, agent: Any, package: HandoffPackage, workspace: Path, interactive: bool
) -> tuple[float, int]:
    """Launch `agent` on the handoff, claimed for it first (so its own session-start
    hook injects no second pointer). When it cannot be started (its program gone, an
    exec error), the claim is given back: the handoff is published again for the next
    session, and the error (exit 6 or 7) says so."""
    from passdown.errors import AgentNotInstalled, LaunchError

    spec = _takeover_spec(agent, package, workspace, interactive)
    claimed = _claim_for_launch(workspace, source, package)
    try:
        return _launch(spec, interactive)
    except (AgentNotInstalled, LaunchError) as exc:
        released = claimed and _release_claim(workspace, source, package, exc.message)
        md = workspace / HANDOFF_DIR / "HANDOFF.md"
        if released:
            where = f"handoff {package.id} is published again for the next session"
        elif claimed:
            where = f"handoff {package.id} stays claimed (its status changed meanwhile)"
        else:
            where = f"handoff {package.id} was left as it was (not claimed for it)"
        raise type(exc)(
            f"{exc.message}; {agent.display_name} did not take over: the {where} ({md})",
            hint=exc.hint or f"fix {agent.program}, or continue with `passdown switch`",
        ) from None


def _claim_for_launch(workspace: Path, source: str, package: HandoffPackage) -> bool:
    from passdown.coordinator import HandoffCoordinator
    from passdown.errors import PassdownError

    with (
        contextlib.suppress(PassdownError),
        HandoffCoordinator(workspace, identity=_run_identity(source)) as coordinator,
    ):
        return coordinator.lifecycle().transition(
            package.id, "claimed", by=coordinator.identity, only_from=frozenset({"published"})
        )
    return False


def _release_claim(workspace: Path, source: str, package: HandoffPackage, why: str) -> bool:
    from passdown.coordinator import HandoffCoordinator
    from passdown.errors import PassdownError

    note = f"claim released: the fallback agent did not start ({why})"
    with (
        contextlib.suppress(PassdownError),
        HandoffCoordinator(workspace, identity=_run_identity(source)) as coordinator,
    ):
        return coordinator.lifecycle().release_claim(package.id, by=coordinator.identity, note=note)
    return False


def _first_spec(agent: Any, agent_args: list[str], workspace: Path, interactive: bool) -> Any:
    from passdown.agents.base import LaunchSpec

    if interactive or not agent_args:
        exe = agent.executable() or agent.program
        return LaunchSpec([exe, *agent_args], workspace)
    # non-interactive: the last argument is the task; the others are the agent's own flags
    spec = agent.launch_spec(agent_args[-1], workspace=workspace, interactive=False)
    spec.argv[1:1] = agent_args[:-1]
    return spec


def _launch(spec: Any, interactive: bool) -> tuple[float, int]:
    """(when it started, its exit code)."""
    from passdown._launch import run as run_agent

    started = time.time()
    return started, run_agent(spec, interactive=interactive)


def _limit_handoff(agent: str, workspace: Path, started: float) -> HandoffPackage | None:
    """The handoff of the session that just ended, when it ended on a limit. The
    agent's hook may have published it already (Claude Code's StopFailure); otherwise
    it is exported now from the session file."""
    from passdown.coordinator import HandoffCoordinator
    from passdown.errors import SessionNotFound

    with HandoffCoordinator(workspace, identity=_run_identity(agent)) as coordinator:
        package = _published_by_hook(coordinator, agent, started)
        if package is None:
            try:
                package = coordinator.prepare_handoff_sync(
                    agent, None, "agent", None, None, require_session=True
                )
            except SessionNotFound:
                return None
            if not _session_since(package, started):
                return None
            if package.handoff is None or package.handoff.ended.reason not in LIMIT_REASONS:
                return None
            coordinator.export_sync(package)
        if package.handoff is None or package.handoff.ended.reason not in LIMIT_REASONS:
            return None
        # claimed only when a fallback is launched on it (`_take_over`): without one, or
        # when it cannot start, the next session must still be able to pick it up
        return package


def _published_by_hook(
    coordinator: HandoffCoordinator, agent: str, started: float
) -> HandoffPackage | None:
    from passdown.errors import PassdownError

    try:
        active = coordinator.lifecycle().active()
        package = coordinator.load_handoff(active) if active else None
    except PassdownError:
        return None
    if package is None or package.source_agent != agent or package.status != "published":
        return None
    return package if _session_since(package, started) else None


def _session_since(package: HandoffPackage, started: float) -> bool:
    from passdown.records import parse_timestamp

    handoff = package.handoff
    last = handoff.source.updated_at if handoff else None
    stamp = last or package.timestamp
    try:
        return parse_timestamp(stamp).timestamp() >= started - 2  # clock granularity
    except ValueError:
        return False


def _takeover_spec(agent: Any, package: HandoffPackage, workspace: Path, interactive: bool) -> Any:
    from passdown import _pipeline as pipeline

    if package.handoff is None:  # _limit_handoff only returns packages with a handoff
        raise UsageError(f"handoff {package.id} carries no session to hand over")
    md = workspace / pipeline.HANDOFF_DIR / "HANDOFF.md"
    written = pipeline.WrittenHandoff(
        handoff=package.handoff,
        folder=md.parent,
        markdown_path=md,
        json_path=md.parent / "handoff.json",
    )
    return pipeline.launch_spec_for(agent, written, interactive=interactive)


def _how(package: HandoffPackage) -> str:
    reason = package.handoff.ended.reason if package.handoff else "normal"
    return READABLE_ENDINGS.get(reason, reason)


def _print_continue(agent: str, package: HandoffPackage, *, fallbacks_given: bool) -> None:
    from passdown._pipeline import HANDOFF_DIR
    from passdown.agents._registry import load_agents

    agents = load_agents()
    others = [
        name
        for name in CONTINUE_ORDER
        if name != agent and name in agents and agents[name].is_installed()
    ]
    target = others[0] if others else "AGENT"
    session = package.handoff.source.session_id if package.handoff else ""
    md = Path(package.workspace or ".") / HANDOFF_DIR / "HANDOFF.md"
    print(f"passdown: {agent} stopped {_how(package)}; the handoff is in {md}", file=sys.stderr)
    if not fallbacks_given:
        print(f"passdown switch --from {agent} --session {session} --to {target}")
