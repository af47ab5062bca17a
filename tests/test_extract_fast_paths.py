"""The extractor's shortcuts (no shlex for commands that name no test runner, a cache of
parsed commands, slots records during the pass) give the same answers as the full path."""

from __future__ import annotations

import pytest

from passdown._extract import extract
from passdown._test_runs import covers, parse_test_run
from passdown.handoff import CommandRun, Failure
from passdown.transcript import Event, Message, ToolCall, ToolResult


@pytest.mark.parametrize(
    ("command", "runner", "selectors"),
    [
        ('"pytest" tests/test_a.py', "pytest", ("tests/test_a.py",)),  # quoted runner name
        ('j"es"t src', "jest", ("src",)),  # quotes split the name: only shlex joins it
        ("moc\\ha spec", "mocha", ("spec",)),  # a backslash shlex drops
        ("bash -lc 'python -m unittest test_calc'", None, None),  # the runner is bash
        ("cd /ws && 'jest' src/a.test.ts", "jest", ("src/a.test.ts",)),
        ('git commit -m "fix: the parser"', None, None),  # quoted, no runner: no shlex
    ],
)
def test_runner_detection_survives_the_prefilter(
    command: str, runner: str | None, selectors: tuple[str, ...] | None
) -> None:
    run = parse_test_run(command)
    assert (run.runner if run else None) == runner
    assert (run.selectors if run else None) == selectors


def test_cached_and_uncached_commands_agree() -> None:
    long_tail = " " + "x" * 5000  # longer than the cached commands
    for _ in range(2):  # second round: answers from the cache
        assert covers("pytest tests/test_a.py", "pytest tests/test_a.py::test_x")
        assert covers("pytest tests" + long_tail, "pytest tests/test_a.py::test_x" + long_tail)
        assert not covers("ruff check 'src'", "pytest tests/test_a.py")


def _run(call_id: str, command: str, code: int) -> list[Event]:
    return [
        ToolCall(call_id=call_id, name="Bash", action="command", command=command),
        ToolResult(
            call_id=call_id, is_error=code != 0, exit_code=code, error="E boom" if code else None
        ),
    ]


def test_the_state_holds_real_models_built_at_the_end() -> None:
    events: list[Event] = [Message(role="user", text="fix it")]
    events += _run("a", "pytest tests/test_a.py::test_x", 1)
    events += _run("b", "git status", 0)  # passes, fixes nothing
    events += _run("c", "pytest tests/test_a.py", 0)  # fixes the failure
    events += [
        ToolCall(call_id="e", name="Edit", action="edit", paths=("/ws/a.py",)),
        ToolResult(call_id="e", is_error=True, error="String not found"),
    ]
    state = extract(iter(events), workspace="/ws").state
    assert all(type(run) is CommandRun for run in state.commands)
    assert [(r.command, r.exit_code, r.ok, r.error) for r in state.commands] == [
        ("pytest tests/test_a.py::test_x", 1, False, "E boom"),
        ("git status", 0, True, None),
        ("pytest tests/test_a.py", 0, True, None),
    ]
    assert type(state.last_failure) is Failure
    assert state.last_failure.command == "pytest tests/test_a.py::test_x"
    assert state.last_failure.resolved_later is True
    assert [(type(f), f.tool, f.path, f.error) for f in state.failed_edits] == [
        (Failure, "Edit", "a.py", "String not found")
    ]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        # rules, separators, exit lines and short decoration are skipped, in one pattern
        (
            "===== FAILURES =====\n___ test_x ___\n----\nExit code: 1\n5 passed in 0.1s\nboom",
            "boom",
        ),
        # decoration longer than 200 characters is content, not decoration
        ("success: " + "y" * 200, "success: " + "y" * 200),
        # tool_use_error tags are stripped once per text, on every line they appear
        ("<tool_use_error>String not found\n</tool_use_error>", "String not found"),
        # the first located diagnostic wins; later lines are not ranked
        (
            "src/a.py:3:1: F401 unused\nsrc/b.py:9:1: E501 long\nValueError: x",
            "src/a.py:3:1: F401 unused",
        ),
    ],
)
def test_first_error_line_shortcuts(output: str, expected: str) -> None:
    from passdown.agents._common import first_error_line

    assert first_error_line(output) == expected
