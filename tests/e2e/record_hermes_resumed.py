"""Record the Hermes Agent session that is too slow for an e2e test (each Hermes start
costs about 20 s, a request it gives up on three 429s more): a first turn, a second turn
resuming it (`--continue`), and a third whose every model request gets a 429, so Hermes
gives up and leaves its request dump. Written to tests/fixtures/sessions/hermes/resumed
(read by tests/test_agent_hermes.py; `facts.json`, not `expected.json`:
not one of the scenarios every recorded-session test runs):

    PYTHONPATH=src:tests python tests/e2e/record_hermes_resumed.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from e2e.agents import REPO_ROOT, AgentEnv, hermes_environ, run_hermes
from e2e.fixture_recording import copy_db
from e2e.pyagents import PYAGENT_VERSIONS
from e2e.record import seed_workspace
from e2e.servers import ChatCompletionsServer, Step

TARGET = REPO_ROOT / "tests" / "fixtures" / "sessions" / "hermes" / "resumed"
FIRST = "Write notes.txt with one line."
SECOND = "Now add a second line."
THIRD = "And a third line, please."
RATE_LIMIT = {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="passdown-rec-hermes-"))
    agent_env = AgentEnv.create(root / "agents")
    workspace = seed_workspace(Path("/tmp/passdown-rec/hermes-resumed"))
    with ChatCompletionsServer() as server:
        env = hermes_environ(agent_env, server.url)
        server.set_script(
            [
                Step(
                    text="Writing.",
                    tool="write_file",
                    input={"path": "notes.txt", "content": "one\n"},
                ),
                Step(text="notes.txt has one line."),
            ]
        )
        for prompt, extra in ((FIRST, ()), (SECOND, ("--continue",))):
            proc = run_hermes(env, workspace, prompt, *extra)
            if proc.returncode != 0:
                print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
                return 1
            server.set_script(
                [
                    Step(
                        text="Adding.",
                        tool="patch",
                        input={
                            "path": "notes.txt",
                            "old_string": "one\n",
                            "new_string": "one\ntwo\n",
                        },
                    ),
                    Step(text="notes.txt has two lines."),
                ]
            )
        server.fail(429, RATE_LIMIT, headers={"retry-after": "0"})
        run_hermes(env, workspace, THIRD, "--continue", timeout=150)
    home = agent_env.home / ".hermes"
    shutil.rmtree(TARGET, ignore_errors=True)
    (TARGET / ".hermes" / "sessions").mkdir(parents=True)
    copy_db(home / "state.db", TARGET / ".hermes" / "state.db")
    for dump in (home / "sessions").glob("request_dump_*.json"):
        data = json.loads(dump.read_text())
        data["request"] = {"body": "(left out of the fixture: the whole model request)"}
        (TARGET / ".hermes" / "sessions" / dump.name).write_text(json.dumps(data, indent=2))
    facts = {
        "agent": "hermes",
        "scenario": "resumed",
        "description": "three turns of one session (--continue twice); the third ends on "
        "a 429 Hermes gave up on (its request dump, the request body left out)",
        "cli_version": PYAGENT_VERSIONS["hermes"],
        "workspace": str(workspace),
        "turns": [FIRST, SECOND, THIRD],
        "ended": "rate_limit",
    }
    (TARGET / "facts.json").write_text(json.dumps(facts, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
