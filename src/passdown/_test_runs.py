"""Which command lines are test runs, and when a passing run shows that a failed one is
fixed: the same command, or the same runner over the failed tests or a superset of them
(`pytest tests/test_a.py` covers `pytest tests/test_a.py::test_x`)."""

from __future__ import annotations

import re
import shlex

import msgspec

from passdown._memo import for_short_strings

# failures fixed later ------------------------------------------------------------
_WRAPPERS = frozenset({"time", "nice", "env", "timeout", "exec", "xvfb-run"})
_RUNNER_PREFIXES = (  # the longest first
    ("uv", "tool", "run"),
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
    ("pipx", "run"),
    ("pnpm", "exec"),
    ("uvx",),
    ("npx",),
    ("bunx",),
)
# Options of those prefixes that take a value (`uv run --with pytest-cov pytest`): the
# program to run comes after it. Any other option is a flag (`uv run --frozen pytest`).
_PREFIX_VALUE_OPTIONS = frozenset(
    {
        "--with",
        "-w",
        "--with-editable",
        "--with-requirements",
        "--python",
        "-p",
        "--directory",
        "--project",
        "--package",
        "--extra",
        "--group",
        "--only-group",
        "--env-file",
        "--index",
        "--default-index",
        "--index-url",
        "-i",
        "--extra-index-url",
        "--find-links",
        "-f",
        "--config-file",
        "--cache-dir",
        "--from",
        "-C",
        "-P",
        "-e",
        "--env",
        "--filter",
        "--package-manager",
    }
)
_VALUE_OPTIONS = frozenset(
    {
        "-p",
        "-c",
        "-o",
        "--rootdir",
        "--deselect",
        "--ignore",
        "--confcutdir",
        "--basetemp",
        "-n",
        "--maxfail",
        "--tb",
        "--timeout",
        "--durations",
        "--cov",
        "--cov-report",
    }
)
_FILTER_OPTIONS = frozenset({"-k", "-m", "-run", "-t", "--testNamePattern", "--grep", "-g"})
_PROBES = frozenset(
    {
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "test",
        "[",
        "diff",
        "cmp",
        "which",
        "command",
        "type",
        "pgrep",
    }
)
_REDIRECT = re.compile(r"\d*[<>]")
_SEGMENT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")


class TestRun(msgspec.Struct, frozen=True):
    runner: str
    selectors: tuple[str, ...]  # test ids, files, folders, modules (none: the whole suite)
    filters: tuple[str, ...]  # -k/-m/--run expressions that narrow the selection


def covers(passed: str, failed: str) -> bool:
    """Whether a passing `passed` run shows the failed `failed` run is fixed: the same
    command, or the same test runner over the failed tests or a superset of them
    (`pytest tests/test_a.py` or `pytest` covers `pytest tests/test_a.py::test_x`)."""
    return Run.of(passed).covers(Run.of(failed))


class Run(msgspec.Struct, frozen=True):
    """A command, parsed once: its normalised text and, for a test runner, what it ran."""

    text: str
    tests: TestRun | None

    @classmethod
    def of(cls, command: str) -> Run:
        return _parsed_run(command)

    def covers(self, failed: Run) -> bool:
        if self.text == failed.text:
            return True
        ok_run, bad_run = self.tests, failed.tests
        if ok_run is None or bad_run is None or ok_run.runner != bad_run.runner:
            return False
        if ok_run.filters and ok_run.filters != bad_run.filters:
            return False
        if not ok_run.selectors:
            return True
        if not bad_run.selectors:
            return False  # the whole suite failed; a part of it passing proves little
        return all(any(_contains(s, f) for s in ok_run.selectors) for f in bad_run.selectors)


# Sessions run the same commands again and again (the test suite after each fix), and
# parsing one through shlex costs tens of microseconds.
@for_short_strings(maxsize=256, longest=4096)
def _parsed_run(command: str) -> Run:
    return Run(" ".join(command.split()), parse_test_run(command))


def _contains(outer: str, inner: str) -> bool:
    """`tests` contains `tests/test_a.py`, which contains `tests/test_a.py::test_x`;
    `test_calc` contains `test_calc.TestAdd.test_add`. A path given absolute on one side
    and relative on the other (`pytest /ws/tests/test_a.py`, then `pytest tests`) is
    compared from the relative one's first folder on."""
    if outer.startswith("/") != inner.startswith("/"):
        return any(_within(o, i) for o, i in _aligned(outer, inner))
    return _within(outer, inner)


def _within(outer: str, inner: str) -> bool:
    if outer.endswith("..."):  # Go's `./...`, `pkg/...`: the package and all below it
        base = outer[:-3].rstrip("/")
        return not base or inner == base or inner.startswith(base + "/")
    if not inner.startswith(outer):
        return False
    rest = inner[len(outer) :]
    return not rest or rest[0] in "/." or rest.startswith("::")


def _aligned(outer: str, inner: str) -> list[tuple[str, str]]:
    """The absolute one cut to each place where the relative one's first part starts."""
    absolute, relative = (outer, inner) if outer.startswith("/") else (inner, outer)
    first = "/" + relative.split("/", 1)[0].split("::", 1)[0]
    cuts: list[str] = []
    at = absolute.find(first)
    while at >= 0:
        cuts.append(absolute[at + 1 :])
        at = absolute.find(first, at + 1)
    return [(c, inner) if outer is absolute else (outer, c) for c in cuts]


# Every runner `_runner` knows has one of these in its name or in its first argument.
# shlex only drops quotes and backslashes, so a command without any of them, once those
# are dropped, runs no tests: no need to split it (shlex is the slow part).
_RUNNER_HINT = re.compile(r"test|jest|mocha|tox|nox|rspec|phpunit")
_UNQUOTE = str.maketrans("", "", "'\"\\")


def parse_test_run(command: str) -> TestRun | None:
    if not _RUNNER_HINT.search(command.translate(_UNQUOTE)):
        return None
    for segment in _SEGMENT.split(command):
        words = _words(segment)
        if words is None:
            continue
        run = _runner(_unwrapped(words))
        if run is not None:
            return run
    return None


def _words(segment: str) -> list[str] | None:
    """Shell words; plain whitespace splitting unless quoting needs shlex (much slower)."""
    if not any(c in segment for c in "'\"\\"):
        return segment.split()
    try:
        return shlex.split(segment)
    except ValueError:
        return None


def _unwrapped(words: list[str]) -> list[str]:
    """Without `VAR=value`, `cd`, `time`/`timeout N`, `uv run` and the like (with their
    own options: `uv run --frozen`, `uvx --with pytest-cov`) in front."""
    while words:
        head = words[0]
        if "=" in head and not head.startswith("-"):
            words = words[1:]
        elif head in _WRAPPERS:
            words = words[1:]
            if head == "timeout" and words and words[0][:1].isdigit():
                words = words[1:]
        elif prefix := next((p for p in _RUNNER_PREFIXES if tuple(words[: len(p)]) == p), None):
            words = _past_prefix_options(words[len(prefix) :])
        else:
            return [w for w in words if not _REDIRECT.match(w)]
    return words


def _past_prefix_options(words: list[str]) -> list[str]:
    """The program a runner prefix runs, and its arguments: `uv run --frozen -- pytest`
    runs `pytest`; `uv run -m pytest` runs `python -m pytest`."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        option = words[i]
        if option == "--":
            return words[i + 1 :]
        if option in ("-m", "--module"):
            return ["python", "-m", *words[i + 1 :]]
        i += 2 if option in _PREFIX_VALUE_OPTIONS else 1
    return words[i:]


def _runner(words: list[str]) -> TestRun | None:
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1]
    if name.startswith("python"):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            rest = rest[1:]  # python -B -X dev -m ...
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] in ("pytest", "unittest"):
            return _selection(rest[1], rest[2:])
        return None
    if name in ("pytest", "py.test"):
        return _selection("pytest", words[1:])
    if name in ("jest", "vitest", "mocha", "tox", "nox", "rspec", "phpunit"):
        return _selection(name, words[1:])
    if len(words) >= 2 and (name, words[1]) in (
        ("cargo", "test"),
        ("go", "test"),
        ("make", "test"),
        ("npm", "test"),
        ("yarn", "test"),
        ("pnpm", "test"),
        ("bun", "test"),
        ("deno", "test"),
        ("dotnet", "test"),
    ):
        return _selection(f"{name} test", words[2:])
    return None


def _selection(runner: str, args: list[str]) -> TestRun:
    selectors: list[str] = []
    filters: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        option, _, inline = arg.partition("=")
        if arg in _FILTER_OPTIONS or option in _FILTER_OPTIONS:
            value = inline if inline else (args[i + 1] if i + 1 < len(args) else "")
            filters.append(f"{option} {value}")
            i += 1 if inline else 2
            continue
        if arg.startswith("-k") and len(arg) > 2:
            filters.append(f"-k {arg[2:]}")
        elif arg in _VALUE_OPTIONS:
            i += 1
        elif arg == "--":
            pass
        elif not arg.startswith("-") and arg not in ("discover", "run"):
            selectors.append(arg.removeprefix("./").rstrip("/") or arg)
        i += 1
    return TestRun(runner, tuple(selectors), tuple(filters))


def is_probe(command: str, exit_code: int | None) -> bool:
    """grep, test, diff and the like exit 1 to answer "no": not a failure."""
    if exit_code != 1:
        return False
    segments = [seg for seg in _SEGMENT.split(command) if seg]
    words = _words(segments[-1]) if segments else None
    words = _unwrapped(words) if words else []
    return bool(words) and words[0].rsplit("/", 1)[-1] in _PROBES
