"""`passdown --help` tells the truth (issue 31): it names every agent `passdown agents`
lists, a plugin's too, counted from the entry points without importing an agent
module, and every exit code passdown itself returns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from passdown.errors import EXIT_CODES

PLUGIN_SRC = Path(__file__).parent / "plugins"
# what `passdown.cli.main` returns besides the error tree's codes: success, and an
# interrupt (Ctrl-C, click's Abort)
OWN_CODES = {0, 130} | set(EXIT_CODES.values())


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def paragraph(help_text: str, start: str) -> str:
    """The help's paragraph that begins with `start`, on one line."""
    flat = [" ".join(p.split()) for p in help_text.split("\n\n")]
    found = [p for p in flat if p.startswith(start)]
    assert len(found) == 1, help_text
    return found[0]


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PASSDOWN_AGENTS"}
    env["COLUMNS"] = "80"
    return env


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    """The example plugin (tests/plugins) installed the way pip would: its code on the
    path and a dist-info folder declaring its entry point."""
    dist = tmp_path / "site" / "passdown_example_agent-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: passdown-example-agent\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[passdown.agents]\nexample = passdown_example_agent:ExampleAgent\n"
    )
    env = base_env()
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path / "site"), str(PLUGIN_SRC), env.get("PYTHONPATH", "")]
    )
    env["EXAMPLE_AGENT_HOME"] = str(tmp_path / "example-home")
    return env


@pytest.mark.parametrize("with_plugin", [False, True], ids=["built-in", "with-a-plugin"])
def test_help_names_as_many_agents_as_passdown_agents_lists(
    with_plugin: bool, request: pytest.FixtureRequest
) -> None:
    env = request.getfixturevalue("plugin_env") if with_plugin else base_env()
    listed = run(["agents", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    names = sorted(row["name"] for row in json.loads(listed.stdout))
    assert ("example" in names) is with_plugin
    shown = run(["--help"], env)
    assert shown.returncode == 0, shown.stderr
    agents = paragraph(shown.stdout, "Agents:")
    match = re.match(r"Agents: (\d+) \(([^)]*)\)", agents)
    assert match, agents
    assert int(match.group(1)) == len(names)
    assert match.group(2).split(", ") == names
    assert "nine agents" not in shown.stdout


def _codes(text: str) -> set[int]:
    codes: set[int] = set()
    for low, high in re.findall(r"(?<![\w-])(\d+)(?:-(\d+))?(?![\w-])", text):
        codes.update(range(int(low), int(high or low) + 1))
    return codes


def test_help_names_every_exit_code_of_passdown_own() -> None:
    shown = run(["--help"], base_env())
    assert shown.returncode == 0, shown.stderr
    exits = paragraph(shown.stdout, "Exit codes:")
    assert _codes(exits) == OWN_CODES, exits
    for code in OWN_CODES:  # each with a meaning after it, not a bare list of numbers
        assert re.search(rf"(?<![\d-]){code} [a-z(]", exits), code


def test_codes_reads_ranges() -> None:
    assert _codes("0 ok, 9-12 store errors (10 not found), 130 interrupted") == {
        0,
        9,
        10,
        11,
        12,
        130,
    }


def test_help_imports_no_agent_module_rich_or_pydantic() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from passdown.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    main(['--help'])\n"
        "assert 'Agents: ' in out.getvalue()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic')"
        " or m.startswith('passdown.agents')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=base_env(),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
