"""Issue 22: every OS-specific call goes through `passdown._platform`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "passdown"
SEAM = SRC / "_platform.py"

# names that exist on one system only, or mean a POSIX-only call
POSIX_ONLY = [
    r"\bimport fcntl\b",
    r"\bfcntl\.",
    r"\bimport resource\b",
    r"\bresource\.getrusage",
    r"\bimport msvcrt\b",
    r"\bimport pwd\b",
    r"\bpwd\.",
    r"\bos\.fchmod\b",
    r"\bos\.pread\b",
    r"(?<!_platform\.)\bO_NONBLOCK\b",
    r"(?<!_platform\.)\bO_DIRECTORY\b",
    r"(?<!_platform\.)\bO_NOCTTY\b",
    r"\bos\.fork\b",
    r"\bprctl\b",
    r"\bselect\.select\b",
    r"\bos\.getuid\b",
    r"\bos\.geteuid\b",
    r"\bos\.getppid\b",
    r"\bos\.setsid\b",
    r"\bos\.killpg\b",
    r"\bos\.waitpid\b",
    r"\bos\.sched_getaffinity\b",
    r"\bsignal\.SIGKILL\b",
    r"\bsignal\.SIGHUP\b",
    r"\bctypes\.CDLL\(None",
    r"\bos\.replace\(",
]


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Lines of code, without comments and docstring-only lines (prose may name them)."""
    out = []
    in_doc = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        quotes = stripped.count('"""')
        if in_doc:
            in_doc = quotes % 2 == 0
            continue
        if stripped.startswith('"""'):
            in_doc = quotes == 1
            continue
        out.append((number, line.split("#", 1)[0]))
    return out


def offenders(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == SEAM:
            continue
        for number, code in _code_lines(path):
            for pattern in POSIX_ONLY:
                if re.search(pattern, code):
                    found.append(f"{path.relative_to(root)}:{number}: {code.strip()}")
    return found


def test_no_os_specific_call_outside_the_seam() -> None:
    assert offenders(SRC) == []


def test_the_grep_finds_a_planted_call(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        '"""Docs may say os.fchmod."""\nimport os\n\nos.fchmod(3, 0o600)  # fine\n'
        "import fcntl\nx = 1  # fcntl.flock in a comment is fine\n"
    )
    assert offenders(tmp_path) == ["bad.py:4: os.fchmod(3, 0o600)", "bad.py:5: import fcntl"]


@pytest.mark.parametrize("pattern", POSIX_ONLY)
def test_each_pattern_is_valid(pattern: str) -> None:
    re.compile(pattern)
