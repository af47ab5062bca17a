"""A `passdown` executable for tests of `passdown install`: a script that runs this
checkout's passdown with the test's Python, wherever the test puts it (a folder with a
space in its name, say). Install checks the command it writes by running it."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def passdown_script(folder: Path, name: str = "passdown") -> Path:
    """`folder/name`: runs `python -m passdown` of this checkout (whatever PYTHONPATH says)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH={shlex.quote(str(SRC))} exec {shlex.quote(sys.executable)} -m passdown "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


@pytest.fixture
def passdown_by_name(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """`passdown` on PATH (a script of this checkout), and install told to write that
    name (`PASSDOWN_COMMAND=passdown`): configs read `passdown hook AGENT` as before
    install wrote absolute paths, for tests about everything but the command."""
    script = passdown_script(tmp_path_factory.mktemp("bin"))
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PASSDOWN_COMMAND", "passdown")
    yield script
