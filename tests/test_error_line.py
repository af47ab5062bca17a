"""The last failure's error line: the line that states the error, never decoration."""

from __future__ import annotations

import pytest

from passdown.agents._common import ERROR_LINE_CHARS, first_error_line

PYTEST_THEN_RUFF = """\
.......                                                                  [100%]
7 passed in 0.03s
src/app.py:1:8: F401 [*] `os` imported but unused
Found 1 error.
[*] 1 fixable with the `--fix` option.
"""
RUFF_FULL_FORMAT = """\
F401 [*] `os` imported but unused
 --> src/app.py:1:8
  |
1 | import os
  |        ^^
  |
help: Remove unused import: `os`

Found 1 error.
[*] 1 fixable with the `--fix` option.
"""
FENCED_TRACEBACK = """\
```
Traceback (most recent call last):
  File "/ws/run.py", line 1, in <module>
    import yaml
ModuleNotFoundError: No module named 'yaml'
```
"""
CHAINED_TRACEBACK = """\
Traceback (most recent call last):
  File "/ws/a.py", line 2, in <module>
    int("x")
ValueError: invalid literal for int() with base 10: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/ws/a.py", line 4, in <module>
    raise RuntimeError("config is broken")
RuntimeError: config is broken
"""
MYPY = """\
src/a.py:12: error: Incompatible return value type (got "int", expected "str")  [return-value]
Found 1 error in 1 file (checked 3 source files)
"""
GCC = """\
main.c: In function 'main':
main.c:3:5: error: 'x' undeclared (first use in this function)
    3 |     x = 1;
      |     ^
main.c:3:5: note: each undeclared identifier is reported only once
"""
PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /ws
collected 8 items

tests/test_a.py .......F                                                 [100%]

=================================== FAILURES ===================================
____________________________________ test_x ____________________________________

    def test_x():
>       assert add(2, 2) == 4
E       assert 0 == 4
E        +  where 0 = add(2, 2)

tests/test_a.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_a.py::test_x - assert 0 == 4
========================= 1 failed, 7 passed in 0.05s ==========================
"""
PYTEST_NO_SUMMARY = PYTEST.split("=========================== short")[0]
UNITTEST = """\
F
======================================================================
FAIL: test_add (test_calc.TestAdd.test_add)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/ws/test_calc.py", line 8, in test_add
    self.assertEqual(add(2, 2), 4)
AssertionError: 0 != 4

----------------------------------------------------------------------
Ran 1 test in 0.000s

FAILED (failures=1)
"""
NPM = """\
npm ERR! code ELIFECYCLE
npm ERR! errno 1
npm ERR! Missing script: "tset"
npm ERR! A complete log of this run can be found in: /root/.npm/_logs/x.log
"""
ANSI_CARGO = "   Compiling demo v0.1.0\n\x1b[1m\x1b[31merror[E0308]\x1b[0m: mismatched types\n --> src/main.rs:2:18\n"
TSC = "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
ESLINT = "/ws/src/a.js\n  3:7  error  'x' is assigned a value but never used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)\n"
GO_TEST = (
    "--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: got 0, want 4\nFAIL\n"
    "FAIL\texample.com/calc\t0.002s\n"
)
OUTPUT_WORD = "Output file not found: build/app.bin\n"
CODEX_EXEC_HEADER = (
    "Chunk ID: 3f2a\nWall time: 0.2 seconds\nProcess exited with code 1\n"
    "Original token count: 40\nOutput:\n" + UNITTEST
)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (PYTEST_THEN_RUFF, "src/app.py:1:8: F401 [*] `os` imported but unused … Found 1 error."),
        (RUFF_FULL_FORMAT, "F401 [*] `os` imported but unused … Found 1 error."),
        (FENCED_TRACEBACK, "ModuleNotFoundError: No module named 'yaml'"),
        (CHAINED_TRACEBACK, "RuntimeError: config is broken"),
        (
            MYPY,
            'src/a.py:12: error: Incompatible return value type (got "int", expected "str")'
            "  [return-value] … Found 1 error in 1 file (checked 3 source files)",
        ),
        (GCC, "main.c:3:5: error: 'x' undeclared (first use in this function)"),
        (PYTEST, "FAILED tests/test_a.py::test_x - assert 0 == 4"),
        (PYTEST_NO_SUMMARY, "E       assert 0 == 4"),
        (UNITTEST, "AssertionError: 0 != 4 … FAILED (failures=1)"),
        (CODEX_EXEC_HEADER, "AssertionError: 0 != 4 … FAILED (failures=1)"),
        (NPM, 'npm ERR! Missing script: "tset"'),
        (ANSI_CARGO, "error[E0308]: mismatched types"),
        (TSC, "src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."),
        (ESLINT, "3:7  error  'x' is assigned a value but never used  no-unused-vars"),
        (GO_TEST, "calc_test.go:8: got 0, want 4"),
        (OUTPUT_WORD, "Output file not found: build/app.bin"),
    ],
    ids=[
        "pytest-then-ruff",
        "ruff-full",
        "fenced-traceback",
        "chained-traceback",
        "mypy",
        "gcc",
        "pytest",
        "pytest-no-summary",
        "unittest",
        "codex-exec-header",
        "npm",
        "ansi-cargo",
        "tsc",
        "eslint",
        "go-test",
        "output-word",
    ],
)
def test_the_line_that_states_the_error_is_chosen(output: str, expected: str) -> None:
    assert first_error_line(output) == expected


def test_decoration_is_never_the_error_line() -> None:
    assert first_error_line("```\n```\n") is None
    assert first_error_line("=====\n-----\n\x1b[0m\n") is None
    assert (
        first_error_line("```\nsh: 1: frobnicate: not found\n```") == "sh: 1: frobnicate: not found"
    )
    # no error words at all: the first line with content, not a fence or a pass count
    assert (
        first_error_line("```\n3 passed in 0.01s\nsegmentation fault?\n") == "segmentation fault?"
    )


def test_tool_errors_keep_their_message() -> None:
    wrapped = "<tool_use_error>String to replace not found in file.</tool_use_error>"
    assert first_error_line(wrapped) == "String to replace not found in file."


def test_huge_outputs_are_read_at_head_and_tail_and_the_line_is_bounded() -> None:
    noise = "building module ok\n" * 200_000
    out = first_error_line(noise + "src/z.py:9:1: E999 SyntaxError: " + "x" * 1000 + "\n")
    assert out is not None and out.startswith("src/z.py:9:1: E999 SyntaxError")
    assert len(out) == ERROR_LINE_CHARS


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "line",
    [
        "- " * 20000 + "x",
        "= " * 20000 + "error x",
        "a." * 20000,
        "a.A" * 10000,
        "x:1:" * 10000,
        " " * 3 + "a" * 40000 + "b",
    ],
)
def test_long_hostile_lines_take_linear_time(line: str) -> None:
    import time

    started = time.monotonic()
    assert first_error_line(line)
    assert time.monotonic() - started < 1.0
