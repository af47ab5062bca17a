"""A two-session agent harness built on passdown's HandoffCoordinator.

Session 1 works on the task until it stops (in a real harness: its context is full).
The harness then hands the work to a fresh session of the same agent:

    source side:  prepare_handoff(handoff_type="session") -> execute_handoff(launch=False)
    target side:  load_handoff() -> verify() -> claim() -> launch_handoff() -> complete()

The harness starts every session itself (`launch=False` on execute: it only stores,
publishes and writes .agent-handoff/), so the target side can verify and claim the
handoff before the new session begins.

    python examples/harness_loop.py --workspace DIR --agent claude --task "Add a Usage section"

The agents run with this process's environment plus any `--env KEY=VALUE`: point
them at your model (or, in passdown's end-to-end tests, at a scripted model server via
ANTHROPIC_BASE_URL / CODEX_HOME). The last line printed is a JSON report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from passdown import HandoffCoordinator
from passdown.agents import get_agent
from passdown._launch import run


def run_first_session(agent_name: str, task: str, workspace: Path, env: dict[str, str]) -> int:
    """Session 1: the harness starts the agent on the task, non-interactively."""
    spec = get_agent(agent_name).launch_spec(task, workspace=workspace, interactive=False)
    spec.env.update(env)
    return run(spec, interactive=False)


async def hand_over(workspace: Path, agent: str, session: int, env: dict[str, str]) -> dict[str, Any]:
    """One handoff, both sides: publish session N's state, then session N+1 takes it."""
    source = HandoffCoordinator(workspace, identity=f"harness:{agent}#{session}")
    package = await source.prepare_handoff(
        source_agent=agent, summary=f"Session {session} stopped; continue from its next steps",
        handoff_type="session",
    )
    published = await source.execute_handoff(package=package, target_agent=agent, launch=False)

    target = HandoffCoordinator(workspace, identity=f"harness:{agent}#{session + 1}")
    loaded = target.load_handoff()  # the project's active handoff
    report = await target.verify(loaded)
    if not report.ok:
        target.reject(loaded, reason="; ".join(c.message for c in report.checks if c.blocking))
        return {"id": loaded.id, "status": "rejected", "checks": [c.model_dump() for c in report.checks]}
    target.claim(loaded, by=f"{agent}#{session + 1}")
    launched = await target.launch_handoff(loaded, env=env)
    if launched.exit_code == 0:
        final = target.complete(loaded, note=f"session {session + 1} finished")
    else:
        final = target.reject(loaded, reason=f"session {session + 1} exited with {launched.exit_code}")
    return {
        "id": loaded.id,
        "session_number": loaded.context.session_number,
        "published_status": published.status,
        "status": final.status,
        "events": [e.model_dump() for e in target.events(loaded.id)],
        "differences": report.differences,
        "argv": launched.argv,
        "exit_code": launched.exit_code,
        "next_steps": loaded.state.next_steps,
    }


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, default=Path.cwd())
    parser.add_argument("--agent", default="claude", help="claude or codex")
    parser.add_argument("--task", required=True, help="what session 1 is asked to do")
    parser.add_argument("--sessions", type=int, default=2, help="sessions to run (>= 2)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for the agents (repeatable)")
    args = parser.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    workspace = args.workspace.resolve()

    first = await asyncio.to_thread(run_first_session, args.agent, args.task, workspace, env)
    handoffs = []
    if first == 0:
        for session in range(1, args.sessions):
            result = await hand_over(workspace, args.agent, session, env)
            handoffs.append(result)
            if result["status"] != "completed":
                break
    with HandoffCoordinator(workspace) as coordinator:
        history = [{"id": p.id, "status": p.status} for p in coordinator.history()]
    print(json.dumps({"first_session_exit": first, "handoffs": handoffs, "history": history}))
    ok = first == 0 and len(handoffs) == args.sessions - 1 and all(h["status"] == "completed" for h in handoffs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
